"""A run's per-record log and its checkpoints (shared machinery of the distributed methods).

* :class:`RunLog`: one row per record point (rounds, seconds, bits per worker, the monitored
  values) written by the root process to a CSV file as the run goes (flushed every row), or
  handed to a callable.
* Checkpoints: :func:`checkpoint_path` names each process's file (``<path>.<rank>.npz``: a
  process saves only what it holds: its workers' state and generators, the server's state on
  the root); :func:`save_checkpoint` writes one atomically (a temporary file renamed over the
  previous checkpoint of the same run); :func:`load_checkpoint` reads it back and checks that
  it belongs to the same configuration. Everything is stored as arrays and JSON text (no
  pickles), so a checkpoint can be read without trusting its author's code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RunLog", "checkpoint_path", "save_checkpoint", "load_checkpoint",
           "rng_state", "set_rng_state"]


class RunLog:
    """Rows of a run's log: ``log`` is a path (a CSV file written by the root, which must not
    exist yet: nothing of the user's is overwritten) or a callable ``log(row: dict)`` called
    on the root, or None.

    Parameters
    ----------
    log : str, pathlib.Path, callable or None
    columns : sequence of str
        The CSV header (the keys of every row, in order).
    is_root : bool
        Only the root writes (or calls).
    append : bool
        Continue an existing file (a resumed run) instead of refusing it.
    """

    def __init__(self, log: str | os.PathLike | Callable[[dict], Any] | None,
                 columns: list[str], is_root: bool, append: bool = False) -> None:
        self.columns = list(columns)
        self._fn: Callable[[dict], Any] | None = None
        self._fh = None
        if log is None or not is_root:
            return
        if callable(log):
            self._fn = log
            return
        path = Path(log)
        if path.exists() and not append:
            raise FileExistsError(f"log file {path} exists; choose another path (a resumed "
                                  "run continues its own log)")
        self._fh = path.open("a" if append else "w", encoding="utf-8")
        if not append or path.stat().st_size == 0:
            self._fh.write(",".join(self.columns) + "\n")
            self._fh.flush()

    def write(self, row: Mapping[str, float]) -> None:
        if self._fn is not None:
            self._fn(dict(row))
        elif self._fh is not None:
            self._fh.write(",".join(f"{float(row[c]):.17g}" for c in self.columns) + "\n")
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def checkpoint_path(path: str | os.PathLike, rank: int) -> Path:
    """The file of process ``rank`` for the checkpoint ``path``: ``<path>.<rank>.npz``."""
    return Path(f"{os.fspath(path)}.{int(rank)}.npz")


def rng_state(rng: np.random.Generator) -> str:
    """A generator's state as JSON text."""
    return json.dumps(rng.bit_generator.state)


def set_rng_state(rng: np.random.Generator, text: str) -> None:
    """Restore a state written by :func:`rng_state` (the same kind of bit generator)."""
    state = json.loads(text)
    if state.get("bit_generator") != type(rng.bit_generator).__name__:
        raise ValueError(f"checkpoint holds a {state.get('bit_generator')} state for a "
                         f"{type(rng.bit_generator).__name__} generator")
    rng.bit_generator.state = state


def save_checkpoint(path: str | os.PathLike, rank: int, meta: Mapping[str, Any],
                    arrays: Mapping[str, np.ndarray]) -> Path:
    """Write process ``rank``'s checkpoint: ``meta`` (JSON-able: configuration and scalars)
    and named arrays; atomically (a temporary file renamed over the previous one)."""
    dest = checkpoint_path(path, rank)
    tmp = dest.with_name(dest.name + ".tmp.npz")
    np.savez(tmp, __meta__=np.array(json.dumps(dict(meta))), **dict(arrays))
    os.replace(tmp, dest)
    return dest


def load_checkpoint(path: str | os.PathLike, rank: int, expect: Mapping[str, Any]
                    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read process ``rank``'s checkpoint; ``ValueError`` naming the first setting that
    differs from ``expect`` (a checkpoint of another run or configuration)."""
    src = checkpoint_path(path, rank)
    if not src.exists():
        raise FileNotFoundError(f"no checkpoint {src} to resume from")
    with np.load(src, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        arrays = {k: z[k] for k in z.files if k != "__meta__"}
    for key, want in expect.items():
        if meta.get(key) != want:
            raise ValueError(f"checkpoint {src} was written with {key}={meta.get(key)!r}, "
                             f"this run has {key}={want!r}")
    return meta, arrays
