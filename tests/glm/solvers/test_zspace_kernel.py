"""The compiled z-space node solve (least squares, p >> n) against numpy, cvxpy, the former
Python loop and brute-force enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from _bruteforce import brute_force

import sparsecert
from sparsecert.solvers.perspective import RelaxationProblem, solve_node
from sparsecert.solvers.perspective import zspace as zspace_mod
from sparsecert.solvers.perspective._fista import fista_data
from sparsecert.solvers.perspective._linalg import dense_design
from sparsecert.solvers.perspective._zspace import (
    ZColumns,
    ZPoint,
    project_capped,
    zspace_bound,
    zspace_eval,
    zspace_work,
)

FREE, IN, OUT = 2, 1, 0


def _wide(n=7, p=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + 1.5  # a common mode, like riboflavin
    y = X[:, [0, 4, 9]] @ np.array([1.0, -1.0, 0.5]) + 0.3 * rng.standard_normal(n)
    return X, y


def _state(p, fin=(), fout=()):
    st = np.full(p, FREE, dtype=np.int8)
    st[list(fin)] = IN
    st[list(fout)] = OUT
    return st


def _data(X, y, lam, act):
    """The kernels' records on the active columns ``act`` (no intercept, box or shift)."""
    XA = np.ascontiguousarray(X[:, act])
    XTA = np.ascontiguousarray(X.T[act])
    prob = RelaxationProblem.from_data(X, y, lam)
    return fista_data(prob, dense_design(XA, XTA)), XTA


def _eval(X, y, lam, state, zf):
    act = np.flatnonzero(state != OUT)
    stA = np.ascontiguousarray(state[act])
    freeA = np.flatnonzero(stA == FREE)
    data, XTA = _data(X, y, lam, act)
    n, m = X.shape[0], act.size
    point = ZPoint(np.empty(n), np.empty(m), np.empty(freeA.size))
    phi = zspace_eval(data, ZColumns(freeA, np.einsum("ij,ij->i", XTA, XTA)), stA, zf,
                      zspace_work(n, m), point)
    return phi, point.alpha, point.c, point.grad, act, stA, freeA


@pytest.mark.parametrize("n_pos", [2, 5, 20])  # support of z below and above n = 7
def test_eval_matches_a_dense_solve(n_pos):
    X, y = _wide()
    lam = 0.6
    state = _state(X.shape[1], fin=(3,), fout=(0, 11))
    free = np.flatnonzero(state == FREE)
    rng = np.random.default_rng(n_pos)
    zf = np.zeros(free.size)
    zf[rng.choice(free.size, n_pos, replace=False)] = rng.uniform(0.05, 1.0, n_pos)
    phi, alpha, c, grad, act, _, _ = _eval(X, y, lam, state, zf)
    z = np.zeros(X.shape[1])
    z[state == IN] = 1.0
    z[free] = zf
    K = np.eye(X.shape[0]) + (X * (z / lam)) @ X.T
    ref = np.linalg.solve(K, y)
    np.testing.assert_allclose(alpha, ref, rtol=1e-10, atol=1e-12)
    assert phi == pytest.approx(y @ ref, rel=1e-12)
    np.testing.assert_allclose(c, X[:, act].T @ ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, -(X[:, free].T @ ref) ** 2 / lam, rtol=1e-10, atol=1e-12)
    # phi(z) = min_b ||y - X b||^2 + lam sum b_j^2 / z_j, attained at b = z X^T alpha / lam
    S = np.flatnonzero(z > 0)
    b = z[S] * (X[:, S].T @ ref) / lam
    assert phi == pytest.approx(np.sum((y - X[:, S] @ b) ** 2) + lam * np.sum(b * b / z[S]),
                                rel=1e-10)


def test_eval_reports_a_system_lost_to_rounding():
    X, y = _wide(n=5, p=12)
    X[:, 2] *= 1e9  # ||x_2||^2 / lambda2 beyond the trace limit
    state = _state(12)
    zf = np.full(12, 0.5)
    assert np.isnan(_eval(X, y, 1.0, state, zf)[0])


