"""Checkpoint and resume of a QODA / ODA / quantized extra-gradient run
(``RunOptions(checkpoint=..., resume=...)``).

Every process saves what it holds (:mod:`~sparsecert.distributed.runlog`, one
``<checkpoint>.<rank>.npz``, arrays and JSON only): the iterates and dual sums, the adaptive
quantizers' levels of its workers' encoders and of its decoders (one per sender), its workers'
random generators, the history, the per-code bit counters, the phase clock and the traffic
counted so far. A resumed run continues from the saved iteration and gives the iterates, the
bits and the history of the run that never stopped (tested).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from sparsecert.distributed.quantize import Quantizer
from sparsecert.distributed.runlog import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)

__all__ = ["run_config", "save_state", "restore_state"]

_TRAFFIC_ARRAYS = ("up_sent", "up_received", "down_received")
_TRAFFIC_INTS = ("server_received", "server_sent", "process_sent", "process_received", "rounds")
VECTORS = ("y", "x", "v_prev", "x_sum", "x_half")


def run_config(method: str, comm: Any, x1: np.ndarray, q: Any, record_every: int,
               level_update_every: int, codes: list[str]) -> dict[str, Any]:
    """What a checkpoint must match to be resumed by this run (``codes``: the codes whose
    sizes the run counts)."""
    return {"method": method, "n_workers": comm.n_workers, "size": comm.size,
            "rank": comm.rank, "dim": int(x1.size), "quantizer": repr(q),
            "record_every": int(record_every), "level_update_every": int(level_update_every),
            "codes": list(codes),
            "x1_sha256": hashlib.sha256(np.ascontiguousarray(x1).tobytes()).hexdigest()}


def _coders(ex: Any) -> dict[str, Any]:
    """The stateful coders of an exchange by name (adaptive quantizers only)."""
    out = {f"enc.{i}": e for i, e in ex.enc.items()}
    out.update({f"dec.{j}": e for j, e in enumerate(ex.dec)})
    return {k: e for k, e in out.items() if isinstance(e, Quantizer) and e.adaptive}


def save_state(path: Any, config: dict[str, Any], t: int, vectors: dict[str, np.ndarray],
               sum_sq: float, ex: Any, clock: Any, hist: dict[str, list], wall_s: float,
               traffic_delta: Any) -> None:
    """Write this process's checkpoint after iteration ``t``."""
    comm = ex.comm
    arrays: dict[str, np.ndarray] = {f"vec.{k}": np.asarray(v) for k, v in vectors.items()}
    for name, coder in _coders(ex).items():
        arrays[f"levels.{name}"] = np.stack(coder.levels)
    for key, vals in hist.items():
        arrays[f"hist.{key}"] = np.asarray(vals, dtype=np.float64)
    for c, arr in ex.bits.items():
        arrays[f"bits.{c}"] = arr
    arrays["payload_bits"] = ex.payload_bits
    for key in _TRAFFIC_ARRAYS:
        arrays[f"traffic.{key}"] = getattr(traffic_delta, key)
    meta = dict(config, done=int(t), sum_sq=float(sum_sq), calls=int(ex.calls),
                wall_s=float(wall_s), clock=dict(clock.seconds),
                rngs={str(i): rng_state(comm.worker_rng(i)) for i in comm.local_workers},
                traffic={k: int(getattr(traffic_delta, k)) for k in _TRAFFIC_INTS},
                hist_keys=list(hist))
    save_checkpoint(path, comm.rank, meta, arrays)


def restore_state(path: Any, config: dict[str, Any], n_iter: int, ex: Any, clock: Any,
                  hist: dict[str, list]) -> tuple[int, dict[str, np.ndarray], float, float]:
    """Load this process's checkpoint: the coders' levels, generators, clock, counters,
    history (in place) and the traffic (added to the communicator's); returns
    ``(iterations done, vectors, sum_sq, wall seconds before the resume)``."""
    comm = ex.comm
    meta, arrays = load_checkpoint(path, comm.rank, config)
    done = int(meta["done"])
    if done >= n_iter:
        raise ValueError(f"the checkpoint is at iteration {done}; ask for more than {done} "
                         f"iterations to resume (n_iter={n_iter})")
    for name, coder in _coders(ex).items():
        coder.levels = list(arrays[f"levels.{name}"])
    for key in meta["hist_keys"]:
        hist[key] = arrays[f"hist.{key}"].tolist()
    for c in ex.bits:
        ex.bits[c][...] = arrays[f"bits.{c}"]
    ex.payload_bits[...] = arrays["payload_bits"]
    ex.calls = int(meta["calls"])
    clock.seconds.update(meta["clock"])
    for i in comm.local_workers:
        set_rng_state(comm.worker_rng(i), meta["rngs"][str(i)])
    t = comm.traffic
    for key in _TRAFFIC_ARRAYS:
        getattr(t, key)[...] += arrays[f"traffic.{key}"]
    for key in _TRAFFIC_INTS:
        setattr(t, key, getattr(t, key) + int(meta["traffic"][key]))
    vectors = {k: arrays[f"vec.{k}"].copy() for k in VECTORS}
    return done, vectors, float(meta["sum_sq"]), float(meta["wall_s"])
