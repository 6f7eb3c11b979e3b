"""Shared pieces of the trilevel solvers: the problem protocol, the result record, and the
worker-side oracle that turns values (or grey-box gradients) into block gradient estimates while
counting every query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from sparsecert.distributed.comm import Communicator, Message, decode_dense, encode_dense
from sparsecert.distributed.dtzo.zeroth_order import (
    ZOConfig,
    combine_differences,
    direction_weight,
    perturbation_points,
    sample_directions,
)

__all__ = ["TrilevelProblem", "DTZOResult", "Monitor"]

Monitor = Callable[[np.ndarray], dict[str, float]]


@runtime_checkable
class TrilevelProblem(Protocol):
    """What the trilevel solvers need from a problem.

    Attributes
    ----------
    dims : tuple of int
        ``(d1, d2, d3)``; points are ``z = concatenate([x1, x2, x3])`` of length ``d``.
    n_workers : int
    """

    dims: tuple[int, int, int]
    n_workers: int

    def value(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        """``f_{level, worker}`` at the rows of ``Z`` (shape ``(m, d)``) -> ``(m,)``."""
        ...

    def has_gradient(self, level: int) -> bool:
        """Whether :meth:`gradient` is available for this level (grey box)."""
        ...

    def gradient(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        """Full gradient in ``z`` of ``f_{level, worker}`` at the rows of ``Z`` -> ``(m, d)``."""
        ...

    def initial_point(self) -> np.ndarray:
        """A starting point ``z0`` of length ``d``."""
        ...


@dataclass
class DTZOResult:
    """Output of the trilevel solvers.

    Attributes
    ----------
    z : numpy.ndarray
        Final consensus point ``(x1, x2, x3)``.
    x1, x2, x3 : numpy.ndarray
    history : dict of str to numpy.ndarray
        Per recorded iteration: ``iter``, ``queries`` (function values, all workers),
        ``grad_calls``, ``bits_up``, ``bits_down``, ``rounds``, ``consensus_error``
        (``max_j ||z_j - z||``), ``n_cuts3``, ``n_cuts2`` and the monitor's entries.
    method : str
    n_queries, n_grad_calls : int
    bits_up, bits_down, rounds : int
    residual_trace : dict of str to numpy.ndarray
        The method's own residual estimates: ``iter``, ``res3``, ``res2`` at every cut point
        and, with ``check_residuals``, at the returned point (DTZO-style only).
    warnings : list of str
        The diagnostics issued as :class:`~sparsecert.distributed.dtzo.diagnostics.DTZOWarning`
        (empty when the run looks sound).
    """

    z: np.ndarray
    x1: np.ndarray
    x2: np.ndarray
    x3: np.ndarray
    history: dict[str, np.ndarray]
    method: str
    n_queries: int
    n_grad_calls: int
    bits_up: int
    bits_down: int
    rounds: int
    residual_trace: dict[str, np.ndarray] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------------------------


def _check_problem(problem: TrilevelProblem, comm: Communicator) -> tuple[int, int, int]:
    if not isinstance(problem, TrilevelProblem):
        raise TypeError("problem must implement "
                        "sparsecert.distributed.dtzo.trilevel.TrilevelProblem")
    dims = tuple(int(v) for v in problem.dims)
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"problem.dims must be three positive integers, got {problem.dims}")
    if problem.n_workers != comm.n_workers:
        raise ValueError(
            f"problem has {problem.n_workers} workers but the communicator has {comm.n_workers}"
        )
    z0 = np.asarray(problem.initial_point(), dtype=np.float64)
    if z0.shape != (sum(dims),) or not np.all(np.isfinite(z0)):
        raise ValueError(f"initial_point must be a finite vector of length {sum(dims)}")
    return dims  # type: ignore[return-value]


class _Ledger:
    """Per-worker query counters and the monitoring exchange (excluded from the bit counts).

    ``cut_queries`` counts the function values spent building cuts (a subset of ``queries``).
    """

    def __init__(self, comm: Communicator) -> None:
        self.comm = comm
        self.queries = {j: 0 for j in comm.local_workers}
        self.grads = {j: 0 for j in comm.local_workers}
        self.cut_queries = {j: 0 for j in comm.local_workers}

    def gather(self, extra: dict[int, float] | None = None) -> np.ndarray:
        """Return an ``(N, 4)`` array ``[queries, grad_calls, cut_queries, extra]`` (not counted
        as traffic)."""
        saved = self.comm.stats.copy()
        msgs = self.comm.allgather(
            {
                j: encode_dense(
                    [self.queries[j], self.grads[j], self.cut_queries[j],
                     0.0 if extra is None else extra[j]],
                    "float64",
                )
                for j in self.comm.local_workers
            }
        )
        self.comm.stats = saved
        return np.array([decode_dense(m, "float64") for m in msgs])


class _Oracle:
    """Worker-side block gradients (zeroth order or exact), all queries counted."""

    def __init__(self, problem: TrilevelProblem, comm: Communicator, ledger: _Ledger,
                 exact_levels: tuple[int, ...]) -> None:
        self.problem = problem
        self.comm = comm
        self.ledger = ledger
        self.exact = set(exact_levels)
        for lev in self.exact:
            if not problem.has_gradient(lev):
                raise ValueError(f"exact gradients requested for level {lev}, which has none")

    def values(self, level: int, j: int, Z: np.ndarray) -> np.ndarray:
        v = np.asarray(self.problem.value(level, j, Z), dtype=np.float64)
        if v.shape != (Z.shape[0],):
            raise ValueError(f"problem.value returned shape {v.shape}, expected ({Z.shape[0]},)")
        if not np.all(np.isfinite(v)):
            raise ValueError(
                f"problem.value(level={level}, worker={j}) returned NaN or inf (diverging "
                "iterates? reduce the step sizes)"
            )
        self.ledger.queries[j] += Z.shape[0]
        return v

    def grad(self, level: int, j: int, base: np.ndarray, C: np.ndarray, offset: np.ndarray,
             zo: ZOConfig) -> np.ndarray:
        """Gradient in ``base`` (``(m, nb)``) of ``f_{level,j}(base @ C.T + offset)``."""
        if level in self.exact:
            Z = base @ C.T + offset
            G = np.asarray(self.problem.gradient(level, j, Z), dtype=np.float64)
            self.ledger.grads[j] += Z.shape[0]
            return G @ C
        m, nb = base.shape
        q = zo.n_dirs(nb)
        U = sample_directions(self.comm.worker_rng(j), nb, q, zo.directions)
        pts = perturbation_points(base, U, zo.mu, zo.scheme)
        n_q = pts.shape[0] // m
        vals = self.values(level, j, pts @ C.T + np.repeat(offset, n_q, axis=0))
        w = direction_weight(nb, q, zo.directions)
        return combine_differences(vals, U, zo.mu, zo.scheme, w)


def _sum_gathered(msgs: list[Message], dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    total = np.zeros(shape)
    for m in msgs:
        total += decode_dense(m, dtype).reshape(shape)
    return total


def _result(z: np.ndarray, dims: tuple[int, int, int], hist: dict[str, list[float]], method: str,
            comm: Communicator) -> DTZOResult:
    d1, d2, _ = dims
    h = {k: np.asarray(v) for k, v in hist.items()}
    return DTZOResult(
        z=z.copy(), x1=z[:d1].copy(), x2=z[d1:d1 + d2].copy(), x3=z[d1 + d2:].copy(), history=h,
        method=method, n_queries=int(h["queries"][-1]), n_grad_calls=int(h["grad_calls"][-1]),
        bits_up=int(comm.stats.up.sum()), bits_down=int(comm.stats.down.sum()),
        rounds=int(comm.stats.rounds),
    )