def test_bound_is_a_valid_dual_value_at_any_alpha():
    cp = pytest.importorskip("cvxpy")
    from test_perspective_relaxation import _cvx_relaxation

    X, y = _wide(n=6, p=14, seed=2)
    lam, k = 0.8, 3
    fin, fout = (5,), (1, 2)
    state = _state(14, fin, fout)
    budget = k - len(fin)
    ref = _cvx_relaxation(X, y, k, lam, "squared", np.inf, fin, fout)
    act = np.flatnonzero(state != OUT)
    stA = np.ascontiguousarray(state[act])
    rng = np.random.default_rng(0)
    for _ in range(5):
        alpha = rng.standard_normal(6) * rng.uniform(0.1, 3.0)
        c = X[:, act].T @ alpha
        data, _ = _data(X, y, lam, act)
        lb = zspace_bound(data, stA, budget, ZPoint(alpha, c, np.empty(0)), np.empty(act.size))
        h = 0.5 * (c / lam) ** 2
        g = h[stA == IN].sum() + np.sort(h[stA == FREE])[::-1][:budget].sum()
        assert lb == pytest.approx(2 * y @ alpha - alpha @ alpha - 2 * lam * g, rel=1e-12)
        assert lb <= ref * (1 + 1e-9)
    assert cp is not None


def _reference_loop(X, y, lam, state, budget, zf, rel_tol, max_iter):
    """The former Python z-space loop (n x n solves with numpy): (best bound, phi at the end,
    iterations)."""
    free = np.flatnonzero(state == FREE)
    n = X.shape[0]

    def ev(zf):
        z = np.where(state == IN, 1.0, 0.0)
        z[free] = zf
        alpha = np.linalg.solve(np.eye(n) + (X * (z / lam)) @ X.T, y)
        c = X.T @ alpha
        return float(y @ alpha), -(c[free] ** 2) / lam, alpha, c

    def bound(alpha, c):
        h = np.where(state != OUT, 0.5 * (c / lam) ** 2, 0.0)
        g = h[state == IN].sum() + np.sort(h[free])[::-1][:budget].sum()
        return 2 * y @ alpha - alpha @ alpha - 2 * lam * g

    f = ev(zf)[0]
    zp = zf.copy()
    t, L, best, it = 1.0, 1.0, -np.inf, 0
    while it < max_iter:
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        yf = project_capped(zf + ((t - 1.0) / tn) * (zf - zp), float(budget))
        fy, gy, ay, cy = ev(yf)
        best = max(best, bound(ay, cy))
        it += 1
        while True:
            zn = project_capped(yf - gy / L, float(budget))
            fn = ev(zn)[0]
            d = zn - yf
            if fn <= fy + gy @ d + 0.5 * L * (d @ d) + 1e-12 * max(1.0, abs(fy)):
                break
            L *= 2.0
        zp, t = (zn.copy(), 1.0) if fn > f else (zf, tn)
        zf, f = zn, fn
        L *= 0.9
        if f - best <= rel_tol * max(1.0, abs(f)):
            break
    return best, f, it


