"""A branch-and-bound node as the relaxation sees it: a state per feature and a budget.

Every feature is fixed out (``OUT``, ``z_j = 0``), fixed in (``IN``, ``z_j = 1``) or free
(``FREE``); the free features share the budget ``k - |S1|``. The edge cases are resolved here,
once: no budget left (the free features are forced to zero) and no more free features than
budget (no cardinality coupling: they are treated as fixed in, a plain ridge problem).
"""

from __future__ import annotations

import numpy as np

from sparsecert.solvers.perspective._gfun import FREE, IN, OUT

__all__ = ["fixing_mask", "node_state", "OUT", "IN", "FREE"]


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
