"""Working set: FISTA on a growing subset W of the columns, the bound over all columns.

Applies when the active columns are at least ``WS_AUTO_RATIO`` times the samples (p >> n, where
the relaxed solution is sparse) and no intercept is carried as a variable (squared loss, or no
intercept); ``working_set=True`` forces it. The sub-problem on W is solved by the FISTA kernel to
an inner tolerance; the bound is then evaluated over all active columns (so it is valid whatever
W), and W is grown with the free columns whose ``H_M(a_j)`` would enter the top-k of
``g*_node`` (as skglm and celer do for the Lasso). When W exceeds ``WS_MAX_FRACTION`` of the
active columns it falls back to full FISTA from the current point.
"""

from __future__ import annotations

import numpy as np

from sparsecert.solvers.perspective._fista import fista_data, new_iterate
from sparsecert.solvers.perspective._gfun import FREE, IN, OUT
from sparsecert.solvers.perspective._linalg import spectral_norm_sq, xb, xtz
from sparsecert.solvers.perspective.evaluate import finish, full_bound, objective
from sparsecert.solvers.perspective.full import initial_L, lift_best, solve_full
from sparsecert.solvers.perspective.problem import LIPSCHITZ_SAFETY

__all__ = ["solve_ws", "WS_MAX_FRACTION"]

#: the working set is abandoned (full iterations from the current point) beyond this fraction
WS_MAX_FRACTION = 0.35


def ws_scores(prob, grad: np.ndarray) -> np.ndarray:
    """``H_M(-grad_j / (2 lam'))`` (the terms of g*_node)."""
    a = -grad / (2.0 * prob.lam_eff)
    if prob.M == np.inf:
        return 0.5 * a * a
    aa = np.abs(a)
    return np.where(aa <= prob.M, 0.5 * aa * aa, prob.M * aa - 0.5 * prob.M ** 2)


def solve_ws(prob, state, budget, x0, rel_tol, max_iter, cut, runner, t0):
    """Working-set outer loop from ``x0``."""
    X, p = prob.X, prob.n_features
    free = state == FREE
    x = x0.copy()
    ux = xb(prob.XT, x)
    best, zeta = full_bound(prob, state, budget, x, ux)
    grad = xtz(X, zeta) - 2.0 * prob.mu * x
    bp, dual = x.copy(), zeta.copy()
    h = ws_scores(prob, grad)
    m0 = max(3 * budget, 50)
    in_w = (state == IN) | ((x != 0.0) & (state != OUT))
    cand = np.flatnonzero(free & ~in_w)
    if cand.size:
        top = cand[np.argsort(-h[cand])[:m0]]
        in_w[top] = True
    inner_tol = max(rel_tol, 1e-3)
    n_it = 0
    n_rest = 0
    status = "max_iter"
    n_active = int(np.sum(state != OUT))
    while True:
        if in_w.sum() > WS_MAX_FRACTION * n_active:
            return solve_full(prob, state, budget, x, rel_tol, max_iter, cut, runner, t0, best,
                              bp, dual, n_it, n_rest)
        W = np.flatnonzero(in_w)
        XW = np.ascontiguousarray(X[:, W])
        XWT = np.ascontiguousarray(prob.XT[W])
        stW = np.ascontiguousarray(state[W])
        xW = x[W].copy()
        uxW = xb(XWT, xW)
        nsW = spectral_norm_sq(XW, tol=1e-6, XT=XWT) * LIPSCHITZ_SAFETY
        it = new_iterate(xW, uxW, initial_L(prob, nsW, uxW),
                         objective(prob, stW, budget, xW, uxW))
        _, n_sub = runner.run(fista_data(prob, XW, XWT), None, stW, budget, it, inner_tol,
                              max_iter - n_it, np.inf)
        n_it += n_sub
        n_rest += it.get("n_restart")
        xW = it.x
        uxW = it.ux
        x = np.zeros(p)
        x[W] = xW
        # full bound at the primal iterate and at the subproblem's best bound point
        lb_x, zeta_x = full_bound(prob, state, budget, x, uxW)
        if lb_x > best:
            best, bp, dual = lb_x, x.copy(), zeta_x
        best, bp, dual = lift_best(prob, state, budget, W, XWT, it, best, bp, dual)
        Px = it.get("px")
        if best >= cut:
            status = "cutoff"
            break
        if Px - best <= rel_tol * max(1.0, abs(Px)):
            status = "converged"
            break
        if runner.timed_out:
            status = "time_limit"
            break
        if n_it >= max_iter:
            status = "max_iter"
            break
        # grow W with the free columns outside W that would enter the top-(budget) of g*_node
        grad = xtz(X, zeta_x) - 2.0 * prob.mu * x
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
            if inner_tol > 0.1 * rel_tol:
                inner_tol = max(inner_tol * 0.1, 0.1 * rel_tol)
            else:
                inner_tol = max(inner_tol * 0.1, 1e-16)
    return finish(prob, state, budget, x, best, bp, dual, n_it, n_rest, status, t0, rel_tol, cut)
