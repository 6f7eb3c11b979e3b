"""Strategy: full FISTA, accelerated proximal gradient on ``b`` over all active columns.

Applies to every loss, box, eigen shift and intercept; it is the fallback of the other
strategies. ``solve_node`` uses it when the working set does not apply or is not wanted (the
active columns are fewer than ``WS_AUTO_RATIO`` times the samples: n >= p and moderately wide
designs, whose relaxed solutions are dense; or an unpenalised intercept is carried by a
non-squared loss), unless z-space is expected to be cheaper on the node (``cost``). The
kernel's running-max bound is computed over all active columns, so it is the node's valid
bound. Polishing (see ``polish``) is switched on from ``POLISH_MIN_COLUMNS`` active columns.
When the active columns are at most ``RESTRICT_FRACTION`` of all and no intercept is carried,
FISTA runs on the active columns only (:func:`_solve_restricted`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from sparsecert.solvers.perspective._fista import (
    Intercept,
    fista_chunk,
    fista_data,
    intercept,
    new_iterate,
)
from sparsecert.solvers.perspective._linalg import design_norm_sq, sub_design, xb
from sparsecert.solvers.perspective.cost import fista_cost
from sparsecert.solvers.perspective.evaluate import finish, full_bound, objective
from sparsecert.solvers.perspective.node import Iterated
from sparsecert.solvers.perspective.polish import POLISH, POLISH_MIN_COLUMNS, Polisher
from sparsecert.solvers.perspective.problem import LIPSCHITZ_SAFETY
from sparsecert.solvers.perspective.runner import Runner

__all__ = ["FullFista", "FULL_FISTA", "initial_L", "run_fista", "solve_full", "lift_best",
           "L_DOWN", "RESTRICT_FRACTION"]

#: a node whose columns not fixed out are at most this fraction of all columns (reduced-cost
#: fixing at p >> n leaves a few hundred of thousands) iterates on those columns only
RESTRICT_FRACTION = 0.25

#: at every iteration FISTA first tries L * L_DOWN (then backtracks): adapts the step to the
#: local curvature
L_DOWN = 1.0


def initial_L(prob, norm_sq: float, ub: np.ndarray) -> float:
    """A first Lipschitz estimate for a design with ``||X_W||^2 <= norm_sq`` (``ub = X b``)."""
    if prob.lipschitz is None:  # no global curvature bound (Poisson): the one at ub
        return norm_sq * max(float(prob.loss_fn.hessian(ub, prob.y).max()), 1e-6)
    # curvature c ||X_W||^2 - 2 mu (mu <= lambda_min(X^T X) <= lambda_min(X_W^T X_W))
    # (a design that is identically zero has no curvature: any step size is exact)
    curv = prob.lipschitz / prob.norm_sq if prob.norm_sq > 0 else 1.0
    return max(curv * norm_sq - 2.0 * prob.mu, 1e-12 * curv * norm_sq, 1e-300)


def run_fista(runner: Runner, problem: tuple, it, limits, n_max: int, polisher=None
              ) -> tuple[int, int]:
    """Advance the FISTA state ``it`` by at most ``n_max`` iterations with ``limits``'
    tolerances, cutoff and restart scheme (and ``polisher``, if any); returns
    ``(status, n_done)``. ``problem``: the kernel's ``(data, icpt, state, budget)``."""
    it.set("restart", limits.restart)
    it.set("l_down", L_DOWN)
    tol, cut, open_tol = float(limits.rel_tol), float(limits.cutoff), float(limits.open_tol)
    data, icpt, state, budget = problem
    polish = None
    if polisher is not None:
        polisher.arm(it)

        def polish() -> int:
            return polisher.polish(it, tol, cut, open_tol)
    return runner.run(lambda m: fista_chunk(data, icpt, state, budget, it, tol, m, cut,
                                            open_tol), n_max, polish)


class FullFista:
    """The full-FISTA strategy (see the module's docstring)."""

    name = "full"

    def applies(self, node) -> bool:
        """Always (every loss, box, shift and intercept)."""
        return True

    def expected_cost(self, node, s: int, iterations) -> float:
        """The node's expected cost with ``iterations`` (:class:`~.cost.Iterations`;
        :func:`~.cost.fista_cost`; ``s`` is not used)."""
        prob, m = node.prob, node.n_active
        restricted = 0 < m <= RESTRICT_FRACTION * prob.n_features
        return fista_cost(prob.n_samples, m, restricted, iterations.fista)

    def solve(self, node, start, limits, runner=None, done=None):
        """FISTA over all active columns from ``start``; see :func:`solve_full`."""
        return solve_full(node, start, limits, runner, done)


#: the strategy's one instance
FULL_FISTA = FullFista()


