"""What a Safe-EF worker holds, and the two kinds of constraint.

* A **mean constraint** ``g(x) = (1/n) sum_i g_i(x) <= 0``: every worker implements
  :class:`Worker` (``f``, ``f_subgrad``, ``g``, ``g_subgrad``).
* An **averaged-quantity constraint** ``g(x) = G((1/n) sum_i q_i(x)) <= 0`` with a convex
  outer function ``G`` known to the server (:class:`AveragedConstraint`) and per-worker
  quantities ``q_i(x)`` in ``R^m``: every worker implements :class:`AveragedWorker` (``f``,
  ``f_subgrad``, ``q``, ``q_vjp``). Example: a global demographic-parity gap
  ``|mean_i d_i . x| <= tau`` (``q_i(x) = d_i . x``, ``G(q) = |q| - tau``), which is *not* a
  mean of per-worker constraints. When the ``q_i`` are affine, ``g`` is convex and
  ``(1/n) sum_i J_i^T s`` with ``s`` a subgradient of ``G`` at the mean is a subgradient of
  ``g`` (the chain rule for a convex function of an affine map); the server sends ``s``
  (``m`` numbers) with its decision, and worker ``i`` returns ``J_i^T s`` (``q_vjp``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "Worker",
    "StochasticWorker",
    "AveragedWorker",
    "FunctionWorker",
    "AveragedConstraint",
]


@runtime_checkable
class Worker(Protocol):
    """What one worker holds: its objective and constraint parts with subgradients."""

    def f(self, x: np.ndarray) -> float:
        """Local objective ``f_i(x)``."""
        ...

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        """A subgradient of ``f_i`` at ``x``."""
        ...

    def g(self, x: np.ndarray) -> float:
        """Local constraint ``g_i(x)`` (the constraint is ``mean_i g_i(x) <= 0``)."""
        ...

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        """A subgradient of ``g_i`` at ``x``."""
        ...


@runtime_checkable
class StochasticWorker(Worker, Protocol):
    """A worker that can draw a minibatch: an unbiased stochastic view of itself."""

    def minibatch(self, rng: np.random.Generator, batch_size: int) -> Worker:
        """A :class:`Worker` whose ``f, g`` and subgradients are unbiased estimates of this
        worker's, computed on a random minibatch drawn with ``rng``."""
        ...


@runtime_checkable
class AveragedWorker(Protocol):
    """A worker for an averaged-quantity constraint ``G(mean_i q_i(x)) <= 0``.

    (It may also implement ``minibatch(rng, batch_size)`` returning an
    :class:`AveragedWorker`, for the stochastic variant.)
    """

    def f(self, x: np.ndarray) -> float:
        """Local objective ``f_i(x)``."""
        ...

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        """A subgradient of ``f_i`` at ``x``."""
        ...

    def q(self, x: np.ndarray) -> np.ndarray:
        """The local quantity ``q_i(x)`` (shape ``(m,)``)."""
        ...

    def q_vjp(self, x: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``J_i(x)^T s`` with ``J_i`` the Jacobian of ``q_i`` at ``x`` (shape ``(d,)``)."""
        ...


@dataclass(frozen=True)
class FunctionWorker:
    """A :class:`Worker` built from four callables (handy for user problems)."""

    f_fun: Callable[[np.ndarray], float]
    f_subgrad_fun: Callable[[np.ndarray], np.ndarray]
    g_fun: Callable[[np.ndarray], float]
    g_subgrad_fun: Callable[[np.ndarray], np.ndarray]

    def f(self, x: np.ndarray) -> float:
        return float(self.f_fun(x))

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.f_subgrad_fun(x), dtype=np.float64)

    def g(self, x: np.ndarray) -> float:
        return float(self.g_fun(x))

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.g_subgrad_fun(x), dtype=np.float64)


@dataclass(frozen=True)
class AveragedConstraint:
    """The server's outer function of an averaged-quantity constraint ``G(qbar) <= 0``.

    Parameters
    ----------
    dim : int
        ``m``, the length of every ``q_i(x)``.
    value : callable
        ``qbar -> G(qbar)`` (convex).
    subgrad : callable
        ``qbar -> s``, a subgradient of ``G`` at ``qbar`` (shape ``(m,)``).
    name : str
        Shown in results and error messages.
    """

    dim: int
    value: Callable[[np.ndarray], float]
    subgrad: Callable[[np.ndarray], np.ndarray]
    name: str = "G"

    def __post_init__(self) -> None:
        if isinstance(self.dim, bool) or int(self.dim) != self.dim or self.dim < 1:
            raise ValueError(f"AveragedConstraint.dim must be a positive integer, got {self.dim!r}")
        if not callable(self.value) or not callable(self.subgrad):
            raise TypeError("AveragedConstraint.value and .subgrad must be callables")

    @classmethod
    def max_abs(cls, tau: float, dim: int = 1) -> AveragedConstraint:
        """``G(q) = max_j |q_j| - tau``: every averaged quantity within ``[-tau, tau]`` (e.g. a
        two-sided parity gap ``|mean_i d_i . x| <= tau`` with ``dim = 1``)."""
        tau = float(tau)
        if not np.isfinite(tau) or tau < 0:
            raise ValueError(f"tau must be finite and >= 0, got {tau}")

        def value(q: np.ndarray) -> float:
            return float(np.max(np.abs(q)) - tau)

        def subgrad(q: np.ndarray) -> np.ndarray:
            s = np.zeros(len(q))
            j = int(np.argmax(np.abs(q)))
            s[j] = 1.0 if q[j] >= 0 else -1.0
            return s

        return cls(int(dim), value, subgrad, f"max|q| - {tau:g}")
