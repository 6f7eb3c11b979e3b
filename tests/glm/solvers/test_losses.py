"""The loss registry: values, derivatives and conjugates against independent references (scipy,
closed forms), against the numba kernels and against the standalone verifier's own copy; the
label rule."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from sparsecert.certificate import verify as verifier
from sparsecert.solvers import loss_kernels
from sparsecert.solvers.losses import (
    CLASSIFICATION_LOSSES,
    LOSS_NAMES,
    binary_codes,
    get_loss,
)
from sparsecert.solvers.perspective._linalg import spectral_norm_sq

LOSSES = list(LOSS_NAMES)


def _f_scalar(name, u, y):
    """Independent scalar definitions (numpy, not the kernels)."""
    if name == "squared":
        return (y - u) ** 2
    if name == "logistic":
        return np.logaddexp(0.0, -y * u)
    if name == "squared_hinge":
        return max(0.0, 1.0 - y * u) ** 2
    if name == "huber":  # the registry's default threshold, 1
        r = y - u
        return r * r if abs(r) <= 1.0 else 2.0 * abs(r) - 1.0
    return np.exp(u) - y * u


def _vkw(name):
    """The verifier's loss parameters for the registry's default loss ``name``."""
    return {"huber_delta": 1.0} if name == "huber" else {}


def _labels(name, rng, n):
    if name == "squared":
        return rng.standard_normal(n)
    if name == "huber":  # residuals on both sides of the threshold
        return 2.5 * rng.standard_normal(n)
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
    if name == "huber":  # |z| <= 2 delta
        return rng.uniform(-1.95, 1.95, n)
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


@pytest.mark.parametrize("name", ["logistic", "squared_hinge", "poisson", "huber"])
def test_conjugate_outside_domain_is_inf(name):
    y = np.array([1.0, 1.0]) if name != "poisson" else np.array([1.0, 0.0])
    z = np.array([0.5, -0.5]) if name != "poisson" else np.array([-0.5, -2.0])
    if name == "logistic":
        z = np.array([0.5, -1.5])  # t = -y z = -0.5, 1.5: both outside [0, 1]
    if name == "huber":
        z = np.array([2.5, -(2.0 + 1e-9)])  # |z| > 2 delta = 2
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
    assert get_loss("huber").lipschitz(X) == pytest.approx(2 * s2, rel=1e-6)


def test_unknown_loss():
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("hinge")
    with pytest.raises(TypeError, match="loss must be a string"):
        get_loss(3)


def test_the_names():
    assert LOSSES == ["squared", "logistic", "squared_hinge", "poisson", "huber"]
    assert CLASSIFICATION_LOSSES == ("logistic", "squared_hinge")
    assert sorted(get_loss(n).loss_id for n in LOSSES) == list(range(len(LOSSES)))


def _mixed_dual_points(name, y, rng):
    """Dual points of which about a third lie outside the conjugate's domain."""
    z = _dual_points(name, y, rng)
    out = rng.random(z.size) < 0.35
    if name == "logistic":
        z[out] = -y[out] * rng.choice([-0.5, 1.5], size=out.sum())
    elif name == "squared_hinge":
        z[out] = y[out] * rng.uniform(0.1, 2.0, out.sum())
    elif name == "poisson":
        z[out] = -y[out] - rng.uniform(0.1, 2.0, out.sum())
    elif name == "huber":
        z[out] = rng.choice([-1.0, 1.0], size=out.sum()) * rng.uniform(2.0001, 4.0, out.sum())
    return z


