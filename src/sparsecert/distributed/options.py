"""Run options shared by the distributed methods: :class:`RunOptions`, and the checks of
the methods' settings records (:func:`check_int`, :func:`check_settings`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsecert.distributed.comm import Communicator

__all__ = ["RunOptions", "SCALAR_DTYPES", "check_int", "check_settings"]

SCALAR_DTYPES = ("float16", "float32", "float64")


@dataclass(frozen=True)
class RunOptions:
    """How a run is driven: one record for every distributed method (Safe-EF and its
    baselines, QODA and its baselines).

    Parameters
    ----------
    comm : Communicator or None
        Transport. Safe-EF: default ``SimComm(len(workers))`` (required when ``workers`` is a
        factory). QODA takes its communicator as an argument; ``comm`` here must then be
        None or that same communicator.
    monitor : callable or None
        What the history records, never counted as traffic. Safe-EF: ``x -> (f(x), g(x))``
        (default: a reduction of the local workers' values over all workers,
        ``comm.allreduce``, so no process evaluates another's data). QODA: ``x_bar -> dict``
        of metrics or a :class:`~sparsecert.distributed.qoda.algorithm.ReducedMonitor`. A
        user monitor is called on every process and must return the same values on each.
    record_every : int or None
        Record the history every this many rounds (and at the last round); None: the
        method's default (Safe-EF 1, QODA 10).
    store_iterates : bool
        Keep ``x_0, ..., x_T`` in the result (Safe-EF).
    callback : callable or None
        Safe-EF: called with a :class:`~sparsecert.distributed.safe_ef.run.RoundInfo` after
        every round, on every process.
    stop : callable or None
        Evaluated at every record point; True ends the run there (e.g. once a target
        accuracy is reached). Safe-EF: ``stop(rounds, objective, violation)`` of the output;
        QODA: ``stop(iteration, x_bar, metrics)``.
    scalar_dtype : {"float32", "float16", "float64"}
        Safe-EF: encoding of the constraint values on the uplink and of the floats the server
        sends with its decisions (32, 16 or 64 bits each; a value outside the type's range
        raises).
    server_seed : int
        Safe-EF: seed of the server's generator (randomized downlink compressors).
    log : str, pathlib.Path, callable or None
        A per-record log, one row per record point: a CSV file the root writes as the run
        goes (it must not exist yet; a resumed run appends to its own) or a callable
        ``log(row)`` called on the root. Safe-EF: rounds, seconds, bits per worker up / down /
        total, objective, violation, and the same for the last model; QODA: iteration,
        compute seconds of one node, bits sent and received per worker, the monitor's
        metrics.
    checkpoint : str, pathlib.Path or None
        Safe-EF (``safe_ef``, ``safe_ef_stochastic``): save the run every
        ``checkpoint_every`` rounds (and at its end) to ``<checkpoint>.<rank>.npz``, one
        file per process holding what that process holds.
    checkpoint_every : int
        Rounds between checkpoints.
    resume : str, pathlib.Path or None
        Continue the run saved at this checkpoint path (the same configuration and number of
        processes; ``n_rounds`` counts from the start of the original run).

    A method refuses a setting it does not use (``ValueError``), rather than ignoring it.
    """

    comm: Communicator | None = None
    monitor: Callable[..., Any] | Any | None = None
    record_every: int | None = None
    store_iterates: bool = False
    callback: Callable[..., Any] | None = None
    stop: Callable[..., bool] | None = None
    scalar_dtype: str = "float32"
    server_seed: int = 0
    log: Any = None
    checkpoint: Any = None
    checkpoint_every: int = 100
    resume: Any = None

    def __post_init__(self) -> None:
        if self.scalar_dtype not in SCALAR_DTYPES:
            raise ValueError(
                f"scalar_dtype must be one of {SCALAR_DTYPES}, got {self.scalar_dtype!r}"
            )
        if self.record_every is not None:
            check_int("record_every", self.record_every, 1)
        check_int("checkpoint_every", self.checkpoint_every, 1)
        for name in ("monitor", "callback", "stop"):
            v = getattr(self, name)
            reduced = name == "monitor" and hasattr(v, "local") and hasattr(v, "finish")
            if v is not None and not (callable(v) or reduced):
                raise TypeError(f"RunOptions.{name} must be callable or None")

    def every(self, default: int) -> int:
        """The record period: :attr:`record_every`, or the method's ``default``."""
        return default if self.record_every is None else int(self.record_every)

    def refuse(self, method: str, *names: str) -> None:
        """Raise ``ValueError`` if any of the settings ``names`` differs from its default
        (``method`` does not use them)."""
        defaults = RunOptions()
        used = [n for n in names if getattr(self, n) != getattr(defaults, n)]
        if used:
            raise ValueError(f"{method} does not use RunOptions.{', '.join(used)}")


def check_int(name: str, value: int, low: int) -> int:
    """``value`` as an int ``>= low`` (else ``ValueError`` naming it)."""
    if (isinstance(value, bool) or not isinstance(value, int | np.integer | float)
            or int(value) != value or value < low):
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_settings(record: object, ints: Mapping[str, int] | None = None,
                   positive: Sequence[str] = (),
                   choices: Mapping[str, Sequence[str]] | None = None) -> None:
    """Check the fields of a settings record (``ValueError`` naming its class and the field):
    ``ints`` maps a field to its smallest value, ``positive`` lists the fields that must be
    positive finite reals, ``choices`` maps a field to its allowed values."""
    cls = type(record).__name__
    for name, low in (ints or {}).items():
        check_int(f"{cls}.{name}", getattr(record, name), low)
    for name in positive:
        v = getattr(record, name)
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{cls}.{name} must be positive and finite, got {v!r}")
    for name, allowed in (choices or {}).items():
        v = getattr(record, name)
        if v not in allowed:
            raise ValueError(f"{cls}.{name} must be one of {', '.join(map(repr, allowed))}, "
                             f"got {v!r}")
