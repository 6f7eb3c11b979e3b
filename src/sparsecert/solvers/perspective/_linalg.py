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

from numba import njit


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
