"""Sample weights and offsets in the solver's losses: the compiled kernels against the registry
(numpy) and the exact refits on a support against cvxpy, with per-coefficient bounds."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecert.solvers.heuristics import SampleTerms, SupportRefitter
from sparsecert.solvers.loss_kernels import (
    conjugate_sum,
    loss_hessian,
    loss_value,
    loss_value_grad,
    zero_sum_parts,
)
from sparsecert.solvers.losses import LOSS_NAMES, get_loss
from sparsecert.solvers.perspective._coef_bounds import CoefBounds


def _data(loss: str, n: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(n)
    if loss in ("logistic", "squared_hinge"):
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    elif loss == "poisson":
        y = rng.poisson(1.5, n).astype(float)
    else:
        y = rng.standard_normal(n)
    w = rng.choice([0.0, 0.5, 1.0, 2.5], n)
    w[:3] = (1.0, 2.0, 0.0)
    o = 0.3 * rng.standard_normal(n)
    return u, y, w, o


def _loss(loss):
    return get_loss(loss, {"huber_delta": 0.8} if loss == "huber" else None)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_weighted_kernels_are_the_weighted_registry(loss):
    u, y, w, o = _data(loss)
    f = _loss(loss)
    spec = f.spec.with_samples(w, o)
    ref_terms = f.terms(u + o, y)
    assert loss_value(spec, u, y) == pytest.approx(float(np.sum(w * ref_terms)), rel=1e-13)
    g = np.empty_like(u)
    val = loss_value_grad(spec, u, y, g)
    assert val == pytest.approx(float(np.sum(w * ref_terms)), rel=1e-13)
    np.testing.assert_allclose(g, w * f.gradient(u + o, y), rtol=1e-13, atol=1e-15)
    h = np.empty_like(u)
    loss_hessian(spec, u, y, h)
    np.testing.assert_allclose(h, w * f.hessian(u + o, y), rtol=1e-13)
    # the conjugate: sum_i w_i f*(z_i / w_i) - z_i o_i, at z = the weighted gradient
    z = g.copy()
    ref = float(np.sum(np.where(w > 0, w * f.conjugate(z / np.where(w > 0, w, 1.0), y), 0.0))
                - z @ o)
    assert conjugate_sum(spec, z, y) == pytest.approx(ref, rel=1e-12, abs=1e-12)
    # Fenchel-Young equality at the gradient: F(u) + F*(zeta) = zeta^T u
    assert val + conjugate_sum(spec, z, y) == pytest.approx(float(z @ u), abs=1e-10)
    # a nonzero dual on a zero-weight sample is outside the domain
    bad = z.copy()
    bad[np.flatnonzero(w == 0)[0]] = 1e-3
    assert conjugate_sum(spec, bad, y) == np.inf
    # weights of 1 and offsets of 0 are the plain loss, bit for bit
    plain = f.spec.with_samples(np.ones_like(u), np.zeros_like(u))
    assert loss_value(plain, u, y) == loss_value(f.spec, u, y)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_weighted_zero_sum_parts_give_a_zero_sum_dual_in_the_domain(loss):
    u, y, w, o = _data(loss, seed=1)
    f = _loss(loss)
    spec = f.spec.with_samples(w, o)
    z = np.empty_like(u)
    loss_value_grad(spec, u, y, z)
    v1, v2 = np.zeros_like(u), np.zeros_like(u)
    a1, a2, shifted = zero_sum_parts(spec, y, z, v1, v2)
    zp = a1 * v1 - v2 if shifted else a1 * v1 + a2 * v2
    assert abs(zp.sum()) <= 1e-12 * np.abs(zp).sum()
    assert conjugate_sum(spec, zp, y) < np.inf
    assert (zp[w == 0] == 0).all()


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("bounded", [False, True])
def test_weighted_bounded_refit_is_the_cvxpy_optimum(loss, bounded):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    n, p = 25, 4
    X = rng.standard_normal((n, p))
    u, y, w, o = _data(loss, n=n, seed=4)
    w = np.where(w == 0, 0.3, w)  # the solver keeps only samples of positive weight
    lo = np.array([-np.inf, 0.0, -0.3, -1.0]) if bounded else None
    hi = np.array([0.2, np.inf, 0.3, 1.0]) if bounded else None
    lam, fit = 0.7, loss != "squared"
    f = _loss(loss)
    ref = SupportRefitter(X, y, f, lam, fit_intercept=fit, samples=SampleTerms(w, o),
                          bounds=CoefBounds(lo, hi) if bounded else None)
    S = (0, 1, 2)
    model = ref.fit(S)
    b, c = cp.Variable(len(S)), cp.Variable()
    z = X[:, S] @ b + (c if fit else 0) + o
    if loss == "squared":
        terms = cp.square(y - z)
    elif loss == "logistic":
        terms = cp.logistic(-cp.multiply(y, z))
    elif loss == "squared_hinge":
        terms = cp.square(cp.pos(1 - cp.multiply(y, z)))
    elif loss == "poisson":
        terms = cp.exp(z) - cp.multiply(y, z)
    else:
        terms = cp.huber(y - z, 0.8)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(w, terms)) + lam * cp.sum_squares(b)),
                      [b >= np.where(np.isfinite(lo[list(S)]), lo[list(S)], -1e6),
                       b <= np.where(np.isfinite(hi[list(S)]), hi[list(S)], 1e6)]
                      if bounded else [])
    prob.solve(solver="CLARABEL")
    assert model.objective == pytest.approx(prob.value, rel=1e-6, abs=1e-7)
    assert model.objective <= prob.value + 1e-7 * max(1.0, abs(prob.value))
    if bounded:
        assert (model.coef >= lo[list(S)]).all() and (model.coef <= hi[list(S)]).all()
    # the refitter's objective is the weighted loss with offsets at its model
    uu = X[:, S] @ model.coef + model.intercept + o
    assert model.objective == pytest.approx(float(np.sum(w * f.terms(uu, y)))
                                            + lam * float(model.coef @ model.coef), rel=1e-12)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_the_projected_newton_refit_converges_to_the_bounded_optimum(loss, monkeypatch):
    """The bounded refit's projected Newton method alone (no L-BFGS-B fallback) reaches the
    optimum of a refit whose bounds bind: its objective is the fallback's or lower."""
    rng = np.random.default_rng(5)
    n = 30
    X = rng.standard_normal((n, 3))
    _, y, w, o = _data(loss, n=n, seed=6)
    w = np.where(w == 0, 0.5, w)
    lo, hi = np.array([-0.05, 0.0, -0.1]), np.array([0.05, 0.1, np.inf])
    f = _loss(loss)
    kw = dict(fit_intercept=True, samples=SampleTerms(w, o), bounds=CoefBounds(lo, hi))
    newton = SupportRefitter(X, y, f, 0.3, **kw)
    coef, c = newton._fit_newton(X)
    assert newton._outside((0, 1, 2), coef)  # the bounds bind
    wn, done = newton._fit_box_newton(X, coef, c, (0, 1, 2))
    assert done
    assert (wn[:3] >= lo).all() and (wn[:3] <= hi).all()
    lb, lc = newton._fit_box_lbfgs(X, coef, c, (0, 1, 2))
    mine = newton.objective((0, 1, 2), wn[:3], float(wn[3]))
    theirs = newton.objective((0, 1, 2), lb, lc)
    assert mine <= theirs + 1e-9 * max(1.0, abs(theirs))
