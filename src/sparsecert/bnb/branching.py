"""Branching rules: which free variable to split a node on.

Each rule takes the node's relaxed coefficients ``b`` and indicators ``z`` and the mask of free
variables, and returns one free index (ties to the lower index, so the tree is deterministic).

* ``"largest_coef"``: the free variable with the largest ``|b_j|`` among the fractional ones
  (``0 < z_j < 1``); falls back to the largest ``|b_j|``.
* ``"most_fractional"``: the free variable with ``z_j`` closest to 1/2.
* ``"weighted_fractional"``: the largest ``|b_j| * min(z_j, 1 - z_j)``.
* ``"pseudo_cost"``, ``"strong"``, ``"reliability"``: informed rules, chosen in the node's task
  with the search's pseudo-costs and strong branching (:mod:`sparsecert.bnb.informed`); called
  here, without that state, they choose as ``"largest_coef"``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["choose_branch_variable", "BRANCHING_RULES"]

_FRAC_TOL = 1e-6


def _argmax_free(score: np.ndarray, free: np.ndarray) -> int:
    s = np.where(free, score, -np.inf)
    return int(np.argmax(s))  # argmax returns the first maximiser: lowest index on ties


def _largest_coef(b, z, free):
    frac = free & (z > _FRAC_TOL) & (z < 1 - _FRAC_TOL)
    return _argmax_free(np.abs(b), frac if frac.any() else free)


def _most_fractional(b, z, free):
    frac = free & (z > _FRAC_TOL) & (z < 1 - _FRAC_TOL)
    if not frac.any():
        return _largest_coef(b, z, free)
    return _argmax_free(-np.abs(z - 0.5), frac)


def _weighted_fractional(b, z, free):
    score = np.abs(b) * np.minimum(z, 1 - z)
    if not (free & (score > 0)).any():
        return _largest_coef(b, z, free)
    return _argmax_free(score, free)


BRANCHING_RULES = {
    "largest_coef": _largest_coef,
    "most_fractional": _most_fractional,
    "weighted_fractional": _weighted_fractional,
    # the informed rules (sparsecert.bnb.informed); without the search's state: largest_coef
    "pseudo_cost": _largest_coef,
    "strong": _largest_coef,
    "reliability": _largest_coef,
}


def choose_branch_variable(rule: str, b: np.ndarray, z: np.ndarray, free: np.ndarray) -> int:
    """Apply the named rule; ``free`` must have at least one True entry."""
    try:
        fn = BRANCHING_RULES[rule]
    except KeyError:
        raise ValueError(f"unknown branching rule {rule!r}; choose from "
                         f"{sorted(BRANCHING_RULES)}") from None
    if not free.any():
        raise ValueError("no free variable to branch on")
    return fn(b, z, free)
