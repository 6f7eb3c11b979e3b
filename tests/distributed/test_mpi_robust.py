"""MPI runs that fail or are uneven: an exception on one rank ends the job with one line, ranks
without workers idle correctly in all three methods, few collectives per round, a worker
class as a factory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _mpi(mpiexec: str, script: str, n: int, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([mpiexec, "-n", str(n), sys.executable, "-c", script],
                          capture_output=True, text=True, env=env, timeout=timeout)


_FAILING = r"""
import numpy as np
from sparsecert.distributed.comm import MPIComm, Message
comm = MPIComm(3)
if comm.rank == 1:
    raise ValueError("boom on purpose\nsecond line")
comm.gather({i: Message(b"x", 8) for i in comm.local_workers})  # rank 1 never arrives
"""


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_an_exception_on_one_rank_ends_the_job_with_one_line(mpiexec):
    t0 = time.perf_counter()
    proc = _mpi(mpiexec, _FAILING, 3, timeout=120)
    elapsed = time.perf_counter() - t0
    assert proc.returncode != 0
    # the rank writes the line unbuffered on its stderr before aborting; a launcher may hand
    # it on through either of its own streams
    both = proc.stdout + proc.stderr
    lines = [ln for ln in both.splitlines() if ln.startswith("sparsecert: error")]
    assert lines == ["sparsecert: error on MPI rank 1 of 3: ValueError: boom on purpose"]
    assert "Traceback" not in both
    assert elapsed < 60  # seconds, not the test's timeout: the job was aborted


_IDLE = r"""
import json, sys
import numpy as np
from mpi4py import MPI
from sparsecert.distributed.comm import MPIComm, SimComm
from sparsecert.distributed.options import RunOptions


class Counting:
    # counts the collectives of the communicator (the test's probe)
    def __init__(self, comm):
        self._c, self.calls = comm, {}

    def __getattr__(self, name):
        fn = getattr(self._c, name)
        if name[0].isupper() and name not in ("Get_rank", "Get_size"):
            def counted(*a, **k):
                self.calls[name] = self.calls.get(name, 0) + 1
                return fn(*a, **k)
            return counted
        return fn


def safe_ef_run(comm):
    from sparsecert.distributed.compress import TopK
    from sparsecert.distributed.safe_ef import safe_ef
    from sparsecert.distributed.safe_ef.problems import worst_case
    p = worst_case(d=12, n_workers=2, seed=1)
    r = safe_ef(p.worker, p.x0, TopK(p.dim, 3), 0.5, 30, downlink=TopK(p.dim, 4),
                options=RunOptions(comm=comm, record_every=10))
    return {"x": r.x.tolist(), "obj": r.objective.tolist(), "bits": r.bits_total.tolist()}


def qoda_run(comm):
    from sparsecert.distributed.qoda.algorithm import StepSchedule, qoda
    from sparsecert.distributed.qoda.problems import QuadraticGame
    p = QuadraticGame(sizes=(16, 4), noise_scales=(0.1, 0.1), rank=2, n_workers=2, seed=0)
    r = qoda(p.worker, p.x0, comm, 20, layers=p.layers, s=2, eta=StepSchedule(5.0),
             options=RunOptions(monitor=p.reduced_monitor(), record_every=10))
    return {"x": r.x_bar.tolist(), "res": r.history["residual"].tolist(),
            "node": sorted(r.node_seconds)}


def dtzo_run(comm):
    from sparsecert.distributed.dtzo.algorithm import DTZOConfig, dtzo
    from sparsecert.distributed.dtzo.problems import make_p1
    p = make_p1(n_workers=2, seed=0)
    r = dtzo(p, comm, DTZOConfig(n_iter=8, T=4, T1=8, lr=0.2, eta3=0.2, eta2=0.2))
    return {"z": r.z.tolist(), "up": float(r.bits_up)}


out = {}
for name, fn in (("safe_ef", safe_ef_run), ("qoda", qoda_run), ("dtzo", dtzo_run)):
    probe = Counting(MPI.COMM_WORLD)
    mpi = fn(MPIComm(2, seed=4, comm=probe))
    out[name] = {"mpi": mpi, "calls": probe.calls}
    if MPI.COMM_WORLD.Get_rank() == 0:
        out[name]["sim"] = fn(SimComm(2, seed=4))
if MPI.COMM_WORLD.Get_rank() == 0:
    print("JSON" + json.dumps(out))
