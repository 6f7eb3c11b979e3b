"""Checkpoint and resume of a Safe-EF run (``RunOptions(checkpoint=..., resume=...)``).

Every process saves what it holds (:mod:`~sparsecert.distributed.runlog`): the model, the
server's state on the root, its workers' method state (e.g. the EF14 errors) and random
generators, the server's generator, the output average, the history and the traffic counted
so far. A resumed run continues from the saved round and gives the iterates, the bits and the
history of the uninterrupted run (tested).
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from sparsecert.distributed.runlog import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)

__all__ = ["save_run", "restore_run"]

_TRAFFIC_ARRAYS = ("up_sent", "up_received", "down_received")
_TRAFFIC_INTS = ("server_received", "server_sent", "process_sent", "process_received", "rounds")


def _config(run: Any) -> dict[str, Any]:
    cm = run.comm
    return {"method": run.method, "params": json.dumps(run.params, sort_keys=True, default=str),
            "n_workers": cm.n_workers, "size": cm.size, "rank": cm.rank, "dim": run.d,
            "record_every": run.record_every, "x0": run.x0.tolist()}


def save_run(run: Any, done: int, x: np.ndarray, w: np.ndarray | None,
             state: dict[str, Any]) -> None:
    """Write this process's checkpoint after ``done`` rounds."""
    arrays: dict[str, np.ndarray] = {"x": x, "x_sum": run.x_sum,
                                     "productive": np.asarray(run.productive, dtype=bool)}
    if w is not None:
        arrays["w"] = w
    for key, val in state.items():
        if isinstance(val, dict):
            for i, arr in val.items():
                arrays[f"state.{key}.{i}"] = np.asarray(arr)
    for key, vals in run.hist.items():
        arrays[f"hist.{key}"] = np.asarray(vals, dtype=np.float64)
    delta = run.comm.traffic - run._t0
    for key in _TRAFFIC_ARRAYS:
        arrays[f"traffic.{key}"] = getattr(delta, key)
    if run.iterates is not None:
        arrays["iterates"] = np.asarray(run.iterates)
    meta = dict(_config(run), done=int(done), n_avg=int(run.n_avg), seconds=run.seconds(),
                rngs={k: rng_state(g) for k, g in run.rngs.items()},
                traffic={k: int(getattr(delta, k)) for k in _TRAFFIC_INTS})
    save_checkpoint(run.opts.checkpoint, run.comm.rank, meta, arrays)


def restore_run(run: Any, x: np.ndarray, w: np.ndarray | None, state: dict[str, Any]
                ) -> tuple[int, np.ndarray, np.ndarray | None]:
    """Load this process's checkpoint into ``run`` and ``state`` (in place); returns
    ``(rounds done, x, w)``."""
    meta, arrays = load_checkpoint(run.opts.resume, run.comm.rank, _config(run))
    done = int(meta["done"])
    if done >= run.n_rounds:
        raise ValueError(f"the checkpoint is at round {done}; ask for more than {done} rounds "
                         f"to resume (n_rounds={run.n_rounds})")
    for key, val in state.items():
        if isinstance(val, dict):
            for i in val:
                val[i][...] = arrays[f"state.{key}.{i}"]
    run.x_sum[:] = arrays["x_sum"]
    run.n_avg = int(meta["n_avg"])
    run.productive[:] = arrays["productive"].tolist()
    for key in run.hist:
        run.hist[key][:] = arrays[f"hist.{key}"].tolist()
    t = run.comm.traffic
    for key in _TRAFFIC_ARRAYS:
        getattr(t, key)[...] += arrays[f"traffic.{key}"]
    for key in _TRAFFIC_INTS:
        setattr(t, key, getattr(t, key) + int(meta["traffic"][key]))
    if run.iterates is not None:
        run.iterates[:] = list(arrays["iterates"])
    for key, g in run.rngs.items():
        set_rng_state(g, meta["rngs"][key])
    run._seconds0 = float(meta["seconds"])
    run._start = time.perf_counter()
    run._paused = 0.0
    x = arrays["x"].copy()
    w = arrays["w"].copy() if w is not None else None
    return done, x, w
