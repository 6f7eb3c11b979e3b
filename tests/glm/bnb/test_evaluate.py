"""Node evaluation: the GIL-free ridge refit, node tasks with their heuristics, executors."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest
from _data import sparse_glm_data

from sparsecert.bnb.evaluate import (
    NO_HEURISTIC,
    ROUND,
    ROUND_AND_SWAP,
    BatchEvaluator,
    NodeContext,
    NodeTask,
    blas_single_thread,
    evaluate_task,
)
from sparsecert.solvers._ridge_refit import cholesky_solve, ridge_refit
from sparsecert.solvers.perspective import RelaxationProblem


def _data(n=40, p=12, seed=0):
    return sparse_glm_data("squared", n, p, seed, support=(1, 5, 9), coef=(1.0, -0.8, 0.6))


@pytest.mark.parametrize("support", [(), (3,), (0, 4, 7), tuple(range(10))])
def test_ridge_refit_matches_augmented_least_squares(support):
    X, y = _data()
    lam = 0.37
    coef = np.zeros(len(support))
    obj, ok = ridge_refit(np.ascontiguousarray(X.T), y, np.asarray(support, dtype=np.int64), lam,
                          coef)
    assert ok
    # reference: QR least squares on [X_S; sqrt(lam) I] b ~ [y; 0]
    XS = X[:, list(support)]
    A = np.vstack([XS, np.sqrt(lam) * np.eye(len(support))])
    want = np.linalg.lstsq(A, np.concatenate([y, np.zeros(len(support))]), rcond=None)[0]
    np.testing.assert_allclose(coef, want, rtol=1e-10, atol=1e-12)
    want_obj = float(np.sum((y - XS @ want) ** 2) + lam * want @ want)
    assert obj == pytest.approx(want_obj, rel=1e-12)


def test_ridge_refit_reports_a_non_positive_pivot():
    X = np.array([[1.0, 1.0], [0.0, 0.0]])  # equal columns: X_S^T X_S is singular
    coef = np.zeros(2)
    obj, ok = ridge_refit(np.ascontiguousarray(X.T), np.array([1.0, 2.0]),
                          np.array([0, 1], dtype=np.int64), 0.0, coef)
    assert not ok and obj == np.inf


def test_cholesky_solve_matches_a_dense_solve_in_place_and_with_a_sign():
    """The two triangular solves shared by the ridge refit, the Newton polish and the z-space
    kernel: ``out = (L L^T)^{-1} (sign rhs)`` on the leading ``m x m`` block, ``out`` may be
    ``rhs``."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((9, 6))
    H = A.T @ A + 0.5 * np.eye(6)
    L = np.zeros((8, 8))  # a larger buffer: only the leading 6 x 6 block is read
    L[:6, :6] = np.linalg.cholesky(H)
    L[6:, :] = np.nan
    L[:, 6:] = np.nan
    rhs = rng.standard_normal(8)
    want = np.linalg.solve(H, rhs[:6])
    out = np.full(8, 7.0)
    cholesky_solve(L, 6, rhs, -1.0, out)
    np.testing.assert_allclose(out[:6], -want, rtol=1e-12)
    assert (out[6:] == 7.0).all()
    v = rhs.copy()
    cholesky_solve(L, 6, v, 1.0, v)  # in place
    np.testing.assert_allclose(v[:6], want, rtol=1e-12)
    assert np.array_equal(v[6:], rhs[6:])


def _context(loss="squared", k=3):
    X, y = _data()
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    return NodeContext(RelaxationProblem.from_data(X, y, 0.2, loss=loss), k)


def _task(ctx, fixed_in=(), fixed_out=(), **kw):
    p = ctx.problem.n_features
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[list(fixed_in)] = True
    fo[list(fixed_out)] = True
    args = dict(context=ctx, fixed_in=fi, fixed_out=fo, cutoff=np.inf, warm_start=None,
                rel_tol=1e-8, max_iter=5000, time_limit=None)
    args.update(kw)
    return NodeTask(**args)


