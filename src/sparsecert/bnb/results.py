"""The record a branch-and-bound search returns, and its progress samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from sparsecert.bnb.node import Node
from sparsecert.statuses import RELATIVE_GAP_DEFINITION, STATUSES, relative_gap

__all__ = ["SearchResult", "HistoryRecord", "relative_gap", "RELATIVE_GAP_DEFINITION",
           "STATUSES"]


class HistoryRecord(NamedTuple):
    """One progress sample of a search (for progress plots).

    Attributes
    ----------
    time : float
        Seconds since the search started.
    n_nodes : int
        Nodes created so far.
    upper_bound : float
        Incumbent objective (``inf`` before the first incumbent).
    lower_bound : float
        Proven global lower bound at that time.
    """

    time: float
    n_nodes: int
    upper_bound: float
    lower_bound: float

    @property
    def gap(self) -> float:
        """Relative gap ``(UB - LB) / max(1, |UB|)`` of the sample."""
        return relative_gap(self.upper_bound, self.lower_bound)


@dataclass
class SearchResult:
    """Outcome of :meth:`sparsecert.bnb.BranchAndBound.run`.

    Attributes
    ----------
    status : str
        One of :data:`sparsecert.statuses.STATUSES`: ``"optimal"`` (gap within tolerance),
        ``"time_limit"``, ``"node_limit"``, ``"interrupted"`` (Ctrl-C) or ``"tree_exhausted"``.
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
        The whole tree; or, when the search streamed its closed nodes to a proof sink
        (``streamed``), the nodes still open at the end (the certificate's recorder holds the
        rest).
    history : list of HistoryRecord
        Progress samples ``(time, n_nodes, upper_bound, lower_bound)``: one every 0.05 s of
        search at first; a long search keeps at most 4096, spread evenly (every other sample
        dropped, and the step doubled, each time the list fills).
    settings : dict
        The :class:`~sparsecert.bnb.BnBSettings` used, as a dict.
    streamed : bool
        Whether the closed nodes went to a proof sink (then ``nodes`` holds the open ones).
    n_relaxation_iters : int
        Relaxation iterations summed over the evaluated nodes, strong branching's included.
    compile_time : float
        Seconds spent compiling the numerical kernels before the search (a first run with a
        progress log only, where it is announced and timed; 0 otherwise). Not part of
        ``time``.
    n_evaluated : int
        Nodes whose relaxation was solved.
    node_strategies : dict
        How many evaluated nodes each node strategy solved (``"zspace"``, ``"full"``, ...).
    strategy_race : dict or None
        With ``node_strategy="auto"``, where z-space applies: the race of the two strategies
        on the first node below the root that is not a leaf (their iterations, which the later
        nodes expected, their costs in operation counts, the winner; see
        ``sparsecert.solvers.perspective.strategies.race``); None when the search ended
        before it.
    n_strong_iters : int
        The relaxation iterations of strong branching (part of ``n_relaxation_iters``; 0 unless
        the branching rule is ``"strong"`` or ``"reliability"``).
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
    streamed: bool = False
    history: list[HistoryRecord] = field(repr=False, default_factory=list)
    settings: dict = field(default_factory=dict)
    n_relaxation_iters: int = 0
    compile_time: float = 0.0
    n_evaluated: int = 0
    node_strategies: dict = field(default_factory=dict)
    strategy_race: dict | None = None
    n_strong_iters: int = 0
