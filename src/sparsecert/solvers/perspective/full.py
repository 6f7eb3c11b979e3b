"""Full FISTA: accelerated proximal gradient on ``b`` over all active columns.

Applies to every loss, box, eigen shift and intercept; it is the fallback of the other
strategies. ``solve_node`` uses it when the active columns are fewer than ``WS_AUTO_RATIO``
times the samples (n >= p and moderately wide designs, whose relaxed solutions are dense) or
when an unpenalised intercept is carried (non-squared losses), unless z-space applies. The
kernel's running-max bound is computed over all active columns, so it is the node's valid bound.
Polishing (see ``polish``) is switched on from ``POLISH_MIN_COLUMNS`` active columns. When the
active columns are at most ``RESTRICT_FRACTION`` of all and no intercept is carried, FISTA runs
on the active columns only (:func:`_solve_restricted`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from sparsecert.solvers.perspective._fista import (
    ST_CONVERGED,
    ST_CUTOFF,
    ST_POLISH,
    Intercept,
    fista_chunk,
    fista_data,
    intercept,
    new_iterate,
)
from sparsecert.solvers.perspective._gfun import OUT
from sparsecert.solvers.perspective._linalg import spectral_norm_sq, xb
from sparsecert.solvers.perspective.evaluate import finish, full_bound, objective
from sparsecert.solvers.perspective.polish import POLISH, POLISH_MIN_COLUMNS, Polisher
from sparsecert.solvers.perspective.problem import LIPSCHITZ_SAFETY

__all__ = ["Runner", "initial_L", "solve_full", "lift_best", "L_DOWN"]

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


class Runner:
    """Calls of the FISTA kernel with a wall-clock limit.

    Without a limit one call runs the node to its end (the kernel returns only to have the
    iterate polished); with one, the calls are chunks of iterations sized to read the clock
    about four times in the remaining time.
    """

    def __init__(self, deadline: float | None, restart: int):
        self.deadline = deadline
        self.restart = restart
        self.timed_out = False

    def run(self, data, icpt, state, budget, it, tol, n_max, cutoff, polisher=None):
        """Advance ``it`` by at most ``n_max`` iterations; returns ``(status, n_done)``."""
        done = 0
        status = 0
        chunk = n_max if self.deadline is None else 20
        if polisher is not None:
            polisher.arm(it)
        while done < n_max:
            m = min(chunk, n_max - done)
            t_start = time.perf_counter()
            status, n_it = fista_chunk(data, icpt, state, budget, it, tol, m, self.restart,
                                       cutoff, L_DOWN)
            done += n_it
            if status == ST_POLISH:
                status = polisher.polish(it, tol, cutoff)
            if status != 0:
                break
            if self.deadline is not None:
                now = time.perf_counter()
                if now >= self.deadline:
                    self.timed_out = True
                    break
                per_it = (now - t_start) / max(n_it, 1)
                chunk = int(min(max(20, 0.25 * (self.deadline - now) / max(per_it, 1e-9)), 5000))
        return status, done

    def status_name(self, status: int) -> str:
        """The result status of a run that returned ``status``."""
        if status == ST_CONVERGED:
            return "converged"
        if status == ST_CUTOFF:
            return "cutoff"
        return "time_limit" if self.timed_out else "max_iter"


def solve_full(prob, state, budget, x0, rel_tol, max_iter, cut, runner, t0, best=-np.inf,
               bp=None, dual=None, n_done=0, n_rest_done=0, c0=0.0, active=None, out=None):
    """FISTA over all active columns from ``x0`` (and intercept ``c0``).

    ``best, bp, dual, n_done, n_rest_done``: what a working-set run that falls back to full
    iterations has already found and spent; ``active``, ``out``: the columns not fixed out and
    the mask ``state == OUT``, if the caller has them.
    """
    if active is None:
        active = np.flatnonzero(state != OUT)
    if 0 < active.size <= RESTRICT_FRACTION * prob.n_features:
        return _solve_restricted(prob, state, budget, x0, rel_tol, max_iter, cut, runner, t0,
                                 active, best, bp, dual, n_done, n_rest_done, c0)
    data = fista_data(prob)
    ux = xb(prob.XT, x0)
    if c0 != 0.0:  # (adding a zero would change nothing: X b holds no -0.0)
        ux += c0
    # (new_iterate copies x0 and ux)
    it = new_iterate(x0, ux, initial_L(prob, prob.norm_sq, ux),
                     objective(prob, state, budget, x0, ux, data), c0=c0, best=best,
                     bound_point=bp, dual=dual)
    polisher = None
    if POLISH and not prob.icpt and active.size >= POLISH_MIN_COLUMNS:
        polisher = Polisher(prob, state, budget, n_active=active.size)
    status, n_it = runner.run(data, intercept(prob), state, budget, it, rel_tol,
                              max_iter - n_done, cut, polisher)
    best, n_rest, c = _final_scalars(it)
    bp, dual = (it.bound_point, it.dual) if math.isfinite(best) else (None, None)
    return finish(prob, state, budget, it.x, best, bp, dual, n_it + n_done,
                  n_rest + n_rest_done, runner.status_name(status), t0, rel_tol, cut, c=c,
                  data=data, out=out)


def _final_scalars(it) -> tuple[float, int, float]:
    """The best bound, the number of restarts and the intercept of a FISTA state (one read of
    its scalars: ``it.get`` costs a structured-array lookup per name)."""
    sc = it.sc
    return float(sc["best"][0]), int(sc["n_restart"][0]), float(sc["c"][0])


def lift_best(prob, state, budget, cols, XcT, it, best, bp, dual):
    """The node's bound over all columns at the best bound point of a FISTA run on the columns
    ``cols`` (``XcT`` their rows of ``X^T``), lifted to all columns with zeros; returns
    ``(best, bp, dual)`` updated when it beats ``best``."""
    if np.isfinite(it.get("best")):
        b2 = np.zeros(prob.n_features)
        b2[cols] = it.bound_point
        lb2, zeta2 = full_bound(prob, state, budget, b2, xb(XcT, it.bound_point))
        if lb2 > best:
            return lb2, b2, zeta2
    return best, bp, dual


def _solve_restricted(prob, state, budget, x0, rel_tol, max_iter, cut, runner, t0, active,
                      best, bp, dual, n_done, n_rest_done, c0=0.0):
    """:func:`solve_full` on the columns ``active`` (those not fixed out) only.

    The columns fixed out are zero in every iterate and take no part in ``g*_node``, so the
    sub-problem's iterates and running bound are the node's; an iteration costs ``O(n |A|)``
    instead of ``O(n p)``. Without an intercept the node's bound is then evaluated over all
    columns at the sub-problem's best bound point, as the working set does. With an intercept
    carried as a variable (its zero-sum dual uses ``X_A^T y`` for Poisson) the kernel's dual is
    the node's, and :func:`finish` recomputes its value over all columns.
    """
    p = prob.n_features
    XA = np.ascontiguousarray(prob.X[:, active])
    XAT = np.ascontiguousarray(prob.XT[active])
    stA = np.ascontiguousarray(state[active])
    xA = x0[active].copy()
    uxA = xb(XAT, xA) + c0
    ns = spectral_norm_sq(XA, tol=1e-6, XT=XAT) * LIPSCHITZ_SAFETY
    icpt = None
    if prob.icpt:
        icpt = Intercept(np.ascontiguousarray(prob.Xty[active]))
        ns += XA.shape[0]  # the intercept is an extra smooth variable: ||[X_A, 1]||^2
    it = new_iterate(xA, uxA, initial_L(prob, ns, uxA), objective(prob, stA, budget, xA, uxA),
                     c0=c0)
    status, n_it = runner.run(fista_data(prob, XA, XAT), icpt, stA, budget, it, rel_tol,
                              max_iter - n_done, cut, None)
    x = np.zeros(p)
    x[active] = it.x
    if icpt is None:
        best, bp, dual = lift_best(prob, state, budget, active, XAT, it, best, bp, dual)
    elif it.get("best") > best:
        best, bp, dual = it.get("best"), np.zeros(p), it.dual.copy()
        bp[active] = it.bound_point
    return finish(prob, state, budget, x, best, bp, dual, n_it + n_done,
                  it.get("n_restart") + n_rest_done, runner.status_name(status), t0, rel_tol,
                  cut, c=it.get("c"))