def test_context_pickles_without_its_refit_cache():
    ctx = _context()
    model = ctx.refitter.fit((1, 5, 9))
    clone = pickle.loads(pickle.dumps(ctx))
    assert clone._refitter is None  # rebuilt where it runs
    assert clone.refitter.fit((1, 5, 9)).objective == pytest.approx(model.objective, rel=1e-12)
    assert len(ctx.refitter._cache) == 1 and len(clone.refitter._cache) == 1


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_node_heuristics_give_feasible_models_that_respect_the_fixings(loss):
    ctx = _context(loss)
    out = evaluate_task(_task(ctx, fixed_in=(2,), fixed_out=(1, 5), heuristic=ROUND_AND_SWAP))
    assert out.relaxation.status == "converged"
    assert len(out.models) == 2
    for m in out.models:
        assert len(m.support) <= ctx.k and 2 in m.support
        assert not {1, 5} & set(m.support)
        assert m.objective == pytest.approx(ctx.refitter.fit(m.support).objective)
    assert out.models[1].objective <= out.models[0].objective  # swaps start from the rounding
    only_round = evaluate_task(_task(ctx, fixed_in=(2,), fixed_out=(1, 5), heuristic=ROUND))
    assert len(only_round.models) == 1
    assert only_round.models[0].support == out.models[0].support


def test_no_heuristics_when_the_bound_passes_the_cutoff():
    ctx = _context()
    out = evaluate_task(_task(ctx, heuristic=ROUND_AND_SWAP, cutoff=-1.0))
    assert out.relaxation.lower_bound >= -1.0 and out.models == []
    inherited = evaluate_task(_task(ctx, heuristic=ROUND, cutoff=1e6, inherited_bound=2e6))
    assert inherited.models == []


def test_a_leaf_evaluation_refits_the_leaf_support():
    ctx = _context(k=3)
    p = ctx.problem.n_features
    # budget 1 and a single free variable left: the leaf is fixed_in + that variable
    out_idx = [j for j in range(p) if j not in (0, 4, 7)]
    out = evaluate_task(_task(ctx, fixed_in=(0, 4), fixed_out=out_idx, leaf=True,
                              heuristic=NO_HEURISTIC))
    assert [m.support for m in out.models] == [(0, 4, 7)]
    # no budget left: the leaf is the fixed-in set
    out = evaluate_task(_task(ctx, fixed_in=(0, 4, 7), leaf=True))
    assert [m.support for m in out.models] == [(0, 4, 7)]


def test_blas_pinning_is_restored():
    from threadpoolctl import threadpool_info

    before = [d["num_threads"] for d in threadpool_info()]
    with blas_single_thread(True):
        assert all(d["num_threads"] == 1 for d in threadpool_info())
    assert [d["num_threads"] for d in threadpool_info()] == before
    with blas_single_thread(False):
        assert [d["num_threads"] for d in threadpool_info()] == before


def _tree(res):
    return [(n.id, n.parent, n.branch_var, n.branch_value, n.status, n.lower_bound)
            for n in res.nodes], res.support, res.upper_bound


_MPI = [pytest.mark.slow, pytest.mark.mpi]

#: an MPIPoolExecutor spawning one worker and running one task, in a process of its own
_SPAWN = ("from mpi4py.futures import MPIPoolExecutor\n"
          "with MPIPoolExecutor(max_workers=1) as ex:\n"
          "    assert ex.submit(abs, -3).result(timeout=60) == 3\n")


def _skip_unless_mpi_can_spawn(seconds: float = 120.0) -> None:
    """Skip (with the reason) where MPI cannot spawn workers: there the engine's MPI pool
    would wait for them forever. The probe runs in a session of its own, killed with whatever
    it spawned when its time is up."""
    import os
    import signal
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", _SPAWN], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = child.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.skip(f"MPI cannot spawn workers here: a one-worker MPIPoolExecutor did not "
                    f"answer in {seconds:g} s")
    if child.returncode != 0:
        pytest.skip("MPI cannot spawn workers here: "
                    + (err.strip().splitlines() or ["(no message)"])[-1])


@pytest.mark.parametrize("backend", ["threads", pytest.param("processes", marks=pytest.mark.slow),
                                     pytest.param("mpi", marks=_MPI)])
