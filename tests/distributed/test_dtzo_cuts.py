"""The cut Jacobians (full frame, update, sketch) against closed-form Jacobians, the cheaper
update cut end to end, and the run diagnostics (warnings with advice)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from sparsecert.distributed.comm import SimComm
from sparsecert.distributed.dtzo.algorithm import _DTZO, DTZOConfig, DTZOWarning, dtzo
from sparsecert.distributed.dtzo.cuts import JacobianEstimator
from sparsecert.distributed.dtzo.diagnostics import RunTrace, diagnose
from sparsecert.distributed.dtzo.nonquadratic import make_p3
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig, sample_directions

P3_CFG = DTZOConfig(n_iter=300, rho=1.0, beta=1e4, eps=1e-4, lr=0.2, K=3, eta3=0.2, eta2=0.2,
                    T=10, T1=60, max_cuts=3, vr_period=20, zo_f1=ZOConfig(q=2))


def _affine(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    A, c = rng.standard_normal((k, n)), rng.standard_normal(k)
    return A, (lambda X: X @ A.T + c)


def _curved(n: int, seed: int = 0):
    """r(x) = x + tanh(B x) with Jacobian I + diag(sech^2(B x)) B."""
    B = np.random.default_rng(seed).standard_normal((n, n))
    jac = lambda x: np.eye(n) + (1 / np.cosh(B @ x) ** 2)[:, None] * B  # noqa: E731
    return jac, (lambda X: X + np.tanh(X @ B.T))


def test_update_keeps_an_affine_jacobian_exact_and_costs_2s_plus_1_trajectories():
    n, k, s = 9, 4, 2
    A, res = _affine(n, k)
    est = JacobianEstimator(np.random.default_rng(1), 1e-3, None, "update", s, 0.25)
    rng = np.random.default_rng(2)
    for _ in range(4):
        x = rng.standard_normal(n)
        r, J = est.estimate(3, x, res)
        np.testing.assert_allclose(r, res(x[None, :])[0], atol=1e-12)
        np.testing.assert_allclose(J, A, atol=1e-8)
    assert (est.stats.full, est.stats.updated) == (1, 3)
    assert est.stats.trajectories == (2 * n + 1) + 3 * (2 * s + 1)


def test_update_matches_the_true_jacobian_along_fresh_directions_and_refreshes_when_stale():
    n, s = 6, 2
    jac, res = _curved(n)
    est = JacobianEstimator(np.random.default_rng(0), 1e-4, None, "update", s, 0.25)
    x0 = np.full(n, 0.1)
    _, J0 = est.estimate(2, x0, res)
    np.testing.assert_allclose(J0, jac(x0), atol=1e-6)
    # a nearby point: the old Jacobian predicts well, so it is updated, not re-measured
    x1 = x0 + 1e-3 * np.random.default_rng(1).standard_normal(n)
    state = np.random.default_rng(0)
    state.bit_generator.state = est.rng.bit_generator.state  # the directions it will draw
    U = sample_directions(state, n, s, "orthogonal")
    r1, J1 = est.estimate(2, x1, res)
    assert (est.stats.full, est.stats.updated) == (1, 1)
    np.testing.assert_allclose(J1 @ U.T, jac(x1) @ U.T, atol=1e-6)  # re-measured directions
    assert np.linalg.norm(J1 - jac(x1)) < np.linalg.norm(J0 - jac(x1)) + 1e-9
    # a far point: the old Jacobian is stale (tanh saturates), so a full frame is measured
    x2 = x1 + 3.0
    _, J2 = est.estimate(2, x2, res)
    assert est.stats.full == 2
    np.testing.assert_allclose(J2, jac(x2), atol=1e-6)


def test_sketch_is_an_unbiased_but_rank_deficient_jacobian():
    n, k, q = 8, 3, 2
    A, res = _affine(n, k, seed=4)
    est = JacobianEstimator(np.random.default_rng(0), 1e-3, q, "full", 1, 0.25)
    Js = [est.estimate(3, np.zeros(n), res)[1] for _ in range(400)]
    assert np.linalg.matrix_rank(Js[0]) <= q
    mean = np.mean(Js, axis=0)
    # E[(n/q) A U^T U] = A; the spread of the mean of 400 draws is about sqrt(n/q/400) ||A||
    assert np.linalg.norm(mean - A) < 0.35 * np.linalg.norm(A)


def test_update_cut_reaches_p3_targets_with_fewer_cut_queries():
    """Cuts refreshed at every period until the end (T1 = n_iter): the update cut keeps the
    accuracy for a fraction of the full frames' queries."""
    P = make_p3(n_workers=3, dims=(2, 5, 5), seed=0)
    cfg = replace(P3_CFG, T1=P3_CFG.n_iter, cut_jacobian="update", cut_dirs=2)
    s = _DTZO(P, SimComm(3, seed=0), cfg, P.metrics)
    res = s.run()
    h = res.history
    assert h["err_x1"][-1] < 1e-3 and h["res3"][-1] < 1e-3 and h["res2"][-1] < 1e-3
    d1, d2, d3 = P.dims
    d12, d = d1 + d2, sum(P.dims)
    n_ref = len(range(0, cfg.T1, cfg.T))
    full_cost = 3 * n_ref * cfg.K * ((2 * d + 1) * 2 * d3 + (2 * d12 + 1) * 2 * d2)
    assert s.jac.stats.updated > s.jac.stats.full
    assert h["cut_queries"][-1] < 0.6 * full_cost
    assert res.warnings == []