"""


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_ranks_without_workers_idle_in_all_three_methods(mpiexec):
    """3 ranks, 2 workers: rank 2 hosts none. Every method finishes with the iterates of
    SimComm, and a Safe-EF round takes four collectives (one per gather: the messages' sizes
    are agreed, so no lengths travel; one per broadcast), the monitor's reductions only at
    record points."""
    proc = _mpi(mpiexec, _IDLE, 3)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("JSON")][0][4:])
    for name in ("safe_ef", "qoda", "dtzo"):
        assert out[name]["mpi"] == out[name]["sim"], name
    calls = out["safe_ef"]["calls"]
    # 30 rounds: 2 gathers (1 Gatherv each) and 2 broadcasts (1 Bcast each) per round
    assert calls.get("Gatherv", 0) == 2 * 30
    assert calls.get("Bcast", 0) == 2 * 30
    # 4 record points (0, 10, 20, 30), 2 monitored points each, 2 collectives per reduction
    assert calls.get("Allgather", 0) + calls.get("Allgatherv", 0) == 4 * 2 * 2
    # QODA, 20 iterations: one Allgatherv per exchange (the messages' sizes are agreed: no
    # lengths travel), and the monitor's reduction (an Allgather and an Allgatherv) at the
    # record points 10 and 20
    calls = out["qoda"]["calls"]
    assert (calls.get("Allgatherv", 0), calls.get("Allgather", 0)) == (20 + 2, 2)


class _ClassWorker:
    """A worker class used as a factory: ``_ClassWorker(i)`` builds worker ``i``."""

    def __init__(self, i: int) -> None:
        self.a = np.arange(4.0) * (i + 1) / 4

    def f(self, x):
        return float(np.abs(x - self.a).sum())

    def f_subgrad(self, x):
        return np.sign(x - self.a)

    def g(self, x):
        return float(np.abs(x).max() - 2.0)

    def g_subgrad(self, x):
        s = np.zeros(x.size)
        j = int(np.argmax(np.abs(x)))
        s[j] = np.sign(x[j])
        return s


def test_a_worker_class_is_accepted_as_a_factory():
    from sparsecert.distributed.comm import SimComm
    from sparsecert.distributed.compress import TopK
    from sparsecert.distributed.options import RunOptions
    from sparsecert.distributed.safe_ef import safe_ef

    x0 = np.zeros(4)
    run = [safe_ef(w, x0, TopK(4, 2), 0.1, 20, options=RunOptions(comm=SimComm(3)))
           for w in (_ClassWorker, [_ClassWorker(i) for i in range(3)])]
    assert np.array_equal(run[0].x, run[1].x) and run[0].n_rounds == 20


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_the_entry_point_reads_only_each_ranks_shards(tmp_path, mpiexec):
    """``--write-shards`` then ``mpiexec -n 3 ... --shards``: the root read only its own
    workers' files, and the iterates are those of the problem built in one process."""
    from sparsecert.distributed.safe_ef.mpi import main

    shards = tmp_path / "shards"
    assert main(["--problem", "P1", "--write-shards", str(shards)]) == 0
    assert sorted(p.name for p in shards.iterdir())[-1] == "worker_9.npz"
    args = ["--problem", "P1", "--k", "2", "--downlink-k", "2", "--value-dtype", "float16",
            "--gamma", "0.07", "--rounds", "30"]
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([mpiexec, "-n", "3", sys.executable, "-m",
                           "sparsecert.distributed.safe_ef.mpi", *args, "--shards", str(shards),
                           "--out", str(tmp_path / "mpi.npz")], capture_output=True, text=True,
                          env=env, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert main([*args, "--sim", "--out", str(tmp_path / "sim.npz")]) == 0
    a, b = np.load(tmp_path / "mpi.npz"), np.load(tmp_path / "sim.npz")
    assert a["loaded"].tolist() == [0, 3, 6, 9] and b["loaded"].tolist() == []
    for key in ("iterates", "objective", "bits_total"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


_WARNS = r"""
from dataclasses import replace
from sparsecert.distributed.comm import MPIComm
from sparsecert.distributed.dtzo.algorithm import DTZOConfig, dtzo
from sparsecert.distributed.dtzo.nonquadratic import make_p3
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig
P = make_p3(n_workers=3, dims=(2, 2, 2), seed=0)
cfg = DTZOConfig(n_iter=40, rho=1.0, beta=1e4, eps=1e-4, lr=0.2, K=3, eta3=0.2, eta2=0.2,
                 T=10, T1=1, max_cuts=3, vr_period=20, zo_f1=ZOConfig(q=2))
res = dtzo(P, MPIComm(3, seed=0), cfg)
import os
os.write(1, f"WARNINGS {len(res.warnings)}\n".encode())  # one write: lines cannot interleave
"""


@pytest.mark.timeout(300)
@pytest.mark.mpi
def test_a_dtzo_warning_is_printed_once_per_job_not_once_per_rank(mpiexec):
    """A refinement horizon that stops too early (``T1=1``) gives every rank the same
    diagnosis; only the root prints it."""
    proc = _mpi(mpiexec, _WARNS, 3)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = re.findall(r"WARNINGS (\d+)\n", proc.stdout)
    assert len(counts) == 3 and len(set(counts)) == 1, proc.stdout  # every rank, the same
    n = int(counts[0])
    assert n >= 1
    both = proc.stdout + proc.stderr
    assert both.count("DTZOWarning") == n  # each message once in the job