@pytest.mark.parametrize("n,p,k", [(7, 30, 3), (4, 25, 6)])  # z's support below / above n
def test_solver_follows_the_former_python_loop_and_cvxpy(n, p, k):
    from test_perspective_relaxation import _cvx_relaxation

    X, y = _wide(n, p, seed=n)
    lam = 0.5
    fin, fout = (2,), (0, 7)
    state = _state(p, fin, fout)
    budget = k - len(fin)
    prob = RelaxationProblem.from_data(X, y, lam)
    s1, s0 = state == IN, state == OUT
    x0 = np.zeros(p)
    x0[[2, 4, 9, 12]] = [0.5, 1.0, -0.3, 0.2]
    res = solve_node(prob, k, s1, s0, rel_tol=1e-8, solver="zspace", warm_start=x0)
    free = np.flatnonzero(state == FREE)
    from sparsecert.solvers.perspective._gfun import relaxed_z

    zf0 = project_capped(relaxed_z(x0, state, budget)[free].copy(), float(budget))
    best, f, it = _reference_loop(X, y, lam, state, budget, zf0, 1e-8, 20000)
    assert res.status == "converged"
    assert res.n_iter == it  # the same trajectory
    # the node's bound is the loop's best, or the bound at the final point when higher
    assert res.lower_bound >= best - 1e-9 * abs(best)
    assert res.objective <= f * (1 + 1e-9)  # P(b(z)) <= phi(z)
    ref = _cvx_relaxation(X, y, k, lam, "squared", np.inf, fin, fout)
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref * (1 + 1e-9)
    assert np.all(res.coef[s0] == 0) and np.all(res.bound_point[s0] == 0)


def test_chunks_carry_the_run(monkeypatch):
    X, y = _wide(8, 40, seed=5)
    prob = RelaxationProblem.from_data(X, y, 0.4)
    s0 = np.zeros(40, bool)
    s0[[1, 3]] = True
    one = solve_node(prob, 4, None, s0, rel_tol=1e-9, solver="zspace")
    monkeypatch.setattr(zspace_mod, "CHUNK", 1)
    many = solve_node(prob, 4, None, s0, rel_tol=1e-9, solver="zspace")
    assert one.n_iter == many.n_iter > 1
    assert one.lower_bound == many.lower_bound
    np.testing.assert_array_equal(one.coef, many.coef)
    np.testing.assert_array_equal(one.dual, many.dual)
    cut = solve_node(prob, 4, None, s0, rel_tol=1e-9, solver="zspace",
                     cutoff=one.lower_bound - 1e-3 * abs(one.lower_bound))
    assert cut.status == "cutoff" and cut.n_iter < one.n_iter


def test_riboflavin_subproblem_certifies_the_enumerated_optimum():
    from sparsecert.datasets import load_riboflavin

    X, y = load_riboflavin()
    cols = np.argsort(-np.abs((X - X.mean(0)).T @ (y - y.mean())))[:24]  # correlated columns
    X = X[:, cols]
    X = (X - X.mean(0)) / np.linalg.norm(X - X.mean(0), axis=0)
    k, lam = 3, 0.05
    res = sparsecert.certify(X, y, k, lam, verbose=0, eig_shift=None)  # z-space nodes
    assert res.status == "optimal"
    assert res.n_nodes > 1
    opt, support = brute_force(X, y, k, "squared", lam, fit_intercept=True)
    assert res.objective == pytest.approx(opt, rel=1e-8)
    assert tuple(sorted(res.support)) == tuple(sorted(support))
    assert sparsecert.verify(res.certificate, X, y).ok


@pytest.mark.parametrize("p,k,scale", [(3000, 5, 1.0), (3000, 5, 0.01), (500, 40, 3.0),
                                       (50, 3, 100.0), (8, 2, 0.3)])
def test_projection_against_bisection(p, k, scale):
    # the z-space iterates: z plus a gradient step, every entry positive, few near the top
    rng = np.random.default_rng(p + k)
    v = rng.uniform(0, 1, p) * (rng.uniform(0, 1, p) < 0.02) + scale * rng.exponential(1, p) ** 2
    v[:3] = v[3]  # ties
    z = project_capped(v, float(k))
    lo, hi = 0.0, float(v.max())
    for _ in range(200):  # s(tau) = sum clip(v - tau, 0, 1) is non-increasing
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.clip(v - mid, 0, 1).sum() > k else (lo, mid)
    ref = np.clip(v - hi, 0, 1) if np.clip(v, 0, 1).sum() > k else np.clip(v, 0, 1)
    np.testing.assert_allclose(z, ref, atol=1e-12)
    assert z.sum() <= k * (1 + 1e-12)
