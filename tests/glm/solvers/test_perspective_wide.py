"""p >> n: the default (working-set) relaxation path against a cvxpy exponential-cone model."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecert.solvers.perspective import RelaxationProblem, solve_node


def _cvxpy_relaxation(X, y, k, lam, fixed_in=(), fixed_out=(), intercept=False):
    cp = pytest.importorskip("cvxpy")
    n, p = X.shape
    b = cp.Variable(p)
    z = cp.Variable(p)
    u = X @ b + cp.Variable() if intercept else X @ b
    obj = cp.sum(cp.logistic(-cp.multiply(y, u)))
    obj += lam * cp.sum(cp.hstack([cp.quad_over_lin(b[j], z[j]) for j in range(p)]))
    cons = [z >= 0, z <= 1, cp.sum(z) <= k]
    cons += [z[j] == 1 for j in fixed_in] + [z[j] == 0 for j in fixed_out]
    cons += [b[j] == 0 for j in fixed_out]
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value


@pytest.mark.parametrize("fixings", [((), ()), ((3,), (0, 5))])
def test_wide_logistic_default_path_matches_cvxpy(fixings):
    rng = np.random.default_rng(0)
    n, p, k, lam = 12, 60, 3, 0.5
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] - X[:, 3] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    fin, fout = fixings
    prob = RelaxationProblem.from_data(X, y, lam, loss="logistic")
    s1 = np.zeros(p, bool)
    s1[list(fin)] = True
    s0 = np.zeros(p, bool)
    s0[list(fout)] = True
    res = solve_node(prob, k, s1, s0, rel_tol=1e-9)  # working set chosen automatically
    ref = _cvxpy_relaxation(X, y, k, lam, fin, fout)
    assert res.lower_bound <= ref + 1e-6 * max(1.0, ref)
    assert res.objective >= ref - 1e-6 * max(1.0, ref)
    assert res.objective == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("loss, icpt", [("logistic", False), ("squared", False),
                                        ("logistic", True)])
def test_most_columns_fixed_out_iterates_on_the_rest_and_matches_cvxpy(loss, icpt,
                                                                       monkeypatch):
    """A node whose columns are mostly fixed out (reduced-cost fixing at p >> n) runs FISTA on
    the columns left (full.RESTRICT_FRACTION): the same relaxation value as cvxpy, a valid
    bound, and the same answer as the iterations over all columns; also with an intercept
    carried as a variable (logistic), whose zero-sum dual the restricted run keeps."""
    from sparsecert.solvers.perspective import full

    rng = np.random.default_rng(3)
    n, p, k, lam = 15, 40, 3, 0.5
    X = rng.standard_normal((n, p))
    y = np.where(X[:, 0] - X[:, 3] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    fout = tuple(range(8, p))  # 32 of 40 columns out: 20% left
    s0 = np.zeros(p, bool)
    s0[list(fout)] = True
    s1 = np.zeros(p, bool)
    s1[3] = True
    kw = {"max_abs_coef": 5.0} if loss == "squared" else {}  # squared: a box keeps it in FISTA
    prob = RelaxationProblem.from_data(X, y, lam, loss=loss, fit_intercept=icpt, **kw)
    assert prob.icpt == (icpt and loss != "squared")
    calls = []
    restricted = full._solve_restricted
    monkeypatch.setattr(full, "_solve_restricted", lambda *a: calls.append(1) or restricted(*a))
    res = solve_node(prob, k, s1, s0, rel_tol=1e-9, working_set=False)
    assert calls, "the node did not take the restricted path"
    assert np.all(res.coef[list(fout)] == 0.0)
    monkeypatch.setattr(full, "RESTRICT_FRACTION", 0.0)  # the iterations over all columns
    whole = solve_node(prob, k, s1, s0, rel_tol=1e-9, working_set=False)
    assert len(calls) == 1
    assert res.objective == pytest.approx(whole.objective, rel=1e-6)
    assert res.lower_bound == pytest.approx(whole.lower_bound, rel=1e-6)
    if loss == "logistic":
        ref = _cvxpy_relaxation(X, y, k, lam, (3,), fout, intercept=icpt)
        assert res.lower_bound <= ref + 1e-6 * max(1.0, ref)
        assert res.objective == pytest.approx(ref, rel=1e-6)
        if icpt:  # the certificate's dual: exactly zero-sum, its value over all columns
            assert res.lower_bound >= ref - 1e-5 * max(1.0, ref)
