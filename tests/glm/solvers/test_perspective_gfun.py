"""g, g*, the prox (and the node variant) against cvxpy; Moreau identity; Fenchel-Young."""

import cvxpy as cp
import numpy as np
import pytest

from sparsecert.solvers.perspective._gfun import g_node, g_value, gstar, gstar_node, huber
from sparsecert.solvers.perspective._prox import prox_g, prox_gstar, prox_node

INF = np.inf


def _cvx_g(b, k, M):
    """g(b) as a small SOCP in z (quad_over_lin)."""
    p = b.shape[0]
    z = cp.Variable(p)
    cons = [z >= 0, z <= 1, cp.sum(z) <= k]
    if M < INF:
        cons.append(np.abs(b) <= M * z)
    obj = 0.5 * sum(cp.quad_over_lin(b[j], z[j]) for j in range(p))
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def _cvx_gstar_expr(a, k, M):
    h = 0.5 * cp.square(a) if M == INF else 0.5 * cp.huber(a, M)
    return cp.sum_largest(h, k)


def _in_domain(rng, p, k, M):
    b = rng.standard_normal(p)
    b[rng.random(p) < 0.2] = 0.0
    if M < INF:
        b *= 0.9 * min(M / np.abs(b).max(), k * M / np.abs(b).sum())
    return b


@pytest.mark.parametrize("M", [INF, 0.7])
@pytest.mark.parametrize("k", [1, 3, 8])
def test_g_against_cvxpy(k, M):
    rng = np.random.default_rng(10 + k)
    p = 8
    for trial in range(3):
        b = _in_domain(rng, p, k, M)
        if trial == 2:  # ties
            b[:4] = np.sign(b[:4] + 1e-3) * np.abs(b).max()
            if M < INF:
                b *= 0.9 * min(M / np.abs(b).max(), k * M / np.abs(b).sum())
        ref = _cvx_g(b, k, M)
        assert g_value(b, k, M) == pytest.approx(ref, rel=1e-6, abs=1e-8)


def test_g_domain_and_sparse_case():
    b = np.array([0.0, 2.0, -1.0, 0.0])
    assert g_value(b, 2, INF) == pytest.approx(0.5 * 5.0)
    assert g_value(b, 2, 1.5) == INF  # ||b||_inf > M
    assert g_value(np.array([1.0, 1.0, 1.0]), 1, 1.5) == INF  # ||b||_1 > k M
    assert g_value(np.array([1.0, 1.0, 1.0]), 1, INF) == pytest.approx(4.5)  # (sum|b|)^2/2


@pytest.mark.parametrize("M", [INF, 0.8])
@pytest.mark.parametrize("k", [1, 2, 6])
def test_gstar_against_cvxpy(k, M):
    rng = np.random.default_rng(20 + k)
    p = 6
    for trial in range(3):
        a = 1.5 * rng.standard_normal(p)
        if trial == 1:
            a[:3] = 1.1  # ties
        ref = _cvx_gstar_expr(a, k, M).value
        assert gstar(a, k, M) == pytest.approx(ref, rel=1e-12, abs=1e-14)
    assert huber(3.0, 1.0) == pytest.approx(0.5 * cp.huber(3.0, 1.0).value)


@pytest.mark.parametrize("M", [INF, 1.0])
def test_gstar_is_the_conjugate_of_g(M):
    """g*(a) = sup_b a.b - g(b), the sup computed by cvxpy over the perspective variables."""
    rng = np.random.default_rng(5)
    p, k = 6, 2
    a = 1.5 * rng.standard_normal(p)
    b = cp.Variable(p)
    z = cp.Variable(p)
    s = cp.Variable(p)
    cons = [z >= 0, z <= 1, cp.sum(z) <= k] + [cp.quad_over_lin(b[j], z[j]) <= s[j]
                                                for j in range(p)]
    if M < INF:
        cons.append(cp.abs(b) <= M * z)
    prob = cp.Problem(cp.Maximize(a @ b - 0.5 * cp.sum(s)), cons)
    prob.solve(solver=cp.CLARABEL)
    assert gstar(a, k, M) == pytest.approx(prob.value, rel=1e-6, abs=1e-8)


def _cvx_prox_g_value(v, k, tau, M, fixed_in=(), fixed_out=()):
    p = v.shape[0]
    x = cp.Variable(p)
    z = cp.Variable(p)
    s = cp.Variable(p)
    cons = [z >= 0, z <= 1] + [cp.quad_over_lin(x[j], z[j]) <= s[j] for j in range(p)]
    free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
    cons.append(cp.sum(z[free]) <= k - len(fixed_in)) if free else None
    for j in fixed_in:
        cons.append(z[j] == 1)
    for j in fixed_out:
        cons += [z[j] == 0, x[j] == 0]
    if M < INF:
        cons.append(cp.abs(x) <= M * z)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x - v) + 0.5 * tau * cp.sum(s)), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value, x.value


