"""The engine's process pool (``backend="processes"``): every task runs exactly once, where it
is first claimed (a worker, or the caller through ``cancel``), outcomes and exceptions come back
to their futures, payloads larger than the pipes neither block nor deadlock, a dead worker is
an error and not a hang, and a search interrupted on it returns with its workers gone."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from dataclasses import replace

import numpy as np
import pytest

from sparsecert.bnb import pipe_pool

pytestmark = pytest.mark.skipif(not pipe_pool.available(), reason="POSIX pipes only")


def _log_and_square(path: str, x: int) -> tuple[int, int]:
    with open(path, "a") as f:
        f.write(f"{x}\n")
    return x * x, os.getpid()


def _slow_log(path: str, x: int) -> int:
    time.sleep(0.05)
    return _log_and_square(path, x)[0]


def _echo(a: np.ndarray) -> np.ndarray:
    return a[::-1] + 1.0


def _fail(x: int) -> int:
    raise ValueError(f"bad task {x}")


def _die(x: int) -> int:
    os._exit(3)


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.timeout(60)
@pytest.mark.parametrize("workers", [1, 2])
def test_each_task_runs_once_where_it_is_claimed(tmp_path, workers):
    log = str(tmp_path / "ran.txt")
    with pipe_pool.PipePool(workers) as pool:
        futs = [pool.submit(_log_and_square, log, i) for i in range(40)]
        here = []
        for i, f in enumerate(futs):  # the caller claims every task no worker took yet
            if f.cancel():
                here.append(i)
                _log_and_square(log, i)
        worker_pids = {f.result()[1] for f in futs if not f.cancelled()}
        assert [f.result()[0] for f in futs if not f.cancelled()] == [
            i * i for i in range(40) if i not in here]
    ran = sorted(int(v) for v in open(log).read().split())
    assert ran == list(range(40))  # exactly once each, in a worker or here
    assert os.getpid() not in worker_pids
    assert not [p for p in mp.active_children() if p.name == "sparsecert-worker"]


@pytest.mark.timeout(120)
def test_spawned_workers_run_the_tasks_too():
    # where fork is not the default (macOS, Python 3.14): the workers get their pipes pickled
    with pipe_pool.PipePool(1, mp_context=mp.get_context("spawn")) as pool:
        futs = [pool.submit(pow, i, 2) for i in range(10)]
        taken = futs[5].cancel()
        assert [f.result() for f in futs if not f.cancelled()] == [
            i * i for i in range(10) if not (taken and i == 5)]
    assert not [p for p in mp.active_children() if p.name == "sparsecert-worker"]


@pytest.mark.timeout(60)
def test_payloads_larger_than_the_pipes_do_not_deadlock():
    # 30 tasks of 400 kB, outcomes of 400 kB, all submitted before any outcome is read: far
    # more than the pipes hold in either direction
    with pipe_pool.PipePool(1) as pool:
        arrays = [np.full(50_000, float(i)) for i in range(30)]
        futs = [pool.submit(_echo, a) for a in arrays]
        for a, f in zip(arrays, futs, strict=True):
            np.testing.assert_array_equal(f.result(), a[::-1] + 1.0)


@pytest.mark.timeout(60)
def test_an_exception_in_a_task_is_raised_by_its_result():
    with pipe_pool.PipePool(1) as pool:
        bad = pool.submit(_fail, 7)
        good = pool.submit(_echo, np.zeros(3))
        with pytest.raises(ValueError, match="bad task 7"):
            bad.result()
        np.testing.assert_array_equal(good.result(), np.ones(3))


@pytest.mark.timeout(60)
def test_a_result_waits_at_most_its_timeout():
    import concurrent.futures as cf

    with pipe_pool.PipePool(1) as pool:
        slow = pool.submit(_sleep, 1.0)
        with pytest.raises(cf.TimeoutError):
            slow.result(timeout=0.05)
        assert slow.result(timeout=30) == 1.0


@pytest.mark.timeout(60)
def test_a_dead_worker_is_an_error_not_a_hang():
    with pipe_pool.PipePool(1) as pool:
        dead = pool.submit(_die, 0)
        after = pool.submit(_echo, np.zeros(3))
        with pytest.raises(pipe_pool.WorkerDied, match="ended unexpectedly"):
            dead.result()
        with pytest.raises(pipe_pool.WorkerDied):
            after.result()


@pytest.mark.timeout(60)
def test_a_claim_lock_lost_with_a_dead_worker_is_an_error_not_a_hang():
    """A worker killed while it holds the claim lock leaves it held for ever (here the test
    holds it, and a worker is killed): the engine's claim gives up with WorkerDied and
    shutdown ends the worker that waits for the lock."""
    import signal

    pool = pipe_pool.PipePool(2)
    try:
        assert pool.submit(_echo, np.zeros(2)).result(timeout=30)[0] == 1.0
        assert pool._lock.acquire(timeout=5)  # the lock is taken and never released ...
        victim, other = pool._workers
        os.kill(victim.process.pid, signal.SIGKILL)  # ... and a worker is dead
        victim.process.join(timeout=10)
        pending = pool.submit(_echo, np.zeros(2))  # the live worker waits for the lock
        assert pending.cancel() is False  # failed with the pool, or the claim gave up
        with pytest.raises(pipe_pool.WorkerDied):
            pending.result(timeout=10)
        pool.shutdown(wait=True)
        assert not other.process.is_alive()
    finally:
        pool.shutdown(wait=False)


@pytest.mark.timeout(60)
def test_shutdown_skips_the_tasks_not_started(tmp_path):
    log = str(tmp_path / "ran.txt")
    pool = pipe_pool.PipePool(1)
    first = pool.submit(_log_and_square, log, 0)
    first.result()
    rest = [pool.submit(_slow_log, log, i) for i in range(1, 50)]  # 50 ms each
    pool.shutdown(wait=True)
    ran = [int(v) for v in open(log).read().split()]
    assert 1 <= len(ran) < 10  # the worker finished the task it ran, skipped the rest
    assert all(f.cancelled() or f.done() for f in rest)
    assert not [p for p in mp.active_children() if p.name == "sparsecert-worker"]
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(_echo, np.zeros(1))


@pytest.mark.timeout(120)
def test_an_interrupted_search_on_processes_ends_its_workers_with_a_valid_bound():
    from sparsecert.bnb import BnBSettings, BranchAndBound
    from sparsecert.solvers.perspective import RelaxationProblem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 16))
    y = X[:, [0, 3, 7]] @ np.array([1.0, -0.8, 0.6]) + rng.normal(size=30)
    prob = RelaxationProblem.from_data(X, y, 0.01)
    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, batch_size=4, verbose=0)
    full = BranchAndBound(prob, 4, s).run()
    seen = []

    def stop(node, res):
        seen.append(node.id)
        if len(seen) == 12:
            raise KeyboardInterrupt

    res = BranchAndBound(prob, 4, replace(s, n_jobs=2, backend="processes"),
                         node_callback=stop).run()
    assert res.status == "interrupted"
    assert res.lower_bound <= full.upper_bound * (1 + 1e-9)
    assert not [p for p in mp.active_children() if p.name == "sparsecert-worker"]


def test_the_engine_runs_processes_on_this_pool():
    from sparsecert.bnb.evaluate import NodeContext, make_executor
    from sparsecert.solvers.perspective import RelaxationProblem

    rng = np.random.default_rng(1)
    prob = RelaxationProblem.from_data(rng.normal(size=(8, 4)), rng.normal(size=8), 0.1)
    ex = make_executor(2, "processes", NodeContext(prob, 2), "token")
    try:
        assert isinstance(ex, pipe_pool.PipePool)
    finally:
        ex.shutdown()
