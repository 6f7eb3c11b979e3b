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

from sparsecert.solvers.losses import POISSON, conjugate_sum, loss_value, loss_value_grad
from sparsecert.solvers.perspective._gfun import g_node, gstar_node
from sparsecert.solvers.perspective._linalg import x_dot, xt_dot
from sparsecert.solvers.perspective._prox import prox_node

# indices into the scalar state vector
SC_T, SC_L, SC_BEST, SC_PX, SC_GAPREF, SC_NREST, SC_NBACK = 0, 1, 2, 3, 4, 5, 6
SC_C, SC_CPREV, SC_CBP = 7, 8, 9  # intercept: current, previous, at the bound point
SC_SIZE = 10

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
def icpt_grad_dual(X, y, loss_id, zeta, cls, Xty, grad, zproj, gproj):
    """Gradient ``X^T zeta`` and a zero-sum dual ``zproj`` (with ``gproj = X^T zproj``).

    With an unpenalised intercept the Fenchel dual needs ``sum(zeta) = 0``. Logistic / squared
    hinge: ``zeta_i = -y_i s_i`` with ``s_i >= 0``; the larger of the two class sums is scaled
    down (``s`` stays in the conjugate's domain). Poisson: ``zeta = e - y`` with ``e >= 0``; ``e``
    is scaled to ``sum(e) = sum(y)``. The two class parts are multiplied separately (rows of the
    other class are skipped), so the cost is one mat-vec. Returns ``sum(zeta)``.
    """
    n = X.shape[0]
    p = X.shape[1]
    gA = np.empty(p)
    sz = 0.0
    for i in range(n):
        sz += zeta[i]
    if loss_id == POISSON:
        e = np.empty(n)
        se = 0.0
        sy = 0.0
        for i in range(n):
            e[i] = zeta[i] + y[i]
            se += e[i]
            sy += y[i]
        xt_dot(X, e, gA)
        alpha = sy / se if se > 0.0 else 0.0
        for i in range(n):
            zproj[i] = alpha * e[i] - y[i]
        for j in range(p):
            grad[j] = gA[j] - Xty[j]
            gproj[j] = alpha * gA[j] - Xty[j]
        return sz
    zA = np.zeros(n)
    zB = np.zeros(n)
    sA = 0.0
    sB = 0.0
    for i in range(n):
        if cls[i] == 1:
            zA[i] = zeta[i]
            sA += zeta[i]
        else:
            zB[i] = zeta[i]
            sB += zeta[i]
    gB = np.empty(p)
    xt_dot(X, zA, gA)
    xt_dot(X, zB, gB)
    aA = 1.0
    aB = 1.0
    if -sA > sB:
        aA = sB / (-sA)
    elif sB > 0.0:
        aB = (-sA) / sB
    for i in range(n):
        zproj[i] = aA * zA[i] + aB * zB[i]
    for j in range(p):
        grad[j] = gA[j] + gB[j]
        gproj[j] = aA * gA[j] + aB * gB[j]
    return sz


@njit(cache=True, nogil=True)
def dual_value(X, y, loss_id, lam, M, state, budget, zeta):
    """Fenchel dual ``D(zeta) = -sum f*(zeta_i) - 2 lam g*_node(-X^T zeta / (2 lam))``."""
    p = X.shape[1]
    g = np.empty(p)
    xt_dot(X, zeta, g)
    a = np.empty(p)
    for j in range(p):
        a[j] = -g[j] / (2.0 * lam) if state[j] != 0 else 0.0
    return -conjugate_sum(loss_id, zeta, y) - 2.0 * lam * gstar_node(a, state, budget, M)


@njit(cache=True, nogil=True)
def primal_value(y, loss_id, lam, mu, M, state, budget, b, ub):
    """``P(b) = F(b) + 2 lam' g_node(b)`` with ``ub = X b``."""
    F = loss_value(loss_id, ub, y)
    if mu != 0.0:
        F -= mu * _sq(b)
    return F + 2.0 * lam * g_node(b, state, budget, M)


@njit(cache=True, nogil=True)
def fista_chunk(X, XT, y, loss_id, lam, mu, M, state, budget, x, x_prev, ux, ux_prev, sc,
                bound_point, dual, rel_tol, max_iter, restart, cutoff, l_down, icpt, cls, Xty):
    """Run at most ``max_iter`` FISTA iterations; returns ``(status, n_iter_done)``.

    ``X`` (n, p) and ``XT = X^T`` (p, n) are both C-contiguous (see ``_linalg``).

    In/out state: ``x, x_prev`` (iterates), ``ux, ux_prev`` (``X x``, ``X x_prev``), ``sc``
    (``t, L, best bound, P(x), gap at the last restart, #restarts, #backtracks``),
    ``bound_point`` and ``dual`` (where the best bound was attained).

    ``icpt``: an unpenalised intercept ``c`` (in ``sc[SC_C]``; ``ux`` then holds ``X x + c``) for
    the non-squared losses; the bound is then the Fenchel dual at the zero-sum projection of
    ``zeta`` (``icpt_grad_dual``), valid whatever ``c``. ``mu`` must be 0 in that case.
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
    zproj = np.empty(n)
    gproj = np.empty(p)
    c = sc[SC_C]
    c_prev = sc[SC_CPREV]
    c_bp = sc[SC_CBP]
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
        cy = c + beta * (c - c_prev)
        gc = 0.0
        if icpt:
            gc = icpt_grad_dual(X, y, loss_id, zeta, cls, Xty, grad, zproj, gproj)
            for j in range(p):
                a[j] = -gproj[j] / twolam if state[j] != 0 else 0.0
            lb = -conjugate_sum(loss_id, zproj, y) - twolam * gstar_node(a, state, budget, M)
            if lb > best:
                best = lb
                bound_point[:] = yv
                dual[:] = zproj
                c_bp = cy
        else:
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
            cn = cy - inv * gc
            if icpt:
                for i in range(n):
                    uxn[i] += cn
            Fn = loss_value(loss_id, uxn, y)
            if mu != 0.0:
                Fn -= mu * _sq(xn)
            lin = 0.0
            dd = 0.0
            for j in range(p):
                d = xn[j] - yv[j]
                lin += grad[j] * d
                dd += d * d
            if icpt:
                lin += gc * (cn - cy)
                dd += (cn - cy) * (cn - cy)
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
        c_prev = c
        c = cn
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
            c_prev = c
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
    sc[SC_C] = c
    sc[SC_CPREV] = c_prev
    sc[SC_CBP] = c_bp
    return status, it


@njit(cache=True, nogil=True)
def prox_grad_step(X, XT, y, loss_id, lam, mu, M, state, budget, b, L):
    """One proximal-gradient step from ``b`` with step ``1/L``: returns ``(x+, X x+, P(x+))``."""
    n = X.shape[0]
    p = X.shape[1]
    u = np.empty(n)
    x_dot(XT, b, u)
    zeta = np.empty(n)
    loss_value_grad(loss_id, u, y, zeta)
    grad = np.empty(p)
    xt_dot(X, zeta, grad)
    v = np.empty(p)
    for j in range(p):
        v[j] = b[j] - (grad[j] - 2.0 * mu * b[j]) / L
    xn = prox_node(v, state, budget, 2.0 * lam / L, M)
    un = np.empty(n)
    x_dot(XT, xn, un)
    return xn, un, primal_value(y, loss_id, lam, mu, M, state, budget, xn, un)