@pytest.mark.parametrize("name", LOSSES)
def test_hessian_against_finite_differences(name):
    rng = np.random.default_rng(5)
    n = 8
    u = rng.standard_normal(n)
    y = _labels(name, rng, n)
    if name == "squared_hinge":
        u = u[np.abs(1 - y * u) > 1e-3]  # away from the kink
        y = y[: u.size]
    if name == "huber":
        keep = np.abs(np.abs(y - u) - 1.0) > 1e-3  # away from the threshold
        u, y = u[keep], y[keep]
    loss = get_loss(name)
    h = 1e-6
    fd = (loss.gradient(u + h, y) - loss.gradient(u - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.hessian(u, y), fd, rtol=1e-5, atol=1e-7)
    hk = np.empty(u.size)
    loss_kernels.loss_hessian(loss.spec, u, y, hk)
    np.testing.assert_allclose(hk, loss.hessian(u, y), rtol=1e-15)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_registry_agrees_with_the_numba_kernels(name, seed):
    """The compiled kernels the relaxation runs and the registry's numpy maths agree."""
    rng = np.random.default_rng(seed)
    n = 25
    u = 2 * rng.standard_normal(n)
    y = _labels(name, rng, n)
    loss = get_loss(name)
    lid = loss.spec
    assert loss_kernels.loss_value(lid, u, y) == pytest.approx(loss.value(u, y), rel=1e-13)
    g = np.empty(n)
    val = loss_kernels.loss_value_grad(lid, u, y, g)
    assert val == pytest.approx(loss.value(u, y), rel=1e-13)
    np.testing.assert_allclose(g, loss.gradient(u, y), rtol=1e-13, atol=1e-15)
    z = _dual_points(name, y, rng)
    assert loss_kernels.conjugate_sum(lid, z, y) == pytest.approx(loss.conjugate_sum(z, y),
                                                                  rel=1e-12, abs=1e-12)
    z = _mixed_dual_points(name, y, rng)
    if not loss.in_dual_domain(z, y).all():
        assert loss_kernels.conjugate_sum(lid, z, y) == np.inf == loss.conjugate_sum(z, y)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_registry_agrees_with_the_verifier(name, seed):
    """The standalone verifier keeps its own copy of the maths, with rigorous rounding bounds:
    its loss sums and conjugate sums enclose the registry's from above (tightly), and the
    domains agree (inside and outside)."""
    rng = np.random.default_rng(10 + seed)
    n = 30
    u = 3 * rng.standard_normal(n)
    y = _labels(name, rng, n)
    loss = get_loss(name)
    value, upper = verifier.loss_sum_bounds(name, u, y, **_vkw(name))
    ref = loss.value(u, y)
    assert value == pytest.approx(ref, rel=1e-13)
    assert ref <= upper <= ref + 1e-10 * max(1.0, abs(ref))
    z = _mixed_dual_points(name, y, rng)
    lo, hi = verifier.dual_domain_bounds(name, y, **_vkw(name))
    dom = (z >= lo) & (z <= hi)
    np.testing.assert_array_equal(dom, loss.in_dual_domain(z, y))
    if not dom.all():
        assert (verifier.conjugate_sum_upper(name, z, y, **_vkw(name)) == np.inf
                == loss.conjugate_sum(z, y))
    z = np.where(dom, z, _dual_points(name, y, rng))
    ref = loss.conjugate_sum(z, y)
    up = verifier.conjugate_sum_upper(name, z, y, **_vkw(name))
    assert ref <= up <= ref + 1e-10 * max(1.0, abs(ref))


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("seed", [0, 1])
def test_registry_agrees_with_the_verifier_far_out(name, seed):
    """Large margins (where a naive exp overflows and log1p(exp(-m)) underflows; hinge far on
    either side): the verifier's enclosure still holds the registry's value."""
    rng = np.random.default_rng(40 + seed)
    n = 40
    y = _labels(name, rng, n)
    scale = 300.0 if name == "poisson" else 800.0  # exp(800) overflows, exp(300) does not
    u = scale * rng.uniform(-1.0, 1.0, n)
    u[:4] = [scale, -scale, 0.0, 1e-300]
    ref = get_loss(name).value(u, y)
    value, upper = verifier.loss_sum_bounds(name, u, y, **_vkw(name))
    assert np.isfinite(ref) and value == pytest.approx(ref, rel=1e-12)
    assert ref <= upper <= ref + 1e-10 * max(1.0, abs(ref))


@pytest.mark.parametrize("labels", [(0.0, 1.0), (-1.0, 1.0), (1.0, 2.0), (3.5, 7.0),
                                    (7.0, -2.5), (-0.0, 5.0)])
def test_label_rule_agrees_with_the_verifier(labels):
    """The registry's label rule and the verifier's own copy code any two labels alike, and
    both refuse one or three distinct values."""
    rng = np.random.default_rng(3)
    y = np.asarray(labels)[rng.integers(0, 2, size=15)]
    y[:2] = labels
    codes, _ = binary_codes(y)
    np.testing.assert_array_equal(verifier.binary_labels(y), codes)
    for name in CLASSIFICATION_LOSSES:
        np.testing.assert_array_equal(get_loss(name).encode_target(y)[0], codes)
    for bad in (np.full(4, labels[0]), np.r_[y, max(labels) + 1.0]):
        with pytest.raises(ValueError):
            binary_codes(bad)
        with pytest.raises(ValueError):
            verifier.binary_labels(bad)


@pytest.mark.parametrize("labels", [(0, 1), (-1, 1), (1, 2), (3.5, 7.0), (7.0, -2.5),
                                    ("no", "yes"), (True, False)])
def test_label_rule_any_two_labels(labels):
    """Exactly two distinct values; the smaller (numpy's sort order) is coded -1."""
    rng = np.random.default_rng(0)
    y = np.array(labels, dtype=object if isinstance(labels[0], str) else None)[
        rng.integers(0, 2, size=12)]
    y[:2] = labels  # both present
    codes, classes = binary_codes(y)
    lo, hi = sorted(labels)
    assert classes.tolist() == [lo, hi]
    np.testing.assert_array_equal(codes, np.where(y == hi, 1.0, -1.0))
    assert set(codes.tolist()) == {-1.0, 1.0}
    if not isinstance(labels[0], str):
        for name in CLASSIFICATION_LOSSES:
            coded, pair = get_loss(name).encode_target(np.asarray(y, dtype=float))
            np.testing.assert_array_equal(coded, codes)
            assert pair == [float(lo), float(hi)]


@pytest.mark.parametrize("y", [np.array([1.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0])])
def test_label_rule_needs_exactly_two_values(y):
    for name in CLASSIFICATION_LOSSES:
        with pytest.raises(ValueError, match="binary labels .exactly two distinct values., got"):
            get_loss(name).encode_target(y)


def test_targets_of_the_regression_losses():
    y = np.array([0.5, -2.0, 3.0])
    coded, labels = get_loss("squared").encode_target(y)
    np.testing.assert_array_equal(coded, y)
    assert labels is None and coded is not y
    with pytest.raises(ValueError, match="non-negative counts"):
        get_loss("poisson").encode_target(y)
    coded, labels = get_loss("poisson").encode_target(np.abs(y))
    np.testing.assert_array_equal(coded, np.abs(y))
