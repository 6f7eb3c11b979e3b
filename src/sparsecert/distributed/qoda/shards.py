"""QODA's problem P1 as per-worker files, so that each MPI rank loads only its own workers.

:func:`write_shards` writes a :class:`~sparsecert.distributed.qoda.problems.QuadraticGame`'s
workers one file each (``worker_<k>.npz``: the worker's factors, its ``b_k`` and the noise
scales; arrays only, no pickles) and what every process needs (``problem.json``: the layer
sizes, the start point and the reference solution ``x*``); :class:`ShardLoader` is a worker
factory that reads one worker's file when called with its id, and :func:`shard_monitor`
records the residual (a reduction of the hosted workers' noiseless operators) and the
distance to ``x*`` without any process holding another's data.
``python -m sparsecert.distributed.qoda.mpi --shards DIR`` runs on them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparsecert.distributed.qoda.problems import GameOracle, QuadraticGame
from sparsecert.distributed.shard_folder import ShardReader, WorkerFiles, new_folder, write_meta
from sparsecert.distributed.shard_folder import read_meta as _read_meta

__all__ = ["write_shards", "read_meta", "ShardLoader", "shard_monitor"]

_FIELDS = ("mu", "u", "c", "b", "sigma", "relative", "x0")


def write_shards(problem: QuadraticGame, folder: str | Path) -> Path:
    """Write ``problem``'s workers, one file each, and ``problem.json`` into ``folder`` (which
    must not hold shards already)."""
    folder = new_folder(folder)
    files = WorkerFiles(folder)
    for k in range(problem.n_workers):
        op = problem.worker(k)
        files.write(k, mu=np.float64(op.mu), u=op.u, c=op.c, b=op.b, sigma=op.sigma,
                    relative=np.bool_(op.relative), x0=problem.x0)
    write_meta(folder, "QuadraticGame",
               {"n_workers": problem.n_workers, "sizes": list(problem.sizes),
                "noise": problem.noise, "x0": problem.x0.tolist(),
                "x_star": problem.x_star.tolist()})
    return folder


def read_meta(folder: str | Path) -> dict:
    """``problem.json`` of a shard folder, with ``x0`` and ``x_star`` as arrays."""
    return _read_meta(folder, "QuadraticGame", "QODA", arrays=("x0", "x_star"))


class ShardLoader(ShardReader):
    """A worker factory: ``loader(k)`` reads ``worker_<k>.npz`` of ``folder`` (written by
    :func:`write_shards`) and nothing else."""

    def __call__(self, k: int) -> GameOracle:
        z = self._files.read(k, _FIELDS)
        return GameOracle(float(z["mu"]), z["u"], z["c"], z["b"], z["sigma"],
                          bool(z["relative"]), z["x0"])


def shard_monitor(meta: dict):
    """A :class:`~sparsecert.distributed.qoda.algorithm.ReducedMonitor` of a sharded run:
    ``residual`` (``||mean_k A_k(x)||`` from the hosted workers' noiseless operators, reduced)
    and ``dist`` (``||x - x*||`` from ``problem.json``)."""
    from sparsecert.distributed.qoda.algorithm import ReducedMonitor

    n, x_star = int(meta["n_workers"]), meta["x_star"]

    def finish(total: np.ndarray, x: np.ndarray) -> dict[str, float]:
        return {"residual": float(np.linalg.norm(total / n)),
                "dist": float(np.linalg.norm(x - x_star))}

    return ReducedMonitor(local=lambda op, x: op.mean_part(x), finish=finish)
