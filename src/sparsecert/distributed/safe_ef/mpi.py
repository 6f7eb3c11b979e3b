"""Run one Safe-EF experiment on a communicator and save its iterates.

Under MPI (one logical worker per ``i % size == rank``)::

    mpiexec -n 3 python -m sparsecert.distributed.safe_ef.mpi --problem P1 --method safe_ef \\
        --k 1 --gamma 0.1 --rounds 200 --out run.npz

Each rank reading only its own workers' data: write the problem's workers one file each,
then point the run at the folder (a rank opens only the files of the workers it hosts)::

    python -m sparsecert.distributed.safe_ef.mpi --problem P1 --write-shards shards/
    mpiexec -n 3 python -m sparsecert.distributed.safe_ef.mpi --shards shards/ --out run.npz

``--record-every N`` (default 10) sets how often the history (the monitor's reductions) is
recorded; ``--target-gap`` stops at the first record within that gap of ``f*``.

``--sim`` runs the same experiment in-process on :class:`~sparsecert.distributed.comm.SimComm`
instead. Both write the same ``.npz`` (from the root process only): ``iterates`` (``x_0..x_T``),
``x`` (the output), ``productive``, the history arrays, the per-worker bit counters and
``n_procs``. With the same arguments the two give identical iterates.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import numpy as np

from sparsecert.distributed.comm import Communicator, MPIComm, SimComm
from sparsecert.distributed.compress import (
    Compressor,
    Identity,
    RandK,
    RandomQuantizer,
    TopK,
    TopKLevels,
)
from sparsecert.distributed.safe_ef.algorithm import METHODS, RunOptions, SafeEFResult
from sparsecert.distributed.safe_ef.problems import PROBLEMS, SafeEFProblem
from sparsecert.distributed.safe_ef.shards import ShardLoader, read_meta, write_shards

__all__ = ["make_compressor", "build_problem", "run_method", "main"]


def make_compressor(kind: str, dim: int, k: int | None = None, levels: int = 1,
                    value_dtype: str = "float32", index_code: str = "fixed",
                    level_bits: int = 1) -> Compressor:
    """``"topk"``, ``"levels"`` (top-k with ``level_bits``-bit levels of a per-message scale,
    :class:`~sparsecert.distributed.compress.TopKLevels`), ``"randk"`` (scaled),
    ``"randk_unscaled"``, ``"qsgd"`` or ``"identity"`` (``value_dtype`` applies to the sparse
    and dense encodings, ``index_code`` to top-k)."""
    if kind == "levels":
        return TopKLevels(dim, dim if k is None else k, level_bits, index_code=index_code)
    if kind == "topk":
        return TopK(dim, dim if k is None else k, value_dtype=value_dtype,
                    index_code=index_code)
    if kind == "randk":
        return RandK(dim, dim if k is None else k, scaled=True, value_dtype=value_dtype)
    if kind == "randk_unscaled":
        return RandK(dim, dim if k is None else k, scaled=False, value_dtype=value_dtype)
    if kind == "qsgd":
        return RandomQuantizer(dim, levels)
    if kind == "identity":
        return Identity(dim, value_dtype)
    raise ValueError(f"unknown compressor {kind!r}")


def build_problem(name: str, seed: int | None) -> SafeEFProblem:
    """The shipped problem ``name`` ("P1", "P2", "P3") for ``seed``."""
    if name not in PROBLEMS:
        raise ValueError(f"unknown problem {name!r}; choose from {sorted(PROBLEMS)}")
    if name == "P1":
        return PROBLEMS[name](seed=seed)
    return PROBLEMS[name](seed=0 if seed is None else seed)


def run_method(
    problem: SafeEFProblem,
    method: str,
    gamma: float,
    n_rounds: int,
    comm: Communicator,
    c: float = 0.0,
    compressor: str = "topk",
    k: int | None = None,
    downlink_k: int | None = None,
    downlink: Compressor | None = None,
    batch_size: int = 8,
    record_every: int = 1,
    store_iterates: bool = False,
    stop: Callable[[int, float, float], bool] | None = None,
    monitor: str = "problem",
    value_dtype: str = "float32",
    *,
    workers: Callable[[int], object] | None = None,
    dense_downlink: bool = False,
    scalar_dtype: str = "float32",
    index_code: str = "fixed",
    level_bits: int = 1,
    downlink_level_bits: int | None = None,
) -> SafeEFResult:
    """Run ``method`` (a key of :data:`~sparsecert.distributed.safe_ef.algorithm.METHODS`) on
    ``problem``.

    Only this process's workers are touched (``problem.workers[i]`` for the local ``i``).
    ``downlink_k`` sets a top-k EF21-P downlink (or pass any compressor as ``downlink``);
    ``monitor="problem"`` uses the problem's vectorised monitor (all data, fast in one
    process), ``"reduce"`` the default reduction of the workers' local values (what a
    distributed run uses: no process reads another's data). ``workers`` replaces the
    problem's own factory (e.g. a :class:`~sparsecert.distributed.safe_ef.shards.ShardLoader`:
    each process reads only its workers' files); ``dense_downlink`` sends the model change
    dense in ``value_dtype`` (EF21-P with the identity: the uncompressed baseline's downlink);
    ``scalar_dtype`` encodes the constraint values. ``compressor="levels"`` quantises the
    uplink's kept values to ``level_bits`` bits; ``downlink_level_bits`` does the same for the
    top-``downlink_k`` downlink.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {sorted(METHODS)}")
    if monitor not in ("problem", "reduce"):
        raise ValueError(f"monitor must be 'problem' or 'reduce', got {monitor!r}")
    if sum(x is not None and x is not False for x in (downlink, downlink_k, dense_downlink)) > 1:
        raise ValueError("give one of downlink, downlink_k and dense_downlink")
    if dense_downlink:
        downlink = Identity(problem.dim, value_dtype)
    fn = METHODS[method]
    opts = RunOptions(comm=comm, monitor=problem.monitor if monitor == "problem" else None,
                      record_every=record_every, store_iterates=store_iterates, stop=stop,
                      scalar_dtype=scalar_dtype)
    if workers is None:
        workers = problem.worker  # a factory: each process builds only its own workers
    if downlink_k is not None and downlink_level_bits is not None:
        down = TopKLevels(problem.dim, downlink_k, downlink_level_bits, index_code=index_code)
    elif downlink_k is not None:
        down = TopK(problem.dim, downlink_k, value_dtype=value_dtype, index_code=index_code)
    else:
        down = downlink
    common: dict = dict(downlink=down, constraint=problem.constraint, options=opts)
    if method == "switching_subgradient":
        return fn(workers, problem.x0, gamma, n_rounds, c, value_dtype=value_dtype, **common)
    comp = make_compressor(compressor, problem.dim, k, value_dtype=value_dtype,
                           index_code=index_code, level_bits=level_bits)
    if method == "ef14_lagrangian":
        return fn(workers, problem.x0, comp, gamma, n_rounds, **common)
    if method == "safe_ef_stochastic":
        return fn(workers, problem.x0, comp, gamma, n_rounds, c, batch_size, **common)
    return fn(workers, problem.x0, comp, gamma, n_rounds, c, **common)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sparsecert.distributed.safe_ef.mpi",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", default="P1", choices=sorted(PROBLEMS))
    p.add_argument("--method", default="safe_ef", choices=sorted(METHODS))
    p.add_argument("--compressor", default="topk",
                   choices=["topk", "levels", "randk", "randk_unscaled", "qsgd", "identity"])
    p.add_argument("--level-bits", type=int, default=1,
                   help="bits of each kept value's level (--compressor levels)")
    p.add_argument("--downlink-level-bits", type=int, default=None,
                   help="quantise the top-k downlink's values to this many bits (with a "
                        "per-message scale) instead of --value-dtype")
    p.add_argument("--k", type=int, default=1)
    p.add_argument("--downlink-k", type=int, default=None,
                   help="top-k EF21-P downlink (default: the exact float64 model)")
    p.add_argument("--value-dtype", default="float32", choices=["float32", "float16", "float64"],
                   help="value type of the top-k / rand-k / dense messages (both ways)")
    p.add_argument("--gamma", type=float, default=0.1)
    p.add_argument("--c", type=float, default=0.0)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seed", type=int, default=0, help="problem seed (P1: the start point)")
    p.add_argument("--comm-seed", type=int, default=0, help="seed of the worker generators")
    p.add_argument("--index-code", default="fixed", choices=["fixed", "enumerative"],
                   help="code of the top-k indices (both ways)")
    p.add_argument("--dense-downlink", action="store_true",
                   help="dense model change in --value-dtype down (the uncompressed baseline)")
    p.add_argument("--scalar-dtype", default="float32", choices=["float32", "float16", "float64"],
                   help="encoding of the constraint values")
    p.add_argument("--record-every", type=int, default=10,
                   help="rounds between records of the history (the monitor's reductions)")
    p.add_argument("--target-gap", type=float, default=None,
                   help="stop at the first record with f - f* <= this and violation <= 0.01")
    p.add_argument("--shards", default=None,
                   help="folder written by --write-shards: each process reads only its "
                        "workers' files")
    p.add_argument("--write-shards", default=None,
                   help="write the problem's workers one file each into this folder and exit")
    p.add_argument("--sim", action="store_true", help="run on SimComm instead of MPI")
    p.add_argument("--out", default=None, help="output .npz path")
    return p


