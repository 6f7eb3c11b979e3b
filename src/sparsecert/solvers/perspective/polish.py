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

whose minimiser is found by a few Newton steps (one for least squares). The polished point is
only a *candidate*: :class:`Polisher` evaluates the true ``P`` and the valid bound ``LB`` there
(over all columns) and keeps it only if it helps, so a wrong structure can never produce a wrong
bound. The schedule (when to try, run inside the FISTA kernel) is a deterministic flop model,
so runs are reproducible.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from sparsecert.solvers.loss_kernels import loss_value_grad
from sparsecert.solvers.losses import SQUARED, loss_hessian_diag
from sparsecert.solvers.perspective._fista import (
    ST_CONVERGED,
    ST_CUTOFF,
    fista_data,
    prox_grad_step,
)
from sparsecert.solvers.perspective._gfun import FREE, IN, OUT
from sparsecert.solvers.perspective._linalg import xb
from sparsecert.solvers.perspective.evaluate import full_bound, objective

__all__ = ["structure", "newton_polish", "Polisher", "POLISH", "POLISH_MIN_COLUMNS"]

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
        order = np.argsort(-a)
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


def newton_polish(X, y, loss_id, lam, mu, x, state, budget, max_steps=8):
    """Minimise the smooth piece ``Q`` around ``x``; returns the candidate (p,) or None."""
    with _single_thread_blas():
        return _newton_polish(X, y, loss_id, lam, mu, x, state, budget, max_steps)


def _newton_polish(X, y, loss_id, lam, mu, x, state, budget, max_steps):
    st = structure(x, state, budget)
    if st is None:
        return None
    S, in_R, s, kr = st
    n = X.shape[0]
    m = S.size
    # with m > n the piece may be flat on T: a tiny ridge keeps the Newton system definite
    # (the candidate is only a candidate, checked by the caller)
    reg = 0.0
    XS = np.ascontiguousarray(X[:, S])
    b = x[S].copy()
    dR = in_R.astype(float)

    def q_val_grad(bb):
        u = XS @ bb
        zeta = np.empty(n)
        F = loss_value_grad(loss_id, u, y, zeta)
        sb = s @ bb
        val = F - mu * bb @ bb + lam * (dR @ (bb * bb) + (sb * sb / kr if kr else 0.0))
        g = XS.T @ zeta - 2.0 * mu * bb + 2.0 * lam * (dR * bb + (s * sb / kr if kr else 0.0))
        return val, g, u

    val, g, u = q_val_grad(b)
    for _ in range(max_steps):
        h = loss_hessian_diag(loss_id, u, y)
        H = (XS.T * h) @ XS
        if m > n:
            reg = 1e-10 * max(float(np.trace(H)) / m, 1e-300)
        H[np.diag_indices_from(H)] += 2.0 * lam * dR - 2.0 * mu + reg
        if kr:
            H += (2.0 * lam / kr) * np.outer(s, s)
        try:
            c = scipy.linalg.cho_factor(H, check_finite=False)
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            return None
        d = -scipy.linalg.cho_solve(c, g, check_finite=False)
        dec = -(g @ d)
        if not np.isfinite(dec):
            return None
        step = 1.0
        accepted = False
        for _ls in range(30):
            nb = b + step * d
            nval, ng, nu = q_val_grad(nb)
            if nval <= val - 1e-4 * step * dec or loss_id == SQUARED:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        b, val, g, u = nb, nval, ng, nu
        if loss_id == SQUARED or dec <= 1e-15 * max(1.0, abs(val)):
            break
    out = np.zeros(x.shape[0])
    out[S] = b
    return out


class Polisher:
    """Newton polishing of the FISTA iterate once its structure is stable.

    The FISTA kernel runs the schedule (when to try: see ``_fista._polish_due``) and returns
    ``ST_POLISH`` when a polish is due; :meth:`polish` then tries one. Every candidate is
    checked with the true objective and the valid bound over all columns; it replaces the
    iterate only if its objective is lower and raises the bound only through the running
    maximum.
    """

    every = 10

    def __init__(self, prob, state, budget):
        self.prob, self.state, self.budget = prob, state, budget
        self.n_polish = 0
        self.n_active = int(np.sum(state != OUT))

    def arm(self, it) -> None:
        """Switch the kernel's polishing schedule on for the FISTA state ``it``."""
        it.set("pol_every", self.every)
        it.set("pol_n", self.prob.n_samples)
        it.set("pol_active", self.n_active)

    def polish(self, it, tol, cutoff) -> int:
        """Try one polish of the FISTA state ``it`` (the kernel said one is due); returns the
        kernel status (1 converged, 2 cutoff) if it settled the node, else 0."""
        prob, state, budget = self.prob, self.state, self.budget
        cand = newton_polish(prob.X, prob.y, prob.loss_id, prob.lam_eff, prob.mu, it.x, state,
                             budget)
        self.n_polish += 1
        if cand is None:
            it.set("pol_fail", it.get("pol_fail") + 1)
            return 0
        uc = xb(prob.XT, cand)
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
        if px - best <= tol * max(1.0, abs(px)):
            return ST_CONVERGED
        return 0
