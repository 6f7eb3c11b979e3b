"""DTZO's problem P1 as per-worker files, so that each MPI rank loads only its own workers.

:func:`write_shards` writes a :class:`~sparsecert.distributed.dtzo.problems.QuadraticTrilevel`'s
workers one file each (``worker_<j>.npz``: the worker's three ``S`` matrices and centres
``a``; arrays only) and ``problem.json`` (the shape, the start point and the reference
solution); :class:`ShardedProblem` is a
:class:`~sparsecert.distributed.dtzo.trilevel.TrilevelProblem` whose ``worker(j)`` reads worker
``j``'s file only (a :class:`QuadraticSite`, black boxes answering function values; the
gradient too, for the first-order reference), and whose ``metrics`` compare with the
reference solution. ``python -m sparsecert.distributed.dtzo.mpi --shards DIR`` runs on them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sparsecert.distributed.dtzo.problems import QuadraticTrilevel, relative_errors
from sparsecert.distributed.shard_folder import (
    ShardReader,
    WorkerFiles,
    new_folder,
    read_meta,
    write_meta,
)

__all__ = ["write_shards", "ShardedProblem", "QuadraticSite"]


class QuadraticSite:
    """One worker of P1 from its own arrays: ``f_l(z) = 1/2 ||S_l (z - a_l)||^2``."""

    def __init__(self, S: np.ndarray, a: np.ndarray) -> None:
        self.S, self.a = S, a  # (3, r, d), (3, d)

    def value(self, level: int, Z: np.ndarray) -> np.ndarray:
        R = (np.atleast_2d(Z) - self.a[level - 1]) @ self.S[level - 1].T
        return 0.5 * np.einsum("mr,mr->m", R, R)

    def has_gradient(self, level: int) -> bool:
        return True

    def gradient(self, level: int, Z: np.ndarray) -> np.ndarray:
        S = self.S[level - 1]
        return (np.atleast_2d(Z) - self.a[level - 1]) @ (S.T @ S)


def write_shards(problem: QuadraticTrilevel, folder: str | Path) -> Path:
    """Write ``problem``'s workers, one file each, and ``problem.json`` into ``folder`` (which
    must not hold shards already)."""
    folder = new_folder(folder)
    files = WorkerFiles(folder)
    for j in range(problem.n_workers):
        files.write(j, S=np.stack([S[j] for S in problem.S]),
                    a=np.stack([a[j] for a in problem.a]))
    write_meta(folder, "QuadraticTrilevel",
               {"dims": list(problem.dims), "n_workers": problem.n_workers,
                "z0": problem.initial_point().tolist(), "x1_star": problem.x1_star.tolist(),
                "z_star": problem.z_star.tolist()})
    return folder


class ShardedProblem(ShardReader):
    """P1 from a shard folder (written by :func:`write_shards`): ``worker(j)`` reads
    ``worker_<j>.npz`` only."""

    def __init__(self, folder: str | Path) -> None:
        meta = read_meta(folder, "QuadraticTrilevel", "DTZO", arrays=("z0", "x1_star", "z_star"))
        super().__init__(folder)
        self.dims = tuple(int(v) for v in meta["dims"])
        self.n_workers = int(meta["n_workers"])
        self._z0, self.x1_star, self.z_star = meta["z0"], meta["x1_star"], meta["z_star"]

    def initial_point(self) -> np.ndarray:
        return self._z0.copy()

    def worker(self, j: int) -> QuadraticSite:
        z = self._files.read(j, ("S", "a"))
        return QuadraticSite(z["S"], z["a"])

    def metrics(self, z: np.ndarray) -> dict[str, float]:
        """Relative errors of ``x1`` and ``z`` against the reference solution."""
        return relative_errors(z, self.dims[0], self.x1_star, self.z_star)
