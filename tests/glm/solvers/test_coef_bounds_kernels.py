"""The perspective term with per-coefficient bounds: ``g``, ``g*``, the relaxed ``z`` and the exact
prox against cvxpy (random instances with signs, infinite ends, sign constraints, the symmetric box
as a special case) and against the symmetric kernels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sparsecert.solvers.perspective._coef_bounds import (
    coef_bounds,
    g_node_b,
    gstar_node_b,
    h_bounded,
    relaxed_z_b,
)
from sparsecert.solvers.perspective._coef_bounds_prox import prox_node_b
from sparsecert.solvers.perspective._gfun import FREE, IN, OUT, g_node, gstar_node
from sparsecert.solvers.perspective._prox import prox_node

cp = pytest.importorskip("cvxpy")


def _bounds(rng, p, kind):
    if kind == "mixed":
        lo = -rng.choice([0.0, 0.3, 1.0, np.inf], p)
        hi = rng.choice([0.0, 0.5, 2.0, np.inf], p)
    elif kind == "positive":
        lo, hi = np.zeros(p), np.full(p, np.inf)
    elif kind == "positive_box":
        lo, hi = np.zeros(p), np.full(p, 0.8)
    else:  # the symmetric box
        lo, hi = np.full(p, -0.7), np.full(p, 0.7)
    return lo, hi


def _state(rng, p, n_in, n_out):
    st = np.full(p, FREE, dtype=np.int8)
    perm = rng.permutation(p)
    st[perm[:n_in]] = IN
    st[perm[n_in:n_in + n_out]] = OUT
    return st


def _g_cvxpy(b, state, budget, lo, hi):
    """min_z sum b_j^2 / (2 z_j) with the node's constraints (cvxpy, perspective)."""
    p = b.size
    z = cp.Variable(p)
    cons = [z >= 0, z <= 1]
    for j in range(p):
        if state[j] == IN:
            cons.append(z[j] == 1)
        elif state[j] == OUT:
            cons.append(z[j] == 0)
        if np.isfinite(hi[j]):
            cons.append(b[j] <= hi[j] * z[j])
        if np.isfinite(lo[j]):
            cons.append(b[j] >= lo[j] * z[j])
    free = np.flatnonzero(state == FREE)
    if free.size:
        cons.append(cp.sum(z[free]) <= budget)
    obj = sum(cp.quad_over_lin(b[j], z[j]) for j in range(p) if b[j] != 0) / 2
    prob = cp.Problem(cp.Minimize(obj if not isinstance(obj, int) else 0), cons)
    prob.solve(solver="CLARABEL")
    return prob.value if prob.status in ("optimal", "optimal_inaccurate") else np.inf


def _prox_cvxpy(v, state, budget, tau, lo, hi):
    p = v.size
    b, z = cp.Variable(p), cp.Variable(p)
    cons = [z >= 0, z <= 1]
    for j in range(p):
        if state[j] == IN:
            cons.append(z[j] == 1)
        elif state[j] == OUT:
            cons += [z[j] == 0, b[j] == 0]
        if np.isfinite(hi[j]):
            cons.append(b[j] <= hi[j] * z[j])
        if np.isfinite(lo[j]):
            cons.append(b[j] >= lo[j] * z[j])
    free = np.flatnonzero(state == FREE)
    if free.size:
        cons.append(cp.sum(z[free]) <= budget)
    obj = 0.5 * cp.sum_squares(b - v) + tau / 2 * sum(cp.quad_over_lin(b[j], z[j])
                                                      for j in range(p))
    cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL", tol_gap_abs=1e-11,
                                             tol_gap_rel=1e-11, tol_feas=1e-11)
    return b.value


def test_h_is_the_bounded_conjugate_of_the_quadratic():
    for lo, hi in ((-1.0, 2.0), (0.0, np.inf), (-np.inf, 0.0), (0.0, 0.0), (-np.inf, np.inf)):
        grid = np.linspace(max(lo, -6.0), min(hi, 6.0), 24001)
        for t in (-3.0, -0.8, -0.1, 0.0, 0.4, 1.5, 5.0):
            assert h_bounded(t, lo, hi) == pytest.approx(float(np.max(t * grid - grid ** 2 / 2)),
                                                         abs=1e-6)


