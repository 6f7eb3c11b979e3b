"""P3 (non-quadratic levels): the closed-form solution against nested scipy solves, the
derivatives against finite differences, the inexactness of the zeroth-order inner estimates,
and the DTZO-style method on it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq, minimize, minimize_scalar

from sparsecert.distributed.comm import SimComm
from sparsecert.distributed.dtzo.algorithm import DTZOConfig, dtzo
from sparsecert.distributed.dtzo.nonquadratic import (
    make_p3,
    phi,
    phi_prime,
    phi_prime_inverse,
)
from sparsecert.distributed.dtzo.problems import make_p1
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig, zo_gradient

P3_CFG = DTZOConfig(n_iter=300, rho=1.0, beta=1e4, eps=1e-4, lr=0.2, K=3, eta3=0.2, eta2=0.2,
                    T=10, T1=60, max_cuts=3, vr_period=20, zo_f1=ZOConfig(q=2))


def _total(problem, level, Z):
    return sum(problem.value(level, j, Z) for j in range(problem.n_workers))


def test_phi_prime_inverse_matches_brentq():
    t = np.array([-30.0, -2.5, -0.3, 0.0, 1e-9, 0.7, 4.0, 55.0])
    for alpha in (0.0, 0.5, 1.0, 3.0):
        u = phi_prime_inverse(t, alpha)
        ref = [brentq(lambda v, s=s, a=alpha: v + a * np.tanh(v) - s, -100, 100, xtol=1e-15)
               for s in t]
        np.testing.assert_allclose(u, ref, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(phi_prime(u, alpha), t, rtol=1e-13, atol=1e-14)
    # phi is overflow-free and its derivative is phi'
    u = np.array([-800.0, -1.0, 0.5, 800.0])
    assert np.all(np.isfinite(phi(u, 1.0)))
    h = 1e-6
    np.testing.assert_allclose((phi(u + h, 1.0) - phi(u - h, 1.0)) / (2 * h), phi_prime(u, 1.0),
                               rtol=1e-6)


def test_p3_closed_form_matches_nested_value_based_solve():
    """Every level by a scalar Brent minimisation of function values (no derivative, no closed
    form), nested three deep."""
    P = make_p3(n_workers=2, dims=(1, 1, 1), seed=3)

    def x3_of(x1, x2):
        f = lambda x3: _total(P, 3, np.array([[x1, x2, x3]]))[0]  # noqa: E731
        return minimize_scalar(f, method="brent", options={"xtol": 1e-13}).x

    def x2_of(x1):
        phi2 = lambda x2: _total(P, 2, np.array([[x1, x2, x3_of(x1, x2)]]))[0]  # noqa: E731
        return minimize_scalar(phi2, method="brent", options={"xtol": 1e-12}).x

    def V(x1):
        x2 = x2_of(x1)
        return _total(P, 1, np.array([[x1, x2, x3_of(x1, x2)]]))[0]

    x1 = minimize_scalar(V, method="brent", options={"xtol": 1e-10}).x
    assert abs(x1 - P.x1_star[0]) < 1e-4 * (1 + abs(P.x1_star[0]))
    x2 = x2_of(P.x1_star[0])
    np.testing.assert_allclose(x2, P.z_star[1], atol=1e-6)
    np.testing.assert_allclose(x3_of(P.x1_star[0], x2), P.z_star[2], atol=1e-6)
    assert max(P.residuals(P.z_star).values()) < 1e-12


def test_p3_solution_maps_and_hypergradient_in_higher_dimension():
    P = make_p3(n_workers=3, dims=(2, 3, 3), seed=5)
    d1, d2, d3 = P.dims
    d12 = d1 + d2
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal(d1)

    def x3_of(x12):
        f = lambda x3: _total(P, 3, np.concatenate([x12, x3])[None, :])[0]  # noqa: E731

        def g(x3):
            z = np.concatenate([x12, x3])[None, :]
            return sum(P.gradient(3, j, z) for j in range(3))[0, d12:]
        return minimize(f, np.zeros(d3), jac=g, method="BFGS", options={"gtol": 1e-12}).x

    def phi2(x2):
        x12 = np.concatenate([x1, x2])
        return _total(P, 2, np.concatenate([x12, x3_of(x12)])[None, :])[0]

    x2 = minimize(phi2, np.zeros(d2), method="BFGS", options={"gtol": 1e-8}).x
    np.testing.assert_allclose(x2, P.x2_map(x1), atol=1e-5)
    x12 = np.concatenate([x1, x2])
    np.testing.assert_allclose(x3_of(x12), P.x3_map(x12), atol=1e-8)
    # V(x1) is f_1 along the two maps; its gradient matches central differences and vanishes
    # at x1*
    z = np.concatenate([x1, P.x2_map(x1), P.x3_map(np.concatenate([x1, P.x2_map(x1)]))])
    np.testing.assert_allclose(P.value_function(x1), _total(P, 1, z[None, :])[0], rtol=1e-12)
    h = 1e-6
    fd = [(P.value_function(x1 + h * e) - P.value_function(x1 - h * e)) / (2 * h)
          for e in np.eye(d1)]
    np.testing.assert_allclose(P.hypergradient(x1), fd, rtol=1e-6, atol=1e-8)
    assert np.linalg.norm(P.hypergradient(P.x1_star)) < 1e-12
    assert P.residuals(z)["res3"] < 1e-12 and P.residuals(z)["res2"] < 1e-12


def test_p3_gradients_match_finite_differences():
    P = make_p3(n_workers=3, dims=(2, 3, 4), seed=1)
    z = np.random.default_rng(0).standard_normal(P.d)
    h = 1e-6
    E = np.eye(P.d)
    for lev in (1, 2, 3):
        g = P.gradient(lev, 2, z[None, :])[0]
        fd = (P.value(lev, 2, z + h * E) - P.value(lev, 2, z - h * E)) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_inner_zeroth_order_estimates_are_exact_on_p1_but_not_on_p3():
    """The crutch P3 removes: central differences along a full orthonormal frame are exact on a
    quadratic level, not on P3's."""
    cfg = ZOConfig(q=None, mu=1e-2, scheme="central", directions="orthogonal")
    errs = {}
    for name, P in (("p1", make_p1(dims=(2, 3, 3), seed=0)),
                    ("p3", make_p3(dims=(2, 3, 3), seed=0))):
        z = np.random.default_rng(1).standard_normal(P.d)
        d12 = P.d - P.dims[2]

        def f3(X3, P=P, z=z, d12=d12):
            Z = np.tile(z, (X3.shape[0], 1))
            Z[:, d12:] = X3
            return _total(P, 3, Z)

        g, _ = zo_gradient(f3, z[d12:], np.random.default_rng(2), cfg)
        exact = sum(P.gradient(3, j, z[None, :]) for j in range(P.n_workers))[0, d12:]
        errs[name] = np.linalg.norm(g - exact) / np.linalg.norm(exact)
    assert errs["p1"] < 1e-10
    assert 1e-8 < errs["p3"] < 1e-3


def test_p3_input_validation():
    with pytest.raises(ValueError, match="dims"):
        make_p3(dims=(2, 0, 2))
    with pytest.raises(ValueError, match="heterogeneity"):
        make_p3(heterogeneity=-1.0)
    P = make_p3()
    with pytest.raises(ValueError, match="shape"):
        P.value(1, 0, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="level"):
        P.value(0, 0, np.zeros((1, P.d)))


def test_dtzo_solves_p3():
    P = make_p3(n_workers=3, dims=(2, 5, 5), seed=0)
    res = dtzo(P, SimComm(3, seed=0), P3_CFG, monitor=P.metrics)
    h = res.history
    assert h["err_x1"][-1] < 1e-2
    assert h["res3"][-1] < 1e-2 and h["res2"][-1] < 1e-2
    assert h["consensus_error"][-1] < 1e-3
    assert res.warnings == []
