"""The relaxation against cvxpy SOCPs (root and nodes), bound validity along the run, the shift."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from _bruteforce import brute_force

import sparsecert
from sparsecert.solvers.losses import get_loss
from sparsecert.solvers.perspective import (
    RelaxationProblem,
    RelaxationResult,
    perspective_relaxation,
    solve_node,
)
from sparsecert.solvers.perspective._gfun import huber

INF = np.inf


def _data(n=40, p=10, seed=0, loss="squared"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 1] = 0.7 * X[:, 0] + 0.3 * X[:, 1]
    beta = np.zeros(p)
    beta[[0, p // 3, p - 2]] = [1.5, -1.0, 0.8]
    u = X @ beta
    if loss == "squared":
        y = u + 0.7 * rng.standard_normal(n)
    elif loss in ("logistic", "squared_hinge"):
        y = np.where(u + 0.8 * rng.standard_normal(n) > 0, 1.0, -1.0)
    else:
        y = rng.poisson(np.exp(0.4 * u)).astype(float)
    return X, y


def _cvx_relaxation(X, y, k, lam, loss, M=INF, fixed_in=(), fixed_out=(), mu=0.0):
    n, p = X.shape
    b = cp.Variable(p)
    z = cp.Variable(p)
    s = cp.Variable(p)
    u = X @ b
    if loss == "squared":
        if mu > 0:
            G = X.T @ X - mu * np.eye(p)
            F = cp.quad_form(b, cp.psd_wrap(G)) - 2 * (X.T @ y) @ b + y @ y
        else:
            F = cp.sum_squares(y - u)
    elif loss == "logistic":
        F = cp.sum(cp.logistic(-cp.multiply(y, u)))
    elif loss == "squared_hinge":
        F = cp.sum_squares(cp.pos(1 - cp.multiply(y, u)))
    else:
        F = cp.sum(cp.exp(u) - cp.multiply(y, u))
    cons = [z >= 0, z <= 1] + [cp.quad_over_lin(b[j], z[j]) <= s[j] for j in range(p)]
    free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
    if free:
        cons.append(cp.sum(z[free]) <= k - len(fixed_in))
    for j in fixed_in:
        cons.append(z[j] == 1)
    for j in fixed_out:
        cons += [z[j] == 0, b[j] == 0]
    if M < INF:
        cons.append(cp.abs(b) <= M * z)
    prob = cp.Problem(cp.Minimize(F + (lam + mu) * cp.sum(s)), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_rel=1e-9, tol_gap_abs=1e-9, tol_feas=1e-9)
    assert prob.status == "optimal"
    return prob.value


CASES = [
    # loss, M, fixed_in, fixed_out
    ("squared", INF, (), ()),
    ("squared", INF, (2,), (0, 5)),
    ("squared", 0.6, (), ()),
    ("squared", 0.6, (1,), (3,)),
    ("logistic", INF, (), ()),
    ("logistic", INF, (4,), (0,)),
    ("logistic", 0.5, (), (6,)),
    ("squared_hinge", INF, (0,), ()),
    ("poisson", INF, (), (1,)),
]


@pytest.mark.parametrize("loss,M,fin,fout", CASES)
def test_relaxation_matches_cvxpy(loss, M, fin, fout):
    X, y = _data(loss=loss)
    k, lam = 3, 0.5
    ref = _cvx_relaxation(X, y, k, lam, loss, M, fin, fout)
    res = perspective_relaxation(X, y, k, lam, loss=loss, max_abs_coef=None if M == INF else M,
                                 fixed_in=fin, fixed_out=fout, rel_tol=1e-9, max_iter=50000)
    assert res.status == "converged"
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref + 1e-7 * abs(ref)
    assert np.all(res.coef[list(fout)] == 0)
    assert np.all(res.z[list(fin)] == 1) and np.all(res.z[list(fout)] == 0)
    assert res.z.sum() <= k + 1e-9 and np.all(res.z >= -1e-12) and np.all(res.z <= 1 + 1e-12)
    if M < INF:
        assert np.all(np.abs(res.coef) <= M * (1 + 1e-9))


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("restart", ["function", "gap", "none"])
def test_bound_valid_at_every_checkpoint(loss, restart):
    X, y = _data(loss=loss, seed=3)
    k, lam = 2, 0.3
    fin, fout = (5,), (0,)
    ref = _cvx_relaxation(X, y, k, lam, loss, INF, fin, fout)
    prev_lb = -np.inf
    for it in (1, 2, 3, 5, 8, 13, 30, 80, 200):
        res = perspective_relaxation(X, y, k, lam, loss=loss, fixed_in=fin, fixed_out=fout,
                                     max_iter=it, rel_tol=0.0, restart=restart)
        assert res.n_iter == it or (res.status == "converged" and res.n_iter < it)
        assert res.lower_bound <= ref + 1e-8 * abs(ref)
        assert res.objective >= ref - 1e-8 * abs(ref)
        assert res.lower_bound >= prev_lb - 1e-12 * abs(ref)  # same run, longer: running max
        prev_lb = res.lower_bound


def _dual_value(X, y, zeta, k, lam, loss, state, budget, M=INF):
    """Independent D(zeta) = -sum f*(zeta) - 2 lam g*_node(-X^T zeta / (2 lam)) (numpy)."""
    a = -(X.T @ zeta) / (2 * lam)
    h = np.array([huber(t, M) for t in a])
    gs = h[state == 1].sum() + np.sort(h[state == 2])[::-1][:budget].sum()
    return -get_loss(loss).conjugate_sum(zeta, y) - 2 * lam * gs


@pytest.mark.parametrize("loss", ["squared", "logistic", "squared_hinge", "poisson"])
def test_lower_bound_equals_fenchel_dual(loss):
    X, y = _data(loss=loss, seed=4)
    if loss in ("logistic", "squared_hinge"):
        y = np.where(y > 0, 1.0, -1.0)
    k, lam = 3, 0.8
    for max_iter in (3, 40):
        res = perspective_relaxation(X, y, k, lam, loss=loss, fixed_in=[1], fixed_out=[2],
                                     max_iter=max_iter, rel_tol=0.0)
        state = np.full(X.shape[1], 2)
        state[1], state[2] = 1, 0
        D = _dual_value(X, y, res.dual, k, lam, loss, state, k - 1)
        assert D == pytest.approx(res.lower_bound, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(res.dual, get_loss(loss).gradient(X @ res.bound_point, y),
                                   rtol=1e-8, atol=1e-10)


def test_eig_shift_bound():
    X, y = _data(n=60, p=9, seed=5)
    k, lam = 3, 0.2
    opt = brute_force(X, y, k, "squared", lam)[0]
    plain = perspective_relaxation(X, y, k, lam, rel_tol=1e-10, max_iter=50000)
    shifted = perspective_relaxation(X, y, k, lam, eig_shift="auto", rel_tol=1e-10,
                                     max_iter=50000)
    mu = shifted.eig_shift
    lam_min = np.linalg.eigvalsh(X.T @ X)[0]
    assert 0.9 * lam_min < mu < lam_min
    assert shifted.status == "converged"
    assert shifted.lower_bound <= opt * (1 + 1e-9)
    assert shifted.lower_bound >= plain.lower_bound - 1e-9 * abs(opt)
    assert shifted.lower_bound > plain.lower_bound + 1e-3 * abs(opt)  # it is really stronger
    ref = _cvx_relaxation(X, y, k, lam, "squared", mu=mu)
    assert shifted.objective == pytest.approx(ref, rel=1e-6)
    # and the bound is valid at nodes too
    node = perspective_relaxation(X, y, k, lam, eig_shift=mu, fixed_out=[0], rel_tol=1e-10,
                                  max_iter=50000)
    assert node.lower_bound <= min(
        brute_force(np.delete(X, 0, axis=1), y, k, "squared", lam)[0], np.inf) * (1 + 1e-9)


def test_eig_shift_validation():
    X, y = _data(n=30, p=6)
    lam_min = np.linalg.eigvalsh(X.T @ X)[0]
    with pytest.raises(ValueError, match="not a valid shift"):
        RelaxationProblem.from_data(X, y, 1.0, eig_shift=1.01 * lam_min)
    assert RelaxationProblem.from_data(X, y, 1.0, eig_shift=0.5 * lam_min).mu == 0.5 * lam_min
    Xw = np.random.default_rng(0).standard_normal((5, 8))
    assert RelaxationProblem.from_data(Xw, np.ones(5), 1.0, eig_shift="auto").mu == 0.0
    with pytest.raises(ValueError, match="squared loss"):
        RelaxationProblem.from_data(X, np.sign(y), 1.0, loss="logistic", eig_shift="auto")


def test_node_edge_cases():
    X, y = _data(seed=6)
    k, lam = 2, 0.4
    prob = RelaxationProblem.from_data(X, y, lam)
    p = X.shape[1]
    # budget 0: free coordinates forced to 0, the node is the ridge on S1 (exact)
    s1 = np.zeros(p, bool)
    s1[[3, 7]] = True
    res = solve_node(prob, k, s1, np.zeros(p, bool))
    XI = X[:, [3, 7]]
    b = np.linalg.solve(XI.T @ XI + lam * np.eye(2), XI.T @ y)
    ridge = np.sum((y - XI @ b) ** 2) + lam * b @ b
    assert res.status == "converged"
    np.testing.assert_allclose(res.coef[[3, 7]], b, rtol=1e-10)
    assert np.count_nonzero(res.coef) == 2
    assert res.objective == pytest.approx(ridge, rel=1e-12)
    assert res.lower_bound == pytest.approx(ridge, rel=1e-10)
    # |free| <= budget: plain ridge on S1 + free
    s0 = np.ones(p, bool)
    s0[[0, 1, 3]] = False
    s1 = np.zeros(p, bool)
    s1[3] = True
    res = solve_node(prob, 3, s1, s0)  # budget 2, two free features
    XI = X[:, [0, 1, 3]]
    b = np.linalg.solve(XI.T @ XI + lam * np.eye(3), XI.T @ y)
    ref = np.sum((y - XI @ b) ** 2) + lam * b @ b
    assert res.objective == pytest.approx(ref, rel=1e-10)
    assert res.lower_bound == pytest.approx(ref, rel=1e-10)
    # same with a box and a non-squared loss (FISTA), against cvxpy
    Xl, yl = _data(loss="logistic", seed=6)
    r2 = perspective_relaxation(Xl, yl, 3, lam, loss="logistic", max_abs_coef=0.4,
                                fixed_in=[3], fixed_out=[j for j in range(p) if j not in (0, 3)],
                                rel_tol=1e-10)
    ref2 = _cvx_relaxation(Xl, yl, 3, lam, "logistic", 0.4, (3,),
                           tuple(j for j in range(p) if j not in (0, 3)))
    assert r2.objective == pytest.approx(ref2, rel=1e-6)
    # everything fixed out
    r3 = solve_node(prob, k, np.zeros(p, bool), np.ones(p, bool))
    assert r3.objective == pytest.approx(y @ y) and r3.lower_bound == pytest.approx(y @ y)


def test_warm_start_cutoff_and_time_limit():
    X, y = _data(seed=7, n=50, p=10)
    k, lam = 3, 0.3
    prob = RelaxationProblem.from_data(X, y, lam)
    p = X.shape[1]
    none = np.zeros(p, bool)
    root = solve_node(prob, k, none, none, rel_tol=1e-9)
    assert isinstance(root, RelaxationResult) and root.status == "converged"
    s0 = none.copy()
    s0[int(np.argmax(np.abs(root.coef)))] = True
    cold = solve_node(prob, k, none, s0, rel_tol=1e-8)
    warm = solve_node(prob, k, none, s0, rel_tol=1e-8, warm_start=root)
    warm2 = solve_node(prob, k, none, s0, rel_tol=1e-8, warm_start=root.coef)
    assert warm.objective == pytest.approx(cold.objective, rel=1e-7)
    assert warm2.objective == pytest.approx(cold.objective, rel=1e-7)
    assert warm.coef[s0].max() == 0
    # cutoff below the optimum: stops early with a bound >= cutoff
    cut = cold.lower_bound - 0.01 * abs(cold.lower_bound)
    res = solve_node(prob, k, none, s0, cutoff=cut)
    assert res.status == "cutoff" and res.lower_bound >= cut and res.n_iter < cold.n_iter
    # cutoff above the optimum is never reached
    res = solve_node(prob, k, none, s0, cutoff=cold.objective * 1.1 + 1, rel_tol=1e-8)
    assert res.status == "converged"
    res = solve_node(prob, k, none, s0, rel_tol=0.0, time_limit=0.0, max_iter=10**9)
    assert res.status == "time_limit" and res.lower_bound <= cold.objective
    assert 1 <= res.n_iter < 1000


def test_fit_intercept_squared():
    X, y = _data(seed=8)
    y = y + 5.0
    Xs = X + 2.0
    k, lam = 3, 0.5
    res = perspective_relaxation(Xs, y, k, lam, fit_intercept=True, rel_tol=1e-10)
    # reference: cvxpy with an explicit unpenalised intercept
    n, p = X.shape
    b, c, z, s = cp.Variable(p), cp.Variable(), cp.Variable(p), cp.Variable(p)
    cons = [z >= 0, z <= 1, cp.sum(z) <= k] + [cp.quad_over_lin(b[j], z[j]) <= s[j]
                                                for j in range(p)]
    pr = cp.Problem(cp.Minimize(cp.sum_squares(y - Xs @ b - c) + lam * cp.sum(s)), cons)
    pr.solve(solver=cp.CLARABEL)
    assert res.objective == pytest.approx(pr.value, rel=1e-6)
    assert res.intercept == pytest.approx(c.value, rel=1e-4)


def test_working_set_matches_full():
    rng = np.random.default_rng(9)
    n, p, k, lam = 60, 300, 4, 1.0
    X = rng.standard_normal((n, p))
    y = X[:, :4] @ np.array([2.0, -1.0, 1.0, 1.5]) + 0.5 * rng.standard_normal(n)
    prob = RelaxationProblem.from_data(X, y, lam)
    none = np.zeros(p, bool)
    s0 = none.copy()
    s0[0] = True
    for s1 in (none, np.eye(p, dtype=bool)[2]):
        full = solve_node(prob, k, s1, s0, rel_tol=1e-9, working_set=False, solver="fista")
        ws = solve_node(prob, k, s1, s0, rel_tol=1e-9, working_set=True, solver="fista")
        assert full.status == ws.status == "converged"
        assert ws.objective == pytest.approx(full.objective, rel=1e-7)
        assert ws.lower_bound == pytest.approx(full.lower_bound, rel=1e-7)
        assert ws.lower_bound <= full.objective * (1 + 1e-12)
        D = _dual_value(X, y, ws.dual, k, lam, "squared",
                        np.where(s0, 0, np.where(s1, 1, 2)), k - int(s1.sum()))
        assert D == pytest.approx(ws.lower_bound, rel=1e-9)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "poisson"])
@pytest.mark.parametrize("M,fin,fout", [(None, (), ()), (0.7, (1,), (0,))])
def test_intercept_non_squared_against_cvxpy(loss, M, fin, fout):
    import math

    rng = np.random.default_rng(11)
    n, p, k, lam = 50, 8, 3, 0.5
    X = rng.standard_normal((n, p))
    u = X[:, 0] - X[:, 3] + 1.0
    if loss == "poisson":
        y = rng.poisson(np.exp(0.4 * u)).astype(float)
    else:
        y = np.where(u + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    res = perspective_relaxation(X, y, k, lam, loss=loss, fit_intercept=True, rel_tol=1e-9,
                                 max_abs_coef=M, fixed_in=fin, fixed_out=fout)
    b, c, z, s = cp.Variable(p), cp.Variable(), cp.Variable(p), cp.Variable(p)
    uu = X @ b + c
    F = {"logistic": cp.sum(cp.logistic(-cp.multiply(y, uu))),
         "squared_hinge": cp.sum_squares(cp.pos(1 - cp.multiply(y, uu))),
         "poisson": cp.sum(cp.exp(uu) - cp.multiply(y, uu))}[loss]
    cons = [z >= 0, z <= 1] + [cp.quad_over_lin(b[j], z[j]) <= s[j] for j in range(p)]
    free = [j for j in range(p) if j not in fin and j not in fout]
    cons.append(cp.sum(z[free]) <= k - len(fin))
    cons += [z[j] == 1 for j in fin] + [z[j] == 0 for j in fout] + [b[j] == 0 for j in fout]
    if M:
        cons.append(cp.abs(b) <= M * z)
    pr = cp.Problem(cp.Minimize(F + lam * cp.sum(s)), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "optimal_inaccurate": checked below
        pr.solve(solver=cp.CLARABEL, tol_gap_rel=1e-8, tol_gap_abs=1e-8, tol_feas=1e-8)
    assert pr.status in ("optimal", "optimal_inaccurate")
    ref_tol = 1e-6 if pr.status == "optimal" else 1e-5
    assert res.status == "converged"
    assert res.objective == pytest.approx(pr.value, rel=ref_tol)
    assert res.lower_bound <= pr.value + 1e-8 * abs(pr.value)
    assert res.intercept == pytest.approx(c.value, rel=1e-3, abs=1e-3)
    # the dual certificate: exactly zero sum, dyadic, in the domain, and D(zeta) = lower_bound
    assert math.fsum(res.dual) == 0.0
    np.testing.assert_array_equal(res.dual * 2.0**40, np.rint(res.dual * 2.0**40))
    assert np.all(get_loss(loss).in_dual_domain(res.dual, y))
    state = np.full(p, 2)
    state[list(fin)] = 1
    state[list(fout)] = 0
    D = _dual_value(X, y, res.dual, k, lam, loss, state, k - len(fin),
                    M=INF if M is None else M)
    assert D == pytest.approx(res.lower_bound, rel=1e-12)
    # and it is valid along the run too (early stops)
    for it in (2, 10):
        early = perspective_relaxation(X, y, k, lam, loss=loss, fit_intercept=True,
                                       max_iter=it, rel_tol=0.0, max_abs_coef=M,
                                       fixed_in=fin, fixed_out=fout)
        assert early.lower_bound <= pr.value + 1e-8 * abs(pr.value)
        assert math.fsum(early.dual) == 0.0


@pytest.mark.parametrize("fin,fout", [((), ()), ((3,), (0, 7))])
def test_zspace_solver_against_cvxpy(fin, fout):
    rng = np.random.default_rng(12)
    n, p, k, lam = 12, 60, 4, 0.7
    X = rng.standard_normal((n, p)) + 2.0  # a common mode: badly conditioned, like riboflavin
    y = X[:, [0, 3, 5]] @ np.array([1.0, -1.0, 0.5]) + 0.3 * rng.standard_normal(n)
    ref = _cvx_relaxation(X, y, k, lam, "squared", INF, fin, fout)
    prob = RelaxationProblem.from_data(X, y, lam)
    s1 = np.zeros(p, bool)
    s1[list(fin)] = True
    s0 = np.zeros(p, bool)
    s0[list(fout)] = True
    res = solve_node(prob, k, s1, s0, rel_tol=1e-9, solver="zspace", max_iter=20000)
    assert res.status == "converged"
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref * (1 + 1e-8)
    assert np.all(res.coef[s0] == 0)
    auto = solve_node(prob, k, s1, s0, rel_tol=1e-9)  # p >= 4 n: auto picks z-space
    assert auto.objective == pytest.approx(ref, rel=1e-6)
    state = np.where(s0, 0, np.where(s1, 1, 2))
    D = _dual_value(X, y, res.dual, k, lam, "squared", state, k - len(fin))
    assert D == pytest.approx(res.lower_bound, rel=1e-9)
    for it in (1, 3, 10, 30):
        early = solve_node(prob, k, s1, s0, rel_tol=0.0, max_iter=it, solver="zspace")
        assert early.lower_bound <= ref * (1 + 1e-8)
        assert early.objective >= ref * (1 - 1e-8)
    boxed = RelaxationProblem.from_data(X, y, lam, max_abs_coef=1.0)
    with pytest.raises(ValueError, match="zspace"):
        solve_node(boxed, k, None, None, solver="zspace")


def test_zspace_falls_back_to_fista_on_badly_scaled_columns():
    # a column 1e10 + small integers: K = I + X diag(z / lambda) X^T loses its identity to
    # rounding and its Cholesky factorisation fails; 'auto' then solves the node with FISTA
    from sparsecert.solvers.perspective import zspace

    rng = np.random.default_rng(3)
    n = 9
    X = np.column_stack([1e10 + rng.integers(-4, 5, n), rng.integers(0, 5, n)]).astype(float)
    y = rng.integers(-5, 7, n).astype(float)
    prob = RelaxationProblem.from_data(X, y, 0.3)
    with pytest.raises(zspace.ZSpaceFailed):
        solve_node(prob, 1, None, None, solver="zspace")
    res = solve_node(prob, 1, None, None, rel_tol=1e-9)  # n <= 100: auto tries z-space first
    opt, _ = brute_force(X, y, 1, "squared", 0.3)
    assert np.isfinite(res.lower_bound)
    assert res.lower_bound <= res.objective * (1 + 1e-12)
    assert res.lower_bound <= opt * (1 + 1e-12)  # a valid bound of the sparse problem
    # the end-to-end run certifies the enumerated optimum
    fit = sparsecert.certify(X, y, k=1, lambda2=0.3, fit_intercept=False, verbose=0)
    assert fit.status == "optimal"
    assert fit.objective == pytest.approx(opt, rel=1e-6)
