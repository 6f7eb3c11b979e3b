"""Single-threaded matrix-vector kernels (deterministic, robust on a loaded machine).

The relaxation reads its design through one record, :class:`Design`: a dense matrix (``X`` and
its C-contiguous transpose ``XT``) or a sparse one in compressed sparse column form
(``indptr``, ``indices``, ``values``; see :mod:`sparsecert.sparse`) with an implicit centre
``m`` (the design is ``X - 1 m^T``, never formed). The kernels :func:`matvec` (``X b``) and
:func:`rmatvec` (``X^T z``) take either; so do every kernel that reads the design, and the
helpers below (:func:`xb`, :func:`xtz`, :func:`sub_design`, :func:`dense_columns`,
:func:`design_norm_sq`).

The dense products are written as row ``axpy`` sweeps over a C-contiguous matrix (vectorised by
LLVM without fastmath, since no reduction is reordered) and skip zero weights:

* ``xt_dot(X, z)``  = ``X^T z`` with ``X`` of shape (n, p);
* ``x_dot(XT, b)``  = ``X b``  with ``XT = X^T`` stored C-contiguous, shape (p, n), so that the cost
  is proportional to the number of non-zeros of ``b`` (sparse iterates are cheap).

The sparse ones cost the entries they read: ``X^T z`` a dot product per column over its
entries (``O(nnz)``), ``X b`` a scatter of the columns with ``b_j != 0`` (``O(nnz of those
columns)``), plus ``O(n + p)`` for the centre: ``(X - 1 m^T)^T z = X^T z - m (1^T z)`` and
``(X - 1 m^T) b = X b - (m^T b) 1``. One compressed-column copy serves both products, so a
sparse design costs its non-zeros once.

Multi-threaded BLAS was measured to stall badly when the cores are shared (a 1000 x 1000 gemv
went from 0.3 ms to 12 ms under load), and these kernels release the GIL so that branch and
bound can evaluate nodes in threads.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["Design", "dense_design", "sparse_design", "sub_design", "dense_columns",
           "design_sq_norms", "matvec", "rmatvec", "xb", "xtz", "x_dot", "xt_dot",
           "copy_into", "c_transpose", "lanczos_norm_sq", "spectral_norm_sq",
           "design_norm_sq", "csc_matvec", "csc_rmatvec", "rmatvec_sq"]


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
    """``out = X b`` given ``XT = X^T`` (C-contiguous, shape (p, n)): :func:`xt_dot` of ``XT``
    (``(X^T)^T b``, the same loop over the rows of ``XT``)."""
    xt_dot(XT, b, out)


class Design(NamedTuple):
    """The design matrix as the compiled kernels read it: dense or sparse (one record type, so
    that every kernel is compiled once for both).

    Dense: ``X`` (n, p) and ``XT = X^T`` (p, n), both C-contiguous, already centred when the
    model has an intercept; the sparse fields are empty. Sparse: ``indptr`` (int64, p + 1),
    ``indices`` (int32 row indices) and ``values`` (float64) of the columns, and ``centre``,
    the implicit centre ``m`` (empty: none); ``X`` and ``XT`` are empty (0, 0) arrays.
    """

    X: np.ndarray
    XT: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    centre: np.ndarray
    n: int
    p: int
    sparse: bool


_EMPTY2 = np.empty((0, 0))


def dense_design(X: np.ndarray, XT: np.ndarray | None = None) -> Design:
    """The record of a dense design (``X`` C-contiguous float64; ``XT`` its C-contiguous
    transpose, made here if not given)."""
    XT = c_transpose(X) if XT is None else XT
    return Design(X, XT, np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int32),
                  np.empty(0), np.empty(0), int(X.shape[0]), int(X.shape[1]), False)


def sparse_design(sd, centre: np.ndarray | None = None) -> Design:
    """The record of a sparse design (``sd``: a :class:`sparsecert.sparse.SparseDesign`, its
    arrays used as they are) centred implicitly by ``centre`` (None: not centred)."""
    c = np.empty(0) if centre is None else np.ascontiguousarray(centre, dtype=np.float64)
    return Design(_EMPTY2, _EMPTY2, np.ascontiguousarray(sd.indptr, dtype=np.int64),
                  np.ascontiguousarray(sd.indices, dtype=np.int32),
                  np.ascontiguousarray(sd.data, dtype=np.float64), c, int(sd.shape[0]),
                  int(sd.shape[1]), True)


def sub_design(D: Design, cols: np.ndarray, XT: np.ndarray | None = None) -> Design:
    """The design of the columns ``cols`` (sorted indices) of ``D``: a copy of those columns
    (dense: ``X[:, cols]`` and its transpose, or ``XT`` if the caller has it; sparse: their
    entries, ``O(their nnz)``)."""
    cols = np.asarray(cols, dtype=np.int64)
    if not D.sparse:
        XA = np.ascontiguousarray(D.X[:, cols])
        XAT = np.ascontiguousarray(D.XT[cols]) if XT is None else XT
        return dense_design(XA, XAT)
    counts = D.indptr[cols + 1] - D.indptr[cols]
    indptr = np.zeros(cols.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    values = np.empty(int(indptr[-1]))
    _gather_columns(D.indptr, D.indices, D.values, cols, indptr, indices, values)
    centre = D.centre[cols] if D.centre.shape[0] else np.empty(0)
    return Design(_EMPTY2, _EMPTY2, indptr, indices, values, np.ascontiguousarray(centre),
                  D.n, int(cols.size), True)


@njit(cache=True, nogil=True)
def _gather_columns(indptr, indices, values, cols, out_ptr, out_idx, out_val):
    for t in range(cols.shape[0]):
        j = cols[t]
        a = indptr[j]
        o = out_ptr[t]
        for e in range(indptr[j + 1] - a):
            out_idx[o + e] = indices[a + e]
            out_val[o + e] = values[a + e]


@njit(cache=True, nogil=True)
def dense_columns(D, cols):
    """The columns ``cols`` of the design (centred, as the kernels see it) as a dense
    C-contiguous (n, len(cols)) array."""
    m = cols.shape[0]
    out = np.zeros((D.n, m))
    if D.sparse:
        for t in range(m):
            j = cols[t]
            for e in range(D.indptr[j], D.indptr[j + 1]):
                out[D.indices[e], t] = D.values[e]
        if D.centre.shape[0] > 0:
            for t in range(m):
                c = D.centre[cols[t]]
                if c != 0.0:
                    for i in range(D.n):
                        out[i, t] -= c
    else:
        for i in range(D.n):
            for t in range(m):
                out[i, t] = D.X[i, cols[t]]
    return out


@njit(cache=True, nogil=True)
def csc_rmatvec(indptr, indices, values, centre, z, out):
    """``out = (X - 1 m^T)^T z`` for a CSC ``X`` (``centre`` empty: ``m = 0``)."""
    p = indptr.shape[0] - 1
    for j in range(p):
        acc = 0.0
        for e in range(indptr[j], indptr[j + 1]):
            acc += values[e] * z[indices[e]]
        out[j] = acc
    if centre.shape[0] > 0:
        sz = 0.0
        for i in range(z.shape[0]):
            sz += z[i]
        if sz != 0.0:
            for j in range(p):
                out[j] -= centre[j] * sz


@njit(cache=True, nogil=True)
def csc_matvec(indptr, indices, values, centre, b, out):
    """``out = (X - 1 m^T) b`` for a CSC ``X`` (``centre`` empty: ``m = 0``): a scatter of the
    columns with ``b_j != 0``."""
    n = out.shape[0]
    p = indptr.shape[0] - 1
    for i in range(n):
        out[i] = 0.0
    mb = 0.0
    centred = centre.shape[0] > 0
    for j in range(p):
        bj = b[j]
        if bj != 0.0:
            for e in range(indptr[j], indptr[j + 1]):
                out[indices[e]] += values[e] * bj
            if centred:
                mb += centre[j] * bj
    if mb != 0.0:
        for i in range(n):
            out[i] -= mb


@njit(cache=True, nogil=True)
def rmatvec(D, z, out):
    """``out = X^T z`` for a :class:`Design` (centred as it says)."""
    if D.sparse:
        csc_rmatvec(D.indptr, D.indices, D.values, D.centre, z, out)
    else:
        xt_dot(D.X, z, out)


@njit(cache=True, nogil=True)
def matvec(D, b, out):
    """``out = X b`` for a :class:`Design` (centred as it says)."""
    if D.sparse:
        csc_matvec(D.indptr, D.indices, D.values, D.centre, b, out)
    else:
        x_dot(D.XT, b, out)


def xb(D: Design, b: np.ndarray) -> np.ndarray:
    """``X b`` as a new array."""
    out = np.empty(D.n)
    matvec(D, np.ascontiguousarray(b, dtype=np.float64), out)
    return out


def xtz(D: Design, z: np.ndarray) -> np.ndarray:
    """``X^T z`` as a new array."""
    out = np.empty(D.p)
    rmatvec(D, np.ascontiguousarray(z, dtype=np.float64), out)
    return out


def design_sq_norms(D: Design) -> np.ndarray:
    """The squared norms of the design's (centred) columns."""
    if not D.sparse:
        return np.einsum("ij,ij->i", D.XT, D.XT)
    return _csc_sq_norms(D.indptr, D.values, D.centre, D.n)


