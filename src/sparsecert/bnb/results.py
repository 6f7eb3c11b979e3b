"""The record a branch-and-bound search returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sparsecert.bnb.node import Node

__all__ = ["SearchResult", "relative_gap", "RELATIVE_GAP_DEFINITION", "STATUSES"]

RELATIVE_GAP_DEFINITION = "(UB - LB) / max(1, |UB|)"
STATUSES = ("optimal", "time_limit", "node_limit", "interrupted", "tree_exhausted")


def relative_gap(upper: float, lower: float) -> float:
    """``(UB - LB) / max(1, |UB|)`` (0 when the bound meets the incumbent)."""
    if not np.isfinite(upper):
        return np.inf
    return max(0.0, upper - lower) / max(1.0, abs(upper))


@dataclass
class SearchResult:
    """Outcome of :meth:`sparsecert.bnb.BranchAndBound.run`.

    Attributes
    ----------
    status : str
        ``"optimal"`` (gap within tolerance), ``"time_limit"``, ``"node_limit"`` or
        ``"interrupted"`` (Ctrl-C).
    coef : numpy.ndarray
        Incumbent coefficients (length p) on the engine's data.
    intercept : float
        Incumbent intercept on the engine's data (0 for centred least squares).
    support : tuple of int
    upper_bound, lower_bound : float
        Incumbent objective and the proven global lower bound (min over the leaves' bounds).
    absolute_gap, relative_gap : float
    n_nodes, n_open : int
        Nodes created and nodes still open at the end.
    time : float
        Wall time of the search in seconds.
    nodes : list of Node
        The whole tree (for the certificate).
    history : list of tuple
        ``(time, nodes, upper_bound, lower_bound)`` samples, for progress plots.
    """

    status: str
    coef: np.ndarray
    intercept: float
    support: tuple[int, ...]
    upper_bound: float
    lower_bound: float
    absolute_gap: float
    relative_gap: float
    n_nodes: int
    n_open: int
    time: float
    nodes: list[Node] = field(repr=False)
    history: list[tuple[float, int, float, float]] = field(repr=False, default_factory=list)
    settings: dict = field(default_factory=dict)
    n_relaxation_iters: int = 0
