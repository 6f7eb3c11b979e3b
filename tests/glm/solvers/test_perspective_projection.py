"""The exact capped-simplex projection of the z-space solver, against cvxpy."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecert.solvers.perspective._zspace import project_capped


@pytest.mark.parametrize("seed", range(12))
def test_projection_matches_cvxpy(seed):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(seed)
    p = int(rng.integers(1, 40))
    k = int(rng.integers(1, p + 1))
    v = rng.normal(size=p) * rng.choice([0.3, 1.0, 5.0]) + rng.choice([0.0, 0.5, 2.0])
    if seed % 3 == 0:
        v[: p // 2] = v[0]  # ties
    z = project_capped(v, float(k))
    assert z.min() >= 0.0 and z.max() <= 1.0 and z.sum() <= k + 1e-9
    x = cp.Variable(p)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, x <= 1, cp.sum(x) <= k])
    prob.solve(solver=cp.CLARABEL)
    ours = float(np.sum((z - v) ** 2))
    assert ours <= prob.value + 1e-6 * max(1.0, prob.value)
    # cvxpy's value is the optimum up to its accuracy
    assert ours >= prob.value - 1e-5 * max(1.0, prob.value)


def test_projection_inside_is_identity_and_budget_binds():
    v = np.array([0.2, 0.5, 0.1])
    assert np.array_equal(project_capped(v, 2.0), v)
    z = project_capped(np.array([3.0, 2.0, 1.0, 0.5]), 1.0)
    assert z.sum() == pytest.approx(1.0)
    assert z[0] == pytest.approx(1.0)


@pytest.mark.parametrize("dense_max", [10, 2000])
def test_extreme_eigenvalues_match_lapack(dense_max):
    from sparsecert.solvers.perspective.problem import _extreme_eigenvalues, safe_eig_shift

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 60))
    G = X.T @ X
    w = np.linalg.eigvalsh(G)
    lo, hi = _extreme_eigenvalues(G, dense_max=dense_max)
    assert lo == pytest.approx(w[0], rel=1e-8)
    assert hi == pytest.approx(w[-1], rel=1e-8)
    mu = safe_eig_shift(X)
    assert 0.99 * w[0] <= mu < w[0]
    np.linalg.cholesky(G - mu * np.eye(60))  # the shift is proven safe