# ---------------------------------------------------------------------------------------------
# diagnostics
# ---------------------------------------------------------------------------------------------


def test_a_refinement_horizon_that_stops_too_early_warns_with_advice():
    P = make_p3(n_workers=3, dims=(2, 2, 2), seed=0)
    with pytest.warns(DTZOWarning, match=r"residual estimate did not decrease") as rec:
        res = dtzo(P, SimComm(3, seed=0), replace(P3_CFG, T1=1), monitor=P.metrics)
    msgs = [str(w.message) for w in rec]
    assert any("level-3" in m for m in msgs) and any("level-2" in m for m in msgs)
    assert all("raise T1" in m for m in msgs)
    assert res.history["res3"][-1] > 0.1  # the true residual: the warning was deserved
    assert res.residual_trace["iter"][-1] == P3_CFG.n_iter  # the final check ran


def test_a_sound_run_does_not_warn():
    P = make_p3(n_workers=3, dims=(2, 2, 2), seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DTZOWarning)
        res = dtzo(P, SimComm(3, seed=0), P3_CFG, monitor=P.metrics)
    assert res.history["err_x1"][-1] < 1e-2
    tr = res.residual_trace
    assert tr["res3"][-1] < 0.01 * tr["res3"][0] and tr["res2"][-1] < 0.01 * tr["res2"][0]


def test_diverging_inner_steps_are_detected():
    P = make_p3(n_workers=3, dims=(2, 2, 2), seed=0)
    cfg = replace(P3_CFG, n_iter=20, T1=20, check_residuals=False)
    bad = _DTZO(P, SimComm(3, seed=0), replace(cfg, eta3=3.0), None)
    bad.run()
    good = _DTZO(P, SimComm(3, seed=0), cfg, None)
    good.run()
    assert bad.trace.diverged[3] and not good.trace.diverged[3]


def test_diagnose_rules():
    tr = RunTrace()
    tr.add(0, 5.0, 2.0)
    tr.add(300, 1.0, 1e-4)
    tr.final = True
    tr.diverged[3] = True
    msgs = diagnose(tr, eps=1e-4, T1=300, n_iter=300, consensus=0.0, z_norm=1.0)
    assert len(msgs) == 1 and "level-3" in msgs[0] and "reduce eta3" in msgs[0]
    assert "raise T1" not in msgs[0]
    # decreased by more than 10x, or below 100 eps: no message
    tr.res3[-1] = 0.4
    assert diagnose(tr, 1e-4, 300, 300, 0.0, 1.0) == []
    tr.res3[-1] = 0.9e-2
    tr.res3[0] = 0.01
    assert diagnose(tr, 1e-4, 300, 300, 0.0, 1.0) == []
    # consensus
    msgs = diagnose(tr, 1e-4, 300, 300, consensus=0.5, z_norm=3.0)
    assert len(msgs) == 1 and "consensus" in msgs[0]