def _sharded_problem(folder: str) -> tuple[SafeEFProblem, ShardLoader]:
    """The problem's public part (start point, optimum, sizes) and a loader of its workers'
    files: nothing of another process's workers is read."""
    meta = read_meta(folder)
    prob = SafeEFProblem(meta["name"], [None] * meta["n_workers"], meta["x0"], meta["f_star"],
                         np.zeros(0), None, meta["scale"], meta["info"])
    return prob, ShardLoader(folder)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    ap = _parser()
    args = ap.parse_args(argv)
    if args.write_shards:
        write_shards(build_problem(args.problem, args.seed), args.write_shards)
        return 0
    if args.out is None:
        ap.error("--out is required (unless --write-shards)")
    for name in ("level_bits", "downlink_level_bits"):
        bits = getattr(args, name)
        if bits is not None and not 1 <= bits <= 6:
            ap.error(f"--{name.replace('_', '-')} must be in 1..6, got {bits}")
    if args.shards:
        problem, loader = _sharded_problem(args.shards)
    else:  # the shipped problem, generated on every process (public or seeded data)
        problem, loader = build_problem(args.problem, args.seed), None
    if args.sim:
        comm: Communicator = SimComm(problem.n_workers, seed=args.comm_seed)
        n_procs = 1
    else:
        comm = MPIComm(problem.n_workers, seed=args.comm_seed)
        n_procs = comm.size
    stop = None
    if args.target_gap is not None:
        tol, f_star = args.target_gap, problem.f_star
        stop = lambda r, f, v: f - f_star <= tol and v <= 0.01  # noqa: E731
    res = run_method(problem, args.method, args.gamma, args.rounds, comm, c=args.c,
                     compressor=args.compressor, k=args.k, downlink_k=args.downlink_k,
                     batch_size=args.batch_size, store_iterates=True, monitor="reduce",
                     value_dtype=args.value_dtype, workers=loader,
                     dense_downlink=args.dense_downlink, scalar_dtype=args.scalar_dtype,
                     index_code=args.index_code, level_bits=args.level_bits,
                     downlink_level_bits=args.downlink_level_bits,
                     record_every=args.record_every, stop=stop)
    procs = comm.process_traffic() if isinstance(comm, MPIComm) else np.zeros((1, 2), int)
    if comm.is_root:
        np.savez(
            args.out,
            iterates=res.iterates,
            x=res.x,
            productive=res.productive,
            rounds=res.rounds,
            objective=res.objective,
            violation=res.violation,
            bits_up=res.bits_up,
            bits_down=res.bits_down,
            bits_total=res.bits_total,
            seconds=res.seconds,
            stats_up=res.traffic.up_sent,
            stats_down=res.traffic.down_received,
            stats_rounds=res.traffic.rounds,
            server_received=res.traffic.server_received,
            server_sent=res.traffic.server_sent,
            process_bits=procs,
            n_procs=n_procs,
            local_workers=np.asarray(comm.local_workers),
            loaded=np.asarray([] if loader is None else loader.opened),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
