"""The node strategies, and how one is chosen for the node at hand.

Each strategy is a small object in its own module that says when it applies and solves a node
(``applies(node)``, ``solve(node, start, limits)``):

* ``exact.EXACT_LEAF``: no free feature, squared loss, no box -> one linear solve;
* ``zspace.ZSPACE``: squared loss, no box / shift / carried intercept -> projected gradient
  on the indicators z;
* ``working_set.WORKING_SET``: no carried intercept -> FISTA on a growing column subset;
* ``full.FULL_FISTA``: always -> FISTA on all active columns (the fallback of the others).

The closed-form leaf is taken whenever it applies. Otherwise FISTA runs on a working set or on
all active columns (:func:`fista_strategy`), and, where z-space applies, ``solver="auto"``
takes whichever of z-space and that FISTA is expected to cost less on the node
(:func:`choose`, with the operation counts of ``cost``). The expected cost needs the two
strategies' iterations; :func:`race` measures them on one node (the search's first node
below the root) by running both, and compares them in operation counts, so that the choice is
the same on every machine and run. Every strategy ends in ``evaluate.finish``: the same valid
bound whichever solved the node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sparsecert.solvers.perspective.cost import PRIOR, Iterations, positive_indicators
from sparsecert.solvers.perspective.exact import EXACT_LEAF
from sparsecert.solvers.perspective.full import FULL_FISTA
from sparsecert.solvers.perspective.working_set import WORKING_SET
from sparsecert.solvers.perspective.zspace import ZSPACE, ZSpaceFailed

__all__ = ["STRATEGIES", "SOLVERS", "choose", "fista_strategy", "race", "Race", "RACE_CAP"]

#: every strategy, closed form first
STRATEGIES = (EXACT_LEAF, ZSPACE, WORKING_SET, FULL_FISTA)
#: the values of ``solve_node(solver=...)``
SOLVERS = ("auto", "fista", "zspace")
#: in a race, the strategy not expected to win runs until it has cost this many times what
#: the other one cost (in operation counts), then stops
RACE_CAP = 4.0


def fista_strategy(node, working_set: bool | None = None):
    """The FISTA strategy for the node: the working set when it applies and is wanted
    (``working_set=True``, or ``None`` and the active columns are at least ``WS_AUTO_RATIO``
    times the samples), full FISTA otherwise."""
    ws = WORKING_SET.wanted(node) if working_set is None else bool(working_set)
    return WORKING_SET if ws and WORKING_SET.applies(node) else FULL_FISTA


def choose(node, start, solver: str = "auto", working_set: bool | None = None,
           iterations: Iterations | None = None):
    """The strategy that solves ``node`` from ``start``.

    ``solver``: ``"fista"`` (:func:`fista_strategy`), ``"zspace"`` (ValueError when it does
    not apply) or ``"auto"``: z-space when it applies and its expected cost is below FISTA's
    (``expected_cost``, with ``iterations``, the iterations expected of each: the search's
    race measured them; ``None``: :data:`~.cost.PRIOR`). The closed-form leaf whenever it
    applies.
    """
    if EXACT_LEAF.applies(node):
        return EXACT_LEAF
    fista = fista_strategy(node, working_set)
    if solver == "fista":
        return fista
    if not ZSPACE.applies(node):
        if solver == "zspace":
            raise ValueError("solver='zspace' needs the squared loss without a box or eig_shift")
        return fista
    if solver == "zspace":
        return ZSPACE
    its = PRIOR if iterations is None else iterations
    s = positive_indicators(node, start)
    cheaper = ZSPACE.expected_cost(node, s, its) < fista.expected_cost(node, s, its)
    return ZSPACE if cheaper else fista


@dataclass(frozen=True)
class Race:
    """The outcome of :func:`race`: the iterations each strategy took (``capped``: the one
    not expected to win reached its cap before it finished; ``failed``: z-space lost its system
    to rounding), their costs in operation counts and the winner's name."""

    zspace_iters: int
    fista_iters: int
    zspace_cost: float
    fista_cost: float
    capped: bool
    failed: bool
    winner: str

    @property
    def iterations(self) -> Iterations:
        """The iterations the problem's other nodes expect (z-space never, once it failed)."""
        return Iterations(math.inf if self.failed else float(self.zspace_iters),
                          float(self.fista_iters))


def race(node, start, limits, working_set: bool | None = None):
    """Solve ``node`` with z-space and with FISTA; returns ``(result, Race)``, the result of
    the one that cost less in operation counts, or ``(result, None)`` when they do not both
    apply.

    The one :func:`choose` expects to be cheaper runs first, under ``limits``; the other then
    runs until it has cost :data:`RACE_CAP` times as much. Both start from ``start`` on the
    same node, and the costs are counts of operations (``expected_cost`` with the iterations
    each took), so the outcome does not depend on the machine's speed or load.
    """
    fista = fista_strategy(node, working_set)
    if EXACT_LEAF.applies(node) or not ZSPACE.applies(node):
        strategy = choose(node, start, "auto", working_set)
        return strategy.solve(node, start, limits), None
    s = positive_indicators(node, start)

    def cost(strategy, iters: float) -> float:
        return strategy.expected_cost(node, s, Iterations(iters, iters))

    first = choose(node, start, "auto", working_set)
    second = fista if first is ZSPACE else ZSPACE
    try:
        done = first.solve(node, start, limits)
    except ZSpaceFailed:  # (z-space first) the node is FISTA's
        res = fista.solve(node, start, limits)
        return res, Race(0, res.n_iter, math.inf, cost(fista, res.n_iter), False, True,
                         fista.name)
    spent = cost(first, max(done.n_iter, 1))
    # the iterations of the second that cost RACE_CAP times the first's
    per_iter = cost(second, 1.0) - cost(second, 0.0)
    cap = int((RACE_CAP * spent - cost(second, 0.0)) / per_iter)
    other = None
    if cap >= 1:
        try:
            other = second.solve(node, start, replace(limits, max_iter=min(limits.max_iter,
                                                                           cap)))
        except ZSpaceFailed:
            return done, Race(0, done.n_iter, math.inf, spent, False, True, first.name)
    results = {first: done, second: other}
    iters = {k: (0 if v is None else int(v.n_iter)) for k, v in results.items()}
    capped = other is None or other.status not in ("converged", "cutoff")
    if capped:  # the second needs at least its cap (what the later nodes expect of it)
        iters[second] = max(iters[second], cap, 1)
    costs = {k: cost(k, max(iters[k], 1)) for k in results}
    winner = first if capped or costs[first] <= costs[second] else second
    return results[winner], Race(iters[ZSPACE], iters[fista], costs[ZSPACE], costs[fista],
                                 capped, False, winner.name)
