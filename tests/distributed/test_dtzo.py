"""Tests of the DTZO-style trilevel solver, its baselines and the shipped problems.

References are independent: nested scipy.optimize solves, closed-form residual maps built from
the problem matrices, and an MPI run in a subprocess compared with SimComm.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq, minimize, minimize_scalar, root

from sparsecert.distributed.comm import SimComm
from sparsecert.distributed.dtzo.algorithm import (
    _DTZO,
    DTZOConfig,
    FedAvgConfig,
    NestedZOConfig,
    cut_model,
    dtzo,
    dtzo_first_order,
    nested_zo,
    zo_fedavg,
)
from sparsecert.distributed.dtzo.problems import RobustRidgeTrilevel, make_p1, make_p2
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig

SRC = Path(__file__).resolve().parents[2] / "src"

P1_CFG = DTZOConfig(n_iter=300, rho=1.0, beta=1e4, eps=1e-4, lr=0.2, K=3, eta3=0.2, eta2=0.2,
                    T=10, T1=60, max_cuts=3, vr_period=20, zo_f1=ZOConfig(q=2))


@pytest.fixture(scope="module")
def p1_run():
    """One DTZO-style run on P1 shared by several tests: (problem, result, communicator)."""
    P = make_p1(n_workers=3, seed=0)
    comm = SimComm(3, seed=0)
    return P, dtzo(P, comm, P1_CFG, monitor=P.metrics), comm


def _total(problem, level, Z):
    return sum(problem.value(level, j, Z) for j in range(problem.n_workers))


# ---------------------------------------------------------------------------------------------
# oracles against scipy.optimize
# ---------------------------------------------------------------------------------------------


def test_p1_closed_form_matches_nested_scipy_solve():
    """Full nested solve on a scalar-per-level instance: level 3 by a bracketing root finder on
    its gradient (grey box), levels 2 and 1 by nested Brent minimisation of values."""
    P = make_p1(n_workers=2, dims=(1, 1, 1), seed=3)

    def x3_of(x1, x2):
        g = lambda x3: sum(P.gradient(3, j, np.array([[x1, x2, x3]]))[0, 2]  # noqa: E731
                           for j in range(2))
        return brentq(g, -1e3, 1e3, xtol=1e-15, rtol=4 * np.finfo(float).eps)

    def x2_of(x1):
        phi = lambda x2: _total(P, 2, np.array([[x1, x2, x3_of(x1, x2)]]))[0]  # noqa: E731
        return minimize_scalar(phi, method="brent", options={"xtol": 1e-12}).x

    def V(x1):
        x2 = x2_of(x1)
        return _total(P, 1, np.array([[x1, x2, x3_of(x1, x2)]]))[0]

    x1 = minimize_scalar(V, method="brent", options={"xtol": 1e-10}).x
    # nested value-based solves lose precision level by level (~sqrt(machine eps) each)
    assert abs(x1 - P.x1_star[0]) < 1e-4 * (1 + abs(P.x1_star[0]))
    x2 = x2_of(P.x1_star[0])
    np.testing.assert_allclose(x2, P.z_star[1], atol=1e-6)
    np.testing.assert_allclose(x3_of(P.x1_star[0], x2), P.z_star[2], atol=1e-6)
    assert max(P.residuals(P.z_star).values()) < 1e-10


def test_p1_solution_maps_match_scipy_in_higher_dimension():
    """Level 3 by a root finder on the summed gradients (grey box), level 2 by a value-only
    Nelder-Mead search over the nested solve: both maps match the closed forms."""
    P = make_p1(n_workers=3, dims=(2, 2, 2), seed=5)
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal(2)

    def grad3(x12, x3):
        z = np.concatenate([x12, x3])[None, :]
        return sum(P.gradient(3, j, z) for j in range(3))[0, 4:]

    def x3_of(x12):
        sol = root(lambda x3: grad3(x12, x3), np.zeros(2), method="hybr",
                   options={"xtol": 1e-15})
        assert np.linalg.norm(grad3(x12, sol.x)) < 1e-9, sol.message
        return sol.x

    def phi(x2):
        x12 = np.concatenate([x1, x2])
        return _total(P, 2, np.concatenate([x12, x3_of(x12)])[None, :])[0]

    # a value-only search: finite-difference gradients of a nested solve are too noisy for a
    # 1e-5 comparison, a simplex with tight tolerances is not
    res = minimize(phi, np.zeros(2), method="Nelder-Mead",
                   options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20000})
    assert res.success, res.message
    x2 = res.x
    np.testing.assert_allclose(x2, P.x2_map(x1), atol=1e-6)
    x12 = np.concatenate([x1, x2])
    np.testing.assert_allclose(x3_of(x12), P.x3_map(x12), atol=1e-8)


def _p2_small(seed: int = 0):
    rng = np.random.default_rng(seed)
    Xt, Xv = rng.standard_normal((12, 3)), rng.standard_normal((20, 3))
    beta = np.array([1.0, -0.5, 0.25])
    yt = Xt @ beta + rng.standard_normal(12)
    yv = Xv @ beta + rng.standard_normal(20)
    return RobustRidgeTrilevel(Xt, yt, Xv, yv, n_workers=2, theta_bounds=(-4.0, 6.0))


@pytest.mark.parametrize("real", [True, False])
def test_p2_closed_forms_match_scipy(real):
    """delta*(w) (level 3) by scipy on the real data; w*(theta) (level 2, level 3 nested inside)
    by a nested scipy solve on a small random instance of the same class."""
    P = make_p2(n_train=30, seed=0) if real else _p2_small()
    p = P.p
    th = 1.3
    x1 = th / P.theta_scale

    def delta_of(w):
        def f3(dl):
            return _total(P, 3, np.concatenate([[x1], w, dl])[None, :])[0]

        def g3(dl):
            z = np.concatenate([[x1], w, dl])[None, :]
            return sum(P.gradient(3, j, z) for j in range(P.n_workers))[0, 1 + p:]
        return minimize(f3, np.zeros(p), jac=g3, method="BFGS", options={"gtol": 1e-11}).x

    w_test = np.linspace(-0.3, 0.3, p)
    np.testing.assert_allclose(delta_of(w_test), P.delta_star(w_test), atol=1e-7)
    if real:
        return

    def phi2(w):
        return _total(P, 2, np.concatenate([[x1], w, delta_of(w)])[None, :])[0]

    w = minimize(phi2, np.zeros(p), method="BFGS", options={"gtol": 1e-8}).x
    np.testing.assert_allclose(w, P.w_star(th), atol=1e-5)

    # level 1: the oracle's theta* matches an independent bounded scalar solve and a grid
    lo, hi = P.theta_bounds
    ref = minimize_scalar(P.val_error, bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-9})
    grid = np.linspace(lo, hi, 97)
    assert P.V_star <= min(P.val_error(t) for t in grid) + 1e-9
    assert P.V_star <= ref.fun + 1e-9


def test_p2_training_size_makes_optimal_lambda_interior():
    P = make_p2(n_train=30, seed=0)
    lo, hi = P.theta_bounds
    assert lo + 2.0 < P.theta_star < hi - 2.0
    # a clear interior minimum: both ends are at least 20% worse
    assert min(P.V_bounds) > 1.2 * P.V_star
    # and the adversary is strongly concave: gamma exceeds lambda_max(X^T X)
    assert P.gamma > np.linalg.eigvalsh(P.Xt.T @ P.Xt)[-1]


def test_p2_gradients_match_finite_differences():
    P = make_p2(n_train=30, seed=1)
    rng = np.random.default_rng(0)
    z = rng.standard_normal(P.d) * 0.3
    h = 1e-6
    for lev in (1, 2, 3):
        g = P.gradient(lev, 1, z[None, :])[0]
        E = np.eye(P.d)
        fd = (P.value(lev, 1, z + h * E) - P.value(lev, 1, z - h * E)) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# cuts
# ---------------------------------------------------------------------------------------------


def _true_k_step_residual(H, g, block, fixed, xb, K, eta):
    """(x_b - Phi^K) / (K eta) for exact gradient steps on 1/2 z^T H z - g^T z over block."""
    x = xb.copy()
    for _ in range(K):
        z = fixed.copy()
        z[block] = x
        x = x - eta * (H @ z - g)[block]
    return (xb - x) / (K * eta)


@pytest.mark.parametrize("kind", ["quadratic", "linear"])
def test_cuts_are_valid_on_sampled_points(kind):
    """Valid cut := its model never exceeds the true residual norm, m_c(z) <= ||r(z)||, so no point
    with ||r(z)|| <= eps is cut off. P1 with exact-on-quadratics estimators: quadratic cuts are
    exact, linear cuts are tangents of a convex function."""
    P = make_p1(n_workers=3, seed=1)
    d1, d2, d3 = P.dims
    d12, d = d1 + d2, sum(P.dims)
    cfg = replace(P1_CFG, cut_kind=kind, K=4, eta3=0.15, eta2=0.15)
    s = _DTZO(P, SimComm(3, seed=0), cfg, None)
    s.z = np.random.default_rng(5).standard_normal(d)
    c3 = s._level3_cut(0)
    s._add_cut(c3)
    s._update_map()
    # the inner cut implies the exact level-3 solution map
    np.testing.assert_allclose(s.A, P.P, atol=1e-6)
    np.testing.assert_allclose(s.b, P.p, atol=1e-6)
    c2 = s._level2_cut(0)

    # independent level-2 residual: exact GD on the reduced quadratic phi_2 (matrices M, m)
    H2r = np.zeros((d12, d12))
    H2r[:, :] = P._M
    rng = np.random.default_rng(9)
    Zs = s.z + 2.0 * rng.standard_normal((200, d))
    idx3 = np.arange(d12, d)
    idx2 = np.arange(d1, d12)
    gap3, gap2 = [], []
    for z in Zs:
        r3 = _true_k_step_residual(P.H[2], P.g[2], idx3, z, z[idx3], cfg.K, cfg.eta3)
        r2 = _true_k_step_residual(H2r, P._m, idx2, z[:d12], z[idx2], cfg.K, cfg.eta2)
        gap3.append(np.linalg.norm(r3) - cut_model(c3, z))
        gap2.append(np.linalg.norm(r2) - cut_model(c2, z))
    gap3, gap2 = np.array(gap3), np.array(gap2)
    assert gap3.min() >= -1e-6 and gap2.min() >= -1e-6  # validity
    if kind == "quadratic":
        assert np.abs(gap3).max() < 1e-6 and np.abs(gap2).max() < 1e-6  # exact models
    else:
        assert gap3.max() > 1e-2 and gap2.max() > 1e-2  # tangents are strictly below somewhere


def test_single_level_approximation_gets_level2_wrong(p1_run):
    P, good, _ = p1_run
    bad = dtzo(P, SimComm(3, seed=0), replace(P1_CFG, cascade=False), monitor=P.metrics)
    assert good.history["res2"][-1] < 1e-3
    assert bad.history["res2"][-1] > 1e-2


# ---------------------------------------------------------------------------------------------
# the method and the baselines on P1
# ---------------------------------------------------------------------------------------------


def test_dtzo_solves_p1_and_counts_queries_and_bits(p1_run):
    P, res, comm = p1_run
    h = res.history
    assert h["err_x1"][-1] < 1e-2
    assert h["res3"][-1] < 1e-3 and h["res2"][-1] < 1e-3
    assert h["consensus_error"][-1] < 1e-3
    assert res.n_queries > 0 and res.n_grad_calls == 0
    # exact bit accounting: every iteration each worker sends z_j + u_j (float64) and receives
    # z; every refinement K round trips of (2d+1) d3 and (2 d12 + 1) d2 float64 gradient
    # batches (up: its own estimates, down: their sum), and the final residual check K round
    # trips of d3 and d2 floats; so each worker receives exactly what it sends
    d1, d2, d3 = P.dims
    d12, d = d1 + d2, sum(P.dims)
    n_ref = len(range(0, P1_CFG.T1, P1_CFG.T))
    per_worker = 64 * (P1_CFG.n_iter * d
                       + n_ref * P1_CFG.K * ((2 * d + 1) * d3 + (2 * d12 + 1) * d2)
                       + P1_CFG.K * (d3 + d2))
    tr = comm.traffic
    np.testing.assert_array_equal(tr.up_sent, per_worker)
    np.testing.assert_array_equal(tr.down_received, per_worker)
    np.testing.assert_array_equal(tr.up_received, 0)  # no worker-to-worker exchange
    assert tr.server_received == 3 * per_worker and tr.server_sent == 3 * per_worker
    assert res.bits_up == per_worker and res.bits_down == per_worker  # bits per worker
    assert res.history["bits_up"][-1] == per_worker
    assert np.all(np.diff(h["queries"]) >= 0)


def test_float32_wire_halves_the_bits_and_grey_box_counts_both_oracles():
    P = make_p1(n_workers=3, seed=0)
    cfg = replace(P1_CFG, n_iter=30, T1=20, check_residuals=False)  # a short run
    c64, c32 = SimComm(3, seed=0), SimComm(3, seed=0)
    dtzo(P, c64, cfg)
    dtzo(P, c32, replace(cfg, dtype="float32"))
    np.testing.assert_array_equal(2 * c32.stats.up, c64.stats.up)
    np.testing.assert_array_equal(2 * c32.stats.down, c64.stats.down)
    grey = dtzo(P, SimComm(3, seed=0), replace(P1_CFG, exact_levels=(3,)), monitor=P.metrics)
    assert grey.n_grad_calls > 0 and grey.n_queries > 0
    assert grey.history["err_x1"][-1] < 1e-2


def test_nonfinite_values_raise():
    class BrokenWorker:
        def value(self, level, Z):
            return np.full(Z.shape[0], np.nan)

        def has_gradient(self, level):
            return False

        def gradient(self, level, Z):
            raise NotImplementedError

    class Broken:
        dims, n_workers = (1, 1, 1), 1

        def worker(self, j):
            return BrokenWorker()

        def initial_point(self):
            return np.zeros(3)

    with pytest.raises(ValueError, match="NaN"):
        dtzo(Broken(), SimComm(1), DTZOConfig(n_iter=2))
    with pytest.raises(ValueError, match="exact gradients"):
        dtzo(Broken(), SimComm(1), DTZOConfig(n_iter=2, exact_levels=(1,)))

    class NotAWorker(Broken):
        def worker(self, j):
            return object()

    with pytest.raises(TypeError, match="TrilevelWorker"):
        dtzo(NotAWorker(), SimComm(1), DTZOConfig(n_iter=2))


def test_first_order_needs_fewer_iterations_than_zeroth_order(p1_run):
    P, zo, _ = p1_run
    fo = dtzo_first_order(P, SimComm(3, seed=0), P1_CFG, monitor=P.metrics)
    assert fo.n_queries == 0 and fo.n_grad_calls > 0

    def first_below(h, tol=1e-3):
        ok = np.nonzero(h["err_x1"] < tol)[0]
        return int(h["iter"][ok[0]]) if ok.size else np.inf

    assert first_below(fo.history) < first_below(zo.history) < np.inf


def test_partial_participation_is_deterministic_and_sends_less():
    P = make_p1(n_workers=4, seed=2)
    cfg = replace(P1_CFG, participation=2, n_iter=60, check_residuals=False)
    c1, c2 = SimComm(4, seed=1), SimComm(4, seed=1)
    r1 = dtzo(P, c1, cfg)
    r2 = dtzo(P, c2, cfg)
    np.testing.assert_array_equal(r1.z, r2.z)
    full = SimComm(4, seed=1)
    dtzo(P, full, replace(cfg, participation=None))
    d = sum(P.dims)
    # participants send d float64 per iteration; on average S/N of the full traffic
    iter_bits_part = c1.stats.up.sum() - (full.stats.up.sum() - 64 * d * 4 * cfg.n_iter)
    assert iter_bits_part == 64 * d * 2 * cfg.n_iter


def test_single_level_fedavg_fails_lower_level_checks():
    P = make_p1(n_workers=3, seed=0)
    res = zo_fedavg(P, SimComm(3, seed=0),
                    FedAvgConfig(n_rounds=100, local_steps=3, lr=0.05, zo=ZOConfig(q=None)),
                    monitor=P.metrics)
    assert res.history["res3"][-1] > 1e-2 or res.history["res2"][-1] > 1e-2
    assert res.history["err_x1"][-1] > 5e-2


def test_nested_zo_approaches_solution():
    P = make_p1(n_workers=2, dims=(1, 1, 1), seed=4)
    cfg = NestedZOConfig(n_outer=15, M2=8, M3=8, lr1=0.3, lr2=0.3, lr3=0.3,
                         zo=ZOConfig(q=None, directions="orthogonal"))
    res = nested_zo(P, SimComm(2, seed=0), cfg, monitor=P.metrics)
    h = res.history
    assert h["err_x1"][-1] < 0.5 * h["err_x1"][0]
    assert res.n_queries > 0 and res.rounds > 0


# ---------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [dict(rho=0.0), dict(beta=-1.0), dict(K=0), dict(T=0), dict(cut_kind="cubic"),
     dict(exact_levels=(4,)), dict(participation=0), dict(dtype="int8"), dict(lr=np.inf)],
)
def test_bad_config_raises(kwargs):
    with pytest.raises(ValueError):
        DTZOConfig(**kwargs)


@pytest.mark.parametrize("make", [
    lambda: DTZOConfig(n_iter=True), lambda: DTZOConfig(T=2.5),
    lambda: NestedZOConfig(M3=False), lambda: FedAvgConfig(local_steps=True),
    lambda: FedAvgConfig(lr=float("nan")), lambda: ZOConfig(q=True),
    lambda: ZOConfig(scheme="backward"),
])
def test_every_dtzo_settings_record_names_the_bad_field(make):
    """A bool is not a count; each record names itself and the field."""
    with pytest.raises(ValueError, match=r"(DTZO|NestedZO|FedAvg|ZO)Config\.\w+ must be"):
        make()


def test_worker_count_mismatch_and_bad_participation_raise():
    P = make_p1(n_workers=3)
    with pytest.raises(ValueError, match="workers"):
        dtzo(P, SimComm(2), DTZOConfig(n_iter=1))
    with pytest.raises(ValueError, match="participation"):
        dtzo(P, SimComm(3), DTZOConfig(n_iter=1, participation=5))
    with pytest.raises(TypeError):
        dtzo(object(), SimComm(3), DTZOConfig(n_iter=1))


def test_problem_input_validation():
    P = make_p1(n_workers=2)
    with pytest.raises(ValueError, match="shape"):
        P.value(1, 0, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="level"):
        P.value(4, 0, np.zeros((1, 6)))
    with pytest.raises(ValueError, match="worker"):
        P.value(1, 5, np.zeros((1, 6)))
    with pytest.raises(ValueError, match="n_train"):
        make_p2(n_train=2)


# ---------------------------------------------------------------------------------------------
# MPI
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_mpi_run_matches_simcomm(tmp_path, mpiexec):
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out_mpi, out_sim = tmp_path / "mpi.npz", tmp_path / "sim.npz"
    common = ["-m", "sparsecert.distributed.dtzo.mpi", "--n-iter", "25", "--participation", "2"]
    for cmd in ([mpiexec, "-n", "3", sys.executable, *common, "--out", str(out_mpi)],
                [sys.executable, *common, "--comm", "sim", "--out", str(out_sim)]):
        proc = subprocess.run(cmd, env=env, timeout=120, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}"
    a, b = np.load(out_mpi), np.load(out_sim)
    np.testing.assert_array_equal(a["z"], b["z"])
    np.testing.assert_array_equal(a["up"], b["up"])
    np.testing.assert_array_equal(a["down"], b["down"])
    np.testing.assert_array_equal(a["h_queries"], b["h_queries"])
    np.testing.assert_array_equal(a["h_consensus_error"], b["h_consensus_error"])
    assert a["bits_up"] > 0
    # what crossed process boundaries: rank r > 0 hosts worker r alone and talks to the server
    # on rank 0, which sends the downlink to and receives the uplink from the two others
    pp, up, down = a["per_process"], a["up"], a["down"]
    for r in (1, 2):
        assert (pp[r, 0], pp[r, 1]) == (up[r], down[r])
    assert (pp[0, 0], pp[0, 1]) == (down[1] + down[2], up[1] + up[2])


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_sharded_entry_point_reads_own_workers_only_and_matches_the_whole_problem(
        tmp_path, mpiexec):
    """--write-shards, then --shards under mpiexec -n 3: rank 0 read worker 0's file only and
    the final point equals the run on the problem built whole in one process."""
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    mod = [sys.executable, "-m", "sparsecert.distributed.dtzo.mpi"]
    shards, out_mpi, out_sim = tmp_path / "shards", tmp_path / "mpi.npz", tmp_path / "sim.npz"
    for cmd in ([*mod, "--write-shards", str(shards), "--dims", "1", "3", "3"],
                [mpiexec, "-n", "3", *mod, "--shards", str(shards), "--n-iter", "15",
                 "--out", str(out_mpi)],
                [*mod, "--comm", "sim", "--dims", "1", "3", "3", "--n-iter", "15",
                 "--out", str(out_sim)]):
        proc = subprocess.run(cmd, env=env, timeout=120, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}"
    a, b = np.load(out_mpi), np.load(out_sim)
    assert list(a["loaded"]) == [0] and list(b["loaded"]) == []
    np.testing.assert_array_equal(a["z"], b["z"])
    np.testing.assert_array_equal(a["h_err_x1"], b["h_err_x1"])
    np.testing.assert_array_equal(a["up"], b["up"])


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_example_keeps_each_shard_on_its_rank_and_matches_simcomm(tmp_path, mpiexec):
    """The federated tuning example under mpiexec -n 3: rank j opens site_j.npz and nothing else
    (each rank prints what it opened), and the iterates equal SimComm's in one process."""
    script = Path(__file__).resolve().parents[2] / "examples" / "federated_hyperparameter_tuning.py"
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    common = [str(script), "--n-iter", "12", "--no-reference"]
    runs = {"mpi": [mpiexec, "-n", "3", sys.executable, *common, "--comm", "mpi"],
            "sim": [sys.executable, *common, "--comm", "sim"]}
    out = {}
    for name, cmd in runs.items():
        folder = tmp_path / name
        proc = subprocess.run([*cmd, "--out", str(folder)], env=env, timeout=300,
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}"
        out[name] = (np.load(folder / "federated_hyperparameter_tuning.npz"), proc.stdout)
    (a, log_mpi), (b, _) = out["mpi"], out["sim"]
    for r in range(3):
        assert f"[rank {r}] sites [{r}] opened ['site_{r}.npz']" in log_mpi
    np.testing.assert_array_equal(a["opened"], [1, 1, 1])
    np.testing.assert_array_equal(a["z"], b["z"])
    np.testing.assert_array_equal(a["up"], b["up"])
    np.testing.assert_array_equal(a["down"], b["down"])
    assert a["up"][0] > 0


def test_history_seconds_count_the_rounds_not_the_records(monkeypatch):
    """``seconds`` counts the rounds and leaves the records out: on a fake clock that one
    master step advances by 1 and one monitor call by 100, record ``t`` reads exactly ``t``."""
    import types

    from sparsecert.distributed.dtzo import algorithm as alg

    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(alg, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    master = alg.solve_master

    def timed_master(*a, **k):
        clock.now += 1.0
        return master(*a, **k)

    monkeypatch.setattr(alg, "solve_master", timed_master)
    p = make_p1(n_workers=2, seed=0)

    def slow(z):
        clock.now += 100.0
        return p.metrics(z)

    cfg = DTZOConfig(n_iter=6, T=4, T1=8, lr=0.2, eta3=0.2, eta2=0.2)
    h = dtzo(p, SimComm(2, seed=0), cfg, monitor=slow).history
    np.testing.assert_array_equal(h["seconds"], h["iter"])
    assert h["iter"].tolist() == [0, 1, 2, 3, 4, 5, 6]
