"""The verifier's node bounds against independent references.

- at the optimum of the perspective relaxation (solved by cvxpy/Clarabel) the point-witness bound
  equals the relaxation value, with and without the eigenvalue shift;
- at ANY witness (random points and duals, random node fixings, box M) the bound never exceeds
  the node's true optimum, enumerated by brute force;
- an open leaf that inherits its parent's witness is bounded at least as well as the parent.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _certgen import _df, make_data, objective, solve_restricted

from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate.verify import (
    dual_domain_bounds,
    g_star_node,
    huber,
    node_lower_bound,
    prepare_data,
)


def _relaxation_cvxpy(Xc, yc, k, lam, mu, M=None, fin=(), fout=()):
    """Perspective relaxation of the (shifted) least-squares node problem, solved by Clarabel."""
    cp = pytest.importorskip("cvxpy")
    n, p = Xc.shape
    b, z = cp.Variable(p), cp.Variable(p)
    P = Xc.T @ Xc - mu * np.eye(p)
    obj = (cp.quad_form(b, cp.psd_wrap(P)) - 2 * (Xc.T @ yc) @ b + yc @ yc
           + (lam + mu) * cp.sum(cp.hstack([cp.quad_over_lin(b[j], z[j]) for j in range(p)])))
    cons = [cp.sum(z) <= k, z >= 0, z <= 1]
    cons += [z[j] == 1 for j in fin] + [z[j] == 0 for j in fout] + [b[j] == 0 for j in fout]
    if M is not None:
        cons += [cp.abs(b) <= M * z]
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value, b.value


@pytest.mark.parametrize("shift", [False, True])
@pytest.mark.parametrize("M", [None, 0.3])
@pytest.mark.parametrize("fixing", [((), ()), ((2,), (0,))])
def test_point_bound_equals_relaxation_value_at_its_optimum(shift, M, fixing):
    X, y = make_data("squared", n=30, p=6, seed=3)
    Xc, yc = X - X.mean(0), y - y.mean()
    mu = 0.5 * np.linalg.eigvalsh(Xc.T @ Xc)[0] if shift else 0.0
    fin, fout = fixing
    val, b = _relaxation_cvxpy(Xc, yc, 2, 0.5, mu, M, fin, fout)
    b = np.where(np.isin(np.arange(6), fout), 0.0, b)
    lb = node_lower_bound(Xc, yc, "squared", 2, 0.5, M, fin, fout, ("point", b), eig_shift=mu)
    assert lb <= val + 1e-7 * abs(val)
    assert lb == pytest.approx(val, rel=1e-6)


def test_shift_strengthens_the_root_bound():
    X, y = make_data("squared", n=30, p=6, seed=3)
    Xc, yc = X - X.mean(0), y - y.mean()
    mu = 0.5 * np.linalg.eigvalsh(Xc.T @ Xc)[0]
    v0, b0 = _relaxation_cvxpy(Xc, yc, 1, 0.5, 0.0)
    v1, b1 = _relaxation_cvxpy(Xc, yc, 1, 0.5, mu)
    lb0 = node_lower_bound(Xc, yc, "squared", 1, 0.5, None, (), (), ("point", b0))
    lb1 = node_lower_bound(Xc, yc, "squared", 1, 0.5, None, (), (), ("point", b1), eig_shift=mu)
    assert lb1 > lb0 * 1.5


def _node_optimum(X, ym, loss, k, lam, M, fin, fout, fit_intercept):
    """Brute force: min over supports S1 u T, T among the free variables, |T| <= budget."""
    p = X.shape[1]
    free = [j for j in range(p) if j not in fin and j not in fout]
    budget = k - len(fin)
    best = np.inf
    for T in itertools.combinations(free, min(budget, len(free))):
        b, c, _ = solve_restricted(X, ym, loss, lam, sorted(list(fin) + list(T)), M,
                                   fit_intercept)
        best = min(best, objective(X, ym, loss, lam, b, c))
    return best


@pytest.mark.parametrize(
    "loss, fit_intercept, M",
    [("squared", False, None), ("squared", True, None), ("squared", False, 0.3),
     ("logistic", False, None), ("logistic", True, None), ("squared_hinge", False, None),
     ("poisson", False, None)],
)
def test_any_witness_gives_a_valid_bound(loss, fit_intercept, M):
    rng = np.random.default_rng(7)
    X, y = make_data(loss, n=20, p=5, seed=5)
    Xr, ym, Xd, yd = prepare_data(X, y, loss, None, fit_intercept)
    k, lam = 2, 0.4
    zero_sum = fit_intercept and loss != "squared"
    mu = 0.9 * np.linalg.eigvalsh(Xd.T @ Xd)[0] if loss == "squared" else 0.0
    lo, hi = dual_domain_bounds(loss, yd)
    for trial in range(6):
        perm = rng.permutation(5)
        fin, fout = perm[: trial % 3].tolist(), perm[2:2 + trial % 2].tolist()
        opt = _node_optimum(X, ym, loss, k, lam, M, fin, fout, fit_intercept)
        witnesses = []
        if not zero_sum:
            witnesses.append(("point", 0.0, rng.standard_normal(5)))
            witnesses.append(("point", mu, rng.standard_normal(5)))
        z = _df(loss, Xd @ rng.standard_normal(5) * 0.3, yd)
        if zero_sum:
            from sparsecert.certificate import exact_zero_sum

            z = exact_zero_sum(z, lo, hi)
        witnesses.append(("dual", 0.0, z))
        for kind, shift, vec in witnesses:
            lb = node_lower_bound(Xd, yd, loss, k, lam, M, fin, fout, (kind, vec),
                                  eig_shift=shift, zero_sum=zero_sum)
            assert lb <= opt + 1e-9 * max(1.0, abs(opt)), (kind, shift, fin, fout)


def test_dual_outside_domain_or_nonzero_sum_gives_minus_infinity():
    X, y = make_data("logistic", n=10, p=3, seed=0)
    z = -0.5 * y
    assert np.isfinite(node_lower_bound(X, y, "logistic", 1, 1.0, None, (), (), ("dual", z)))
    z_bad = z.copy()
    z_bad[0] = 3.0 * y[0]
    assert node_lower_bound(X, y, "logistic", 1, 1.0, None, (), (), ("dual", z_bad)) == -np.inf
    z_sum = z.copy()
    z_sum[0] += 1e-3 * -y[0]  # inside the domain, sum moved
    assert node_lower_bound(X, y, "logistic", 1, 1.0, None, (), (), ("dual", z_sum),
                            zero_sum=True) == -np.inf


def test_g_star_node_matches_definition_by_enumeration():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(1)
    for M in (None, 0.5):
        for _ in range(20):
            a = rng.standard_normal(6) * 2
            fin = [0] if rng.random() < 0.5 else []
            fout = [5]
            budget = 2 - len(fin)
            free = [j for j in range(5) if j not in fin]
            h = huber(a, M)
            best = max(sum(h[list(T)]) for T in itertools.combinations(free, budget))
            assert g_star_node(a, np.array(fin, dtype=np.int64), np.array(fout, dtype=np.int64),
                               budget, M) == pytest.approx(h[fin].sum() + best)
    # Huber: cvxpy's huber(t, M) equals 2 H_M(t)
    t = np.linspace(-3, 3, 13)
    assert huber(t, 1.0) == pytest.approx(0.5 * cp.huber(t, 1.0).value)


def test_open_leaves_inherit_the_parent_witness():
    """Root relaxed by cvxpy, branched once, both children open: they inherit the root witness."""
    X, y = make_data("squared", n=30, p=6, seed=3)
    val, b = _relaxation_cvxpy(X, y, 1, 0.5, 0.0)
    slack = 1e-6 * max(1.0, abs(val))
    b0, _, _ = solve_restricted(X, y, "squared", 0.5, [0])
    ub = objective(X, y, "squared", 0.5, b0)
    nodes = [dict(id=0, parent=None, branch_var=None, branch_value=None, status="branched",
                  bound=val, witness=("point", b)),
             dict(id=1, parent=0, branch_var=3, branch_value=0, status="open", bound=val,
                  witness=None),
             dict(id=2, parent=0, branch_var=3, branch_value=1, status="open", bound=val,
                  witness=None)]
    cert = Certificate.build(
        X, y, problem=dict(loss="squared", k=1, lambda2=0.5, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=b0, intercept=0.0, objective=ub),
        bounds=dict(lower_bound=val - slack, upper_bound=ub, status="node_limit"),
        nodes=nodes)
    rep = verify_certificate(cert, X, y)
    assert rep.ok, str(rep)
    assert "2 inherited" in dict((n, m) for n, _, m in rep.checks)["leaf_witnesses"]
    assert rep.certified_lower_bound >= val - slack  # children bounded at least as the root
    assert (ub - val) / max(1.0, ub) > 1e-2  # the k = 1 relaxation is far from tight here...
    assert rep.exit_code == 3  # ... so the certificate is valid but the gap is above tolerance


@pytest.mark.parametrize("loss", ["squared", "logistic", "squared_hinge", "poisson"])
def test_point_witness_equals_dual_witness_at_its_gradient(loss):
    """Fenchel-Young: f(u) + f*(f'(u)) = u f'(u), so with mu = 0 the point bound at b equals the
    dual bound at zeta = f'(Xb), for every node."""
    rng = np.random.default_rng(11)
    X, y = make_data(loss, n=15, p=5, seed=6)
    for fin, fout in [((), ()), ((1,), (3,)), ((0, 2), ())]:
        b = 0.3 * rng.standard_normal(5)
        lp = node_lower_bound(X, y, loss, 2, 0.8, 0.7, fin, fout, ("point", b))
        ld = node_lower_bound(X, y, loss, 2, 0.8, 0.7, fin, fout, ("dual", _df(loss, X @ b, y)))
        assert lp == pytest.approx(ld, rel=1e-10, abs=1e-10)


def test_certificate_verify_method():
    X, y = make_data("squared", n=15, p=4, seed=0)
    from _certgen import enumeration_certificate

    cert, _ = enumeration_certificate(X, y, "squared", 2, 0.5)
    assert cert.verify(X, y).exit_code == 0
    assert cert.verify(X, y + 1.0).exit_code == 1
