"""Run the DTZO-style method on P1 under MPI (one process per worker group).

Usage::

    mpiexec -n 3 python -m sparsecert.distributed.dtzo.mpi --out result.npz

Every rank runs the same algorithm; rank ``r`` hosts workers ``i % size == r`` and the master
(the server) lives on rank 0. The root prints the bits per worker per direction and what every
process sent and received, and writes the final consensus point, the history and the bit counts
to ``--out``. ``--comm sim`` runs the
identical configuration in one process with :class:`~sparsecert.distributed.comm.SimComm` (used by
the tests to check that both communicators give the same iterates).

``--write-shards DIR`` writes the problem's workers one file each (and ``problem.json`` with
the shape, the start point and the reference solution); ``--shards DIR`` makes each rank read
only its own workers' files (the monitor then reports the errors against the reference)::

    python -m sparsecert.distributed.dtzo.mpi --write-shards shards/
    mpiexec -n 3 python -m sparsecert.distributed.dtzo.mpi --shards shards/ --out result.npz
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from sparsecert.distributed.comm import Communicator, MPIComm, SimComm
from sparsecert.distributed.dtzo.algorithm import DTZOConfig, DTZOResult, dtzo
from sparsecert.distributed.dtzo.problems import make_p1
from sparsecert.distributed.dtzo.shards import ShardedProblem, write_shards
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig

__all__ = ["config_from_args", "run", "main"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="output .npz path (written by the root)")
    ap.add_argument("--write-shards", default=None,
                    help="write the problem's workers one file each into this folder and exit")
    ap.add_argument("--shards", default=None,
                    help="folder written by --write-shards: each rank reads only its workers")
    ap.add_argument("--dims", type=int, nargs=3, default=[2, 2, 2])
    ap.add_argument("--comm", choices=("mpi", "sim"), default="mpi")
    ap.add_argument("--n-workers", type=int, default=3)
    ap.add_argument("--n-iter", type=int, default=40)
    ap.add_argument("--participation", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--problem-seed", type=int, default=0)
    return ap


def config_from_args(args: argparse.Namespace) -> DTZOConfig:
    """The configuration used by this entry point (shared with the tests)."""
    return DTZOConfig(
        n_iter=args.n_iter, rho=1.0, beta=1e4, eps=1e-4, lr=0.2, K=3, eta3=0.2, eta2=0.2,
        T=5, T1=20, max_cuts=3, vr_period=10, zo_f1=ZOConfig(q=2, mu=1e-4),
        participation=args.participation, seed=args.seed,
    )


def run(comm: Communicator, args: argparse.Namespace) -> DTZOResult:
    """Run P1 with the entry point's configuration on ``comm``."""
    if getattr(args, "shards", None):
        problem = ShardedProblem(args.shards)
    else:
        problem = make_p1(n_workers=args.n_workers, dims=tuple(getattr(args, "dims", (2, 2, 2))),
                          seed=args.problem_seed)
    res = dtzo(problem, comm, config_from_args(args), monitor=problem.metrics)
    res.loaded = list(getattr(problem, "opened", []))
    return res


def main(argv: Sequence[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.write_shards:
        write_shards(make_p1(n_workers=args.n_workers, dims=tuple(args.dims),
                             seed=args.problem_seed), args.write_shards)
        return 0
    if args.out is None:
        ap.error("--out is required (unless --write-shards)")
    if args.shards:
        try:
            args.n_workers = ShardedProblem(args.shards).n_workers
        except (OSError, ValueError) as exc:
            ap.error(str(exc))
    if args.comm == "mpi":
        comm: Communicator = MPIComm(n_workers=args.n_workers, seed=args.seed)
    else:
        comm = SimComm(args.n_workers, seed=args.seed)
    res = run(comm, args)
    # bits each process sent to / received from the others (collective; zero under SimComm)
    per_process = (comm.process_traffic() if isinstance(comm, MPIComm)
                   else np.zeros((1, 2), dtype=np.int64))
    if comm.is_root:
        pw = res.traffic.per_worker()
        print(f"bits per worker: {pw['up']:.0f} up, {pw['down']:.0f} down; per process "
              "[sent, received]: " + ", ".join(f"rank {r}: {list(map(int, v))}"
                                              for r, v in enumerate(per_process)))
        np.savez(
            args.out, z=res.z, bits_up=res.bits_up, bits_down=res.bits_down, rounds=res.rounds,
            n_queries=res.n_queries, up=comm.traffic.up_sent,
            down=comm.traffic.down_received, per_process=per_process,
            loaded=np.asarray(res.loaded, dtype=np.int64),
            **{f"h_{k}": v for k, v in res.history.items()},
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
