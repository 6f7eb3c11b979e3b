r"""Polishing: Newton steps on the smooth piece of ``P`` identified by the FISTA iterate.

Applies inside full FISTA (``full``) when at least ``POLISH_MIN_COLUMNS`` columns are active and
no intercept is carried as a variable; it is what makes the bound meet the objective.

Why: the bound ``LB(b~)`` has a *first-order* error in the gradient error (the top-k sum in
``g*`` has many ties at the optimum: all the coordinates of the ``theta`` group share
``|a_j| = theta``), while the primal error is second order. So FISTA's bound lags its primal
value by many iterations. Once the structure of the iterate is stable -- the support ``S``, the
``r`` free coordinates with ``z_j = 1``, the group ``T`` of the others and their signs ``s`` --
``P`` coincides near the optimum with the smooth function

    Q(b_S) = F(X_S b_S) + lam' ( ||b_R||^2 + (s^T b_T)^2 / (k' - r) ),   R = S1 u {top r}

whose minimiser is found by a few Newton steps (one for least squares), in one compiled kernel
that runs without the GIL (:func:`newton_candidate`; :func:`structure` is its Python
reference). The polished point is
only a *candidate*: :class:`Polisher` evaluates the true ``P`` and the valid bound ``LB`` there
(over all columns) and keeps it only if it helps, so a wrong structure can never produce a wrong
bound. The schedule (when to try, run inside the FISTA kernel) is a deterministic flop model,
so runs are reproducible.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from sparsecert.solvers._ridge_refit import cholesky_solve
from sparsecert.solvers.loss_kernels import loss_hessian, loss_value_grad, newton_exact
from sparsecert.solvers.perspective._fista import (
    ST_CONVERGED,
    ST_CUTOFF,
    fista_data,
    prox_grad_step,
)
from sparsecert.solvers.perspective._gfun import FREE, IN, OUT, best_split
from sparsecert.solvers.perspective._linalg import dense_columns, xb
from sparsecert.solvers.perspective.evaluate import full_bound, objective

__all__ = ["structure", "newton_polish", "newton_candidate", "Polisher", "POLISH",
           "POLISH_MIN_COLUMNS"]

#: Newton polishing of the iterate when at least this many columns are active
POLISH = True
POLISH_MIN_COLUMNS = 150


def structure(x: np.ndarray, state: np.ndarray, budget: int):
    """``(S, in_R, signs_T, k' - r)`` of the point ``x``; ``S`` sorted; ``None`` if degenerate."""
    S = np.flatnonzero((x != 0.0) & (state != 0))
    if S.size == 0:
        return None
    st = state[S]
    in_R = st == IN
    free_pos = np.flatnonzero(st == FREE)
    kr = 0
    if free_pos.size > budget:
        a = np.abs(x[S[free_pos]])
        order = np.argsort(-a, kind="stable")
        srt = a[order]
        total = srt.sum()
        best_r, best_val = budget - 1, np.inf
        pre = pre2 = 0.0
        for r in range(budget):
            tail = max(total - pre, 0.0)
            if tail / (budget - r) >= srt[r]:
                val = pre2 + tail * tail / (budget - r)
                if val < best_val:
                    best_val, best_r = val, r
            pre += srt[r]
            pre2 += srt[r] ** 2
        in_R[free_pos[order[:best_r]]] = True
        kr = budget - best_r
    else:
        in_R[free_pos] = True
    signs_T = np.where(in_R, 0.0, np.sign(x[S]))
    return S, in_R, signs_T, kr


_BLAS_CONTROLLER = []  # one threadpoolctl controller, created at the first polish


def _single_thread_blas():
    """Limit BLAS to one thread (multi-threaded BLAS stalls on shared cores); no-op if absent.

    The controller that finds the loaded BLAS libraries (by reading the process's memory map)
    is created once: creating it per call cost about 2 ms, as much as the polish itself, and
    held the GIL, which serialised threaded node evaluation.
    """
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover
        import contextlib

        return contextlib.nullcontext()
    if not _BLAS_CONTROLLER:
        _BLAS_CONTROLLER.append(ThreadpoolController())
    return _BLAS_CONTROLLER[0].limit(limits=1, user_api="blas")


def newton_polish(prob, x, state, budget, max_steps=8):
    """Minimise the smooth piece ``Q`` of the relaxation ``prob`` around ``x``; returns the
    candidate (p,) or None.

    (The compiled :func:`newton_candidate` on ``prob``'s design, targets, loss and weights
    ``lam'``, ``mu``, with BLAS held to one thread.)
    """
    with _single_thread_blas():
        ok, out = newton_candidate(prob.design, prob.y, prob.loss_spec, float(prob.lam_eff),
                                   float(prob.mu), x, state, int(budget), int(max_steps))
    return out if ok else None


@njit(cache=True, nogil=True)
def _stable_order_desc(a):
    """Indices sorting ``a`` in decreasing order, ties by index (insertion sort: the free
    support of a node is short)."""
    order = np.arange(a.shape[0])
    for i in range(1, a.shape[0]):
        k = order[i]
        j = i - 1
        while j >= 0 and a[order[j]] < a[k]:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = k
    return order


@njit(cache=True, nogil=True)
def _structure(x, state, budget):
    """The compiled :func:`structure`: ``(S, in_R, signs_T, k' - r)``, ``S`` empty if degenerate.

    Ties in ``|x_j|`` are ordered by index (a stable sort), as in :func:`structure`.
    """
    m = 0
    for j in range(x.shape[0]):
        if x[j] != 0.0 and state[j] != OUT:
            m += 1
    S = np.empty(m, dtype=np.int64)
    m = 0
    for j in range(x.shape[0]):
        if x[j] != 0.0 and state[j] != OUT:
            S[m] = j
            m += 1
    in_R = np.zeros(m, dtype=np.bool_)
    free_pos = np.empty(m, dtype=np.int64)  # its first n_free entries
    n_free = 0
    for i in range(m):
        if state[S[i]] == IN:
            in_R[i] = True
        elif state[S[i]] == FREE:
            free_pos[n_free] = i
            n_free += 1
    kr = 0
    if n_free > budget:
        a = np.empty(n_free)
        for i in range(n_free):
            a[i] = abs(x[S[free_pos[i]]])
        order = _stable_order_desc(a)
        total = 0.0
        for i in range(n_free):
            total += a[order[i]]
        best_r = best_split(a, order, total, budget)
        for i in range(best_r):
            in_R[free_pos[order[i]]] = True
        kr = budget - best_r
    else:
        for i in range(n_free):
            in_R[free_pos[i]] = True
    signs = np.zeros(m)
    for i in range(m):
        if not in_R[i]:
            v = x[S[i]]
            signs[i] = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
    return S, in_R, signs, kr


@njit(cache=True, nogil=True)
def _q_val_grad(XS, y, loss, lam, mu, dR, s, kr, b, u, zeta, g):
    """``Q(b)`` (returned) with ``u = X_S b``, ``zeta = f'(u)`` and ``g = grad Q(b)`` written."""
    n, m = XS.shape
    for i in range(n):
        acc = 0.0
        for j in range(m):
            acc += XS[i, j] * b[j]
        u[i] = acc
    F = loss_value_grad(loss, u, y, zeta)
    sb = 0.0
    bb = 0.0
    rb = 0.0
    for j in range(m):
        sb += s[j] * b[j]
        bb += b[j] * b[j]
        rb += dR[j] * b[j] * b[j]
    val = F - mu * bb + lam * (rb + (sb * sb / kr if kr else 0.0))
    for j in range(m):
        g[j] = 0.0
    for i in range(n):
        zi = zeta[i]
        for j in range(m):
            g[j] += XS[i, j] * zi
    for j in range(m):
        g[j] += -2.0 * mu * b[j] + 2.0 * lam * (dR[j] * b[j] + (s[j] * sb / kr if kr else 0.0))
    return val


@njit(cache=True, nogil=True)
def newton_candidate(D, y, loss, lam, mu, x, state, budget, max_steps):
    """Newton steps on the smooth piece ``Q`` around ``x``: ``(ok, candidate (p,))``.

    The Hessian ``X_S^T diag(f'') X_S + 2 lam' D_R - 2 mu I + (2 lam' / (k' - r)) s s^T`` (with
    a tiny ridge when the support outnumbers the samples) is factored by Cholesky; a damped
    step (Armijo, halving) is taken for the non-quadratic losses, the full step for least
    squares (one step is exact there: ``loss_kernels.newton_exact``). ``ok`` is False when the
    structure is degenerate or the system is not positive definite.
    """
    p = x.shape[0]
    out = np.zeros(p)
    S, in_R, s, kr = _structure(x, state, budget)
    m = S.shape[0]
    if m == 0:
        return False, out
    n = D.n
    XS = dense_columns(D, S)
    b = np.empty(m)
    dR = np.empty(m)
    for j in range(m):
        b[j] = x[S[j]]
        dR[j] = 1.0 if in_R[j] else 0.0
    u = np.empty(n)
    zeta = np.empty(n)
    g = np.empty(m)
    val = _q_val_grad(XS, y, loss, lam, mu, dR, s, kr, b, u, zeta, g)
    exact = newton_exact(loss)
    h = np.empty(n)
    W = np.empty((n, m))
    d = np.empty(m)
    nb = np.empty(m)
    nu = np.empty(n)
    nz = np.empty(n)
    ng = np.empty(m)
    for _ in range(max_steps):
        loss_hessian(loss, u, y, h)
        for i in range(n):
            r = math.sqrt(h[i])
            for j in range(m):
                W[i, j] = XS[i, j] * r
        H = np.dot(W.T, W)
        reg = 0.0
        if m > n:
            tr = 0.0
            for j in range(m):
                tr += H[j, j]
            reg = 1e-10 * max(tr / m, 1e-300)
        for j in range(m):
            H[j, j] += 2.0 * lam * dR[j] - 2.0 * mu + reg
        if kr:
            c = 2.0 * lam / kr
            for i in range(m):
                for j in range(m):
                    H[i, j] += c * s[i] * s[j]
        try:
            Lc = np.linalg.cholesky(H)  # LAPACK, without the GIL
        except Exception:  # noqa: BLE001 - not positive definite: no candidate
            return False, out
        cholesky_solve(Lc, m, g, -1.0, d)  # d = -H^{-1} g
        dec = 0.0
        for j in range(m):
            dec -= g[j] * d[j]
        if not np.isfinite(dec):
            return False, out
        step = 1.0
        accepted = False
        nval = 0.0
        for _ls in range(30):
            for j in range(m):
                nb[j] = b[j] + step * d[j]
            nval = _q_val_grad(XS, y, loss, lam, mu, dR, s, kr, nb, nu, nz, ng)
            if nval <= val - 1e-4 * step * dec or exact:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        b[:] = nb
        u[:] = nu
        g[:] = ng
        val = nval
        if exact or dec <= 1e-15 * max(1.0, abs(val)):
            break
    for j in range(m):
        out[S[j]] = b[j]
    return True, out


class Polisher:
    """Newton polishing of the FISTA iterate once its structure is stable.

    The FISTA kernel runs the schedule (when to try: see ``_fista._polish_due``) and returns
    ``ST_POLISH`` when a polish is due; :meth:`polish` then tries one. Every candidate is
    checked with the true objective and the valid bound over all columns; it replaces the
    iterate only if its objective is lower and raises the bound only through the running
    maximum.
    """

    every = 10

    def __init__(self, prob, state, budget, n_active: int | None = None):
        self.prob, self.state, self.budget = prob, state, budget
        self.n_polish = 0
        self.n_active = int(np.count_nonzero(state != OUT)) if n_active is None else n_active

    def _fits(self, x) -> bool:
        """A sparse design's polish forms two dense copies of the support's columns: allowed
        when they are smaller than the matrix itself."""
        prob = self.prob
        m = int(np.count_nonzero((x != 0.0) & (self.state != OUT)))
        return 16 * prob.n_samples * m <= prob.X.nbytes

    def arm(self, it) -> None:
        """Switch the kernel's polishing schedule on for the FISTA state ``it``."""
        sc = it.sc  # (one field of a one-element array each: cheaper than ``it.set``)
        sc["pol_every"] = self.every
        sc["pol_n"] = self.prob.n_samples
        sc["pol_active"] = self.n_active

    def polish(self, it, tol, cutoff, open_tol=None) -> int:
        """Try one polish of the FISTA state ``it`` (the kernel said one is due); returns the
        kernel status (1 converged, 2 cutoff) if it settled the node, else 0 (``open_tol``:
        the tolerance once ``P < cutoff``, as the kernel's; None for ``tol``)."""
        prob, state, budget = self.prob, self.state, self.budget
        if prob.sparse and not self._fits(it.x):
            cand = None  # the support's dense columns would cost more than the matrix
        else:
            cand = newton_polish(prob, it.x, state, budget)
        self.n_polish += 1
        if cand is None:
            it.set("pol_fail", it.get("pol_fail") + 1)
            return 0
        uc = xb(prob.design, cand)
        Pc = objective(prob, state, budget, cand, uc)
        lb, zeta = full_bound(prob, state, budget, cand, uc)
        newton = cand
        # one proximal-gradient step from the candidate repairs a slightly wrong structure
        c2, u2, P2 = prox_grad_step(fista_data(prob), state, budget, cand, it.get("L"))
        if P2 < Pc:
            cand, uc, Pc = c2, u2, float(P2)
        improved = False
        best, px = it.get("best"), it.get("px")
        if lb > best:
            improved = lb > best + 1e-3 * (px - best)
            best = lb
            it.set("best", lb)
            it.bound_point[:] = newton
            it.dual[:] = zeta
        if Pc < px:
            improved = True
            px = Pc
            it.x[:] = cand
            it.x_prev[:] = cand
            it.ux[:] = uc
            it.ux_prev[:] = uc
            it.set("px", Pc)
            it.set("t", 1.0)
        if not improved:
            it.set("pol_fail", it.get("pol_fail") + 1)
        if best >= cutoff:
            return ST_CUTOFF
        if open_tol is not None and px < cutoff:
            tol = open_tol
        if px - best <= tol * max(1.0, abs(px)):
            return ST_CONVERGED
        return 0