def solve_full(node, start, limits, runner=None, done: Iterated | None = None):
    """FISTA over all active columns from ``start`` (its point and intercept).

    ``runner``: the run's :class:`~.runner.Runner` (a new one for ``limits.deadline``);
    ``done``: what a working-set run that falls back to full iterations has already found
    and spent (its best bound with point and dual, its iterations and restarts).
    """
    prob = node.prob
    runner = Runner(limits.deadline) if runner is None else runner
    done = Iterated(start.x) if done is None else done
    if 0 < node.active.size <= RESTRICT_FRACTION * prob.n_features:
        return _solve_restricted(node, start, limits, runner, done)
    x0, c0 = start.x, start.c
    data = fista_data(prob)
    ux = xb(prob.design, x0)
    if c0 != 0.0:  # (adding a zero would change nothing: X b holds no -0.0)
        ux += c0
    # (new_iterate copies x0 and ux)
    it = new_iterate(x0, ux, initial_L(prob, prob.norm_sq, ux),
                     objective(prob, node.state, node.budget, x0, ux, data), c0=c0,
                     best=done.best, bound_point=done.bound_point, dual=done.dual)
    polisher = None
    if POLISH and not prob.icpt and node.active.size >= POLISH_MIN_COLUMNS:
        polisher = Polisher(prob, node.state, node.budget, n_active=node.active.size)
    status, n_it = run_fista(runner, (data, intercept(prob), node.state, node.budget), it,
                             limits, limits.max_iter - done.n_iter, polisher)
    best, n_rest, c = _final_scalars(it)
    bp, dual = (it.bound_point, it.dual) if math.isfinite(best) else (None, None)
    return finish(node, limits, Iterated(it.x, c, best, bp, dual, n_it + done.n_iter,
                                         n_rest + done.n_restarts,
                                         runner.status_name(status)), data=data)


def _final_scalars(it) -> tuple[float, int, float]:
    """The best bound, the number of restarts and the intercept of a FISTA state (one read of
    its scalars: ``it.get`` costs a structured-array lookup per name)."""
    sc = it.sc
    return float(sc["best"][0]), int(sc["n_restart"][0]), float(sc["c"][0])


def lift_best(node, cols, Dc, it, done: Iterated) -> Iterated:
    """The node's bound over all columns at the best bound point of a FISTA run on the columns
    ``cols`` (``Dc`` their design), lifted to all columns with zeros: ``done`` with its best
    bound, point and dual replaced when this one beats it."""
    prob = node.prob
    # the lifted bound is at most the run's own (at the same dual point, more columns compete
    # for the cardinality budget): it can only win when the run's bound beats ``done``'s
    if np.isfinite(it.get("best")) and it.get("best") > done.best:
        b2 = np.zeros(prob.n_features)
        b2[cols] = it.bound_point
        lb2, zeta2 = full_bound(prob, node.state, node.budget, b2, xb(Dc, it.bound_point))
        if lb2 > done.best:
            return replace(done, best=lb2, bound_point=b2, dual=zeta2)
    return done


def _solve_restricted(node, start, limits, runner, done: Iterated):
    """:func:`solve_full` on the columns not fixed out only.

    The columns fixed out are zero in every iterate and take no part in ``g*_node``, so the
    sub-problem's iterates and running bound are the node's; an iteration costs ``O(n |A|)``
    instead of ``O(n p)``. Without an intercept the node's bound is then evaluated over all
    columns at the sub-problem's best bound point, as the working set does. With an intercept
    carried as a variable (its zero-sum dual uses ``X_A^T y`` for Poisson) the kernel's dual is
    the node's, and :func:`finish` recomputes its value over all columns.
    """
    prob, active, c0 = node.prob, node.active, start.c
    p = prob.n_features
    DA = sub_design(prob.design, active)
    stA = np.ascontiguousarray(node.state[active])
    xA = start.x[active].copy()
    uxA = xb(DA, xA) + c0
    ns = design_norm_sq(DA) * LIPSCHITZ_SAFETY
    icpt = None
    if prob.icpt:
        icpt = Intercept(np.ascontiguousarray(prob.Xty[active]))
        ns += DA.n  # the intercept is an extra smooth variable: ||[X_A, 1]||^2
    it = new_iterate(xA, uxA, initial_L(prob, ns, uxA),
                     objective(prob, stA, node.budget, xA, uxA), c0=c0)
    status, n_it = run_fista(runner, (fista_data(prob, DA, active), icpt, stA, node.budget), it,
                             limits, limits.max_iter - done.n_iter)
    x = np.zeros(p)
    x[active] = it.x
    if icpt is None:
        done = lift_best(node, active, DA, it, done)
    elif it.get("best") > done.best:
        bp = np.zeros(p)
        bp[active] = it.bound_point
        done = replace(done, best=it.get("best"), bound_point=bp, dual=it.dual.copy())
    return finish(node, limits, Iterated(x, it.get("c"), done.best, done.bound_point,
                                         done.dual, n_it + done.n_iter,
                                         it.get("n_restart") + done.n_restarts,
                                         runner.status_name(status)))