@pytest.mark.timeout(300)
def test_tree_depends_on_the_batch_size_not_on_the_executor(backend):
    if backend == "mpi":
        pytest.importorskip("mpi4py.futures")
        _skip_unless_mpi_can_spawn()
    import concurrent.futures as cf

    from sparsecert.bnb import BnBSettings, BranchAndBound

    X, y = _data(n=30, p=14, seed=3)
    prob = RelaxationProblem.from_data(X, y, 0.05)

    def run(batch_size, **kw):
        s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=40, batch_size=batch_size,
                        heuristic_every=3, verbose=0, **kw)
        return _tree(BranchAndBound(prob, 4, s).run())

    serial = run(5)
    assert len(serial[0]) > 10
    assert run(5, n_jobs=2, backend=backend) == serial
    if backend != "mpi":
        assert run(5, n_jobs=3, backend=backend) == serial
    if backend == "threads":
        with cf.ThreadPoolExecutor(3) as ex:
            assert run(5, executor=ex) == serial


@pytest.mark.timeout(300)
def test_the_calling_thread_runs_tasks_no_worker_has_started():
    """caller_runs: outcomes in task order, each task run exactly once, by the pool's thread
    and by the calling thread, whatever order the tasks finish in."""
    import concurrent.futures as cf
    import threading
    import time

    rng = np.random.default_rng(0)
    delays = rng.uniform(0.0, 0.01, size=(5, 12))
    ran = []

    def task(t):
        time.sleep(t[1])
        ran.append((t[0], threading.get_ident()))
        return 10 * t[0]

    with cf.ThreadPoolExecutor(1) as pool:
        evaluator = BatchEvaluator(pool, caller_runs=True, run_task=task)
        for batch in delays:
            ran.clear()
            tasks = list(enumerate(batch))
            assert list(evaluator.outcomes(tasks)) == [10 * i for i in range(len(tasks))]
            assert sorted(i for i, _ in ran) == list(range(len(tasks)))
            assert threading.get_ident() in {t for _, t in ran}
            assert len({t for _, t in ran}) == 2


@pytest.mark.timeout(300)
def test_a_task_that_fails_in_the_calling_thread_raises_there():
    import concurrent.futures as cf
    import time

    def task(t):
        if t == 0:
            raise ValueError("task 0")
        return t

    with cf.ThreadPoolExecutor(1) as pool:
        pool.submit(time.sleep, 0.05)  # keeps the worker busy: task 0 runs in this thread
        with pytest.raises(ValueError, match="task 0"):
            list(BatchEvaluator(pool, caller_runs=True, run_task=task).outcomes([0, 1, 2]))


@pytest.mark.timeout(300)
def test_n_jobs_threads_run_the_tasks_on_n_jobs_threads(monkeypatch):
    """The engine's pool has n_jobs - 1 threads; the engine's own thread is the last worker."""
    import threading

    import sparsecert.bnb.evaluate as evaluate
    from sparsecert.bnb import BnBSettings, BranchAndBound

    X, y = _data(n=20, p=30, seed=1)
    X = X + np.random.default_rng(0).normal(size=X.shape)  # a tree of some size
    prob = RelaxationProblem.from_data(X, y, 0.01)
    threads = set()

    def recording(task):
        threads.add(threading.get_ident())
        return evaluate_task(task)

    monkeypatch.setattr(evaluate, "evaluate_task", recording)
    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=60, batch_size=8, fixing=False,
                    verbose=0, n_jobs=2)
    res = BranchAndBound(prob, 4, s).run()
    assert res.n_nodes > 20
    assert threading.get_ident() in threads and len(threads) == 2


@pytest.mark.timeout(300)
def test_an_interrupt_inside_a_batch_keeps_the_unapplied_nodes_open():
    """Outcomes are applied as they come in: Ctrl-C while waiting for the third one of a
    batch leaves the first two applied and the rest of the batch open in the tree."""
    import concurrent.futures as cf

    from sparsecert.bnb import BnBSettings, BranchAndBound

    X, y = _data(n=30, p=14, seed=3)
    prob = RelaxationProblem.from_data(X, y, 0.05)
    batches = []  # the tasks of each batch (all submitted before the first result is asked)
    asked = [True]

    class Interrupting(cf.Executor):
        def submit(self, fn, /, *args, **kwargs):
            if asked[0]:
                batches.append(0)
                asked[0] = False
            batches[-1] += 1
            fut = cf.Future()
            fut.set_result(fn(*args, **kwargs))
            third_of_a_full_batch = batches[-1] == 3
            get = fut.result

            def result(timeout=None):
                asked[0] = True
                if third_of_a_full_batch:
                    raise KeyboardInterrupt
                return get(timeout)

            fut.result = result
            return fut

    # each batch formed after the previous one is applied (tests/glm/bnb/test_batch_overlap.py
    # interrupts searches with two batches in flight)
    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=40, batch_size=4, batch_overlap=0,
                    verbose=0, executor=Interrupting())
    res = BranchAndBound(prob, 4, s).run()
    assert res.status == "interrupted"
    assert batches == [2, 2, 2, 4]  # (the root ran alone, without the executor)
    evaluated = [n for n in res.nodes if n.status != "open"]
    assert len(evaluated) == 1 + 6 + 2  # the first two outcomes of the last batch applied
    assert res.n_open == len(res.nodes) - len(evaluated)
    assert res.lower_bound <= min(n.lower_bound for n in res.nodes if n.status == "open")


