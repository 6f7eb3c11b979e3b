"""Statuses of a search and of its nodes, and the definition of the optimality gap.

This is the one place that names the outcomes of a certified solve and defines the gap, so
that the engine (:mod:`sparsecert.bnb`), the results, the estimators, the command line and the
certificate writer all speak the same words. The statuses are ``str`` enums
(:class:`SearchStatus`, :class:`NodeStatus`) equal to their names in the certificate format, so
comparing with a string and writing JSON work as with plain strings; :data:`CERTIFIED` and
:data:`LIMITED` group them for the code that acts on an outcome. The module imports the
standard library only (no numpy, no numba): the certificate writer and the command line's
argument parser read it cheaply. The standalone verifier keeps its own copy of these names, on
purpose (it shares no code with the solver).

Search statuses
---------------
``"optimal"``
    The relative gap ``(UB - LB) / max(1, |UB|)`` is at most ``rel_gap``, or the absolute gap
    ``UB - LB`` at most ``abs_gap``.
``"time_limit"``, ``"node_limit"``
    A limit stopped the search; the best model found is returned with the bound reached.
``"interrupted"``
    The search was interrupted (Ctrl-C); the best model so far is returned.
``"precision_limited"``
    The search closed the gap, but the rounding errors of the proof (bounded rigorously, so
    that the certificate is true in exact arithmetic) keep the provable gap above ``rel_gap``:
    the data are too ill-conditioned for the tolerance asked. The provable gap is reported.
``"tree_exhausted"``
    Every node was closed, but the leaves' bounds, computed to the relaxations' accuracy, leave
    a gap above ``rel_gap`` (for example with ``rel_gap=0``).

Node statuses
-------------
``"open"`` (not evaluated yet), ``"branched"`` (split into two children), ``"pruned"`` (its
bound reaches the cutoff) and ``"solved"`` (a leaf solved exactly: its free variables fit the
remaining budget).
"""

from __future__ import annotations

import enum
import math

__all__ = [
    "SearchStatus", "NodeStatus",
    "OPTIMAL", "TIME_LIMIT", "NODE_LIMIT", "INTERRUPTED", "TREE_EXHAUSTED",
    "PRECISION_LIMITED", "STATUSES", "CERTIFIED", "LIMITED",
    "STATUS_HINTS", "OPEN", "BRANCHED", "PRUNED", "SOLVED", "NODE_STATUSES",
    "RELATIVE_GAP_DEFINITION", "relative_gap", "absolute_gap", "gap_closed", "cutoff",
    "what_it_means",
]


class _Status(enum.StrEnum):
    """A status: a ``str`` equal to its name in the certificate format (``"optimal"``, ...).

    It compares, hashes, formats and serialises (``json``) as that string, and its ``repr`` is
    the string's, so results print as they did when the statuses were plain strings.
    """

    def __repr__(self) -> str:
        return repr(self.value)


# -- statuses of a search ------------------------------------------------------------------------
class SearchStatus(_Status):
    """Every status a search (and its certificate) can end with."""

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    NODE_LIMIT = "node_limit"
    INTERRUPTED = "interrupted"
    TREE_EXHAUSTED = "tree_exhausted"
    PRECISION_LIMITED = "precision_limited"

    @property
    def certified(self) -> bool:
        """The gap is proven within the tolerance asked for (:data:`CERTIFIED`)."""
        return self in CERTIFIED

    @property
    def limited(self) -> bool:
        """A limit or the user stopped the search early (:data:`LIMITED`): raising the limit
        may close the gap."""
        return self in LIMITED


OPTIMAL = SearchStatus.OPTIMAL
TIME_LIMIT = SearchStatus.TIME_LIMIT
NODE_LIMIT = SearchStatus.NODE_LIMIT
INTERRUPTED = SearchStatus.INTERRUPTED
TREE_EXHAUSTED = SearchStatus.TREE_EXHAUSTED
PRECISION_LIMITED = SearchStatus.PRECISION_LIMITED
#: Every status a search (and its certificate) can end with, in the format's order.
STATUSES = tuple(SearchStatus)
#: The statuses of a certified optimum: the proven gap is within the tolerance.
CERTIFIED = frozenset({OPTIMAL})
#: The statuses of a search stopped early, by a limit or by the user (Ctrl-C): the model is the
#: best found and the certificate proves the bound reached.
LIMITED = frozenset({TIME_LIMIT, NODE_LIMIT, INTERRUPTED})