def rmatvec_sq(D: Design, z: np.ndarray) -> np.ndarray:
    """``((X - 1 m^T) o (X - 1 m^T))^T z``: per column, ``sum_i (x_ij - m_j)^2 z_i`` (the
    squared entries against ``z``)."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    if not D.sparse:
        return (D.X * D.X).T @ z
    out = np.empty(D.p)
    _csc_rmatvec_sq(D.indptr, D.indices, D.values, D.centre, z, out)
    return out


@njit(cache=True, nogil=True)
def _csc_rmatvec_sq(indptr, indices, values, centre, z, out):
    p = indptr.shape[0] - 1
    centred = centre.shape[0] > 0
    sz = 0.0
    if centred:
        for i in range(z.shape[0]):
            sz += z[i]
    for j in range(p):
        sq = 0.0
        lin = 0.0
        for e in range(indptr[j], indptr[j + 1]):
            v = values[e] * z[indices[e]]
            sq += values[e] * v
            lin += v
        if centred:  # sum (x - m)^2 z = sum x^2 z - 2 m sum x z + m^2 sum z
            c = centre[j]
            sq += -2.0 * c * lin + c * c * sz
        out[j] = sq


@njit(cache=True, nogil=True)
def _csc_sq_norms(indptr, values, centre, n):
    p = indptr.shape[0] - 1
    out = np.empty(p)
    for j in range(p):
        ss = 0.0
        s = 0.0
        for e in range(indptr[j], indptr[j + 1]):
            v = values[e]
            ss += v * v
            s += v
        if centre.shape[0] > 0:  # ||x - m 1||^2 = ||x||^2 - 2 m s + n m^2
            c = centre[j]
            ss = max(ss - 2.0 * c * s + n * c * c, 0.0)
        out[j] = ss
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


#: Lanczos steps at most for a working set's or a node's design (it stops once converged)
_DESIGN_STEPS = 48


def design_norm_sq(D: Design) -> float:
    """``||X||_2^2`` of a design, dense or sparse (:func:`lanczos_norm_sq`, compiled: a
    working-set solve calls it a few times a node)."""
    return lanczos_norm_sq(D, n_steps=_DESIGN_STEPS)


def lanczos_norm_sq(X, XT=None, n_steps: int = 24, seed: int = 0) -> float:
    """``||X||_2^2`` by at most ``n_steps`` Lanczos steps (full re-orthogonalisation) on
    ``X^T X`` or ``X X^T``, whichever is smaller; ``X`` a dense matrix (with ``XT`` its
    C-contiguous transpose) or a :class:`Design`.

    The Ritz value converges from below; it is exact (to rounding) once the steps reach the
    smaller dimension, and typically accurate to ~1e-6 after 20 steps. The solvers multiply it
    by a safety factor and backtrack anyway. Compiled and free of the GIL (the working-set
    solver calls it a few times a node); the start vector is a fixed function of ``seed``, so
    the value is the same on every run.
    """
    D = X if isinstance(X, Design) else dense_design(X, XT)
    if D.n == 0 or D.p == 0:
        return 0.0
    return float(_lanczos_top(D, max(1, int(n_steps)), int(seed)))


@njit(cache=True, nogil=True)
def _gram_apply(D, v, tmp, out, in_rows):
    """``out = X X^T v`` (``in_rows``: vectors of length n) or ``X^T X v`` (length p)."""
    if in_rows:
        rmatvec(D, v, tmp)
        matvec(D, tmp, out)
    else:
        matvec(D, v, tmp)
        rmatvec(D, tmp, out)


@njit(cache=True, nogil=True)
def _lanczos_top(D, n_steps, seed):
    """The largest Ritz value of at most ``n_steps`` Lanczos steps on the smaller Gram matrix
    of ``D`` (``||X||_2^2`` from below)."""
    n, p = D.n, D.p
    in_rows = n < p
    m = n if in_rows else p
    steps_max = min(n_steps, m)
    V = np.zeros((steps_max + 1, m))
    alpha = np.zeros(steps_max)
    beta = np.zeros(steps_max)
    state = np.uint64(seed) * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
    nrm = 0.0
    for i in range(m):  # a fixed pseudo-random start (64-bit LCG), uniform in [-1, 1)
        state = state * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        V[0, i] = (state >> np.uint64(11)) * (2.0 / 9007199254740992.0) - 1.0
        nrm += V[0, i] * V[0, i]
    nrm = np.sqrt(nrm)
    for i in range(m):
        V[0, i] /= nrm
    tmp = np.empty(p if in_rows else n)
    w = np.empty(m)
    steps = 0
    top = -np.inf
    for j in range(steps_max):
        if j >= 12 and j % 4 == 0:  # converged to ~1e-7 (the callers add 2%): stop
            prev, top = top, _ritz_top(alpha, beta, j)
            if top - prev <= 1e-7 * abs(top):
                break
        _gram_apply(D, V[j], tmp, w, in_rows)
        a = 0.0
        for i in range(m):
            a += V[j, i] * w[i]
        alpha[j] = a
        for i in range(m):
            w[i] -= a * V[j, i]
        if j > 0:
            for i in range(m):
                w[i] -= beta[j - 1] * V[j - 1, i]
        for l in range(j + 1):  # re-orthogonalise against every earlier vector
            c = 0.0
            for i in range(m):
                c += V[l, i] * w[i]
            for i in range(m):
                w[i] -= c * V[l, i]
        steps = j + 1
        b = 0.0
        for i in range(m):
            b += w[i] * w[i]
        b = np.sqrt(b)
        if b <= 1e-12 * max(abs(a), 1e-300):
            break
        beta[j] = b
        for i in range(m):
            V[j + 1, i] = w[i] / b
    return _ritz_top(alpha, beta, steps)


@njit(cache=True, nogil=True)
def _ritz_top(alpha, beta, steps):
    """The largest eigenvalue of the tridiagonal matrix of the first ``steps`` Lanczos
    coefficients."""
    T = np.zeros((steps, steps))
    for j in range(steps):
        T[j, j] = alpha[j]
        if j + 1 < steps:
            T[j, j + 1] = beta[j]
            T[j + 1, j] = beta[j]
    return np.linalg.eigvalsh(T)[steps - 1]


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
