"""The record of a shipped Safe-EF problem: workers, start point and reference optimum."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SafeEFProblem"]


@dataclass
class SafeEFProblem:
    """A distributed constrained problem with its reference optimum.

    Attributes
    ----------
    name : str
        Short name ("P1", "P2", "P3").
    workers : list
        One :class:`~sparsecert.distributed.safe_ef.algorithm.Worker` per worker.
    x0 : numpy.ndarray
        Starting point.
    f_star : float
        Optimal value.
    x_star : numpy.ndarray
        An optimal point.
    monitor : callable
        ``x -> (f(x), g(x))`` over all the data (vectorised; equals the mean over workers).
    scale : float
        Normaliser of relative gaps: ``f(x0) - f*``.
    info : dict
        Sizes and parameters.
    constraint : AveragedConstraint or None
        The server's outer function when the constraint is an averaged quantity (pass it to
        the methods as ``constraint=``); None for a mean of per-worker constraints.
    """

    name: str
    workers: list
    x0: np.ndarray
    f_star: float
    x_star: np.ndarray
    monitor: Callable[[np.ndarray], tuple[float, float]]
    scale: float
    info: dict = field(default_factory=dict)
    constraint: Any = None

    @property
    def dim(self) -> int:
        return int(self.x0.size)

    @property
    def n_workers(self) -> int:
        return len(self.workers)

    def worker(self, i: int):
        """Worker ``i`` (usable as a worker factory).

        The shipped problems are generated in full on every process (public or seeded
        synthetic data, with an LP reference optimum over all of it); an algorithm given this
        factory still touches only its process's workers. A real deployment passes a factory
        that loads only worker ``i``'s shard (``examples/fair_federated_logistic.py``).
        """
        return self.workers[i]
