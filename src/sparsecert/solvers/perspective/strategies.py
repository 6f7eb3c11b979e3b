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
takes it when the active columns are at least ``ZSPACE_RATIO`` times the samples and
``n <= ZSPACE_MAX_N``, or ``n <= ZSPACE_SMALL_N`` (:func:`choose`). Every strategy ends in
``evaluate.finish``: the same valid bound whichever solved the node.
"""

from __future__ import annotations

from sparsecert.solvers.perspective.exact import EXACT_LEAF
from sparsecert.solvers.perspective.full import FULL_FISTA
from sparsecert.solvers.perspective.working_set import WORKING_SET
from sparsecert.solvers.perspective.zspace import ZSPACE

__all__ = ["STRATEGIES", "SOLVERS", "choose", "fista_strategy", "ZSPACE_RATIO",
           "ZSPACE_MAX_N", "ZSPACE_SMALL_N"]

#: every strategy, closed form first
STRATEGIES = (EXACT_LEAF, ZSPACE, WORKING_SET, FULL_FISTA)
#: the values of ``solve_node(solver=...)``
SOLVERS = ("auto", "fista", "zspace")
#: ``solver="auto"`` works in z-space when n_active >= ZSPACE_RATIO * n_samples
ZSPACE_RATIO = 4
#: ... and n_samples <= ZSPACE_MAX_N (an iteration costs n^2 |supp z| + n^3 / 3 flops)
ZSPACE_MAX_N = 300
#: ... or, with at most this many samples, whenever the active columns outnumber them (nodes
#: left with a few hundred columns by reduced-cost fixing: riboflavin, 71 x 155 active, z-space
#: 56 iterations against FISTA's 2400)
ZSPACE_SMALL_N = 100


def fista_strategy(node, working_set: bool | None = None):
    """The FISTA strategy for the node: the working set when it applies and is wanted
    (``working_set=True``, or ``None`` and the active columns are at least ``WS_AUTO_RATIO``
    times the samples), full FISTA otherwise."""
    ws = WORKING_SET.wanted(node) if working_set is None else bool(working_set)
    return WORKING_SET if ws and WORKING_SET.applies(node) else FULL_FISTA


def choose(node, start, solver: str = "auto", working_set: bool | None = None):
    """The strategy that solves ``node`` from ``start``.

    ``solver``: ``"fista"`` (:func:`fista_strategy`), ``"zspace"`` (ValueError when it does
    not apply) or ``"auto"``: z-space when it applies and the active columns are at least
    ``ZSPACE_RATIO`` times the samples with ``n <= ZSPACE_MAX_N``, or ``n <= ZSPACE_SMALL_N``.
    The closed-form leaf whenever it applies.
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
    n = node.prob.n_samples
    auto_z = ((node.n_active >= ZSPACE_RATIO * n and n <= ZSPACE_MAX_N)
              or n <= ZSPACE_SMALL_N)
    return ZSPACE if auto_z else fista
