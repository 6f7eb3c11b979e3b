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

import json
from pathlib import Path

import numpy as np

from sparsecert.distributed.qoda.problems import GameOracle, QuadraticGame

__all__ = ["write_shards", "read_meta", "ShardLoader", "shard_monitor"]

_FIELDS = ("mu", "u", "c", "b", "sigma", "relative", "x0")


def write_shards(problem: QuadraticGame, folder: str | Path) -> Path:
    """Write ``problem``'s workers, one file each, and ``problem.json`` into ``folder`` (which
    must not hold shards already)."""
    folder = Path(folder)
    if (folder / "problem.json").exists():
        raise FileExistsError(f"{folder} already holds shards")
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(problem.n_workers):
        op = problem.worker(k)
        np.savez(folder / f"worker_{k}.npz", mu=np.float64(op.mu), u=op.u, c=op.c, b=op.b,
                 sigma=op.sigma, relative=np.bool_(op.relative), x0=problem.x0)
    meta = {"kind": "QuadraticGame", "n_workers": problem.n_workers,
            "sizes": list(problem.sizes), "noise": problem.noise,
            "x0": problem.x0.tolist(), "x_star": problem.x_star.tolist()}
    (folder / "problem.json").write_text(json.dumps(meta))
    return folder


def read_meta(folder: str | Path) -> dict:
    """``problem.json`` of a shard folder, with ``x0`` and ``x_star`` as arrays."""
    path = Path(folder) / "problem.json"
    if not path.exists():
        raise FileNotFoundError(f"{folder} holds no problem.json (write it with --write-shards)")
    meta = json.loads(path.read_text())
    if meta.get("kind") != "QuadraticGame":
        raise ValueError(f"{folder} does not hold QODA shards")
    meta["x0"] = np.asarray(meta["x0"], dtype=np.float64)
    meta["x_star"] = np.asarray(meta["x_star"], dtype=np.float64)
    return meta


class ShardLoader:
    """A worker factory: ``loader(k)`` reads ``worker_<k>.npz`` of ``folder`` and nothing else.

    Parameters
    ----------
    folder : str or pathlib.Path
        A folder written by :func:`write_shards`.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.opened: list[int] = []  # the ids this process loaded (for audits)

    def __call__(self, k: int) -> GameOracle:
        with np.load(self.folder / f"worker_{int(k)}.npz", allow_pickle=False) as z:
            missing = [f for f in _FIELDS if f not in z.files]
            if missing:
                raise ValueError(f"worker_{k}.npz lacks {missing}")
            op = GameOracle(float(z["mu"]), z["u"], z["c"], z["b"], z["sigma"],
                            bool(z["relative"]), z["x0"])
        self.opened.append(int(k))
        return op


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
