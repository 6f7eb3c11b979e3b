r"""The expected cost of a node strategy, counted in operations (deterministic).

``solve_node(solver="auto")`` chooses between z-space and FISTA (on all active columns or on a
working set) by the cost each is expected to have on the node at hand:

    cost = set-up + iterations x cost of one iteration.

Both parts are counts of the kernels' operations on the node's sizes (``n`` samples, ``m``
active columns, ``s`` positive indicators, ``w`` working-set columns, ``p`` columns in all),
each kind of operation weighted by what it cost on the calibration machine
(``benchmarks/node_cost.py`` times the strategies on the nodes of real searches and fits the
weights below; the unit is about a nanosecond there, and only the ratios matter):

* z-space, per evaluation of ``phi`` (``ZSPACE_EVALS`` per iteration with the backtracking,
  and ``ZSPACE_START`` more for the first step's): ``X_A^T alpha`` (``n m``), the scaled
  columns and the solve's vectors (``n q``, ``q = min(s, n)``), the Gram matrix of the smaller
  system (``max(s, n) q^2 / 2``) and its Cholesky factorisation (``q^3 / 6``); set-up: a copy
  of the active columns when some are fixed out (``n m``);
* FISTA on ``m`` columns, per iteration: two mat-vecs (``2 n m``) and the proximal operator's
  sort (``m log2 m``); set-up: on a restricted set of columns, their copy and the estimate of
  their norm (``n m``, and a fixed cost);
* the working set: FISTA's iteration on ``w`` columns, and per node a few bounds over all
  columns (``n p``) and the working sets' copies and norm estimates.

The iterations are not known before the node is solved. They depend on the data (FISTA takes
1.5 to 4 times z-space's iterations on well-conditioned designs, 5 to 50 times on riboflavin's
correlated columns), so the search measures them on its first node below the root, where
both strategies run (a race counted in these operations, not timed: the outcome is the same
on every machine and every run), and every later node expects that node's counts. Not at the
root: solved from zero with all columns active, the root is the least typical node and the
dearest to race (riboflavin: a z-space solve of its root costs about ten FISTA ones), while
the root's children start warm, with the root's fixings, as the later nodes do. Without a
measurement (the root, and the nodes before the race) the counts are :data:`PRIOR`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Iterations", "PRIOR", "zspace_cost", "fista_cost", "working_set_cost",
           "working_set_columns", "positive_indicators"]


@dataclass(frozen=True)
class Iterations:
    """The iterations a node solve is expected to take with z-space and with FISTA."""

    zspace: float
    fista: float


#: the iterations expected before the race has measured them
PRIOR = Iterations(zspace=60.0, fista=200.0)

# weights of the operations (about nanoseconds; chosen from benchmarks/node_cost.py's fits of
# node times and checked by its replay of the choices, see its docstring)
#: z-space, per node: fixed, a copy of the active columns (per n m, when some are fixed out),
#: the evaluations of ``phi`` its first step's backtracking takes (the step starts at L = 1)
ZSPACE_NODE, ZSPACE_COPY, ZSPACE_START = 20_000.0, 2.0, 15.0
#: z-space, per evaluation of ``phi`` (``ZSPACE_EVALS`` per iteration): fixed, ``X_A^T alpha``
#: (per n m), vectors (per n q), the Gram matrix and its factorisation (per multiply-add)
ZSPACE_EVALS = 2.0
ZSPACE_EVAL, ZSPACE_MATVEC, ZSPACE_VECTOR, ZSPACE_GRAM = 2_500.0, 1.0, 2.0, 1.0
#: FISTA, per node: fixed; a restricted run's copy and norm estimate (per n m, and fixed)
FISTA_NODE, FISTA_RESTRICT, FISTA_RESTRICT_FIXED = 50_000.0, 10.0, 1_500_000.0
#: FISTA, per iteration: fixed, the two mat-vecs (per 2 n m), the sorts (per m log2 m)
FISTA_STEP, FISTA_MATVEC, FISTA_SORT = 3_000.0, 0.25, 15.0
#: the working set, per node: fixed (its rounds' norm estimates), bounds over all columns
#: (per n p)
WS_FIXED, WS_BOUNDS = 4_000_000.0, 25.0


def zspace_cost(n: int, m: int, p: int, s: int, iters: float) -> float:
    """The cost of a z-space solve: ``m`` of ``p`` columns active, ``s`` positive indicators,
    ``iters`` iterations."""
    q = min(s, n)
    per_eval = (ZSPACE_EVAL + ZSPACE_MATVEC * n * m + ZSPACE_VECTOR * n * q
                + ZSPACE_GRAM * (max(s, n) * q * q / 2.0 + q ** 3 / 6.0))
    copy = ZSPACE_COPY * n * m if m < p else 0.0
    return ZSPACE_NODE + copy + (ZSPACE_START + ZSPACE_EVALS * iters) * per_eval


def fista_cost(n: int, m: int, restricted: bool, iters: float) -> float:
    """The cost of a FISTA solve on ``m`` columns (``restricted``: a copy of them first)."""
    step = FISTA_STEP + FISTA_MATVEC * 2.0 * n * m + FISTA_SORT * m * math.log2(m + 2.0)
    setup = FISTA_RESTRICT * n * m + FISTA_RESTRICT_FIXED if restricted else 0.0
    return FISTA_NODE + setup + iters * step


def working_set_cost(n: int, w: int, p: int, iters: float) -> float:
    """The cost of a working-set solve on about ``w`` columns of ``p``."""
    return fista_cost(n, w, True, iters) + WS_BOUNDS * n * p + WS_FIXED


def working_set_columns(node, s: int) -> int:
    """The columns a working-set run is expected to iterate on: its first set (the fixed-in
    and non-zero columns and the ``max(3 budget, 50)`` best free ones) grown about twice."""
    first = max(3 * node.budget, 50) + s
    return int(min(node.n_active, 2 * first))


def positive_indicators(node, start) -> int:
    """An estimate of the positive indicators ``s`` of the node's relaxed solution: those of
    the start (the parent's solution: fixed-in columns and non-zero free coefficients), or,
    from zero, half the smaller of the active columns and the samples."""
    if start.is_zero:
        return max(1, min(node.n_active, node.prob.n_samples) // 2)
    x = start.x[node.active]
    return int(np.count_nonzero(x)) + int(np.count_nonzero(
        (node.state[node.active] == 1) & (x == 0.0)))
