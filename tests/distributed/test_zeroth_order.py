"""Tests of the two-point Gaussian-smoothing estimators (independent closed-form references)."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecert.distributed.dtzo.zeroth_order import (
    ZOConfig,
    perturbation_points,
    sample_directions,
    zo_gradient,
    zo_jacobian,
)


def _quadratic(d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, d))
    A = B @ B.T / d + np.eye(d)  # symmetric positive definite
    A[0, 1] += 0.3  # the value only sees the symmetric part; keep the gradient honest
    A = 0.5 * (A + A.T)
    b = rng.standard_normal(d)

    def f(X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(X)
        return 0.5 * np.einsum("md,de,me->m", X, A, X) + X @ b

    return f, A, b


def test_central_difference_is_exact_directional_derivative_on_quadratics():
    d = 6
    f, A, b = _quadratic(d)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(d)
    grad = A @ x + b
    for mu in (1e-3, 0.1, 2.0):  # exact for any radius, not only small ones
        U = rng.standard_normal((5, d))
        pts = perturbation_points(x[None, :], U, mu, "central")
        v = f(pts)
        dd = (v[:5] - v[5:]) / (2 * mu)
        np.testing.assert_allclose(dd, U @ grad, rtol=1e-9, atol=1e-9 * (1 + mu**2))


def test_full_orthogonal_frame_gives_exact_gradient_of_quadratic():
    d = 7
    f, A, b = _quadratic(d, seed=3)
    x = np.linspace(-1, 1, d)
    cfg = ZOConfig(q=None, mu=0.5, scheme="central", directions="orthogonal")
    g, nq = zo_gradient(f, x, np.random.default_rng(0), cfg)
    np.testing.assert_allclose(g, A @ x + b, rtol=1e-10, atol=1e-10)
    assert nq == 2 * d


def test_forward_equals_central_plus_known_offset_per_direction():
    d = 5
    f, A, b = _quadratic(d, seed=4)
    rng = np.random.default_rng(2)
    x = rng.standard_normal(d)
    mu = 0.3
    U = sample_directions(rng, d, 4, "gaussian")
    fwd = perturbation_points(x[None, :], U, mu, "forward")
    vf = f(fwd)
    forward_dd = (vf[1:] - vf[0]) / mu
    offset = 0.5 * mu * np.einsum("qd,de,qe->q", U, A, U)
    np.testing.assert_allclose(forward_dd, U @ (A @ x + b) + offset, rtol=1e-10, atol=1e-10)


def test_forward_estimator_mean_is_gradient_within_clt_bounds():
    """E[(f(x+mu u) - f(x))/mu u] = grad f_mu(x) = grad f(x) for a quadratic (the offset
    (mu/2) u^T A u u has mean zero): Monte Carlo within 5 standard errors."""
    d = 3
    f, A, b = _quadratic(d, seed=5)
    x = np.array([0.5, -1.0, 0.2])
    mu, n = 0.5, 40000
    rng = np.random.default_rng(7)
    U = rng.standard_normal((n, d))
    vals = (f(x + mu * U) - f(x[None, :])) / mu
    samples = vals[:, None] * U
    mean = samples.mean(0)
    se = samples.std(0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(mean - (A @ x + b)) <= 5 * se)
    # the per-sample offset is real (not a vacuous test): it has a visible variance
    offset = 0.5 * mu * np.einsum("nd,de,ne->n", U, A, U)[:, None] * U
    assert offset.std(0).min() > 0.1


def test_smoothed_value_offset_on_quadratic_within_clt_bounds():
    """f_mu(x) = E f(x + mu u) = f(x) + mu^2 tr(A) / 2."""
    d = 4
    f, A, b = _quadratic(d, seed=6)
    x = np.ones(d)
    mu, n = 0.8, 40000
    rng = np.random.default_rng(8)
    vals = f(x + mu * rng.standard_normal((n, d)))
    se = vals.std(ddof=1) / np.sqrt(n)
    expected = f(x[None, :])[0] + 0.5 * mu**2 * np.trace(A)
    assert abs(vals.mean() - expected) <= 5 * se
    assert abs(vals.mean() - f(x[None, :])[0]) > 10 * se  # the offset is detectable


def test_gaussian_central_estimator_unbiased_within_clt_bounds():
    d = 4
    f, A, b = _quadratic(d, seed=9)
    x = np.array([1.0, 0.0, -0.5, 2.0])
    cfg = ZOConfig(q=2, mu=1e-3, scheme="central", directions="gaussian")
    rng = np.random.default_rng(10)
    est = np.array([zo_gradient(f, x, rng, cfg)[0] for _ in range(4000)])
    se = est.std(0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(est.mean(0) - (A @ x + b)) <= 5 * se)


def test_jacobian_exact_for_affine_map_with_full_frame():
    rng = np.random.default_rng(11)
    M = rng.standard_normal((3, 5))
    c = rng.standard_normal(3)
    x = rng.standard_normal(5)
    U = sample_directions(rng, 5, 5, "orthogonal")
    val, J = zo_jacobian(lambda P: P @ M.T + c, x, U, 0.7, "orthogonal")
    np.testing.assert_allclose(J, M, atol=1e-10)
    np.testing.assert_allclose(val, M @ x + c, atol=1e-12)


def test_orthogonal_directions_are_orthonormal():
    U = sample_directions(np.random.default_rng(0), 6, 4, "orthogonal")
    np.testing.assert_allclose(U @ U.T, np.eye(4), atol=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [dict(q=0), dict(q=1.5), dict(mu=0.0), dict(mu=float("nan")), dict(scheme="backward"),
     dict(directions="sphere")],
)
def test_bad_config_raises(kwargs):
    with pytest.raises(ValueError):
        ZOConfig(**kwargs)


def test_orthogonal_more_directions_than_dimension_raises():
    with pytest.raises(ValueError, match="q <= d"):
        ZOConfig(q=5, directions="orthogonal").n_dirs(3)


def test_nonfinite_point_raises():
    with pytest.raises(ValueError, match="finite"):
        zo_gradient(lambda X: X.sum(1), np.array([0.0, np.nan]), np.random.default_rng(0),
                    ZOConfig())
