r"""FISTA with restarts on the composite relaxation, with the dual bound at every iterate.

Minimises ``P(b) = F(b) + 2 lam' g_node(b)`` with ``F(b) = sum_i f(x_i^T b) - mu ||b||^2``
(``mu`` is
the eigenvalue shift, 0 except for shifted least squares; ``lam' = lambda2 + mu``).

At the extrapolated point ``b~`` of every iteration FISTA has ``X b~``, ``zeta = f'(X b~)`` and the
gradient ``grad = X^T zeta - 2 mu b~``; the kernel evaluates there the bound

    LB(b~) = F(b~) - grad^T b~ - 2 lam' g*_node(-grad / (2 lam'))

which is valid for any ``b~`` (F convex) and keeps its running maximum, the point that attained it
and its ``zeta``. ``LB`` is only a bound on the problem the kernel sees: when it runs on a working
set of columns the caller re-evaluates the bound over all columns (see ``api.py``).

Restart schemes (``restart``): 0 none, 1 function value (``P`` increased), 2 gap (the gap has
halved since the last restart), 3 both. The step is ``1/L``; ``L`` is increased by backtracking
whenever the descent-lemma test fails (needed for Poisson, a safeguard otherwise).

The kernel works in chunks (``max_iter`` per call): all the state lives in the arrays passed in
and the scalar state vector ``sc``, so that the caller can check a wall-clock limit between calls.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from sparsecert.solvers.losses import loss_value, loss_value_grad
from sparsecert.solvers.perspective._gfun import g_node, gstar_node
from sparsecert.solvers.perspective._linalg import x_dot, xt_dot
from sparsecert.solvers.perspective._prox import prox_node

# indices into the scalar state vector
SC_T, SC_L, SC_BEST, SC_PX, SC_GAPREF, SC_NREST, SC_NBACK = 0, 1, 2, 3, 4, 5, 6
SC_SIZE = 7

ST_RUNNING, ST_CONVERGED, ST_CUTOFF = 0, 1, 2

RESTART_NONE, RESTART_FUNCTION, RESTART_GAP, RESTART_BOTH = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _sq(v):
    s = 0.0
    for j in range(v.shape[0]):
        s += v[j] * v[j]
    return s


@njit(cache=True, nogil=True)
def bound_at(X, y, loss_id, lam, mu, M, state, budget, b, ub, zeta):
    """Bound ``LB(b)`` (``ub = X b`` given); writes ``zeta = f'(X b)``. Returns ``(LB, F(b))``."""
    Fb = loss_value_grad(loss_id, ub, y, zeta)
    grad = np.empty(X.shape[1])
    xt_dot(X, zeta, grad)
    if mu != 0.0:
        Fb -= mu * _sq(b)
        grad -= 2.0 * mu * b
    twolam = 2.0 * lam
    m = b.shape[0]
    a = np.empty(m)
    gb = 0.0
    for j in range(m):
        if state[j] != 0:
            a[j] = -grad[j] / twolam
            gb += grad[j] * b[j]
        else:
            a[j] = 0.0
    return Fb - gb - twolam * gstar_node(a, state, budget, M), Fb


@njit(cache=True, nogil=True)
def primal_value(y, loss_id, lam, mu, M, state, budget, b, ub):
    """``P(b) = F(b) + 2 lam' g_node(b)`` with ``ub = X b``."""
    F = loss_value(loss_id, ub, y)
    if mu != 0.0:
        F -= mu * _sq(b)
    return F + 2.0 * lam * g_node(b, state, budget, M)


