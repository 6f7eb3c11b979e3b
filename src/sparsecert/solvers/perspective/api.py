"""The node solver's entry points: :func:`solve_node` (one branch-and-bound node) and
:func:`perspective_relaxation` (one shot from the data).

``solve_node`` validates the node, resolves its edge cases (``node``) and hands it to one
strategy (``strategies``: each in its own module, saying when it applies):

* ``exact``: no free feature, squared loss, no box -> one linear solve;
* ``zspace``: squared loss, no box / shift / carried intercept -> projected gradient on z,
  when it is expected to cost less than FISTA on the node (``cost``);
* ``working_set``: p >> n otherwise (no carried intercept) -> FISTA on a growing column subset;
* ``full``: everything else -> FISTA on all active columns (with ``polish`` from 150 columns;
  ``zero_sum`` supplies the dual of an unpenalised intercept of the non-squared losses).

Every strategy ends in ``evaluate.finish``: objective and valid bound over all active columns.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from sparsecert._validation import check_fixings, check_k
from sparsecert.solvers.losses import DEFAULT_LOSS
from sparsecert.solvers.perspective import strategies
from sparsecert.solvers.perspective._fista import (
    RESTART_BOTH,
    RESTART_FUNCTION,
    RESTART_GAP,
    RESTART_NONE,
)
from sparsecert.solvers.perspective.cost import Iterations
from sparsecert.solvers.perspective.node import Limits, NodeProblem, Start, fixing_mask
from sparsecert.solvers.perspective.problem import RelaxationProblem
from sparsecert.solvers.perspective.result import RelaxationResult
from sparsecert.solvers.perspective.working_set import WS_AUTO_RATIO
from sparsecert.solvers.perspective.zspace import ZSpaceFailed

__all__ = ["solve_node", "strategy", "perspective_relaxation", "DEFAULT_RESTART",
           "RESTARTS", "WS_AUTO_RATIO"]

RESTARTS = {"none": RESTART_NONE, "function": RESTART_FUNCTION, "gap": RESTART_GAP,
            "both": RESTART_BOTH}
#: default restart scheme (chosen from benchmarks/relaxation.py, see docs/relaxation.md)
DEFAULT_RESTART = "function"


def solve_node(prob: RelaxationProblem, k: int, fixed_in=None, fixed_out=None, *,
               rel_tol: float = 1e-6, max_iter: int = 20000, time_limit: float | None = None,
               cutoff: float | None = None, warm_start: Any = None,
               restart: str = DEFAULT_RESTART, working_set: bool | None = None,
               solver: str = "auto", iterations: Iterations | None = None,
               race: bool = False, open_rel_tol: float | None = None) -> RelaxationResult:
    """Solve the perspective relaxation of one branch-and-bound node.

    Parameters
    ----------
    prob : RelaxationProblem
        The validated data (not re-validated here).
    k : int
        Sparsity level.
    fixed_in, fixed_out : ndarray of bool (p,) or None
        S1 (z_j = 1) and S0 (z_j = 0). The free features share the budget ``k - |S1|``.
    rel_tol : float
        Stop when ``(P - LB) / max(1, |P|) <= rel_tol``.
    max_iter : int
        Cap on iterations (all working-set rounds together).
    time_limit : float or None
        Wall-clock cap in seconds.
    cutoff : float or None
        Stop (status ``"cutoff"``) as soon as the valid bound reaches ``cutoff``.
    warm_start : None, ndarray (p,) or RelaxationResult
        Starting point (its ``coef``); entries on ``fixed_out`` are ignored.
    restart : {"function", "gap", "both", "none"}
        Momentum restart scheme of FISTA on b.
    working_set : bool or None
        Iterate on a working set of columns grown from the dual. ``None`` (the default): on
        when the active columns outnumber the samples ``WS_AUTO_RATIO`` times (p >> n, where
        the relaxed solution is sparse: leukemia, 38 x 7129 logistic, certifies in 1.5 s with it
        and not in 60 s without), off otherwise (the relaxed solutions of the n >= p benchmark
        family are dense, see docs/relaxation.md). The bound is always computed over all
        non-fixed-out columns.
    solver : {"auto", "fista", "zspace"}
        ``"zspace"``: accelerated projected gradient on the indicators z with n x n solves
        (least squares, no box, no shift, plain intercept only); ``"fista"``: FISTA on b;
        ``"auto"``: z-space where it applies and is expected to cost less than FISTA on this
        node (:func:`sparsecert.solvers.perspective.strategies.choose`), FISTA otherwise.
    iterations : cost.Iterations or None
        For ``"auto"``: the iterations a node of this problem is expected to take with z-space
        and with FISTA, as a race measured them (``None``: a prior, ``cost.PRIOR``).
    race : bool
        For ``"auto"``: solve the node with both z-space and FISTA where z-space applies and
        keep the one that cost less in operation counts
        (:func:`~sparsecert.solvers.perspective.strategies.race`); the result's ``race`` then
        holds what it measured (its ``iterations`` are those of the problem's other nodes).
    open_rel_tol : float or None
        The tolerance once the primal value ``P`` of the iterate is below ``cutoff`` (the
        relaxation's optimum is then below the cutoff: no bound can reach it, and iterating
        further only tightens a bound that cannot prune the node); ``rel_tol`` applies while
        ``P >= cutoff``. None (the default): ``rel_tol`` throughout; a value below ``rel_tol``
        counts as ``rel_tol``. Every bound is valid whichever tolerance stops the iterations.

    Returns
    -------
    RelaxationResult
        Its ``strategy`` names the strategy that solved the node.
    """
    node, start, limits = _prepare(prob, k, fixed_in, fixed_out, rel_tol=rel_tol,
                                   max_iter=max_iter, time_limit=time_limit, cutoff=cutoff,
                                   warm_start=warm_start, restart=restart, solver=solver,
                                   open_rel_tol=open_rel_tol)
    if race and solver == "auto":
        res, outcome = strategies.race(node, start, limits, working_set)
        if outcome is not None:
            res.strategy, res.race = outcome.winner, outcome
            return res
        res.strategy = strategies.choose(node, start, solver, working_set).name
        return res
    how = strategies.choose(node, start, solver, working_set, iterations)
    try:
        res = how.solve(node, start, limits)
    except ZSpaceFailed:
        if solver != "auto":
            raise
        how = strategies.fista_strategy(node, working_set)  # badly scaled columns
        res = how.solve(node, start, limits)
    res.strategy = how.name
    return res


def _prepare(prob, k, fixed_in, fixed_out, **options) -> tuple[NodeProblem, Start, Limits]:
    """The checked node, its start and its limits (``options``: those of :func:`solve_node`)."""
    t0 = time.perf_counter()
    p = prob.n_features
    if not (type(k) is int and 1 <= k <= p):  # the engine's k skips the generic check
        k = check_k(k, p)
    s1 = fixing_mask(fixed_in, p, "fixed_in")
    s0 = fixing_mask(fixed_out, p, "fixed_out")
    both = s1 & s0
    if both.any():
        raise ValueError(f"fixed_in and fixed_out overlap on features "
                         f"{np.flatnonzero(both)[:5].tolist()}")
    n_in = int(np.count_nonzero(s1))
    if n_in > k:
        raise ValueError(f"|fixed_in| = {n_in} exceeds k = {k}")
    restart, max_iter, rel_tol = options["restart"], options["max_iter"], options["rel_tol"]
    if restart not in RESTARTS:
        raise ValueError(f"restart must be one of {tuple(RESTARTS)}, got {restart!r}")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 0):
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    if not (rel_tol >= 0.0):
        raise ValueError(f"rel_tol must be >= 0, got {rel_tol!r}")
    open_rel_tol = options["open_rel_tol"]
    if open_rel_tol is not None and not (open_rel_tol >= 0.0):
        raise ValueError(f"open_rel_tol must be None or >= 0, got {open_rel_tol!r}")
    if options["solver"] not in strategies.SOLVERS:
        raise ValueError(f"solver must be 'auto', 'fista' or 'zspace', got "
                         f"{options['solver']!r}")
    cutoff, time_limit = options["cutoff"], options["time_limit"]
    limits = Limits(float(rel_tol), int(max_iter), np.inf if cutoff is None else float(cutoff),
                    None if time_limit is None else t0 + float(time_limit), t0,
                    RESTARTS[restart], None if open_rel_tol is None else float(open_rel_tol))
    node = NodeProblem.build(prob, k, s1, s0)
    return node, Start.of(node, options["warm_start"]), limits


def strategy(prob: RelaxationProblem, n_active: int, n_free: int, solver: str = "auto",
             working_set: bool | None = None, k: int | None = None) -> str:
    """The strategy :func:`solve_node` takes, from zero and with the prior iterations, on a
    node whose first ``n_active`` columns are not fixed out and ``n_free`` of them are free
    (the others fixed in), with sparsity ``k`` (default: ``n_free``'s half, at least 1):
    ``"exact"``, ``"zspace"``, ``"working_set"`` or ``"full"``.

    (The search's root, every column free: ``strategy(prob, p, p)``.)
    """
    if solver not in strategies.SOLVERS:
        raise ValueError(f"solver must be 'auto', 'fista' or 'zspace', got {solver!r}")
    p = prob.n_features
    s0 = np.zeros(p, bool)
    s0[n_active:] = True
    s1 = np.zeros(p, bool)
    s1[n_free:n_active] = True
    n_in = n_active - n_free
    k = max(n_in + max(n_free // 2, 1), 1) if k is None else k
    node = NodeProblem.build(prob, min(k, p), s1, s0)
    return strategies.choose(node, Start(np.zeros(p)), solver, working_set).name


def perspective_relaxation(X, y, k: int, lambda2: float, loss: str = DEFAULT_LOSS,
                           max_abs_coef: float | None = None, fixed_in=(), fixed_out=(),
                           rel_tol: float = 1e-6, max_iter: int = 20000,
                           time_limit: float | None = None, cutoff: float | None = None,
                           warm_start=None, eig_shift=None, fit_intercept: bool = False,
                           restart: str = DEFAULT_RESTART) -> RelaxationResult:
    """Solve the perspective relaxation of the k-sparse GLM (one shot).

    ``min_b sum_i f(x_i^T b, y_i) + 2 lambda2 g(b)`` where ``g`` is the perspective (half squared
    k-support norm with the box ``|b_j| <= M``), optionally at a branch-and-bound node.

    Parameters
    ----------
    X : array-like (n, p)
    y : array-like (n,)
    k : int
        Sparsity level, ``1 <= k <= p``.
    lambda2 : float
        Ridge weight, > 0 (objective: sum of losses + lambda2 ||b||^2).
    loss : {"squared", "logistic", "squared_hinge", "poisson", "huber"}
    max_abs_coef : float or None
        Box ``M``; None for none.
    fixed_in, fixed_out : sequences of int
        Feature indices fixed in (z_j = 1) / out (z_j = 0).
    rel_tol, max_iter, time_limit, cutoff, warm_start, restart
        See :func:`solve_node`.
    eig_shift : None, float or "auto"
        Least squares only: the eigenvalue-shifted (stronger) relaxation.
    fit_intercept : bool
        Unpenalised intercept.

    Returns
    -------
    RelaxationResult
    """
    prob = RelaxationProblem.from_data(X, y, lambda2, loss=loss, max_abs_coef=max_abs_coef,
                                       eig_shift=eig_shift, fit_intercept=fit_intercept)
    k = check_k(k, prob.n_features)
    s1, s0 = check_fixings(fixed_in, fixed_out, k, prob.n_features)
    return solve_node(prob, k, s1, s0, rel_tol=rel_tol, max_iter=max_iter,
                      time_limit=time_limit, cutoff=cutoff, warm_start=warm_start,
                      restart=restart)
