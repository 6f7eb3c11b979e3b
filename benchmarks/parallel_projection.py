"""What N workers could give the search: a projection from one serial run's measured tasks.

The parallel figure's tree (``benchmarks/certify.py``: synthetic n = p = 300, k = 10,
lambda2 = 0.1) is searched serially through an executor that records, for every task, its
duration, the bytes the task and its outcome pickle to and the time pickling and unpickling
them takes, and where each batch ends. For N workers the projection schedules every batch's
tasks in order on the first free of N workers (as a pool does), each task taking its measured
time plus one round trip (the latency of the processes backend's round trip, measured here on
the pool it uses, plus its bytes at ``--bandwidth``), and keeps the rest of the search serial:
the engine's work, measured as the search's time outside the tasks, plus the engine's own
pickling of every task and outcome. That is Amdahl's law with the batches' imbalance and the
messages counted; it ignores what the hardware adds (memory bandwidth, shared caches), so it is
an upper bound for a machine with N free cores.

Two task shapes, each against the serial run of its own settings (the tree depends on them):
one node a task at batch size max(16, 4 N), and subtree tasks of 8 nodes at 2 N tasks a
batch. Then measured runs against serial, checking that the tree is the same: batch size 32 on
8 process workers on this machine (on 2 cores it can only show what oversubscription costs and
that it changes nothing), and a Dask LocalCluster of 2 worker processes with one node a task
(batch size 32) and with subtree tasks (batch size 4, 8 nodes a task), each against the serial
run of its settings (skipped, with the reason, without ``distributed``).

Usage::

    python benchmarks/parallel_projection.py --quick --json /tmp/projection.json
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from certify import PARALLEL_TREE, REL_GAP, _standardise, make_synthetic  # noqa: E402

from sparsecert.bnb import BnBSettings, BranchAndBound  # noqa: E402
from sparsecert.solvers.perspective import RelaxationProblem  # noqa: E402

WORKERS = (2, 8, 16, 64)
SUBTREE = 8


class _Recorder(cf.Executor):
    """Runs each task when submitted; records its time, its and its outcome's pickled bytes,
    the time pickling and unpickling both takes, and the batches (a batch ends when the engine
    asks for its first result)."""

    def __init__(self) -> None:
        self.batches: list[list[float]] = []
        self.pending: list[float] = []
        self.bytes: list[int] = []
        self.serialise = 0.0

    def submit(self, fn, /, *args, **kwargs):
        t0 = time.perf_counter()
        blob = pickle.dumps(args[0], protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(blob)
        t1 = time.perf_counter()
        out = fn(*args, **kwargs)
        t2 = time.perf_counter()
        back = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(back)
        self.serialise += (t1 - t0) + (time.perf_counter() - t2)
        self.pending.append(t2 - t1)
        self.bytes.append(len(blob) + len(back))
        fut = _Future(self)
        fut.set_result(out)
        return fut

    def close_batch(self) -> None:
        if self.pending:
            self.batches.append(self.pending)
            self.pending = []


class _Future(cf.Future):
    def __init__(self, owner: _Recorder) -> None:
        super().__init__()
        self._owner = owner

    def result(self, timeout=None):
        self._owner.close_batch()
        return super().result(timeout)


def _echo(a):
    return np.concatenate([a, a])


def _process_pool(workers: int) -> cf.Executor:
    """The pool ``backend="processes"`` runs on this system: the engine's pipe pool on POSIX
    systems, ``ProcessPoolExecutor`` elsewhere."""
    from sparsecert.bnb import pipe_pool

    if pipe_pool.available():
        return pipe_pool.PipePool(workers)
    return cf.ProcessPoolExecutor(workers)


def round_trip_latency(n: int = 200) -> float:
    """Median seconds of a round trip carrying about 5 KB each way through the pool of the
    processes backend."""
    a = np.zeros(700)
    with _process_pool(1) as ex:
        ex.submit(_echo, a).result()
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            ex.submit(_echo, a).result()
            ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def project(search_time: float, rec: _Recorder, workers: int, latency: float,
            bandwidth: float) -> float:
    """The speedup of ``workers`` workers on the recorded batches (see the module's text)."""
    tasks = sum(sum(b) for b in rec.batches)
    # the engine and all the pickling (half of it is the workers', counted here as serial);
    # a run in one process pickles nothing
    serial = search_time - tasks
    makespan, i = 0.0, 0
    for batch in rec.batches:
        w = [0.0] * workers
        for d in batch:
            w[w.index(min(w))] += d + latency + rec.bytes[i] / bandwidth
            i += 1
        makespan += max(w)
    return (search_time - rec.serialise) / max(serial + makespan, 1e-12)


def _problem():
    c = PARALLEL_TREE
    X, y, _ = make_synthetic(c["n"], c["p"], c["k"], snr=c["snr"], seed=0)
    X, y = _standardise(X, y, "squared")
    return RelaxationProblem.from_data(X, y, c["lambda2"], fit_intercept=True,
                                       eig_shift="auto"), c["k"]


def _settings(node_limit: int, batch_size: int, subtree: int, **kw) -> BnBSettings:
    return BnBSettings(verbose=0, rel_gap=REL_GAP, node_limit=node_limit,
                       batch_size=batch_size, subtree_nodes=subtree, **kw)


def _signature(res):
    return [(n.id, n.parent, n.branch_var, n.branch_value, n.status, n.lower_bound)
            for n in res.nodes]


def dask_pairs(prob, k, node_limit: int) -> list[dict]:
    """The search on a Dask LocalCluster of 2 single-threaded worker processes against the
    serial run of the same settings, with one node a task (batch size 32) and with subtree
    tasks (batch size 4, 8 nodes a task); the cluster starts before the clocks."""
    from dataclasses import replace

    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print("[skip] Dask: distributed is not installed (pip install 'dask[distributed]')")
        return [dict(skip="distributed is not installed")]
    print("\n== measured: a Dask LocalCluster of 2 worker processes against serial")
    rows = []
    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address=None) as cluster, Client(cluster) as client):
        ex = client.get_executor()
        for batch, subtree in ((32, 1), (4, SUBTREE)):
            s = _settings(node_limit, batch, subtree)
            t0 = time.perf_counter()
            serial = BranchAndBound(prob, k, s).run()
            t_serial = time.perf_counter() - t0
            t0 = time.perf_counter()
            par = BranchAndBound(prob, k, replace(s, executor=ex)).run()
            t_par = time.perf_counter() - t0
            row = dict(workers=2, batch_size=batch, subtree_nodes=subtree,
                       nodes=serial.n_nodes, serial_time=t_serial, parallel_time=t_par,
                       speedup=t_serial / t_par,
                       same_tree=_signature(serial) == _signature(par))
            rows.append(row)
            print(f"   batch {batch:2d} x {subtree} a task: serial {t_serial:.2f} s, Dask "
                  f"{t_par:.2f} s ({row['speedup']:.2f}x), {serial.n_nodes} nodes, same "
                  f"tree: {row['same_tree']}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,000 evaluated nodes (else 5,000)")
    ap.add_argument("--json", metavar="PATH", help="write the rows here")
    ap.add_argument("--node-limit", type=int, default=None, metavar="N",
                    help="evaluated nodes of the tree (overrides --quick's 1,000)")
    ap.add_argument("--bandwidth", type=float, default=1.25e9,
                    help="bytes per second of a message (default 1.25e9: 10 Gbit/s)")
    args = ap.parse_args(argv)
    node_limit = args.node_limit or (1000 if args.quick else PARALLEL_TREE["node_limit"])
    prob, k = _problem()
    BranchAndBound(prob, k, _settings(20, 16, 1)).run()  # the kernels loaded, not timed
    latency = round_trip_latency()
    load = os.getloadavg()[0]
    print(f"processes backend round trip (about 5 KB each way): {1e3 * latency:.3f} ms; "
          f"messages at {args.bandwidth:.3g} B/s; load {load:.1f}")
    rows = []
    print(f"\n{'workers':>7s} {'nodes a task':>12s} {'batch':>5s} {'nodes':>6s} "
          f"{'task ms':>8s} {'bytes a task':>12s} {'engine ms/node':>14s} {'projected':>9s}")
    for n in WORKERS:
        for subtree, batch in ((1, max(16, 4 * n)), (SUBTREE, 2 * n)):
            rec = _Recorder()
            t0 = time.perf_counter()
            res = BranchAndBound(prob, k, _settings(node_limit, batch, subtree,
                                                    executor=rec)).run()
            search = time.perf_counter() - t0
            tasks = [d for b in rec.batches for d in b]
            engine = (search - sum(tasks) - rec.serialise) / res.n_evaluated
            row = dict(workers=n, subtree_nodes=subtree, batch_size=batch,
                       nodes=res.n_nodes, evaluated=res.n_evaluated, search_time=search,
                       ms_per_task=1e3 * float(np.mean(tasks)),
                       bytes_per_task=float(np.mean(rec.bytes)),
                       engine_ms_per_node=1e3 * engine,
                       serialise_ms_per_task=1e3 * rec.serialise / len(tasks),
                       projected_speedup=project(search, rec, n, latency, args.bandwidth),
                       latency_ms=1e3 * latency, bandwidth=args.bandwidth)
            rows.append(row)
            print(f"{n:7d} {subtree:12d} {batch:5d} {res.n_nodes:6d} {row['ms_per_task']:8.2f} "
                  f"{row['bytes_per_task']:12.0f} {row['engine_ms_per_node']:14.3f} "
                  f"{row['projected_speedup']:8.2f}x", flush=True)
    print("\n== measured: 8 process workers on this machine against serial, batch size 32")
    s = _settings(node_limit, 32, 1)
    t0 = time.perf_counter()
    serial = BranchAndBound(prob, k, s).run()
    t_serial = time.perf_counter() - t0
    from dataclasses import replace

    t0 = time.perf_counter()
    par = BranchAndBound(prob, k, replace(s, n_jobs=8, backend="processes")).run()
    t_par = time.perf_counter() - t0
    over = dict(workers=8, backend="processes", batch_size=32, serial_time=t_serial,
                parallel_time=t_par, speedup=t_serial / t_par,
                same_tree=_signature(serial) == _signature(par), cores=os.cpu_count(),
                load_1min=[load, os.getloadavg()[0]])
    print(f"   serial {t_serial:.2f} s, 8 processes {t_par:.2f} s ({over['speedup']:.2f}x on "
          f"{os.cpu_count()} cores), same tree: {over['same_tree']}; load "
          f"{over['load_1min'][0]:.1f} / {over['load_1min'][1]:.1f}")
    dask = dask_pairs(prob, k, node_limit)
    claims = [dict(name="parallel runs (8 process workers, Dask) whose tree differs from the "
                        "serial one", measured=int(not over["same_tree"])
                   + sum(not r.get("same_tree", True) for r in dask), target=0,
                   unit="runs", better="lower")]
    for r in dask:
        if "skip" not in r and r["subtree_nodes"] > 1:
            claims.append(dict(name=f"2-worker Dask speedup of the search against serial, "
                                    f"batch size {r['batch_size']}, {r['subtree_nodes']} nodes "
                                    "a task (a LocalCluster of 2 processes; the engine's thread "
                                    "does not work beside a user executor)",
                               measured=r["speedup"], target=1.5, unit="x", better="higher"))
    if args.json:
        Path(args.json).write_text(json.dumps(dict(
            meta=dict(node_limit=node_limit, tree=PARALLEL_TREE, load_1min=load,
                      cores=os.cpu_count()),
            projection=rows, oversubscribed=over, dask=dask, claims=claims), indent=2))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
