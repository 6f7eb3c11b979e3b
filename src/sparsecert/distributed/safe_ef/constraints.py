"""The three kinds of constraint a Safe-EF run handles, as the server and the workers see them.

* :class:`_MeanConstraint`: ``g = mean_i g_i`` (workers implement ``g``, ``g_subgrad``);
* :class:`_OuterConstraint`: ``g = G(mean_i q_i)`` (an
  :class:`~sparsecert.distributed.safe_ef.workers.AveragedConstraint`);
* :class:`_NoConstraint`: none (``constraint="none"``; nothing about a constraint is sent).

Each gives the worker's local quantity, the server's value and outer subgradient, and the
worker's step for a constraint round.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsecert.distributed.safe_ef.workers import AveragedConstraint, AveragedWorker, Worker

__all__ = ["_MeanConstraint", "_OuterConstraint", "_NoConstraint", "_ONE"]


_ONE = np.ones(1)


class _MeanConstraint:
    """``g = mean_i g_i``: the quantity is ``g_i`` and ``G`` is the identity (``s = 1`` is
    known to everyone, so a switch decision is one bit)."""

    m = 1
    sends_s = False
    name = "mean_i g_i"

    def check_worker(self, i: int, w: Any) -> None:
        if not isinstance(w, Worker):
            raise TypeError(f"worker {i} ({type(w).__name__}) does not implement the Worker "
                            "protocol (f, f_subgrad, g, g_subgrad)")

    def local(self, w: Worker, x: np.ndarray) -> np.ndarray:
        return np.array([w.g(x)], dtype=np.float64)

    def value(self, qbar: np.ndarray) -> float:
        return float(qbar[0])

    def subgrad(self, qbar: np.ndarray) -> np.ndarray:
        return _ONE

    def vjp(self, w: Worker, x: np.ndarray, s: np.ndarray) -> np.ndarray:
        h = np.asarray(w.g_subgrad(x), dtype=np.float64)
        return h if s[0] == 1.0 else s[0] * h


class _NoConstraint:
    """No constraint (``constraint="none"``): every round is productive and nothing about a
    constraint is sent (no uplink of values, no decision)."""

    m = 0
    sends_s = False
    name = "none"

    def check_worker(self, i: int, w: Any) -> None:
        if not (callable(getattr(w, "f", None)) and callable(getattr(w, "f_subgrad", None))):
            raise TypeError(f"worker {i} ({type(w).__name__}) needs f(x) and f_subgrad(x)")

    def local(self, w: Any, x: np.ndarray) -> np.ndarray:
        return np.zeros(0)

    def value(self, qbar: np.ndarray) -> float:
        return -np.inf

    def subgrad(self, qbar: np.ndarray) -> np.ndarray:
        return _ONE

    def vjp(self, w: Any, x: np.ndarray, s: np.ndarray) -> np.ndarray:  # never called
        raise ValueError("an unconstrained problem has no constraint step")


class _OuterConstraint:
    """``g = G(mean_i q_i)`` (an :class:`AveragedConstraint`)."""

    sends_s = True

    def __init__(self, con: AveragedConstraint) -> None:
        if not isinstance(con, AveragedConstraint):
            raise TypeError("constraint must be a sparsecert.distributed.safe_ef."
                            "AveragedConstraint or None")
        self.con = con
        self.m = con.dim
        self.name = con.name

    def check_worker(self, i: int, w: Any) -> None:
        if not isinstance(w, AveragedWorker):
            raise TypeError(f"worker {i} ({type(w).__name__}) does not implement the "
                            "AveragedWorker protocol (f, f_subgrad, q, q_vjp) needed by an "
                            "AveragedConstraint")

    def local(self, w: AveragedWorker, x: np.ndarray) -> np.ndarray:
        q = np.asarray(w.q(x), dtype=np.float64).reshape(-1)
        if q.shape != (self.m,):
            raise ValueError(f"a worker's q(x) has shape {q.shape}, want ({self.m},)")
        return q

    def value(self, qbar: np.ndarray) -> float:
        v = float(self.con.value(qbar))
        if not np.isfinite(v):
            raise ValueError(f"{self.name} returned a non-finite value at {qbar}")
        return v

    def subgrad(self, qbar: np.ndarray) -> np.ndarray:
        s = np.asarray(self.con.subgrad(qbar), dtype=np.float64).reshape(-1)
        if s.shape != (self.m,) or not np.all(np.isfinite(s)):
            raise ValueError(f"{self.name}.subgrad must return {self.m} finite numbers")
        return s

    def vjp(self, w: AveragedWorker, x: np.ndarray, s: np.ndarray) -> np.ndarray:
        return np.asarray(w.q_vjp(x, s), dtype=np.float64)
