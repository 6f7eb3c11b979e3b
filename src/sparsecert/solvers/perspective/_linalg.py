"""Single-threaded matrix-vector kernels (deterministic, robust on a loaded machine).

Both are written as row ``axpy`` sweeps over a C-contiguous matrix (vectorised by LLVM without
fastmath, since no reduction is reordered) and skip zero weights:

* ``xt_dot(X, z)``  = ``X^T z`` with ``X`` of shape (n, p);
* ``x_dot(XT, b)``  = ``X b``  with ``XT = X^T`` stored C-contiguous, shape (p, n), so that the cost
  is proportional to the number of non-zeros of ``b`` (sparse iterates are cheap).

Multi-threaded BLAS was measured to stall badly when the cores are shared (a 1000 x 1000 gemv
went from 0.3 ms to 12 ms under load), and these kernels release the GIL so that branch and
bound can evaluate nodes in threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def copy_into(dst, src):
    """``dst[:] = src`` as a loop (numba's slice assignment drags in shape-error formatting)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, nogil=True)
def xt_dot(X, z, out):
    """``out = X^T z`` (``X`` C-contiguous, shape (n, p))."""
    n, p = X.shape
    for j in range(p):
        out[j] = 0.0
    for i in range(n):
        zi = z[i]
        if zi != 0.0:
            row = X[i]
            for j in range(p):
                out[j] += zi * row[j]


@njit(cache=True, nogil=True)
def x_dot(XT, b, out):
    """``out = X b`` given ``XT = X^T`` (C-contiguous, shape (p, n))."""
    p, n = XT.shape
    for i in range(n):
        out[i] = 0.0
    for j in range(p):
        bj = b[j]
        if bj != 0.0:
            row = XT[j]
            for i in range(n):
                out[i] += bj * row[i]


def xb(XT: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``X b`` as a new array (``XT = X^T`` C-contiguous)."""
    out = np.empty(XT.shape[1])
    x_dot(XT, b, out)
    return out


def xtz(X: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``X^T z`` as a new array (``X`` C-contiguous)."""
    out = np.empty(X.shape[1])
    xt_dot(X, z, out)
    return out


@njit(cache=True, nogil=True)
def transpose(X):
    """C-contiguous ``X.T`` by 64 x 64 blocks (much faster than numpy's strided copy)."""
    n, p = X.shape
    out = np.empty((p, n))
    B = 64
    for i0 in range(0, n, B):
        i1 = min(i0 + B, n)
        for j0 in range(0, p, B):
            j1 = min(j0 + B, p)
            for i in range(i0, i1):
                for j in range(j0, j1):
                    out[j, i] = X[i, j]
    return out


#: below this many entries :func:`c_transpose` uses numpy's copy (no kernel to compile)
SMALL_TRANSPOSE = 1 << 16


def c_transpose(X: np.ndarray) -> np.ndarray:
    """C-contiguous ``X.T``: numpy's copy for small ``X``, the blocked kernel above."""
    if X.size <= SMALL_TRANSPOSE:
        return np.ascontiguousarray(X.T)
    return transpose(X)


def lanczos_norm_sq(X: np.ndarray, XT: np.ndarray, n_steps: int = 24, seed: int = 0) -> float:
    """``||X||_2^2`` by ``n_steps`` Lanczos steps on ``X^T X`` (with full re-orthogonalisation).

    The Ritz value converges from below and is typically accurate to ~1e-6 after 20 steps; the
    solvers multiply it by a safety factor and backtrack anyway.
    """
    n, p = X.shape
    m = min(n_steps, p)
    rng = np.random.default_rng(seed)
    V = np.zeros((m + 1, p))
    alpha = np.zeros(m)
    beta = np.zeros(m)
    v = rng.standard_normal(p)
    V[0] = v / np.linalg.norm(v)
    u = np.empty(n)
    w = np.empty(p)
    steps = 0
    for j in range(m):
        x_dot(XT, V[j], u)
        xt_dot(X, u, w)
        alpha[j] = V[j] @ w
        w -= alpha[j] * V[j]
        if j > 0:
            w -= beta[j - 1] * V[j - 1]
        w -= V[: j + 1].T @ (V[: j + 1] @ w)  # re-orthogonalise
        steps = j + 1
        b = float(np.linalg.norm(w))
        if b <= 1e-12 * max(abs(alpha[j]), 1e-300):
            break
        beta[j] = b
        V[j + 1] = w / b
    T = np.diag(alpha[:steps]) + np.diag(beta[: steps - 1], 1) + np.diag(beta[: steps - 1], -1)
    return float(np.linalg.eigvalsh(T)[-1])


def spectral_norm_sq(X: np.ndarray, n_iter: int = 300, tol: float = 1e-8,
                     seed: int = 0, XT: np.ndarray | None = None) -> float:
    """``||X||_2^2``: exact SVD for small matrices, else Lanczos (``scipy.sparse.linalg.eigsh``) on
    ``X^T X`` or ``X X^T`` (the smaller), with power iteration as a fallback.

    Lanczos estimates converge from below; callers that need an upper bound multiply by a small
    safety factor (the solvers also backtrack, so an underestimate only costs extra iterations).
    ``XT`` (a C-contiguous ``X.T``), when given, enables the single-threaded mat-vec kernels.
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    if min(n, p) <= 64:
        return float(np.linalg.norm(X, 2) ** 2)
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    m = min(n, p)
    if XT is not None and X.flags.c_contiguous and XT.flags.c_contiguous:
        def mv(v):
            v = np.ascontiguousarray(v, dtype=np.float64).ravel()
            u = np.empty(n)
            x_dot(XT, v, u)
            w = np.empty(p)
            xt_dot(X, u, w)
            return w

        op = LinearOperator((p, p), matvec=mv, dtype=np.float64)
        m = p
    elif p <= n:
        op = LinearOperator((p, p), matvec=lambda v: X.T @ (X @ v), dtype=np.float64)
    else:
        op = LinearOperator((n, n), matvec=lambda v: X @ (X.T @ v), dtype=np.float64)
    rng = np.random.default_rng(seed)
    try:
        val = eigsh(op, k=1, which="LA", tol=tol, maxiter=n_iter * 10,
                    v0=rng.standard_normal(m), return_eigenvectors=False)
        return float(val[0])
    except ArpackNoConvergence:  # pragma: no cover - fallback
        pass
    v = rng.standard_normal(p)
    v /= np.linalg.norm(v)
    lam = 0.0
    for _ in range(n_iter):
        w = X.T @ (X @ v)
        lam = float(np.linalg.norm(w))
        if lam == 0.0:
            return 0.0
        v = w / lam
    return lam
