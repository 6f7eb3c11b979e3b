"""The compiled Newton polish: its structure and candidate against numpy/scipy references, and
relaxations that polish against cvxpy."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.optimize

import sparsecert.solvers.perspective.polish as polish
from sparsecert.solvers.losses import get_loss
from sparsecert.solvers.perspective import perspective_relaxation
from sparsecert.solvers.perspective._linalg import dense_design
from sparsecert.solvers.perspective.node import node_state
from sparsecert.solvers.perspective.polish import _structure, newton_candidate, structure


def _point(rng, p, state):
    x = rng.standard_normal(p) * (rng.random(p) < 0.6)
    x[state == 0] = 0.0
    x[:3] = [0.9, -0.9, 0.9]  # ties in |x|: ordered by index in both
    return x


@pytest.mark.parametrize("seed", range(6))
def test_compiled_structure_equals_the_python_one(seed):
    rng = np.random.default_rng(seed)
    p, k = 30, 6
    fin = np.zeros(p, bool)
    fin[[4, 9]] = True
    fout = np.zeros(p, bool)
    fout[[5, 11, 12]] = True
    state, budget = node_state(p, k, fin, fout)
    x = _point(rng, p, state)
    S, in_R, s, kr = structure(x, state, budget)
    S2, in_R2, s2, kr2 = _structure(x, state, budget)
    np.testing.assert_array_equal(S, S2)
    np.testing.assert_array_equal(in_R, in_R2)
    np.testing.assert_array_equal(s, s2)
    assert kr == kr2
    assert kr > 0 and (~in_R).sum() > 0  # a theta group T exists: the case that matters


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
def test_newton_candidate_minimises_the_smooth_piece(loss):
    rng = np.random.default_rng(1)
    n, p, k = 120, 25, 5
    X = rng.standard_normal((n, p)) / np.sqrt(n)
    u = X[:, :4] @ np.array([2.0, -1.0, 1.5, 1.0])
    y = {"squared": u + 0.3 * rng.standard_normal(n),
         "logistic": np.where(u + 1.5 * rng.standard_normal(n) > 0, 1.0, -1.0),
         "poisson": rng.poisson(np.exp(0.5 * u)).astype(float)}[loss]
    lam, mu = 0.3, (0.05 if loss == "squared" else 0.0)
    fin = np.zeros(p, bool)
    fin[0] = True
    state, budget = node_state(p, k, fin, np.zeros(p, bool))
    x = _point(rng, p, state) * 0.3
    S, in_R, s, kr = structure(x, state, budget)
    ok, cand = newton_candidate(dense_design(X), y, get_loss(loss).spec, lam, mu, x, state,
                                 budget, 50)
    assert ok
    assert np.all(cand[np.setdiff1d(np.arange(p), S)] == 0.0)
    XS = X[:, S]
    f = get_loss(loss)

    def q(b):  # the smooth piece, written independently
        sb = s @ b
        return (f.derivatives(XS @ b, y)[0] - mu * b @ b
                + lam * (np.sum(b[in_R] ** 2) + sb * sb / kr))

    if loss == "squared":  # one linear system
        H = 2 * XS.T @ XS - 2 * mu * np.eye(S.size) + 2 * lam * np.diag(in_R.astype(float)) \
            + (2 * lam / kr) * np.outer(s, s)
        ref = np.linalg.solve(H, 2 * XS.T @ y)
        np.testing.assert_allclose(cand[S], ref, rtol=1e-8, atol=1e-10)
    else:  # a quasi-Newton reference: close, and the candidate at least as low
        ref = scipy.optimize.minimize(q, x[S], method="BFGS", options={"gtol": 1e-10}).x
        np.testing.assert_allclose(cand[S], ref, rtol=1e-4, atol=1e-6)
    assert q(cand[S]) <= q(ref) + 1e-10 * max(1.0, abs(q(ref)))


def test_newton_candidate_refuses_a_degenerate_point():
    X = np.ones((5, 4))
    state = np.full(4, 2, dtype=np.int8)
    ok, cand = newton_candidate(dense_design(X), np.ones(5), get_loss("squared").spec, 0.5,
                                0.0, np.zeros(4),
                                state, 2, 8)
    assert not ok and np.all(cand == 0.0)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_relaxations_that_polish_match_cvxpy(loss, monkeypatch):
    calls = []
    inner = polish.newton_polish

    def counted(*a, **kw):
        calls.append(1)
        return inner(*a, **kw)

    monkeypatch.setattr(polish, "newton_polish", counted)
    rng = np.random.default_rng(4)
    n, p, k, lam = 120, 160, 5, 0.5
    X = rng.standard_normal((n, p))
    u = X[:, :5] @ np.array([1.5, -1.0, 1.0, 0.8, -0.6])
    y = u + 0.5 * rng.standard_normal(n) if loss == "squared" else \
        np.where(u + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    res = perspective_relaxation(X, y, k, lam, loss=loss, rel_tol=1e-8, max_iter=50000)
    assert calls  # the polish ran
    b, z, t = cp.Variable(p), cp.Variable(p), cp.Variable(p)
    F = cp.sum_squares(y - X @ b) if loss == "squared" else \
        cp.sum(cp.logistic(-cp.multiply(y, X @ b)))
    cons = [z >= 0, z <= 1, cp.sum(z) <= k]
    cons += [cp.quad_over_lin(b[j], z[j]) <= t[j] for j in range(p)]
    pr = cp.Problem(cp.Minimize(F + lam * cp.sum(t)), cons)
    pr.solve(solver=cp.CLARABEL, tol_gap_rel=1e-9, tol_gap_abs=1e-9, tol_feas=1e-9)
    assert res.status == "converged"
    assert res.objective == pytest.approx(pr.value, rel=1e-6)
    assert res.lower_bound <= pr.value * (1 + 1e-8)
    assert res.lower_bound == pytest.approx(pr.value, rel=1e-6)
