"""Run QODA (or a baseline) on problem P1 over MPI and save the trajectory.

Usage::

    mpiexec -n 4 python -m sparsecert.distributed.qoda.mpi --out run.npz [--n-iter 200] ...

Without ``--shards`` every rank builds the problem generator (same seed) but hands the
algorithm a factory, so a rank builds and queries only its own workers ``i % size == rank``;
the residual is recorded from a reduction of the workers' local operator values. With
``--shards DIR`` (written once by ``--write-shards DIR``: one file per worker and
``problem.json`` with the layer sizes, the start point and ``x*``) each rank reads only its own
workers' files, and the monitor records the residual and the distance to ``x*`` (the
restricted gap needs every worker's matrix)::

    python -m sparsecert.distributed.qoda.mpi --write-shards shards/ --n-workers 4
    mpiexec -n 4 python -m sparsecert.distributed.qoda.mpi --shards shards/ --out run.npz

``--checkpoint PATH --checkpoint-every N`` saves the run (one file per rank), ``--resume PATH``
continues it with the same arguments (``--n-iter`` counts from the original start).

The root writes ``x_bar``, ``x_last``, the history, the per-worker bit counts (as counted by
the communicator, from the payload bytes, and under each code) and the wall time of the
iterations. The same function
runs on :class:`~sparsecert.distributed.comm.SimComm` with ``--sim`` (no MPI needed), which is
what the tests and the benchmark compare against.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from sparsecert.distributed.comm import MPIComm, SimComm
from sparsecert.distributed.options import RunOptions
from sparsecert.distributed.qoda.algorithm import (
    QUANTIZER_KINDS,
    QODAResult,
    StepSchedule,
    make_quantizer,
    oda,
    qoda,
    quantized_extragradient,
)
from sparsecert.distributed.qoda.problems import QuadraticGame
from sparsecert.distributed.qoda.shards import ShardLoader, read_meta, shard_monitor, write_shards

__all__ = ["build_parser", "run", "main", "result_arrays"]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m sparsecert.distributed.qoda.mpi",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="output .npz (written by the root)")
    ap.add_argument("--method", choices=("qoda", "oda", "qeg"), default="qoda")
    ap.add_argument("--quantizer", choices=QUANTIZER_KINDS, default="layerwise_adaptive")
    ap.add_argument("--s", type=int, default=2, help="inner levels")
    ap.add_argument("--code", choices=("fixed", "gamma", "huffman"), default="fixed")
    ap.add_argument("--no-count-codes", action="store_true",
                    help="record the sent code's size only (no sizes under the other codes)")
    ap.add_argument("--noise", choices=("absolute", "relative"), default="absolute")
    ap.add_argument("--n-workers", type=int, default=None, help="default: number of ranks")
    ap.add_argument("--n-iter", type=int, default=200)
    ap.add_argument("--lr", type=float, default=30.0)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 128, 16])
    ap.add_argument("--noise-scales", type=float, nargs="+", default=[0.02, 0.3, 3.0])
    ap.add_argument("--rank", type=int, default=8, help="rank of each worker's factors")
    ap.add_argument("--problem-seed", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1, help="seed of the workers' generators")
    ap.add_argument("--record-every", type=int, default=10)
    ap.add_argument("--level-update-every", type=int, default=50)
    ap.add_argument("--sim", action="store_true", help="use SimComm instead of MPI")
    ap.add_argument("--write-shards", default=None,
                    help="write the problem's workers one file each into this folder and exit")
    ap.add_argument("--shards", default=None,
                    help="folder written by --write-shards: each rank reads only its workers")
    ap.add_argument("--checkpoint", default=None, help="save the run here (one file per rank)")
    ap.add_argument("--checkpoint-every", type=int, default=100)
    ap.add_argument("--resume", default=None, help="continue the run saved at this path")
    return ap


def _problem(args: argparse.Namespace, n_workers: int) -> QuadraticGame:
    return QuadraticGame(sizes=args.sizes, noise_scales=args.noise_scales, n_workers=n_workers,
                         noise=args.noise, rank=args.rank, seed=args.problem_seed)


def run(args: argparse.Namespace, comm=None) -> QODAResult:
    """Build P1 from ``args`` and run the chosen method on ``comm`` (default: from args)."""
    if comm is None:
        if args.sim:
            comm = SimComm(args.n_workers or 4, seed=args.seed)
        else:
            comm = MPIComm(args.n_workers, seed=args.seed)
    shards = getattr(args, "shards", None)
    if shards:  # each process reads only its own workers' files
        meta = read_meta(shards)
        if meta["n_workers"] != comm.n_workers:
            raise ValueError(f"the shards hold {meta['n_workers']} workers, the communicator "
                             f"has {comm.n_workers}")
        x0, layers, monitor = meta["x0"], tuple(meta["sizes"]), shard_monitor(meta)
        ops = ShardLoader(shards)
    else:
        prob = _problem(args, comm.n_workers)
        x0, layers, monitor = prob.x0, prob.layers, prob.reduced_monitor()
        ops = prob.worker  # a factory: each process builds only the workers it hosts
    opts = RunOptions(monitor=monitor, record_every=args.record_every,
                      checkpoint=getattr(args, "checkpoint", None),
                      checkpoint_every=getattr(args, "checkpoint_every", 100),
                      resume=getattr(args, "resume", None))
    common = dict(eta=StepSchedule(args.lr), options=opts)
    if args.method == "oda":
        res = oda(ops, x0, comm, args.n_iter, **common)
    else:
        q = make_quantizer(args.quantizer, layers, args.s, args.code)
        fn = qoda if args.method == "qoda" else quantized_extragradient
        res = fn(ops, x0, comm, args.n_iter, quantizer=q,
                 level_update_every=args.level_update_every,
                 count_codes=not getattr(args, "no_count_codes", False), **common)
    if shards:
        res.loaded = list(ops.opened)  # the workers whose files this process opened
    return res


def result_arrays(res: QODAResult) -> dict[str, np.ndarray]:
    """Flat dict of arrays (for ``np.savez``)."""
    out = {"x_bar": res.x_bar, "x_last": res.x_last}
    out.update({f"h_{k}": v for k, v in res.history.items()})
    out.update({f"bits_{k}": v for k, v in res.bits_per_worker.items()})
    out["traffic_up_sent"] = res.traffic.up_sent
    out["traffic_up_received"] = res.traffic.up_received
    out["traffic_rounds"] = np.asarray(res.traffic.rounds)
    out["wall_s"] = np.asarray(res.wall_s)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.write_shards:
        write_shards(_problem(args, args.n_workers or 4), args.write_shards)
        return 0
    if args.out is None:
        ap.error("--out is required (unless --write-shards)")
    if args.shards:
        try:
            n_sharded = read_meta(args.shards)["n_workers"]
        except (OSError, ValueError) as exc:
            ap.error(str(exc))
        if args.n_workers is None:
            args.n_workers = n_sharded
    if args.sim:
        comm = SimComm(args.n_workers or 4, seed=args.seed)
    else:
        try:
            comm = MPIComm(args.n_workers, seed=args.seed)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    res = run(args, comm)
    if comm.is_root:
        out = result_arrays(res)
        out["n_processes"] = np.asarray(getattr(comm, "size", 1))
        out["loaded"] = np.asarray(getattr(res, "loaded", []), dtype=np.int64)
        np.savez(args.out, **out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