@njit(cache=True, nogil=True)
def fista_chunk(X, XT, y, loss_id, lam, mu, M, state, budget, x, x_prev, ux, ux_prev, sc,
                bound_point, dual, rel_tol, max_iter, restart, cutoff, l_down):
    """Run at most ``max_iter`` FISTA iterations; returns ``(status, n_iter_done)``.

    ``X`` (n, p) and ``XT = X^T`` (p, n) are both C-contiguous (see ``_linalg``).

    In/out state: ``x, x_prev`` (iterates), ``ux, ux_prev`` (``X x``, ``X x_prev``), ``sc``
    (``t, L, best bound, P(x), gap at the last restart, #restarts, #backtracks``),
    ``bound_point`` and ``dual`` (where the best bound was attained).
    """
    n = X.shape[0]
    p = X.shape[1]
    t = sc[SC_T]
    L = sc[SC_L]
    best = sc[SC_BEST]
    Px = sc[SC_PX]
    gap_ref = sc[SC_GAPREF]
    nrest = sc[SC_NREST]
    nback = sc[SC_NBACK]
    twolam = 2.0 * lam
    zeta = np.empty(n)
    yv = np.empty(p)
    uy = np.empty(n)
    a = np.empty(p)
    v = np.empty(p)
    grad = np.empty(p)
    uxn = np.empty(n)
    status = ST_RUNNING
    it = 0
    while it < max_iter:
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        beta = (t - 1.0) / t_next
        for j in range(p):
            yv[j] = x[j] + beta * (x[j] - x_prev[j])
        for i in range(n):
            uy[i] = ux[i] + beta * (ux[i] - ux_prev[i])
        Fy = loss_value_grad(loss_id, uy, y, zeta)
        xt_dot(X, zeta, grad)
        if mu != 0.0:
            Fy -= mu * _sq(yv)
            for j in range(p):
                grad[j] -= 2.0 * mu * yv[j]
        # ---- the bound at the extrapolated point (valid for any point: F is convex) ----
        gy = 0.0
        for j in range(p):
            if state[j] != 0:
                a[j] = -grad[j] / twolam
                gy += grad[j] * yv[j]
            else:
                a[j] = 0.0
        lb = Fy - gy - twolam * gstar_node(a, state, budget, M)
        if lb > best:
            best = lb
            bound_point[:] = yv
            dual[:] = zeta
        it += 1
        if best >= cutoff:
            status = ST_CUTOFF
            break
        # ---- proximal gradient step with backtracking on L (first try a smaller L) ----
        L *= l_down
        while True:
            inv = 1.0 / L
            for j in range(p):
                v[j] = yv[j] - inv * grad[j]
            xn = prox_node(v, state, budget, twolam * inv, M)
            x_dot(XT, xn, uxn)
            Fn = loss_value(loss_id, uxn, y)
            if mu != 0.0:
                Fn -= mu * _sq(xn)
            lin = 0.0
            dd = 0.0
            for j in range(p):
                d = xn[j] - yv[j]
                lin += grad[j] * d
                dd += d * d
            q = Fy + lin + 0.5 * L * dd
            if Fn <= q + 1e-12 * max(1.0, abs(Fy)) or nback > 1e9:
                break
            L *= 2.0
            nback += 1
        Pn = Fn + twolam * g_node(xn, state, budget, M)
        x_prev[:] = x
        x[:] = xn
        ux_prev[:] = ux
        ux[:] = uxn
        gap = Pn - best
        do_restart = False
        if restart == RESTART_FUNCTION or restart == RESTART_BOTH:
            if Pn > Px:
                do_restart = True
        if restart == RESTART_GAP or restart == RESTART_BOTH:
            if not (gap_ref < np.inf):
                gap_ref = gap
            elif gap <= 0.5 * gap_ref:
                do_restart = True
        if do_restart:
            t = 1.0
            nrest += 1.0
            gap_ref = gap
            x_prev[:] = x
            ux_prev[:] = ux
        else:
            t = t_next
        Px = Pn
        if Px - best <= rel_tol * max(1.0, abs(Px)):
            status = ST_CONVERGED
            break
    sc[SC_T] = t
    sc[SC_L] = L
    sc[SC_BEST] = best
    sc[SC_PX] = Px
    sc[SC_GAPREF] = gap_ref
    sc[SC_NREST] = nrest
    sc[SC_NBACK] = nback
    return status, it