def test_an_interrupt_while_applying_a_batch_keeps_the_rest_of_it_open():
    """Ctrl-C from the node callback after the second node of a batch of four: the last two
    stay open in the pool, so the returned lower bound still covers them."""
    from sparsecert.bnb import BnBSettings, BranchAndBound

    X, y = _data(n=30, p=14, seed=3)
    prob = RelaxationProblem.from_data(X, y, 0.05)
    sizes = []
    calls = []

    def callback(node, res):
        calls.append(node.id)
        if len(calls) == sum(sizes[:-1]) + 2 and sizes[-1] == 4:
            raise KeyboardInterrupt

    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=40, batch_size=4, batch_overlap=0,
                    verbose=0)  # (each batch applied in full before the next is formed)
    eng = BranchAndBound(prob, 4, s, node_callback=callback)
    batch = eng._next_batch

    def next_batch():
        out = batch()
        sizes.append(len(out))
        return out

    eng._next_batch = next_batch
    res = eng.run()
    assert res.status == "interrupted"
    assert sizes[-1] == 4 and len(calls) == sum(sizes[:-1]) + 2
    open_nodes = [n for n in res.nodes if n.status == "open"]
    assert res.n_open == len(open_nodes)
    assert res.lower_bound <= min(n.lower_bound for n in open_nodes)


def test_polish_pins_blas_to_one_thread_and_restores_it():
    from threadpoolctl import threadpool_info, threadpool_limits

    from sparsecert.solvers.perspective.polish import _single_thread_blas

    def blas_threads():
        return [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]

    with threadpool_limits(2, "blas"):
        before = blas_threads()
        for _ in range(2):  # the second call reuses the controller
            with _single_thread_blas():
                assert all(t == 1 for t in blas_threads())
            assert blas_threads() == before


def test_a_task_pickles_its_fixings_as_indices():
    """A task's fixings travel as index arrays (a node fixes few of its p variables), and come
    back as the same masks."""
    p = 20000
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[[3, 17]] = True
    fo[[5, 9000, 19999]] = True
    task = NodeTask(context="token", fixed_in=fi, fixed_out=fo, cutoff=1.0, warm_start=None,
                    rel_tol=1e-6, max_iter=10, time_limit=None)
    data = pickle.dumps(task)
    assert len(data) < 2000  # two boolean masks alone are 40,000 bytes
    back = pickle.loads(data)
    np.testing.assert_array_equal(back.fixed_in, fi)
    np.testing.assert_array_equal(back.fixed_out, fo)
    assert back.fixed_in.dtype == bool and back.context == "token"


def test_a_worker_without_the_context_asks_for_it_and_keeps_it():
    """A task naming a context this process does not hold answers ContextMissing; the same
    task carrying the context is evaluated and leaves the context here for the next task."""
    import sparsecert.bnb.evaluate as evaluate

    ctx = _context()
    token = evaluate.new_token()
    try:
        missing = evaluate_task(_task(ctx, fixed_in=(2,), context=token))
        assert isinstance(missing, evaluate.ContextMissing) and missing.token == token
        want = evaluate_task(_task(ctx, fixed_in=(2,)))
        got = evaluate_task(_task(ctx, fixed_in=(2,), context=token, carried=ctx))
        assert got.relaxation.lower_bound == want.relaxation.lower_bound
        again = evaluate_task(_task(ctx, fixed_out=(1,), context=token))
        assert not isinstance(again, evaluate.ContextMissing)
    finally:
        evaluate.release(token)
    assert isinstance(evaluate_task(_task(ctx, context=token)), evaluate.ContextMissing)


