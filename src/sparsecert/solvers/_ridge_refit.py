"""Exact least-squares ridge refits on a small support, in one GIL-free kernel.

Branch and bound refits thousands of supports (rounding of every node's relaxed solution, swap
local search); in threads, a refit through numpy/scipy holds the GIL for most of its ~0.5 ms of
call overhead and serialises the workers. This kernel does the whole refit (Gram matrix of the
support, Cholesky factorisation, two triangular solves, the objective) without the GIL:

    b = argmin ||y - X_S b||^2 + lambda2 ||b||^2 = (X_S^T X_S + lambda2 I)^{-1} X_S^T y.

The matrix is positive definite for ``lambda2 > 0``, so the factorisation exists in exact
arithmetic; a non-positive pivot (only possible through rounding on a hopelessly scaled
problem) is reported and the caller falls back to LAPACK.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ridge_refit", "ridge_objective"]


@njit(cache=True, nogil=True)
def ridge_objective(XT, y, idx, lambda2, coef):
    """``||y - X_S coef||^2 + lambda2 ||coef||^2`` over the columns ``idx`` (rows of ``XT``)."""
    r = y.copy()
    n = y.size
    for a in range(idx.size):
        ra = XT[idx[a]]
        ca = coef[a]
        for i in range(n):
            r[i] -= ca * ra[i]
    val = 0.0
    for i in range(n):
        val += r[i] * r[i]
    pen = 0.0
    for a in range(idx.size):
        pen += coef[a] * coef[a]
    return val + lambda2 * pen


@njit(cache=True, nogil=True, inline="always")
def cholesky_solve(L, m, rhs, sign, out):
    """``out[:m] = (L L^T)^{-1} (sign rhs[:m])`` for the lower triangle ``L[:m, :m]`` of a
    Cholesky factor (``sign`` is 1.0 or -1.0, an exact scaling): the two triangular solves,
    ``L w = sign rhs`` then ``L^T out = w``, written into ``out`` (which may be ``rhs``: each
    ``rhs[i]`` is read before ``out[i]`` is written). The ridge refit, the Newton polish and
    the z-space kernel solve with it."""
    for i in range(m):
        v = sign * rhs[i]
        for t in range(i):
            v -= L[i, t] * out[t]
        out[i] = v / L[i, i]
    for i in range(m - 1, -1, -1):
        v = out[i]
        for t in range(i + 1, m):
            v -= L[t, i] * out[t]
        out[i] = v / L[i, i]


@njit(cache=True, nogil=True)
def ridge_refit(XT, y, idx, lambda2, coef):
    """Ridge refit on the columns ``idx`` (``XT = X^T`` C-contiguous, shape (p, n)).

    Writes the coefficients into ``coef`` (length ``len(idx)``) and returns
    ``(objective, ok)`` with ``objective = ||y - X_S coef||^2 + lambda2 ||coef||^2``;
    ``ok`` is False when the Cholesky factorisation met a non-positive pivot.
    """
    s = idx.size
    n = y.size
    A = np.empty((s, s))
    rhs = np.empty(s)
    for a in range(s):
        ra = XT[idx[a]]
        acc = 0.0
        for i in range(n):
            acc += ra[i] * y[i]
        rhs[a] = acc
        for b in range(a + 1):
            rb = XT[idx[b]]
            acc = 0.0
            for i in range(n):
                acc += ra[i] * rb[i]
            A[a, b] = acc
        A[a, a] += lambda2
    # Cholesky A = L L^T in the lower triangle
    for j in range(s):
        d = A[j, j]
        for t in range(j):
            d -= A[j, t] * A[j, t]
        if not d > 0.0:
            return np.inf, False
        d = np.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, s):
            v = A[i, j]
            for t in range(j):
                v -= A[i, t] * A[j, t]
            A[i, j] = v / d
    cholesky_solve(A, s, rhs, 1.0, coef)
    return ridge_objective(XT, y, idx, lambda2, coef), True