@pytest.mark.parametrize("M", [INF, 0.6])
@pytest.mark.parametrize("k", [1, 3, 7])
def test_prox_g_against_cvxpy(k, M):
    rng = np.random.default_rng(30 + k)
    p = 7
    for tau in (0.3, 2.0):
        v = 2 * rng.standard_normal(p)
        x = prox_g(v, k, tau, M)
        ours = 0.5 * np.sum((x - v) ** 2) + tau * g_value(x, k, M)
        ref, xref = _cvx_prox_g_value(v, k, tau, M)
        assert ours == pytest.approx(ref, rel=1e-6, abs=1e-7)
        assert ours <= ref + 1e-7 * max(1, abs(ref))
        np.testing.assert_allclose(x, xref, atol=2e-4)


@pytest.mark.parametrize("M", [INF, 0.9])
def test_prox_gstar_against_cvxpy(M):
    rng = np.random.default_rng(41)
    p, k, rho = 7, 3, 0.8
    mu = 2 * rng.standard_normal(p)
    a = cp.Variable(p)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(a - mu) + rho * _cvx_gstar_expr(a, k, M)))
    prob.solve(solver=cp.CLARABEL)
    ours = prox_gstar(mu, k, rho, M)
    val = 0.5 * np.sum((ours - mu) ** 2) + rho * gstar(ours, k, M)
    assert val == pytest.approx(prob.value, rel=1e-7, abs=1e-8)
    np.testing.assert_allclose(ours, a.value, atol=1e-4)


@pytest.mark.parametrize("M", [INF, 0.5])
def test_moreau_identity_and_fenchel_young(M):
    rng = np.random.default_rng(50)
    p, k, tau = 9, 3, 0.7
    for _ in range(5):
        v = 2 * rng.standard_normal(p)
        x = prox_g(v, k, tau, M)
        a = prox_gstar(v / tau, k, 1.0 / tau, M)
        np.testing.assert_allclose(x + tau * a, v, atol=1e-12)
        # a = (v - x)/tau is a subgradient of g at x: Fenchel-Young holds with equality
        assert g_value(x, k, M) + gstar(a, k, M) == pytest.approx(a @ x, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("M", [INF, 0.7])
def test_prox_node_against_cvxpy(M):
    rng = np.random.default_rng(60)
    p, k, tau = 7, 3, 0.9
    v = 2 * rng.standard_normal(p)
    state = np.array([2, 1, 0, 2, 2, 2, 0], dtype=np.int8)
    x = prox_node(v, state, k - 1, tau, M)
    assert x[2] == 0 and x[6] == 0
    ours = 0.5 * np.sum((x - v) ** 2) + tau * g_node(x, state, k - 1, M)
    ref, _ = _cvx_prox_g_value(v, k, tau, M, fixed_in=(1,), fixed_out=(2, 6))
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-7)
    # g*_node against an independent numpy evaluation
    a = rng.standard_normal(p)
    h = np.array([huber(t, M) for t in a])
    ref_gs = h[1] + np.sort(h[[0, 3, 4, 5]])[::-1][:2].sum()
    assert gstar_node(a, state, k - 1, M) == pytest.approx(ref_gs, rel=1e-14)


def test_prox_edge_budgets():
    v = np.array([3.0, -1.0, 0.5])
    np.testing.assert_array_equal(prox_g(v, 0, 1.0, INF), np.zeros(3))
    # budget >= p: plain ridge + box
    np.testing.assert_allclose(prox_g(v, 3, 1.0, INF), v / 2.0)
    np.testing.assert_allclose(prox_g(v, 5, 1.0, 1.2), np.clip(v / 2.0, -1.2, 1.2))


@pytest.mark.parametrize("M", [INF, 0.9])
def test_relaxed_z_attains_g(M):
    """z from relaxed_z is feasible and attains g_node (independent numpy evaluation)."""
    from sparsecert.solvers.perspective._gfun import relaxed_z

    rng = np.random.default_rng(70)
    p, k = 9, 4
    state = np.array([1, 2, 2, 0, 2, 2, 2, 2, 2], dtype=np.int8)
    for _ in range(5):
        b = rng.standard_normal(p)
        b[3] = 0.0
        if M < INF:
            b *= 0.8 * min(M / np.abs(b).max(), (k - 1) * M / np.abs(b[state == 2]).sum())
        z = relaxed_z(b, state, k - 1)
        assert z[0] == 1 and z[3] == 0
        assert np.all(z >= 0) and np.all(z <= 1 + 1e-12) and z[state == 2].sum() <= k - 1 + 1e-9
        if M < INF:
            assert np.all(np.abs(b) <= M * z + 1e-12)
        nz = z > 0
        val = 0.5 * np.sum(b[nz] ** 2 / z[nz])
        assert val == pytest.approx(g_node(b, state, k - 1, M), rel=1e-10)
