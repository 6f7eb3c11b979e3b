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

import json
from pathlib import Path

import numpy as np

from sparsecert.distributed.dtzo.problems import QuadraticTrilevel

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
    folder = Path(folder)
    if (folder / "problem.json").exists():
        raise FileExistsError(f"{folder} already holds shards")
    folder.mkdir(parents=True, exist_ok=True)
    for j in range(problem.n_workers):
        np.savez(folder / f"worker_{j}.npz", S=np.stack([S[j] for S in problem.S]),
                 a=np.stack([a[j] for a in problem.a]))
    meta = {"kind": "QuadraticTrilevel", "dims": list(problem.dims),
            "n_workers": problem.n_workers, "z0": problem.initial_point().tolist(),
            "x1_star": problem.x1_star.tolist(), "z_star": problem.z_star.tolist()}
    (folder / "problem.json").write_text(json.dumps(meta))
    return folder


class ShardedProblem:
    """P1 from a shard folder: ``worker(j)`` reads ``worker_<j>.npz`` only.

    Parameters
    ----------
    folder : str or pathlib.Path
        A folder written by :func:`write_shards`.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        path = self.folder / "problem.json"
        if not path.exists():
            raise FileNotFoundError(f"{folder} holds no problem.json (write it with "
                                    "--write-shards)")
        meta = json.loads(path.read_text())
        if meta.get("kind") != "QuadraticTrilevel":
            raise ValueError(f"{folder} does not hold DTZO shards")
        self.dims = tuple(int(v) for v in meta["dims"])
        self.n_workers = int(meta["n_workers"])
        self._z0 = np.asarray(meta["z0"], dtype=np.float64)
        self.x1_star = np.asarray(meta["x1_star"], dtype=np.float64)
        self.z_star = np.asarray(meta["z_star"], dtype=np.float64)
        self.opened: list[int] = []  # the workers whose files this process read (audits)

    def initial_point(self) -> np.ndarray:
        return self._z0.copy()

    def worker(self, j: int) -> QuadraticSite:
        with np.load(self.folder / f"worker_{int(j)}.npz", allow_pickle=False) as z:
            site = QuadraticSite(z["S"], z["a"])
        self.opened.append(int(j))
        return site

    def metrics(self, z: np.ndarray) -> dict[str, float]:
        """Relative errors of ``x1`` and ``z`` against the reference solution."""
        d1 = self.dims[0]
        return {"err_x1": float(np.linalg.norm(z[:d1] - self.x1_star)
                                / max(np.linalg.norm(self.x1_star), 1e-12)),
                "err_z": float(np.linalg.norm(z - self.z_star)
                               / max(np.linalg.norm(self.z_star), 1e-12))}
