"""Speed-up with MPI ranks: Safe-EF's wall time on one process against ``mpiexec -n 2``.

A problem whose per-round compute is heavy enough for the ranks to pay (l1 regression with an
l1-ball constraint, 16 workers with 4,000 rows of 200 features each: about 20-40 ms of
subgradients per round on one core). The same run (the headline messages of P2: float16 top-10
up with error feedback, sparse ternary STC-40 down) goes

* on one process (``SimComm``: every worker in turn), and
* under ``mpiexec -n 2`` (``MPIComm``: eight workers per rank, the server on rank 0),

with BLAS on one thread in both (``OMP_NUM_THREADS=1``: the ranks are the only
parallelism) and the monitor only at the end (``record_every = rounds``). Each pair is run
``--repeats`` times in alternating order; the claim is the median ratio of wall times (the
whole run inside the process, set-up and the encoders' warm-up excluded: ``res.seconds``).
The MPI run also gives identical iterates (checked).

The projection to 16 ranks (one worker per rank) uses what was measured: the compute of one
worker per round ``C_w`` and the server's per round ``C_s`` (one process, timed around the
workers' calls), the collectives per round (four: one ``Gatherv`` per gather, the messages'
sizes being agreed, one ``Bcast`` per broadcast) each costing ``alpha log2(K)`` with
``alpha`` taken from the 2-rank run (what it spent beyond its compute, per collective), and
the bits of a round on a link of ``--bandwidth`` bit/s (the root receives all uplinks). It
is a model, stated as such.

    python benchmarks/distributed_ranks.py --quick --json out/ranks.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

# one BLAS thread in this process and in the ranks (set before numpy loads)
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sparsecert.distributed.comm import MPIComm, SimComm, mpi_available  # noqa: E402
from sparsecert.distributed.compress import TopK, TopKTernary  # noqa: E402
from sparsecert.distributed.options import RunOptions  # noqa: E402
from sparsecert.distributed.safe_ef import safe_ef  # noqa: E402

N_WORKERS, ROWS, DIM = 16, 4000, 200
COLLECTIVES = 4  # per Safe-EF round: a Gatherv per gather (sizes agreed), a Bcast per broadcast


class HeavyWorker:
    """Worker ``i`` of the heavy l1 regression, built from its own seed only (a factory)."""

    calls = 0.0  # seconds spent in this process's workers (the benchmark's probe)

    def __init__(self, i: int) -> None:
        rng = np.random.default_rng([7, i])
        self.a = rng.standard_normal((ROWS, DIM)) * rng.uniform(0.5, 2.0)
        x_true = np.zeros(DIM)
        x_true[:10] = np.random.default_rng(7).standard_normal(10)
        self.b = self.a @ x_true + rng.standard_t(1.5, ROWS)
        self.radius = 0.5 * np.abs(x_true).sum()

    def f(self, x):
        return float(np.abs(self.a @ x - self.b).mean())

    def f_subgrad(self, x):
        t0 = time.perf_counter()
        out = self.a.T @ np.sign(self.a @ x - self.b) / ROWS
        HeavyWorker.calls += time.perf_counter() - t0
        return out

    def g(self, x):
        return float(np.abs(x).sum() - self.radius)

    def g_subgrad(self, x):
        return np.sign(x)


def run(comm, rounds: int):
    res = safe_ef(HeavyWorker, np.zeros(DIM), TopK(DIM, 10, value_dtype="float16"), 0.01,
                  rounds, downlink=TopKTernary(DIM, 40),
                  options=RunOptions(comm=comm, record_every=rounds))
    return res


def child(rounds: int, out: str) -> None:
    """The ``mpiexec`` side: one run, the root writes its numbers."""
    comm = MPIComm(N_WORKERS, seed=0)
    HeavyWorker.calls = 0.0
    res = run(comm, rounds)
    calls = comm.allreduce({i: [HeavyWorker.calls / len(comm.local_workers)]
                            for i in comm.local_workers}) if comm.local_workers else None
    if comm.is_root:
        Path(out).write_text(json.dumps({"seconds": float(res.seconds[-1]), "x": res.x.tolist(),
                                         "bits": float(res.bits_total[-1]),
                                         "worker_s": None if calls is None
                                         else float(calls[0])}))


def _mpiexec() -> str | None:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds and repeats")
    ap.add_argument("--json", default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--bandwidth", type=float, default=10e9, help="bit/s of the modelled link")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    rounds = args.rounds or (60 if args.quick else 200)
    if args.child:
        child(rounds, args.child)
        return 0
    repeats = args.repeats or (3 if args.quick else 5)
    load = os.getloadavg()[0]
    ok, reason = mpi_available()
    exe = _mpiexec()
    results: dict = {"rounds": rounds, "n_workers": N_WORKERS, "rows": ROWS, "dim": DIM,
                     "load_average_start": load, "blas_threads": os.environ["OMP_NUM_THREADS"]}
    claims: list[dict] = []
    if not ok or exe is None:
        print(f"skipped: MPI unavailable ({reason or 'no mpiexec'})")
        results["skipped"] = reason or "no mpiexec"
    else:
        one, two, worker_s, same = [], [], [], True
        tmp = Path(args.json).with_suffix(".child.json") if args.json else Path("ranks.child.json")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        for rep in range(repeats):
            for mode in (("one", "two") if rep % 2 == 0 else ("two", "one")):
                if mode == "one":
                    HeavyWorker.calls = 0.0
                    res = run(SimComm(N_WORKERS, seed=0), rounds)
                    one.append(float(res.seconds[-1]))
                    worker_s.append(HeavyWorker.calls / N_WORKERS)
                    x_one = res.x
                    bits = float(res.bits_total[-1])
                else:
                    proc = subprocess.run([exe, "-n", "2", sys.executable, __file__, "--child",
                                           str(tmp), "--rounds", str(rounds)],
                                          capture_output=True, text=True, timeout=900,
                                          env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
                    if proc.returncode != 0:
                        raise SystemExit(f"mpiexec failed: {proc.stderr[-800:]}")
                    rec = json.loads(tmp.read_text())
                    two.append(rec["seconds"])
                    x_two = np.asarray(rec["x"])
            same = same and np.array_equal(x_one, x_two)
        tmp.unlink(missing_ok=True)
        ratio = float(np.median(np.array(one) / np.array(two)))
        per_round_one = float(np.median(one)) / rounds
        c_w = float(np.median(worker_s)) / rounds  # one worker's subgradient per round
        c_s = max(per_round_one - N_WORKERS * c_w, 0.0)  # everything else (server, encoders)
        per_round_two = float(np.median(two)) / rounds
        alpha = max(per_round_two - (N_WORKERS / 2 * c_w + c_s), 0.0) / COLLECTIVES
        bits_round = bits / rounds
        proj = {}
        for k in (1, 2, 4, 8, 16):
            comm_s = 0.0 if k == 1 else COLLECTIVES * alpha * math.log2(k) + \
                bits_round * N_WORKERS / args.bandwidth
            proj[k] = math.ceil(N_WORKERS / k) * c_w + c_s + comm_s
        results.update(one_process_s=one, two_ranks_s=two, identical_iterates=bool(same),
                       worker_compute_per_round_s=c_w * N_WORKERS,
                       other_per_round_s=c_s, alpha_s=alpha, bits_per_worker_round=bits_round,
                       projected_round_s=proj,
                       projected_speedup={k: proj[1] / v for k, v in proj.items()})
        print(f"Safe-EF, {N_WORKERS} workers x {ROWS} rows x {DIM} features, {rounds} rounds, "
              f"BLAS threads 1, load average {load:.1f} at the start")
        print(f"{'run':<28}{'wall s (each repeat)':<40}median")
        print(f"{'one process (SimComm)':<28}{', '.join(f'{v:.2f}' for v in one):<40}"
              f"{np.median(one):.2f}")
        print(f"{'mpiexec -n 2 (MPIComm)':<28}{', '.join(f'{v:.2f}' for v in two):<40}"
              f"{np.median(two):.2f}")
        print(f"one process / mpiexec -n 2: {ratio:.2f}x (median of per-pair ratios); "
              f"identical iterates: {same}")
        print(f"per round: workers' compute {1e3 * c_w * N_WORKERS:.1f} ms, the rest "
              f"{1e3 * c_s:.1f} ms, collective latency alpha {1e6 * alpha:.0f} us, "
              f"{bits_round:.0f} bits per worker")
        print("projection (model) to K ranks, one process = 1: " + ", ".join(
            f"K={k}: {proj[1] / v:.2f}x" for k, v in proj.items()))
        claims.append({"name": "Safe-EF wall time, one process / mpiexec -n 2 (16 workers, "
                               "per-round compute >= 10 ms)", "measured": ratio,
                       "target": 1.0, "unit": "x", "better": "higher"})
        claims.append({"name": "per-round workers' compute of that problem (ms, one process)",
                       "measured": 1e3 * c_w * N_WORKERS, "target": 10.0, "unit": "ms",
                       "better": "higher"})
        results["figures"] = [{"name": "projected time speed-up at 16 ranks (a model from the "
                                        "measured compute, latency and message sizes)",
                               "measured": proj[1] / proj[16], "unit": "x"}]
    results["claims"] = claims
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
