"""Shipped Safe-EF problems as per-worker files, so that each MPI rank loads only its own.

:func:`write_shards` writes a problem's workers one file each (``worker_<i>.npz``: the worker's
arrays and scalars, no pickles) and what every process needs (``problem.json``: the start
point, the reference optimum, the sizes); :class:`ShardLoader` is a worker factory that reads
one worker's file when called with its id. ``python -m sparsecert.distributed.safe_ef.mpi
--shards DIR`` runs on them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparsecert.distributed.safe_ef.problem import SafeEFProblem
from sparsecert.distributed.safe_ef.problems import (
    HingeNPWorker,
    IsotropicL1Worker,
    L1RegressionWorker,
)
from sparsecert.distributed.shard_folder import ShardReader, WorkerFiles, new_folder, write_meta
from sparsecert.distributed.shard_folder import read_meta as _read_meta

__all__ = ["write_shards", "ShardLoader", "read_meta"]

# each worker class and the attributes its constructor takes, in order
_KINDS = {
    "HingeNPWorker": (HingeNPWorker, ("a_pos", "a_neg", "wpos", "wneg", "lam1", "alpha")),
    "L1RegressionWorker": (L1RegressionWorker, ("a", "b", "radius")),
    "IsotropicL1Worker": (IsotropicL1Worker, ("a", "radius")),
}


def write_shards(problem: SafeEFProblem, folder: str | Path) -> Path:
    """Write ``problem``'s workers, one file each, and ``problem.json`` into ``folder`` (which
    must not hold shards already). Only problems with a mean constraint (P1, P2, P3)."""
    if problem.constraint is not None:
        raise ValueError("only problems with a mean constraint (P1, P2, P3) are sharded")
    folder = new_folder(folder)
    files = WorkerFiles(folder)
    for i, w in enumerate(problem.workers):
        kind = type(w).__name__
        if kind not in _KINDS:
            raise TypeError(f"no shard format for {kind}")
        files.write(i, kind=np.array(kind),
                    **{k: np.asarray(getattr(w, k)) for k in _KINDS[kind][1]})
    write_meta(folder, "SafeEFProblem",
               {"name": problem.name, "n_workers": problem.n_workers,
                "x0": problem.x0.tolist(), "f_star": float(problem.f_star),
                "scale": float(problem.scale),
                "info": {k: v for k, v in problem.info.items()
                         if isinstance(v, int | float | str)}})
    return folder


def read_meta(folder: str | Path) -> dict:
    """``problem.json`` of a shard folder (start point, reference optimum, sizes)."""
    return _read_meta(folder, "SafeEFProblem", "Safe-EF", arrays=("x0",))


class ShardLoader(ShardReader):
    """A worker factory: ``loader(i)`` reads ``worker_<i>.npz`` of ``folder`` (written by
    :func:`write_shards`) and nothing else."""

    def __call__(self, i: int):
        z = self._files.read(i)
        kind = str(z.get("kind"))
        if kind not in _KINDS:
            raise ValueError(f"worker_{i}.npz holds an unknown worker kind {kind!r}")
        cls, names = _KINDS[kind]
        missing = [k for k in names if k not in z]
        if missing:
            raise ValueError(f"worker_{i}.npz lacks {missing}")
        return cls(*[z[k] if z[k].ndim else float(z[k]) for k in names])
