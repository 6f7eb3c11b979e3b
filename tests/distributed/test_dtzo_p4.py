"""P4: levels given as black-box simulators (values only), judged against the equivalent
quadratic problem's closed-form trilevel solution."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from sparsecert.distributed.comm import SimComm
from sparsecert.distributed.dtzo.algorithm import DTZOConfig, dtzo, dtzo_first_order
from sparsecert.distributed.dtzo.simulated import make_p4
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig


def _simulate_by_hand(A, B, a, c, T, z):
    """The state recursion written out for one point (an independent reading)."""
    s = np.zeros(A.shape[0])
    total = 0.0
    for _ in range(T):
        s = A @ s + B @ (z - a)
        total += float(s @ s)
    return 0.5 * c * total


def test_simulators_equal_the_explicit_quadratics_and_offer_no_gradient():
    p = make_p4(n_workers=2, dims=(2, 3, 3), T=3, seed=1)
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((5, p.d))
    for j in range(2):
        w = p.worker(j)
        for lev in (1, 2, 3):
            got = w.value(lev, Z)
            i = lev - 1
            hand = [_simulate_by_hand(p.A[j, i], p.B[j, i], p.a[j, i], p.c[j, i], p.T, z)
                    for z in Z]
            assert np.allclose(got, hand, rtol=1e-12, atol=0)
            S = p.step_responses(j, i)
            quad = 0.5 * np.sum(((Z - p.a[j, i]) @ S.T) ** 2, axis=1)
            assert np.allclose(got, quad, rtol=1e-10, atol=0)
            assert not w.has_gradient(lev)
            with pytest.raises(NotImplementedError):
                w.gradient(lev, Z)
    # the largest singular value of each S_{l,j} is 1.4 / sqrt(N)
    assert np.linalg.norm(p.step_responses(1, 2), 2) == pytest.approx(1.4 / np.sqrt(2))


def test_reference_solution_is_stationary_at_every_level():
    p = make_p4(n_workers=3, dims=(2, 4, 4), T=2, seed=3)
    ref = p.reference
    res = ref.residuals(p.z_star)
    assert max(res.values()) < 1e-9
    # the level-3 gradient of the summed simulators at z* vanishes in x3 (finite differences
    # of the simulators themselves, central: exact for quadratics up to rounding)
    d12 = 6
    h = 1e-4
    g = []
    for i in range(d12, p.d):
        e = np.zeros(p.d)
        e[i] = h
        up = sum(p.worker(j).value(3, (p.z_star + e)[None])[0] for j in range(3))
        dn = sum(p.worker(j).value(3, (p.z_star - e)[None])[0] for j in range(3))
        g.append((up - dn) / (2 * h))
    assert np.max(np.abs(g)) < 1e-6


def test_zeroth_order_reaches_the_reference_and_first_order_cannot_run():
    p = make_p4(n_workers=3, dims=(2, 4, 4), T=3, seed=0)
    cfg = DTZOConfig(n_iter=200, rho=1.0, beta=1e4, eps=1e-4, lr=0.2, K=3, eta3=0.2,
                     eta2=0.2, T=10, T1=60, max_cuts=3, vr_period=20, zo_f1=ZOConfig(q=2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sound run does not warn
        res = dtzo(p, SimComm(3, seed=0), cfg, monitor=p.metrics)
    h = res.history
    assert h["err_x1"][-1] < 0.01 and h["res3"][-1] < 1e-2 and h["res2"][-1] < 1e-2
    assert res.n_grad_calls == 0 and res.n_queries > 0
    with pytest.raises(ValueError, match="has none"):
        dtzo_first_order(p, SimComm(3, seed=0), replace(cfg, n_iter=2))


def test_bad_parameters():
    with pytest.raises(ValueError, match="T must"):
        make_p4(dims=(1, 1, 1), T=0)
    with pytest.raises(ValueError, match="dims"):
        make_p4(dims=(1, 0, 1))
    with pytest.raises(ValueError, match="worker"):
        make_p4(n_workers=2, dims=(1, 1, 1)).worker(2)
