"""A branch-and-bound node as the relaxation sees it: a state per feature and a budget.

Every feature is fixed out (``OUT``, ``z_j = 0``), fixed in (``IN``, ``z_j = 1``) or free
(``FREE``); the free features share the budget ``k - |S1|``. The edge cases are resolved here,
once: no budget left (the free features are forced to zero) and no more free features than
budget (no cardinality coupling: they are treated as fixed in, a plain ridge problem).

The records every node strategy works with live here too: :class:`NodeProblem` (the node),
:class:`Start` (where its iterations start), :class:`Limits` (when they stop) and
:class:`Iterated` (what they produced, before the node's final evaluation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sparsecert.solvers.perspective._gfun import FREE, IN, OUT

__all__ = ["fixing_mask", "node_state", "NodeProblem", "Start", "Limits", "Iterated", "OUT",
           "IN", "FREE"]


def fixing_mask(arr, p: int, name: str) -> np.ndarray:
    """``arr`` as a boolean mask of shape ``(p,)`` (``None``: nothing fixed)."""
    if arr is None:
        return np.zeros(p, dtype=bool)
    a = np.asarray(arr)
    if a.dtype != np.bool_ or a.shape != (p,):
        raise ValueError(f"{name} must be a boolean array of shape ({p},), got dtype {a.dtype} "
                         f"and shape {a.shape}")
    return a


def node_state(p: int, k: int, s1: np.ndarray, s0: np.ndarray) -> tuple[np.ndarray, int]:
    """State vector (0 out / 1 in / 2 free, int8) with the edge cases resolved, and the budget."""
    state = np.full(p, FREE, dtype=np.int8)
    state[s1] = IN
    state[s0] = OUT
    budget = k - int(np.count_nonzero(s1))
    free = state == FREE
    n_free = int(np.count_nonzero(free))
    if budget <= 0:
        state[free] = OUT  # no budget left: the free coordinates are forced to zero
        budget = 0
    elif n_free <= budget:
        state[free] = IN  # no cardinality coupling: a plain ridge problem
    return state, budget


@dataclass(frozen=True, eq=False)
class NodeProblem:
    """One node of a relaxation problem, its edge cases resolved (see :func:`node_state`).

    Attributes
    ----------
    prob : RelaxationProblem
    state : ndarray of int8 (p,)
        0 out / 1 in / 2 free.
    budget : int
        What the free features share.
    out : ndarray of bool (p,)
        ``state == OUT``.
    active : ndarray of int (m,)
        The features not fixed out.
    n_free : int
    """

    prob: object
    state: np.ndarray
    budget: int
    out: np.ndarray
    active: np.ndarray
    n_free: int

    @classmethod
    def build(cls, prob, k: int, s1: np.ndarray, s0: np.ndarray) -> NodeProblem:
        """The node of ``prob`` with the fixings ``s1`` (in) and ``s0`` (out), checked."""
        state, budget = node_state(prob.n_features, k, s1, s0)
        out = state == OUT
        return cls(prob, state, budget, out, np.flatnonzero(~out),
                   int(np.count_nonzero(state == FREE)))

    @property
    def n_active(self) -> int:
        return int(self.active.size)


@dataclass(frozen=True, eq=False)
class Start:
    """Where a node's iterations start: ``x`` (zeros on the features fixed out, inside the
    box) and ``c``, the intercept carried as a variable (non-squared losses; 0 otherwise)."""

    x: np.ndarray
    c: float = 0.0

    @classmethod
    def of(cls, node: NodeProblem, warm_start=None) -> Start:
        """The start of ``node`` from ``warm_start`` (None, an array of shape ``(p,)`` or a
        ``RelaxationResult``: its ``coef``, and its intercept for a carried intercept): zeros
        on the features fixed out, clipped into the box. ValueError for a bad array."""
        from sparsecert.solvers.perspective.result import RelaxationResult
        from sparsecert.solvers.perspective.zero_sum import initial_intercept

        prob = node.prob
        p = prob.n_features
        c0 = initial_intercept(prob) if prob.icpt else 0.0
        if warm_start is None:
            return cls(np.zeros(p), c0)
        if prob.icpt and isinstance(warm_start, RelaxationResult):
            if np.isfinite(warm_start.intercept):  # user coordinates -> centred columns
                c0 = prob.centring.carried_intercept(warm_start.coef, warm_start.intercept)
        w = warm_start.coef if isinstance(warm_start, RelaxationResult) else warm_start
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (p,):
            raise ValueError(f"warm_start must have shape ({p},), got {w.shape}")
        if not np.isfinite(w).all():
            raise ValueError("warm_start contains NaN or infinite values")
        x0 = np.where(node.out, 0.0, w)
        if prob.coef_bounds is not None:
            x0 = np.clip(x0, prob.coef_bounds.lower, prob.coef_bounds.upper)
        elif prob.M < np.inf:
            x0 = np.clip(x0, -prob.M, prob.M)
        return cls(x0, c0)

    @property
    def is_zero(self) -> bool:
        return not np.any(self.x != 0.0)


@dataclass(frozen=True)
class Limits:
    """When a node's iterations stop, and the options they share.

    ``rel_tol``: ``(P - LB) / max(1, |P|) <= rel_tol``; ``max_iter``: iterations in all;
    ``cutoff``: the valid bound reaches it; ``deadline``: a ``time.perf_counter()`` value or
    None; ``t0``: when the node's solve started; ``restart``: FISTA's restart scheme
    (``_fista.RESTART_*``); ``open_rel_tol``: the tolerance once ``P < cutoff`` (the
    relaxation's optimum is then below the cutoff, so no bound can reach it: the node stays
    open however long it iterates), None for ``rel_tol`` throughout; a value below
    ``rel_tol`` counts as ``rel_tol`` (:attr:`open_tol`).
    """

    rel_tol: float
    max_iter: int
    cutoff: float = math.inf
    deadline: float | None = None
    t0: float = 0.0
    restart: int = 1
    open_rel_tol: float | None = None

    @property
    def open_tol(self) -> float:
        """The tolerance once the primal value is below the cutoff."""
        if self.open_rel_tol is None:
            return self.rel_tol
        return max(self.rel_tol, self.open_rel_tol)

    def tol_at(self, P: float) -> float:
        """The tolerance at primal value ``P``: :attr:`open_tol` below the cutoff, else
        ``rel_tol``."""
        return self.open_tol if P < self.cutoff else self.rel_tol


@dataclass
class Iterated:
    """What a strategy's iterations produced, before the node's final evaluation
    (``evaluate.finish``).

    ``coef``: the final iterate (all features); ``c``: the intercept carried as a variable;
    ``best``, ``bound_point``, ``dual``: the best valid bound, the point and the dual vector
    that attained it (``bound_point = None`` when there is none); ``status``: ``"converged"``,
    ``"cutoff"``, ``"max_iter"`` or ``"time_limit"``.
    """

    coef: np.ndarray
    c: float = 0.0
    best: float = -math.inf
    bound_point: np.ndarray | None = None
    dual: np.ndarray | None = None
    n_iter: int = 0
    n_restarts: int = 0
    status: str = "max_iter"
