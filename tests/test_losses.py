"""Losses: values, gradients and conjugates against independent references (scipy, closed forms)."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from sparsecert.solvers.losses import get_loss, spectral_norm_sq

LOSSES = ["squared", "logistic", "squared_hinge", "poisson"]


def _f_scalar(name, u, y):
    """Independent scalar definitions (numpy, not the kernels)."""
    if name == "squared":
        return (y - u) ** 2
    if name == "logistic":
        return np.logaddexp(0.0, -y * u)
    if name == "squared_hinge":
        return max(0.0, 1.0 - y * u) ** 2
    return np.exp(u) - y * u


def _labels(name, rng, n):
    if name == "squared":
        return rng.standard_normal(n)
    if name in ("logistic", "squared_hinge"):
        return rng.choice([-1.0, 1.0], size=n)
    return rng.poisson(2.0, size=n).astype(float)


def _dual_points(name, y, rng):
    """Points strictly inside the conjugate's domain."""
    n = y.shape[0]
    if name == "squared":
        return 3 * rng.standard_normal(n)
    if name == "logistic":
        return -y * rng.uniform(0.02, 0.98, n)
    if name == "squared_hinge":
        return -y * rng.uniform(0.05, 3.0, n)
    return rng.uniform(0.05, 3.0, n) - y


@pytest.mark.parametrize("name", LOSSES)
def test_value_and_gradient(name):
    rng = np.random.default_rng(1)
    n = 7
    u = rng.standard_normal(n)
    y = _labels(name, rng, n)
    loss = get_loss(name)
    ref = sum(_f_scalar(name, u[i], y[i]) for i in range(n))
    assert loss.value(u, y) == pytest.approx(ref, rel=1e-12)
    g = loss.gradient(u, y)
    h = 1e-6
    for i in range(n):
        fd = (_f_scalar(name, u[i] + h, y[i]) - _f_scalar(name, u[i] - h, y[i])) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("name", LOSSES)
def test_conjugate_against_numerical_sup(name):
    rng = np.random.default_rng(2)
    n = 6
    y = _labels(name, rng, n)
    z = _dual_points(name, y, rng)
    conj = get_loss(name).conjugate(z, y)
    for i in range(n):
        res = minimize_scalar(lambda u, i=i: -(z[i] * u - _f_scalar(name, u, y[i])),
                              bounds=(-40, 40), method="bounded",
                              options={"xatol": 1e-12, "maxiter": 2000})
        assert conj[i] == pytest.approx(-res.fun, rel=1e-6, abs=1e-7)
    assert np.all(get_loss(name).in_dual_domain(z, y))
    assert get_loss(name).conjugate_sum(z, y) == pytest.approx(conj.sum(), rel=1e-12)


@pytest.mark.parametrize("name", ["logistic", "squared_hinge", "poisson"])
def test_conjugate_outside_domain_is_inf(name):
    y = np.array([1.0, 1.0]) if name != "poisson" else np.array([1.0, 0.0])
    z = np.array([0.5, -0.5]) if name != "poisson" else np.array([-0.5, -2.0])
    if name == "logistic":
        z = np.array([0.5, -1.5])  # t = -y z = -0.5, 1.5: both outside [0, 1]
    assert not np.all(get_loss(name).in_dual_domain(z, y))
    assert get_loss(name).conjugate_sum(z, y) == np.inf
    # the sup really is unbounded there: the objective keeps growing
    u = 30.0 if z[0] * y[0] > 0 or name == "poisson" else -30.0
    if name != "poisson":
        assert z[0] * u - _f_scalar(name, u, y[0]) > 5.0


@pytest.mark.parametrize("name", LOSSES)
def test_fenchel_young_equality(name):
    rng = np.random.default_rng(3)
    n = 9
    u = rng.standard_normal(n)
    y = _labels(name, rng, n)
    loss = get_loss(name)
    z = loss.gradient(u, y)
    assert loss.value(u, y) + loss.conjugate_sum(z, y) == pytest.approx(z @ u, rel=1e-10,
                                                                         abs=1e-10)


def test_lipschitz_constants():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((90, 70))
    s2 = np.linalg.svd(X, compute_uv=False)[0] ** 2
    assert spectral_norm_sq(X) == pytest.approx(s2, rel=1e-6)
    assert get_loss("squared").lipschitz(X) == pytest.approx(2 * s2, rel=1e-6)
    assert get_loss("logistic").lipschitz(X) == pytest.approx(0.25 * s2, rel=1e-6)
    assert get_loss("squared_hinge").lipschitz(X) == pytest.approx(2 * s2, rel=1e-6)
    assert get_loss("poisson").lipschitz(X) is None


def test_unknown_loss():
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("hinge")
