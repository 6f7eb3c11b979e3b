"""A shard folder: a problem's workers one ``.npz`` file each, beside a ``problem.json``.

The three distributed methods ship their problems this way so that each MPI rank reads only
its own workers' files: ``worker_<i>.npz`` holds one worker's arrays (no pickles) and
``problem.json`` what every process needs (a ``kind`` naming the format, the sizes, the start
point, the reference solution). This module owns the folder's layout and its checks; each
method's ``shards`` module says which arrays a worker has and how they become a worker.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

__all__ = ["new_folder", "write_meta", "read_meta", "WorkerFiles"]

META = "problem.json"


def new_folder(folder: str | Path) -> Path:
    """``folder`` created if needed; refused (``FileExistsError``) when it holds shards already,
    so that a user's shards are never overwritten."""
    folder = Path(folder)
    if (folder / META).exists():
        raise FileExistsError(f"{folder} already holds shards")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_meta(folder: Path, kind: str, meta: dict) -> None:
    """Write ``problem.json`` (``meta`` with ``kind`` first) last, once every worker's file is
    written: a folder with a ``problem.json`` is complete."""
    (folder / META).write_text(json.dumps({"kind": kind, **meta}))


def read_meta(folder: str | Path, kind: str, method: str, arrays: Iterable[str] = ()) -> dict:
    """``problem.json`` of a shard folder of the given ``kind``, the fields named in ``arrays``
    as float64 arrays.

    Raises
    ------
    FileNotFoundError
        No ``problem.json`` in ``folder``.
    ValueError
        The folder holds another kind of shards, or lacks one of ``arrays``.
    """
    path = Path(folder) / META
    if not path.exists():
        raise FileNotFoundError(f"{folder} holds no {META} (write it with --write-shards)")
    meta = json.loads(path.read_text())
    if not isinstance(meta, dict) or meta.get("kind") != kind:
        raise ValueError(f"{folder} does not hold {method} shards")
    for name in arrays:
        if name not in meta:
            raise ValueError(f"{path} lacks {name!r}")
        meta[name] = np.asarray(meta[name], dtype=np.float64)
    return meta


class WorkerFiles:
    """Reads one worker's file at a time and records which ones this process opened.

    Parameters
    ----------
    folder : str or pathlib.Path
        A shard folder.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.opened: list[int] = []  # the workers whose files this process read (audits)

    def write(self, i: int, **arrays) -> None:
        """Write worker ``i``'s arrays (``np.savez``, no pickles)."""
        np.savez(self.folder / f"worker_{int(i)}.npz", **arrays)

    def read(self, i: int, fields: Iterable[str] | None = None) -> dict[str, np.ndarray]:
        """Worker ``i``'s arrays named in ``fields`` (all of them when None; a ``ValueError``
        names those missing)."""
        name = f"worker_{int(i)}.npz"
        with np.load(self.folder / name, allow_pickle=False) as z:
            fields = list(z.files if fields is None else fields)
            missing = [f for f in fields if f not in z.files]
            if missing:
                raise ValueError(f"{name} lacks {missing}")
            out = {f: z[f] for f in fields}
        self.opened.append(int(i))
        return out


class ShardReader:
    """A worker factory over a shard folder: each worker is built from its own file
    ``worker_<i>.npz`` alone (the subclass says how), and the ids this process opened are
    kept for audits (``opened``).

    Parameters
    ----------
    folder : str or pathlib.Path
        A folder written by the method's ``write_shards``.
    """

    def __init__(self, folder: str | Path) -> None:
        self._files = WorkerFiles(folder)
        self.folder = self._files.folder
        self.opened = self._files.opened  # the ids this process loaded (for audits)
