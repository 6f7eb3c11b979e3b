"""Tests of QODA / ODA / quantized extra-gradient and of the QODA test problems."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from sparsecert.distributed.comm import SimComm
from sparsecert.distributed.compress import Identity
from sparsecert.distributed.options import RunOptions
from sparsecert.distributed.qoda.algorithm import (
    StepSchedule,
    make_quantizer,
    oda,
    qoda,
    quantized_extragradient,
)
from sparsecert.distributed.qoda.mpi import build_parser, result_arrays, run
from sparsecert.distributed.qoda.problems import QuadraticGame, RobustLeastSquares

SMALL = dict(sizes=(24, 8, 4), noise_scales=(0.02, 0.3, 3.0), n_workers=3, rank=3, seed=2)


def reference_oda(ops, x0, seed, n_workers, n_iter, lr):
    """Textbook optimistic dual averaging with exact (float64) vectors and adaptive steps."""
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n_workers)]
    x1 = x0.copy()
    x, y, v_prev, sum_sq, x_sum = x1.copy(), np.zeros_like(x0), np.zeros_like(x0), 0.0, 0.0
    for _ in range(n_iter):
        step = lr / (1.0 + sum_sq) ** 0.5
        x_half = x - step * v_prev
        v = np.mean(np.stack([ops[k](x_half, rngs[k]) for k in range(n_workers)]), axis=0)
        y = y - v
        sum_sq += float((v - v_prev) @ (v - v_prev))
        v_prev = v
        x = x1 + lr / (1.0 + sum_sq) ** 0.5 * y
        x_sum = x_sum + x_half
    return x_sum / n_iter, x_half


def test_identity_quantizer_equals_oda_bit_for_bit():
    prob = QuadraticGame(**SMALL)
    ops = prob.operators()
    n_iter, lr = 40, 5.0
    res = qoda(ops, prob.x0, SimComm(3, seed=4), n_iter,
               quantizer=Identity(prob.d, "float64"), eta=StepSchedule(lr))
    ref_bar, ref_last = reference_oda(ops, prob.x0, 4, 3, n_iter, lr)
    assert np.array_equal(res.x_bar, ref_bar)
    assert np.array_equal(res.x_last, ref_last)
    res2 = oda(ops, prob.x0, SimComm(3, seed=4), n_iter, precision="float64",
               eta=StepSchedule(lr))
    assert np.array_equal(res2.x_bar, ref_bar)
    assert np.all(res2.bits_per_worker["up"] == n_iter * 64 * prob.d)
    fp32 = oda(ops, prob.x0, SimComm(3, seed=4), n_iter, eta=StepSchedule(lr))
    assert np.all(fp32.bits_per_worker["up"] == n_iter * 32 * prob.d)
    assert not np.array_equal(fp32.x_bar, ref_bar)  # FP32 rounding does change the iterates


@pytest.mark.parametrize("code", ["fixed", "gamma", "huffman"])
def test_bit_accounting_matches_encoded_messages(code):
    prob = QuadraticGame(**SMALL)
    q = make_quantizer("layerwise_adaptive", prob.layers, 2, code)
    comm = SimComm(3, seed=0)
    n_iter, every = 30, 10
    res = qoda(prob.operators(), prob.x0, comm, n_iter, quantizer=q, level_update_every=every,
               options=RunOptions(record_every=5))
    bpw = res.bits_per_worker
    assert np.array_equal(bpw["up"], comm.stats.up)
    assert np.array_equal(bpw[code], comm.stats.up)
    n_updates = len(range(0, n_iter, every))
    analytic = n_iter * q.fixed_bits() + n_updates * 32 * q.s * q.lmap.n_types
    assert np.all(bpw["fixed"] == analytic)
    assert np.all(bpw["payload"] >= bpw["up"]) and np.all(bpw["payload"] < bpw["up"] + 8 * n_iter)
    assert res.history["oracle_calls"][-1] == n_iter and comm.stats.rounds == n_iter


@pytest.mark.parametrize("method", [qoda, quantized_extragradient])
def test_without_counting_codes_the_run_is_the_same_and_skips_the_book_keeping(method,
                                                                               monkeypatch):
    """``count_codes=False``: the same iterates and transmitted bits, only the transmitted
    code's size recorded, and the other codes' sizes never computed."""
    import sparsecert.distributed.qoda.algorithm as alg

    prob = QuadraticGame(**SMALL)
    q = make_quantizer("layerwise_adaptive", prob.layers, 2)

    def run(count):
        return method(prob.worker, prob.x0, SimComm(3, seed=5), 23, quantizer=q,
                      level_update_every=10, options=RunOptions(record_every=5),
                      count_codes=count)

    full = run(True)
    calls = []
    monkeypatch.setattr(alg, "code_sizes", lambda *a: calls.append(a))
    lean = run(False)
    assert calls == []
    assert np.array_equal(full.x_bar, lean.x_bar) and np.array_equal(full.x_last, lean.x_last)
    assert sorted(k for k in lean.history if k.startswith("bits_")) == [
        "bits_fixed", "bits_received", "bits_up"]
    for key in ("bits_fixed", "bits_up", "bits_received"):
        assert np.array_equal(full.history[key], lean.history[key]), key
    assert set(lean.bits_per_worker) == {"fixed", "up", "received", "payload"}
    assert np.array_equal(lean.bits_per_worker["fixed"], full.bits_per_worker["fixed"])


def test_an_encoder_that_pads_its_parts_to_bytes_is_exchanged_at_its_agreed_size():
    """The exchange states each message's size in advance: bits and bytes from the encoder
    (a top-k with 1-bit levels pads its parts: 45 bits in 7 bytes, not 6)."""
    from sparsecert.distributed.compress import TopKLevels

    prob = QuadraticGame(**SMALL)
    enc = TopKLevels(prob.d, 5, 1)
    assert enc.message_bytes * 8 - enc.message_bits >= 8
    comm = SimComm(3, seed=0)
    res = qoda(prob.worker, prob.x0, comm, 6, quantizer=enc)
    assert np.all(res.bits_per_worker["up"] == 6 * enc.message_bits)
    assert np.all(res.bits_per_worker["payload"] == 6 * 8 * enc.message_bytes)


def test_the_entry_point_can_skip_the_other_codes():
    args = ["--sim", "--n-workers", "3", "--n-iter", "12", "--sizes", "24", "8", "4"]
    full = result_arrays(run(build_parser().parse_args(args)))
    lean = result_arrays(run(build_parser().parse_args([*args, "--no-count-codes"])))
    assert "bits_gamma" in full and "bits_gamma" not in lean and "h_bits_huffman" not in lean
    for key in ("x_bar", "bits_fixed", "traffic_up_sent"):
        assert np.array_equal(full[key], lean[key]), key


def test_qoda_converges_and_qeg_uses_two_oracle_calls():
    prob = QuadraticGame(**SMALL)
    ops = prob.operators()
    r0 = prob.residual(prob.x0)
    res = qoda(ops, prob.x0, SimComm(3, seed=1), 300, layers=prob.layers, s=2,
               eta=StepSchedule(10.0),
               options=RunOptions(monitor=prob.monitor, record_every=50))
    assert res.history["residual"][-1] < 0.3 * r0
    assert res.history["dist"][-1] < res.history["dist"][0]
    qeg = quantized_extragradient(ops, prob.x0, SimComm(3, seed=1), 50, layers=prob.layers, s=2,
                                  options=RunOptions(record_every=50))
    assert qeg.history["oracle_calls"][-1] == 100
    assert qeg.stats.rounds == 100


def test_callback_stops_the_run():
    prob = QuadraticGame(**SMALL)
    seen = []

    def stop(t, x_bar, metrics):
        seen.append(t)
        return t >= 20

    res = qoda(prob.operators(), prob.x0, SimComm(3, seed=0), 100, layers=prob.layers, s=2,
               options=RunOptions(monitor=prob.monitor, record_every=10, stop=stop))
    assert seen == [10, 20] and res.n_iter == 20
    assert list(res.history["iteration"]) == [10, 20]
    assert res.stats.rounds == 20


def test_factory_and_reduced_monitor_match_the_global_versions():
    prob = QuadraticGame(**SMALL)
    kw = dict(layers=prob.layers, s=2, eta=StepSchedule(10.0))
    seq = qoda(prob.operators(), prob.x0, SimComm(3, seed=5), 40, **kw,
               options=RunOptions(monitor=prob.monitor, record_every=10))
    built = []

    def factory(k):
        built.append(k)
        return prob.worker(k)

    fac = qoda(factory, prob.x0, SimComm(3, seed=5), 40, **kw,
               options=RunOptions(monitor=prob.reduced_monitor(), record_every=10))
    assert built == [0, 1, 2]
    assert np.array_equal(seq.x_bar, fac.x_bar)
    for key in ("residual", "gap", "dist", "bits_up"):
        assert np.allclose(seq.history[key], fac.history[key], rtol=1e-12, atol=0), key


def test_traffic_and_time_accounting():
    prob = QuadraticGame(**SMALL)
    res = qoda(prob.operators(), prob.x0, SimComm(3, seed=0), 30, layers=prob.layers, s=2,
               level_update_every=100,
               options=RunOptions(record_every=10))
    q = make_quantizer("layerwise_adaptive", prob.layers, 2)
    # every message after the first has the same size: each worker receives the two others'
    sent = res.bits_per_worker["up"]
    assert np.all(sent == 30 * q.fixed_bits() + 32 * 2 * 3)
    assert np.array_equal(res.bits_per_worker["received"], sent.sum() - sent)
    assert res.history["bits_received"][-1] == pytest.approx(2 * sent.mean())
    c = res.history["compute_s"]
    assert np.all(np.diff(c) >= 0) and c[-1] > 0
    assert sum(res.node_seconds.values()) == pytest.approx(c[-1], rel=1e-12)
    assert res.node_seconds["fit"] > 0 and res.warm_up_s > 0
    oda_res = oda(prob.operators(), prob.x0, SimComm(3, seed=0), 5,
                  options=RunOptions(record_every=5))
    assert oda_res.node_seconds["fit"] == 0.0


def test_relative_noise_vanishes_at_solution():
    prob = QuadraticGame(noise="relative", **SMALL)
    rng = np.random.default_rng(0)
    for k, op in enumerate(prob.operators()):
        assert np.allclose(op(prob.x_star, rng), 0.0, atol=1e-10), k


def test_quadratic_game_solution_against_scipy():
    prob = QuadraticGame(**SMALL)
    mats = [prob.worker_matrix(k) for k in range(prob.n_workers)]
    m = np.mean(mats, axis=0)
    x_ref = scipy.linalg.solve(m, prob.b)
    assert np.allclose(prob.x_star, x_ref, rtol=1e-10, atol=1e-10)
    # strongly monotone: the symmetric part is >= mu I
    assert scipy.linalg.eigvalsh(0.5 * (m + m.T)).min() >= prob.mu - 1e-10
    # the workers' noiseless oracles average to A
    rng = np.random.default_rng(0)
    x = rng.standard_normal(prob.d)
    assert np.allclose(np.mean([mk @ x - bk for mk, bk in zip(mats, prob.b_k, strict=True)],
                               axis=0), prob.operator(x))


def test_restricted_gap_against_cvxpy():
    cp = pytest.importorskip("cvxpy")
    prob = QuadraticGame(**SMALL)
    m = prob.mean_matrix()
    sym = 0.5 * (m + m.T)
    rng = np.random.default_rng(1)
    for scale in (0.05, 1.0, 10.0):  # interior and boundary maximisers
        x = prob.x_star + scale * rng.standard_normal(prob.d)
        z = cp.Variable(prob.d)
        # <M z - b, x - z> = -z^T S z + (M^T x + b)^T z - b^T x
        obj = -cp.quad_form(z, cp.psd_wrap(sym)) + (m.T @ x + prob.b) @ z - prob.b @ x
        cons = [cp.norm(z - prob.gap_center) <= prob.gap_radius]
        val = cp.Problem(cp.Maximize(obj), cons).solve(solver=cp.CLARABEL)
        assert prob.restricted_gap(x) == pytest.approx(val, rel=1e-5, abs=1e-6)
    assert prob.restricted_gap(prob.x_star) == pytest.approx(0.0, abs=1e-9)


def test_robust_least_squares_against_cvxpy():
    cp = pytest.importorskip("cvxpy")
    prob = RobustLeastSquares(n_features=6, rows_per_worker=5, n_workers=3, seed=3)
    x = cp.Variable(prob.n)
    r = prob.A @ x - prob.c
    obj = 0.5 * cp.sum_squares(r) + prob.rho * cp.norm(r) + 0.5 * prob.mu * cp.sum_squares(x)
    cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL)
    assert np.allclose(prob.x_star, x.value, atol=1e-6)
    assert prob.residual(prob.z_star) < 1e-9
    assert prob.duality_gap(prob.z_star) == pytest.approx(0.0, abs=1e-9)
    z = prob.z_star + 0.1 * np.random.default_rng(0).standard_normal(prob.d)
    assert prob.duality_gap(z) > 0
    # the workers' noiseless operators average to F
    ops = prob.operators()
    prob.sigma[:] = 0.0
    rng = np.random.default_rng(0)
    assert np.allclose(np.mean([op(z, rng) for op in ops], axis=0), prob.operator(z))


def test_qoda_on_robust_least_squares_with_projection():
    prob = RobustLeastSquares(n_features=8, rows_per_worker=8, n_workers=2, seed=1)
    res = qoda(prob.operators(), prob.x0, SimComm(2, seed=0), 300, layers=prob.layers, s=2,
               eta=StepSchedule(2.0), projection=prob.projection,
               options=RunOptions(monitor=prob.monitor, record_every=100))
    assert res.history["gap"][-1] < 0.2 * prob.duality_gap(prob.x0)
    assert np.linalg.norm(prob.split(res.x_last)[1]) <= prob.rho * (1 + 1e-12)


def test_bad_inputs():
    prob = QuadraticGame(**SMALL)
    ops = prob.operators()
    with pytest.raises(ValueError, match="operators"):
        qoda(ops[:2], prob.x0, SimComm(3), 5, layers=prob.layers)
    with pytest.raises(ValueError, match="n_iter"):
        qoda(ops, prob.x0, SimComm(3), 0, layers=prob.layers)
    with pytest.raises(ValueError, match="NaN"):
        qoda(ops, np.full(prob.d, np.nan), SimComm(3), 5, layers=prob.layers)
    with pytest.raises(ValueError, match="NaN or inf"):
        qoda([lambda x, r: np.full(prob.d, np.inf)] * 3, prob.x0, SimComm(3), 2,
             layers=prob.layers)
    with pytest.raises(ValueError, match="shape"):
        qoda([lambda x, r: np.zeros(3)] * 3, prob.x0, SimComm(3), 2, layers=prob.layers)
    with pytest.raises(ValueError, match="layer map"):
        qoda(ops, prob.x0, SimComm(3), 2)
    with pytest.raises(ValueError, match="kind"):
        make_quantizer("bogus", prob.layers, 2)
    with pytest.raises(ValueError, match="lr"):
        StepSchedule(-1.0)
    with pytest.raises(ValueError, match="noise"):
        QuadraticGame(noise="pink")


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_simcomm_and_mpicomm_identical(tmp_path, mpiexec):
    argv = ["--n-iter", "30", "--sizes", "24", "8", "4", "--level-update-every", "10",
            "--code", "huffman", "--record-every", "5"]
    out = tmp_path / "mpi.npz"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([mpiexec, "-n", "3", sys.executable, "-m",
                           "sparsecert.distributed.qoda.mpi", "--out", str(out), *argv],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    got = np.load(out)
    assert int(got["n_processes"]) == 3
    ref = result_arrays(run(build_parser().parse_args(
        ["--out", "unused", "--sim", "--n-workers", "3", *argv])))
    for key, val in ref.items():
        if key not in ("h_compute_s", "wall_s"):  # measured seconds
            assert np.array_equal(got[key], val), key


def test_communication_time_model_closed_forms():
    from sparsecert.distributed.timing import (
        PhaseClock,
        allgather_seconds,
        ring_allreduce_seconds,
    )

    # ring allreduce of d = 1000 float32 values over 4 nodes at 1 Gbit/s: 2 * 3/4 * 32000 bits
    assert ring_allreduce_seconds(1000, 4, 32, 1e9) == pytest.approx(4.8e-5, rel=1e-15)
    assert ring_allreduce_seconds(1000, 1, 32, 1e9) == 0.0
    assert allgather_seconds(2.5e9, 2.5e9) == 1.0
    with pytest.raises(ValueError, match="bandwidth"):
        allgather_seconds(1.0, 0.0)
    clock = PhaseClock()
    clock.seconds.update(oracle=4.0, encode=2.0, decode=1.0, update=0.5)
    node = clock.node_seconds(2)
    assert node["oracle"] == 2.0 and node["encode"] == 1.0 and node["decode"] == 1.0
    assert clock.node_total(2) == 4.5


# ----------------------------------------------------------------------------- WGAN-like game
def test_wgan_operator_against_finite_differences_and_monte_carlo():
    from sparsecert.distributed.qoda.wgan import WassersteinGame

    game = WassersteinGame(n_features=3, n_workers=2, samples_per_worker=50, batch=4, seed=1)
    rng = np.random.default_rng(0)
    m1, m2 = rng.standard_normal(3), rng.uniform(1.0, 2.0, 3)
    z = rng.standard_normal(game.d)
    # F = (dL/da, dL/db, -dL/dw, -dL/dc) by central differences of the closed-form L
    h = 1e-6
    grad = np.array([(game.value(z + h * e, m1, m2) - game.value(z - h * e, m1, m2)) / (2 * h)
                     for e in np.eye(game.d)])
    sign = np.concatenate([np.ones(6), -np.ones(6)])
    assert np.allclose(game.operator(z, m1, m2), sign * grad, atol=1e-6)
    # the workers' oracles average to F with the pooled sample moments (Monte Carlo)
    workers = [game.worker(k) for k in range(2)]
    sums = sum(w.local_sums() for w in workers)
    m1, m2 = game.moments(sums)
    n = 20000
    draws = np.stack([workers[i % 2](z, rng) for i in range(2 * n)])
    mean = draws.mean(axis=0)
    se = draws.std(axis=0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(mean - game.operator(z, m1, m2)) < 5 * se + 1e-12)


def test_wgan_equilibrium_and_local_monotonicity():
    from sparsecert.distributed.qoda.wgan import WassersteinGame

    game = WassersteinGame(n_features=4, n_workers=3, seed=2)
    m1, m2 = game.moments(sum(game.worker(k).local_sums() for k in range(3)))
    star = game.equilibrium(m1, m2)
    assert np.allclose(game.operator(star, m1, m2), 0.0, atol=1e-12)
    h = 1e-6
    jac = np.stack([(game.operator(star + h * e, m1, m2) - game.operator(star - h * e, m1, m2))
                    / (2 * h) for e in np.eye(game.d)], axis=1)
    sym = 0.5 * (jac + jac.T)
    assert np.linalg.eigvalsh(sym).min() >= -1e-6  # monotone near the equilibrium
    # the data of worker k do not depend on the other workers (built from its own seed)
    again = WassersteinGame(n_features=4, n_workers=3, seed=2).worker(1).data
    assert np.array_equal(game.worker(1).data, again)
    with pytest.raises(ValueError, match="no worker"):
        game.worker(3)


def test_qoda_trains_the_wgan_game():
    from sparsecert.distributed.qoda.wgan import WassersteinGame

    game = WassersteinGame(n_features=4, n_workers=3, seed=3)
    res = qoda(game.worker, game.x0, SimComm(3, seed=0), 400, layers=game.layers, s=2,
               eta=StepSchedule(3.0),
               options=RunOptions(monitor=game.reduced_monitor(), record_every=50))
    h = res.history
    assert h["residual"][-1] < 0.3 * h["residual"][0]
    assert h["mean_err"][-1] < 0.5 * h["mean_err"][0]


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_wgan_example_under_mpiexec_matches_simcomm(tmp_path, mpiexec):
    script = Path(__file__).resolve().parents[2] / "examples" / "qoda_wgan.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OPENBLAS_NUM_THREADS="1",
               MPLBACKEND="Agg")
    sim, mpi = tmp_path / "sim.npz", tmp_path / "mpi.npz"
    base = [sys.executable, str(script), "--quick", "--out", str(tmp_path)]
    for cmd in ([*base, "--n-workers", "3", "--save", str(sim)],
                [mpiexec, "-n", "3", *base, "--mpi", "--save", str(mpi)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
    a, b = np.load(sim), np.load(mpi)
    assert set(a.files) == set(b.files) and "qoda_x_bar" in a.files
    for key in a.files:
        assert np.array_equal(a[key], b[key]), key


def test_run_options_are_shared_with_safe_ef_and_unused_ones_refused():
    from sparsecert.distributed.safe_ef import RunOptions as SafeEFRunOptions

    assert SafeEFRunOptions is RunOptions
    prob = QuadraticGame(**SMALL)
    comm = SimComm(3, seed=0)
    with pytest.raises(ValueError, match="store_iterates"):
        qoda(prob.operators(), prob.x0, comm, 5, layers=prob.layers, s=2,
             options=RunOptions(store_iterates=True))
    with pytest.raises(ValueError, match="differs"):
        oda(prob.operators(), prob.x0, comm, 5, options=RunOptions(comm=SimComm(3)))
    res = oda(prob.operators(), prob.x0, comm, 5, options=RunOptions(comm=comm))
    assert list(res.history["iteration"]) == [5]  # the default record period 10, last recorded


def test_the_log_has_a_row_per_record(tmp_path):
    import csv

    prob = QuadraticGame(**SMALL)
    path = tmp_path / "qoda.csv"
    res = qoda(prob.operators(), prob.x0, SimComm(3, seed=0), 30, layers=prob.layers, s=2,
               options=RunOptions(monitor=prob.monitor, record_every=10, log=path))
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0])[:4] == ["iteration", "compute_s", "bits_up", "bits_received"]
    assert [int(float(r["iteration"])) for r in rows] == [10, 20, 30]
    assert np.array_equal([float(r["residual"]) for r in rows], res.history["residual"])
    assert np.array_equal([float(r["bits_up"]) for r in rows], res.history["bits_up"])


@pytest.mark.parametrize("method", ["qoda", "oda", "qeg"])
def test_a_resumed_run_equals_the_uninterrupted_one(tmp_path, method):
    """Checkpoint at 20 of a 30-iteration run, resume to 50: the same iterates, history and
    bits as one 50-iteration run (adaptive levels refit every 10 iterations, Huffman code:
    the decoders' levels and the workers' generators travel through the checkpoint)."""
    prob = QuadraticGame(**SMALL)

    def go(n_iter, record_every=5, **kw):
        opts = RunOptions(monitor=prob.monitor, record_every=record_every, **kw)
        comm = SimComm(3, seed=4)
        if method == "oda":
            return oda(prob.operators(), prob.x0, comm, n_iter, options=opts)
        fn = qoda if method == "qoda" else quantized_extragradient
        return fn(prob.operators(), prob.x0, comm, n_iter, layers=prob.layers, s=2,
                  code="huffman", level_update_every=10, options=opts)

    full = go(50)
    ck = tmp_path / "run.ckpt"
    go(30, checkpoint=ck, checkpoint_every=20)  # saved at 20 and at 30
    res = go(50, resume=ck)
    assert np.array_equal(res.x_bar, full.x_bar) and np.array_equal(res.x_last, full.x_last)
    for key, val in full.history.items():
        if key != "compute_s":  # measured seconds
            assert np.array_equal(res.history[key], val), key
    for key, val in full.bits_per_worker.items():
        assert np.array_equal(res.bits_per_worker[key], val), key
    with pytest.raises(ValueError, match="ask for more"):
        go(30, resume=ck)
    with pytest.raises(ValueError, match="record_every"):
        go(50, record_every=7, resume=ck)


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_sharded_entry_point_reads_own_workers_only_and_matches_the_full_problem(
        tmp_path, mpiexec):
    """--write-shards then --shards under mpiexec -n 3: rank 0 opened worker 0's file only,
    and the iterates equal those of the problem built whole in one process."""
    argv = ["--n-iter", "30", "--sizes", "24", "8", "4", "--level-update-every", "10",
            "--record-every", "10"]
    shards = tmp_path / "shards"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), OPENBLAS_NUM_THREADS="1")
    mod = [sys.executable, "-m", "sparsecert.distributed.qoda.mpi"]
    proc = subprocess.run([*mod, "--write-shards", str(shards), "--n-workers", "3", *argv],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in shards.iterdir()) == [
        "problem.json", "worker_0.npz", "worker_1.npz", "worker_2.npz"]
    out = tmp_path / "mpi.npz"
    proc = subprocess.run([mpiexec, "-n", "3", *mod, "--shards", str(shards), "--out",
                           str(out), *argv], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    got = np.load(out)
    assert list(got["loaded"]) == [0]
    ref = result_arrays(run(build_parser().parse_args(
        ["--out", "unused", "--sim", "--n-workers", "3", *argv])))
    assert np.array_equal(got["x_bar"], ref["x_bar"])
    assert np.array_equal(got["h_residual"], ref["h_residual"])
    assert np.array_equal(got["bits_up"], ref["bits_up"])
    proc = subprocess.run([*mod, "--shards", str(tmp_path / "none"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "problem.json" in proc.stderr.splitlines()[-1]
