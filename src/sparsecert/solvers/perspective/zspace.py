r"""z-space: the relaxation in the space of the indicators z (least squares, p >> n).

Applies to the squared loss without a box, an eigen shift or an intercept carried as a variable
(a centred intercept is fine), with free features; ``solve_node(solver="auto")`` uses it when
the active columns are at least ``ZSPACE_RATIO`` times the samples and ``n <= ZSPACE_MAX_N``,
or ``n <= ZSPACE_SMALL_N`` (an iteration costs an n x n factorisation), ``solver="zspace"``
forces it. There FISTA on b is
slow because its step is ``1 / ||X||^2`` (riboflavin: ``||X||^2 = 1.8e7``), while the
conditioning of X enters z-space only through n x n solves.

For least squares without a box the inner minimisation over b is a weighted ridge with a
closed form in the n x n "kernel" space:

    phi(z) = min_b ||y - X b||^2 + lambda2 sum_j b_j^2 / z_j = y^T alpha,
    alpha  = (I + X diag(z) X^T / lambda2)^{-1} y,   b(z) = diag(z) X^T alpha / lambda2,

and the relaxation is ``min { phi(z) : z in Z_node }`` (Z_node: z = 1 on S1, 0 on S0, the free
entries in [0, 1] with sum <= k - |S1|). ``phi`` is convex and smooth, with gradient
``-(X_j^T alpha)^2 / lambda2``: accelerated projected gradient (FISTA with backtracking and
function-value restart) on ``z``, with the exact projection of ``_zspace.project_capped``.

The bound at any z is the Fenchel dual at ``zeta = -2 alpha`` (which is ``f'(X b(z))``):

    D(-2 alpha) = 2 y^T alpha - ||alpha||^2 - 2 lambda2 g*_node(X^T alpha / lambda2),

valid for every alpha (it is exactly phi(z) + min_{z' in Z} grad phi(z)^T (z' - z), the
Frank-Wolfe gap bound). ``b(z)`` is primal feasible with ``P(b(z)) <= phi(z)``.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg

from sparsecert.solvers.losses import SQUARED
from sparsecert.solvers.perspective._gfun import FREE, IN, OUT, gstar_node, relaxed_z
from sparsecert.solvers.perspective._zspace import project_capped
from sparsecert.solvers.perspective.evaluate import finish

__all__ = ["ZSpace", "solve_zspace", "applies"]

_potrf, _potrs = scipy.linalg.lapack.dpotrf, scipy.linalg.lapack.dpotrs


def applies(prob, n_free: int) -> bool:
    """Can the node be solved in z-space (squared loss, no box, no shift, no carried
    intercept, some free feature)?"""
    return (prob.loss_id == SQUARED and prob.M == np.inf and prob.mu == 0.0 and not prob.icpt
            and n_free > 0)


class ZSpace:
    """phi, its gradient and the bound for one node (squared loss, M = inf, mu = 0)."""

    def __init__(self, prob, state, budget):
        self.X, self.y, self.lam = prob.X, prob.y, prob.lambda2
        self.state, self.budget = state, budget
        self.free = np.flatnonzero(state == FREE)
        self.ins = np.flatnonzero(state == IN)
        self.n = self.X.shape[0]
        # X^T alpha is needed on the free and fixed-in columns only (the bound and b(z) ignore
        # fixed-out ones): after reduced-cost fixing that is a small part of X
        act = np.flatnonzero(state != OUT)
        self.act = act
        self.XA = self.X if act.size == self.X.shape[1] else np.ascontiguousarray(self.X[:, act])

    def full_z(self, zf: np.ndarray) -> np.ndarray:
        z = np.zeros(self.X.shape[1])
        z[self.ins] = 1.0
        z[self.free] = zf
        return z

    def project(self, vf: np.ndarray) -> np.ndarray:
        return project_capped(np.ascontiguousarray(vf, dtype=np.float64), float(self.budget))

    def evaluate(self, zf: np.ndarray):
        """``(phi, grad_free, alpha, c = X^T alpha)`` (``c`` is 0 on the fixed-out columns).

        Raises :class:`ZSpaceFailed` when the Cholesky factorisation of ``K`` fails in floating
        point (``K = I + PSD`` is positive definite, but with columns many orders of magnitude
        above one the identity is lost to rounding).
        """
        z = self.full_z(zf)
        idx = np.flatnonzero(z > 0.0)
        XS = self.X[:, idx]
        K = (XS * (z[idx] / self.lam)) @ XS.T
        K.flat[::self.n + 1] += 1.0
        # LAPACK directly: the node's cost is dominated by Python overhead, not by the n x n
        # factorisation (scipy's cho_factor / cho_solve wrappers cost more than potrf itself)
        cf, info = _potrf(K, lower=False, clean=False, overwrite_a=True)
        if info != 0:
            raise ZSpaceFailed("the n x n system of the z-space solve is not numerically "
                               "positive definite")
        alpha, info = _potrs(cf, self.y, lower=False)
        if info != 0:
            raise ZSpaceFailed("the n x n solve of the z-space step failed")
        if self.XA is self.X:
            c = self.X.T @ alpha
        else:
            c = np.zeros(self.X.shape[1])
            c[self.act] = self.XA.T @ alpha
        phi = float(self.y @ alpha)
        grad = -(c[self.free] ** 2) / self.lam
        return phi, grad, alpha, c

    def bound(self, alpha: np.ndarray, c: np.ndarray) -> float:
        """``D(-2 alpha)`` (the Fenchel dual at zeta = -2 alpha)."""
        a = np.where(self.state != 0, c / self.lam, 0.0)
        return float(2.0 * (self.y @ alpha) - alpha @ alpha
                     - 2.0 * self.lam * gstar_node(a, self.state, self.budget, np.inf))

    def coef(self, zf: np.ndarray, c: np.ndarray) -> np.ndarray:
        return self.full_z(zf) * c / self.lam


class ZSpaceFailed(ArithmeticError):
    """The z-space solve lost positive definiteness to rounding; the caller uses FISTA."""


def solve_zspace(prob, state, budget, x0, rel_tol, max_iter, cut, deadline, t0):
    """Accelerated projected gradient on z from ``x0``'s relaxed indicators (or, from zero, the
    ``budget`` free columns most correlated with y); the bound is ``D(-2 alpha)``."""
    zs = ZSpace(prob, state, budget)
    free = zs.free
    if np.any(x0 != 0.0):
        zf = relaxed_z(x0, state, budget)[free]
    else:  # the budget free columns most correlated with y
        c0 = np.abs(prob.X[:, free].T @ prob.y)
        zf = np.zeros(free.size)
        zf[np.argsort(-c0)[:budget]] = 1.0
    zf = zs.project(zf)
    ev = zs.evaluate(zf)
    f = ev[0]
    zp = zf.copy()
    t, L = 1.0, 1.0
    best, bp, dual = -np.inf, None, None
    n_rest = 0
    status = "max_iter"
    it = 0
    c_last = ev[3]
    while it < max_iter:
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        yf = zs.project(zf + ((t - 1.0) / tn) * (zf - zp))
        fy, gy, ay, cy = zs.evaluate(yf)
        lb = zs.bound(ay, cy)
        if lb > best:
            best, bp, dual = lb, zs.coef(yf, cy), -2.0 * ay
        it += 1
        if best >= cut:
            status = "cutoff"
            break
        while True:
            zn = zs.project(yf - gy / L)
            fn, gn, an, cn = zs.evaluate(zn)
            d = zn - yf
            if fn <= fy + gy @ d + 0.5 * L * (d @ d) + 1e-12 * max(1.0, abs(fy)) or L > 1e300:
                break
            L *= 2.0
        if fn > f:
            t = 1.0
            n_rest += 1
            zp = zn.copy()
        else:
            zp = zf
            t = tn
        zf, f, c_last = zn, fn, cn
        L *= 0.9
        if f - best <= rel_tol * max(1.0, abs(f)):
            status = "converged"
            break
        if deadline is not None and time.perf_counter() >= deadline:
            status = "time_limit"
            break
    coef = zs.coef(zf, c_last)
    return finish(prob, state, budget, coef, best, bp, dual, it, n_rest, status, t0, rel_tol,
                  cut)
