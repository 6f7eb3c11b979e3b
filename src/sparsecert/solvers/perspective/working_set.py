"""Strategy: FISTA on a growing working set W of the columns, the bound over all columns.

Applies when no intercept is carried as a variable (squared loss, or no intercept) and more
than one column is active; ``solve_node`` takes it by default when the active columns are at
least ``WS_AUTO_RATIO`` times the samples (p >> n, where the relaxed solution is sparse),
unless z-space is expected to be cheaper on the node; ``working_set=True`` forces it. The
sub-problem on W is solved by the FISTA kernel to an inner tolerance; the bound is then
evaluated over all active columns (so it is valid whatever W), and W is grown with the free
columns whose ``H_M(a_j)`` would enter the top-k of ``g*_node`` (as skglm and celer do for the
Lasso). When W exceeds ``WS_MAX_FRACTION`` of the active columns it falls back to full FISTA
from the current point.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sparsecert.solvers.perspective._fista import fista_data, new_iterate
from sparsecert.solvers.perspective._gfun import FREE, IN, OUT
from sparsecert.solvers.perspective._linalg import design_norm_sq, sub_design, xb, xtz
from sparsecert.solvers.perspective.cost import working_set_columns, working_set_cost
from sparsecert.solvers.perspective.evaluate import finish, full_bound, objective
from sparsecert.solvers.perspective.full import initial_L, lift_best, run_fista, solve_full
from sparsecert.solvers.perspective.node import Iterated, Start
from sparsecert.solvers.perspective.problem import LIPSCHITZ_SAFETY
from sparsecert.solvers.perspective.runner import Runner

__all__ = ["WorkingSet", "WORKING_SET", "solve_ws", "WS_MAX_FRACTION", "WS_AUTO_RATIO"]

#: the working set is abandoned (full iterations from the current point) beyond this fraction
WS_MAX_FRACTION = 0.35
#: working set by default when the active columns are at least this many times n
WS_AUTO_RATIO = 4


class WorkingSet:
    """The working-set strategy (see the module's docstring)."""

    name = "working_set"

    def applies(self, node) -> bool:
        """No intercept carried as a variable, more than one active column."""
        return node.n_active > 1 and not node.prob.icpt

    def wanted(self, node) -> bool:
        """Taken by default: the active columns are at least ``WS_AUTO_RATIO`` times n."""
        return node.n_active >= WS_AUTO_RATIO * node.prob.n_samples

    def expected_cost(self, node, s: int, iterations) -> float:
        """The node's expected cost on the expected working set
        (:func:`~.cost.working_set_columns`) with ``iterations`` (:class:`~.cost.Iterations`;
        :func:`~.cost.working_set_cost`)."""
        prob = node.prob
        return working_set_cost(prob.n_samples, working_set_columns(node, s), prob.n_features,
                                iterations.fista)

    def solve(self, node, start, limits):
        """The working-set outer loop; see :func:`solve_ws`."""
        return solve_ws(node, start, limits)


#: the strategy's one instance
WORKING_SET = WorkingSet()


def ws_scores(prob, grad: np.ndarray) -> np.ndarray:
    """``H_M(-grad_j / (2 lam'))`` (the terms of g*_node; the per-coefficient bounds' terms
    when the problem has them)."""
    a = -grad / (2.0 * prob.lam_eff)
    if prob.coef_bounds is not None:
        lo, hi = prob.coef_bounds
        with np.errstate(invalid="ignore", over="ignore"):
            return np.where(a > hi, hi * a - 0.5 * hi * hi,
                            np.where(a < lo, lo * a - 0.5 * lo * lo, 0.5 * a * a))
    if prob.M == np.inf:
        return 0.5 * a * a
    aa = np.abs(a)
    return np.where(aa <= prob.M, 0.5 * aa * aa, prob.M * aa - 0.5 * prob.M ** 2)


def solve_ws(node, start, limits):
    """Working-set outer loop from ``start.x`` (no carried intercept)."""
    prob, state, budget = node.prob, node.state, node.budget
    D, p = prob.design, prob.n_features
    free = state == FREE
    runner = Runner(limits.deadline)
    x = start.x.copy()
    ux = xb(D, x)
    best, zeta = full_bound(prob, state, budget, x, ux)
    grad = xtz(D, zeta) - 2.0 * prob.mu * x
    done = Iterated(x, best=best, bound_point=x.copy(), dual=zeta.copy())
    h = ws_scores(prob, grad)
    m0 = max(3 * budget, 50)
    in_w = (state == IN) | ((x != 0.0) & (state != OUT))
    cand = np.flatnonzero(free & ~in_w)
    if cand.size:
        top = cand[np.argsort(-h[cand])[:m0]]
        in_w[top] = True
    inner_tol = max(limits.rel_tol, 1e-3)
    status = "max_iter"
    while True:
        if in_w.sum() > WS_MAX_FRACTION * node.n_active:
            return solve_full(node, Start(x), limits, runner, done)
        W = np.flatnonzero(in_w)
        DW = sub_design(D, W)
        stW = np.ascontiguousarray(state[W])
        xW = x[W].copy()
        uxW = xb(DW, xW)
        nsW = design_norm_sq(DW) * LIPSCHITZ_SAFETY
        it = new_iterate(xW, uxW, initial_L(prob, nsW, uxW),
                         objective(prob, stW, budget, xW, uxW))
        _, n_sub = run_fista(runner, (fista_data(prob, DW, W), None, stW, budget), it,
                             replace(limits, rel_tol=inner_tol, cutoff=np.inf,
                                     open_rel_tol=None),
                             limits.max_iter - done.n_iter)
        done = replace(done, n_iter=done.n_iter + n_sub,
                       n_restarts=done.n_restarts + it.get("n_restart"))
        xW = it.x
        uxW = it.ux
        x = np.zeros(p)
        x[W] = xW
        # full bound at the primal iterate and at the subproblem's best bound point
        lb_x, zeta_x = full_bound(prob, state, budget, x, uxW)
        if lb_x > done.best:
            done = replace(done, best=lb_x, bound_point=x.copy(), dual=zeta_x)
        done = lift_best(node, W, DW, it, done)
        Px = it.get("px")
        if done.best >= limits.cutoff:
            status = "cutoff"
            break
        tol = limits.tol_at(Px)  # the looser open tolerance once Px is below the cutoff
        if Px - done.best <= tol * max(1.0, abs(Px)):
            status = "converged"
            break
        if runner.timed_out:
            status = "time_limit"
            break
        if done.n_iter >= limits.max_iter:
            status = "max_iter"
            break
        # grow W with the free columns outside W that would enter the top-(budget) of g*_node
        grad = xtz(D, zeta_x) - 2.0 * prob.mu * x
        h = ws_scores(prob, grad)
        hw = h[W][stW == FREE]
        thr = 0.0 if hw.size < budget else float(np.partition(hw, hw.size - budget)[hw.size -
                                                                                     budget])
        out_free = np.flatnonzero(free & ~in_w)
        viol = out_free[h[out_free] > thr * (1.0 + 1e-12) + 1e-300]
        if viol.size:
            n_add = max(2 * budget, 50, W.size)
            add = viol[np.argsort(-h[viol])[:n_add]]
            in_w[add] = True
        else:
            if inner_tol > 0.1 * tol:
                inner_tol = max(inner_tol * 0.1, 0.1 * tol)
            else:
                inner_tol = max(inner_tol * 0.1, 1e-16)
    return finish(node, limits, replace(done, coef=x, status=status))