#: What a user can do about each non-optimal status (one phrase each).
STATUS_HINTS = {
    TIME_LIMIT: "raise time_limit to close the gap",
    NODE_LIMIT: "raise the node limit to close the gap",
    INTERRUPTED: "the search was interrupted",
    PRECISION_LIMITED: "the rounding errors of the proof keep the provable gap open: "
                       "standardise X or ask for a larger rel_gap",
    TREE_EXHAUSTED: "every node was closed but the leaves' bounds, computed to the "
                    "relaxation's accuracy, fall short (badly scaled features are a common "
                    "cause: try standardising X)",
}


# -- statuses of a node --------------------------------------------------------------------------
class NodeStatus(_Status):
    """Every status a node of the tree can have."""

    BRANCHED = "branched"
    PRUNED = "pruned"
    SOLVED = "solved"
    OPEN = "open"


OPEN = NodeStatus.OPEN
BRANCHED = NodeStatus.BRANCHED
PRUNED = NodeStatus.PRUNED
SOLVED = NodeStatus.SOLVED
#: Every status a node of the tree can have.
NODE_STATUSES = tuple(NodeStatus)

# -- the gap ---------------------------------------------------------------------------------------
#: The relative gap, as written into certificates.
RELATIVE_GAP_DEFINITION = "(UB - LB) / max(1, |UB|)"


def absolute_gap(upper: float, lower: float) -> float:
    """``max(0, UB - LB)`` (``inf`` while there is no incumbent)."""
    if not math.isfinite(upper):
        return math.inf
    return max(0.0, upper - lower)


def relative_gap(upper: float, lower: float) -> float:
    """``(UB - LB) / max(1, |UB|)``, clipped at 0 (``inf`` while there is no incumbent)."""
    if not math.isfinite(upper):
        return math.inf
    return max(0.0, upper - lower) / max(1.0, abs(upper))


def gap_closed(upper: float, lower: float, rel_gap: float, abs_gap: float) -> bool:
    """True when the relative gap is at most ``rel_gap`` or the absolute gap at most
    ``abs_gap``: the search may stop with status ``"optimal"``."""
    return relative_gap(upper, lower) <= rel_gap or absolute_gap(upper, lower) <= abs_gap


def cutoff(upper: float, rel_gap: float, abs_gap: float) -> float:
    """The bound from which a node cannot improve the incumbent by more than the tolerance.

    A node whose lower bound is ``>= cutoff(UB, rel_gap, abs_gap)`` can be pruned: every
    model in it has objective ``>= UB - max(abs_gap, rel_gap * max(1, |UB|))``, so the gap
    closes without it. ``inf`` while there is no incumbent.
    """
    if not math.isfinite(upper):
        return math.inf
    return upper - max(abs_gap, rel_gap * max(1.0, abs(upper)))


def _percent(fraction: float) -> str:
    """``fraction`` as a short percentage (two significant digits)."""
    return "0%" if fraction == 0 else f"{100.0 * fraction:.2g}%"


def what_it_means(k: int, upper: float, lower: float, proven: bool = True) -> str:
    """The bounds in one plain sentence: how much better than the model any model with at most
    ``k`` features can be (``upper`` the model's objective, ``lower`` the lower bound on every
    such model's objective). ``proven=False`` says that the bound is only claimed (a
    certificate read without being checked)."""
    how = "proven" if proven else "claimed, not checked"
    features = f"{k} feature" + ("" if k == 1 else "s")
    if not (math.isfinite(upper) and math.isfinite(lower)):
        return f"no bound on how much better a model with at most {features} can be"
    gap = absolute_gap(upper, lower)
    if gap == 0:
        return f"no model with at most {features} has a lower objective than this one ({how})"
    amount = (f"{_percent(gap / abs(upper))} of its objective" if upper != 0
              else f"{gap:.3g}")
    return (f"no model with at most {features} has an objective lower than this one's by "
            f"more than {amount} ({how})")