def test_the_worker_cache_keeps_the_latest_contexts_only():
    import sparsecert.bnb.evaluate as evaluate

    ctx = _context()
    tokens = [evaluate.new_token() for _ in range(evaluate.WORKER_CACHE_SIZE + 2)]
    try:
        for t in tokens:
            evaluate.register(t, ctx)
        held = [t for t in tokens if t in evaluate._CONTEXTS]
        assert held == tokens[-evaluate.WORKER_CACHE_SIZE:]
    finally:
        for t in tokens:
            evaluate.release(t)


def _mark_task(task):
    """A task for a process pool: record (in a file of its own, created exclusively: a second
    run of the same task fails) which process ran it."""
    import os

    directory, i = task
    with open(os.path.join(directory, str(i)), "x") as fh:
        fh.write(str(os.getpid()))
    return 10 * i


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_process_pool_and_the_calling_thread_run_each_task_once(tmp_path):
    """caller_runs on a process pool: outcomes in order, every task run exactly once, by the
    worker process and by this one."""
    import concurrent.futures as cf
    import os

    with cf.ProcessPoolExecutor(1) as pool:
        evaluator = BatchEvaluator(pool, caller_runs=True, run_task=_mark_task)
        tasks = [(str(tmp_path), i) for i in range(40)]
        assert list(evaluator.outcomes(tasks)) == [10 * i for i in range(40)]
    pids = {(tmp_path / str(i)).read_text() for i in range(40)}
    assert str(os.getpid()) in pids and len(pids) == 2


class _Counting:
    """An executor around another that counts the tasks submitted and those carrying the
    search's data (what a worker is sent after it answered ContextMissing)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.tasks = 0
        self.with_data = 0

    def submit(self, fn, task):
        self.tasks += 1
        self.with_data += task.carried is not None
        return self.inner.submit(fn, task)


def _larger_tree():
    """A problem whose tree has some 60 evaluated nodes, and the settings."""
    from sparsecert.bnb import BnBSettings

    X, y = _data(n=20, p=30, seed=1)
    X = X + np.random.default_rng(0).normal(size=X.shape)
    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=60, batch_size=8, fixing=False,
                    verbose=0)
    return RelaxationProblem.from_data(X, y, 0.01), s


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_user_process_pool_receives_the_data_once_per_worker():
    """A user executor's tasks carry the search's token, not its data: each worker is sent the
    context once (with its first task), and the tree is the serial one."""
    import concurrent.futures as cf

    from sparsecert.bnb import BranchAndBound

    prob, s = _larger_tree()
    serial = BranchAndBound(prob, 4, s).run()
    with cf.ProcessPoolExecutor(2) as pool:
        # the workers start before the search (a fork after it would inherit its data)
        assert list(pool.map(abs, [-1, -2, -3, -4])) == [1, 2, 3, 4]
        ex = _Counting(pool)
        res = BranchAndBound(prob, 4, replace(s, executor=ex)).run()
    assert _tree(res) == _tree(serial)
    assert ex.tasks > 40
    # once per worker, or a few times more (a task sent again may land on a worker that holds
    # the data already, and the other worker then asks again); every task carried it before
    assert 2 <= ex.with_data <= 4


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_dask_executor_gives_the_serial_tree_and_sends_the_data_once_per_worker():
    # dask.distributed, not the top-level name "distributed": without Dask that name resolves
    # to the namespace package of this suite's tests/distributed folder
    dd = pytest.importorskip(
        "dask.distributed",
        reason="Dask's distributed scheduler is not installed (pip install 'dask[distributed]')")
    Client, LocalCluster = dd.Client, dd.LocalCluster

    from sparsecert.bnb import BranchAndBound

    prob, s = _larger_tree()
    serial = BranchAndBound(prob, 4, s).run()
    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address=None) as cluster, Client(cluster) as client):
        ex = _Counting(client.get_executor())
        res = BranchAndBound(prob, 4, replace(s, executor=ex)).run()
    assert _tree(res) == _tree(serial)
    assert ex.tasks > 40
    assert 2 <= ex.with_data <= 4