@pytest.mark.parametrize("kind", ["mixed", "positive", "positive_box", "box"])
def test_gstar_is_the_top_sum_of_the_bounded_terms_and_the_box_reduces(kind):
    rng = np.random.default_rng(0)
    p, k = 9, 3
    lo, hi = _bounds(rng, p, kind)
    for _ in range(20):
        a = 2.0 * rng.standard_normal(p)
        st = _state(rng, p, 1, 2)
        h = np.array([h_bounded(a[j], lo[j], hi[j]) for j in range(p)])
        free = np.flatnonzero(st == FREE)
        ref = h[st == IN].sum() + np.sort(h[free])[::-1][:k - 1].sum()
        assert gstar_node_b(a, st, k - 1, coef_bounds(lo, hi)) == pytest.approx(ref, rel=1e-14)
        if kind == "box":
            assert gstar_node_b(a, st, k - 1, coef_bounds(lo, hi)) == pytest.approx(
                gstar_node(a, st, k - 1, 0.7), rel=1e-15)


@pytest.mark.parametrize("kind", ["mixed", "positive", "positive_box", "box"])
def test_g_and_relaxed_z_match_cvxpy(kind):
    rng = np.random.default_rng(1)
    p = 7
    lo, hi = _bounds(rng, p, kind)
    bnd = coef_bounds(lo, hi)
    checked = 0
    for trial in range(40):
        st = _state(rng, p, int(trial % 2), int(trial % 3 == 0))
        budget = int(rng.integers(1, 4))
        b = rng.standard_normal(p) * rng.choice([0.0, 0.3, 1.0], p)
        b = np.clip(b, 0.9 * lo, 0.9 * hi)
        b[st == OUT] = 0.0
        ref = _g_cvxpy(b, st, budget, lo, hi)
        ours = g_node_b(b, st, budget, bnd)
        if not np.isfinite(ref):
            assert ours == np.inf
            continue
        checked += 1
        assert ours == pytest.approx(ref, rel=1e-6, abs=1e-8)
        z = relaxed_z_b(b, st, budget, bnd)
        free = st == FREE
        assert z[free].sum() <= budget + 1e-9 and ((z >= -1e-12) & (z <= 1 + 1e-12)).all()
        nz = b != 0
        assert 0.5 * np.sum(b[nz] ** 2 / z[nz]) == pytest.approx(ours, rel=1e-9)
        hz = np.where(np.isfinite(hi), hi * z, np.inf)
        lz = np.where(np.isfinite(lo), lo * z, -np.inf)
        assert (b <= hz + 1e-12).all() and (b >= lz - 1e-12).all()
        if kind == "box":
            assert ours == pytest.approx(g_node(b, st, budget, 0.7), rel=1e-12)
    assert checked >= 15


@pytest.mark.parametrize("kind", ["mixed", "positive", "positive_box", "box"])
def test_the_exact_prox_matches_cvxpy(kind):
    rng = np.random.default_rng(2 + len(kind))
    p = 8
    for trial in range(25):
        lo, hi = _bounds(rng, p, kind)
        bnd = coef_bounds(lo, hi)
        st = _state(rng, p, int(trial % 2), int(trial % 3 == 1))
        budget = int(rng.integers(1, 4))
        tau = float(rng.choice([0.1, 0.5, 2.0]))
        v = 2.0 * rng.standard_normal(p)
        ours = prox_node_b(v, st, budget, tau, bnd)
        ref = _prox_cvxpy(v, st, budget, tau, lo, hi)
        np.testing.assert_allclose(ours, ref, atol=2e-5, rtol=2e-5)
        # the objective is not above the reference's
        obj_ours = 0.5 * np.sum((ours - v) ** 2) + tau * g_node_b(ours, st, budget, bnd)
        refc = np.clip(ref, lo, hi) * (st != OUT)
        obj_ref = 0.5 * np.sum((refc - v) ** 2) + tau * g_node_b(refc, st, budget, bnd)
        assert obj_ours <= obj_ref + 1e-7
        if kind == "box":
            np.testing.assert_allclose(ours, prox_node(v, st, budget, tau, 0.7), atol=1e-13)


def test_heterogeneous_bounds_take_the_general_path_and_ties_are_exact():
    """Distinct finite side bounds (no common M): the theta search with both kinds of clamps,
    including equal magnitudes."""
    rng = np.random.default_rng(9)
    p = 10
    lo = -np.array([0.2, 0.5, 1.0, np.inf, 0.3, 0.0, 2.0, 0.6, 0.25, 1.5])
    hi = np.array([0.3, 0.4, np.inf, 1.2, 0.7, 0.9, 0.1, 0.6, 2.5, 0.05])
    bnd = coef_bounds(lo, hi)
    st = np.full(p, FREE, dtype=np.int8)
    for budget, tau in itertools.product((1, 2, 4), (0.05, 0.3, 1.5)):
        v = 3.0 * rng.standard_normal(p)
        v[3] = v[4] = 1.7  # a tie
        ours = prox_node_b(v, st, budget, tau, bnd)
        ref = _prox_cvxpy(v, st, budget, tau, lo, hi)
        np.testing.assert_allclose(ours, ref, atol=2e-5, rtol=2e-5)
