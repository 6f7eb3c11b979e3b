"""The eigenvalue shift's proof on the solver side: ``X^T P X - mu I`` positive definite.

The solver chooses its shift ``mu`` (:func:`sparsecert.solvers.perspective.problem.safe_eig_shift`)
and keeps one only if this test, the one the standalone verifier runs (its own copy, section 5 of
``docs/certificate-format.md``), passes with room to spare. The directed rounding is the
producer's (:mod:`sparsecert.proof.rounding`); the rest of the proof producer lives in
:mod:`sparsecert.proof`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from sparsecert.proof.rounding import ETA, U, gamma, pos_sum_hi, pos_sum_lo
from sparsecert.proof.rounding import dn as _dn
from sparsecert.proof.rounding import inv_one_minus as _inv_one_minus
from sparsecert.proof.rounding import rat_up as _rat_up
from sparsecert.proof.rounding import sumsq_hi as _sumsq_hi
from sparsecert.proof.rounding import up as _up

__all__ = ["proves_eig_shift"]


#: The largest p for which a shift is proven (the verifier's limit, restated: it refuses a
#: positive shift above it, so the producer never claims one).
SHIFT_MAX_FEATURES = 20_000

_CHUNK_BYTES = 1 << 23


def _chunks(m: int, width: int):
    """Row slices of an (m, width) array whose float64 temporaries stay near 8 MiB."""
    step = max(1, _CHUNK_BYTES // (8 * max(int(width), 1)))
    for i in range(0, m, step):
        yield slice(i, min(i + step, m))


def _sumsq_rows(A: np.ndarray, axis: int) -> np.ndarray:
    """fl(sums of squares) of A's columns (axis 0) or rows (axis 1), elementwise (no BLAS)."""
    m, q = A.shape
    out = np.zeros(q) if axis == 0 else np.empty(m)
    for b in _chunks(m, q):
        sq = A[b] * A[b]
        if axis == 0:
            out += sq.sum(axis=0)
        else:
            out[b] = sq.sum(axis=1)
    return out


def _row_sums(M: np.ndarray, xs: list[np.ndarray], vs: list[np.ndarray],
              absum: bool = False):
    """Per row i of M: fl(sum_l M_il x_l) for each x in ``xs``, fl(sum_l |M_il|) (when
    ``absum``, else None) and fl(sum_l |M_il| v_l) for each v in ``vs``, by numpy's own sums of
    products
    (``np.einsum`` without ``optimize``: no BLAS, no temporary for a product), in M's memory
    order: a column-major M (a transposed view) is read down its columns, its rows' sums
    accumulated block by block (a sum in any order, a product fused with its addition or not,
    is within the error model)."""
    m, k = M.shape
    dots = [np.zeros(m) for _ in xs]
    mags = [np.zeros(m) for _ in vs]
    asum = np.zeros(m) if absum else None
    if M.flags.f_contiguous and not M.flags.c_contiguous:
        MT = M.T
        for b in _chunks(k, m):
            blk = MT[b]
            for acc, x in zip(dots, xs, strict=True):
                acc += np.einsum("li,l->i", blk, x[b])
            ab = np.abs(blk)
            if absum:
                asum += np.einsum("li->i", ab)
            for acc, v in zip(mags, vs, strict=True):
                acc += np.einsum("li,l->i", ab, v[b])
    else:
        for b in _chunks(m, k):
            blk = M[b]
            for acc, x in zip(dots, xs, strict=True):
                acc[b] = np.einsum("il,l->i", blk, x)
            ab = np.abs(blk)
            if absum:
                asum[b] = np.einsum("il->i", ab)
            for acc, v in zip(mags, vs, strict=True):
                acc[b] = np.einsum("il,l->i", ab, v)
    return dots, asum, mags


def _product_consistent(A: np.ndarray, B: np.ndarray, C, extra: float = 0.0) -> bool:
    """Whether C, a library's A @ B, is finite and consistent with A and B: for two fixed
    weight vectors w (irregular magnitudes summing to < 1, one of them with irregular signs),
    fl(C w) and fl(A fl(B w)) computed elementwise differ by at most twice what a conventional
    product (|C - AB| <= gamma_k |A||B| + k ETA + ``extra``) and these sums allow: gamma_q
    |C||w| + (2 gamma_k + gamma_q) |A|v + (q + 2k) ETA + q ETA sum|A| + extra, v >= |B||w|,
    |fl(B w)|. Each of A, B and C is read once, for both w, in its memory order."""
    m, k = A.shape
    q = B.shape[1]
    C = np.asarray(C)
    if C.shape != (m, q) or C.dtype != np.float64:
        return False
    if not all(np.isfinite(C[b]).all() for b in _chunks(m, q)):
        return False
    c = max(q - 1, 0).bit_length()
    j = np.arange(q)
    w0 = (1.0 + (j * 0.6180339887498949) % 1.0) * 2.0 ** -(c + 1)
    ws = [w0, np.where((j * 0.7548776662466927) % 1.0 < 0.5, w0, -w0)]
    gk, gq = gamma(k), gamma(q)
    ts, _, (bmag,) = _row_sums(B, ws, [w0])  # |B_il w_l| = |B_il| w0_l for both w
    bmag = _sumsq_hi(bmag, q)  # a dot product of |B| and |w|: (fl + q ETA) / (1 - gamma_q)
    vs = [_up(np.maximum(np.abs(t), bmag)) for t in ts]
    s1s, _, (cmag,) = _row_sums(C, ws, [w0])
    s1mag = _sumsq_hi(cmag, q)
    s2s, asum, amags = _row_sums(A, ts, vs, absum=True)
    asum = _up(asum * _inv_one_minus(gamma(max(k - 1, 0))))
    # both weight vectors at once: one row each
    amag = _sumsq_hi(np.stack(amags), k)
    tol = _up(_up(gq * s1mag) + _up(_up(2.0 * gk + gq) * amag))
    tol = _up(_up(_up(tol + (q + 2 * k) * ETA) + _up(q * ETA * asum)) + extra)
    tol = _up(2.0 * tol)
    return bool(((np.abs(np.stack(s1s) - np.stack(s2s)) <= tol) & np.isfinite(tol)).all())


def _factor_ok(A: np.ndarray, L, under: float) -> bool:
    """Whether L, the library's Cholesky factor of A (returned without an error), is one Rump's
    criterion can use: a finite p x p matrix whose lower triangle has a positive diagonal (a NaN
    pivot passes OpenBLAS's test) and reproduces A as a floating-point factorisation does (L L^T
    = A + E, |E| <= gamma_{p+1} |L||L^T| + underflow), checked in projection, O(p^2), by
    :func:`_product_consistent` with the underflow term of Rump's constant as its slack (the
    factor of another matrix fails)."""
    L = np.asarray(L)
    if L.shape != A.shape or L.dtype != np.float64:
        return False
    L = np.tril(L)
    if not np.isfinite(L).all() or not (np.diagonal(L) > 0).all():
        return False
    return _product_consistent(L, L.T, A, extra=float(_up(2.0 * under)))


def proves_eig_shift(Xd: np.ndarray, mu: float, centred: bool,
                     gram: np.ndarray | None = None, weights: np.ndarray | None = None) -> bool:
    """True if X^T P X - mu I is proven positive definite from the (centred) design ``Xd``.

    ``Xd`` is X itself, or (``centred``) fl(X - 1 m^T) for some column centre m, exactly as
    the verifier forms it. The Gram matrix G = fl(Xd^T Xd) (``gram`` if already computed) is
    shifted by mu plus the rounding of G (gamma_n ||Xd||_F^2 + n p ETA), of the centring
    ((2e + e^2) ||Xd||_F^2) and the rank-one term of the projector (sum_j s_j^2 / n, s_j >=
    |column sum| of X - 1 m^T); then Rump's criterion (BIT 46, 2006, Corollary 2.4): if the
    floating-point Cholesky factorisation of A~ succeeds, where A~ has G's off-diagonal and a
    diagonal at least c = gamma_{2(N+1)} tr / 2 + 4 ETA N (2(N+1) + max diag) below the
    shifted one (N = p + 1: one extra rounding per entry for a library that divides through
    reciprocals), the shifted matrix is positive definite.

    With ``weights`` (the weighted least squares ``sum_i w_i (y_i - x_i^T b - c)^2``, ``Xd``
    centred by the weighted means): X^T Q X - mu I with Q = W, or W - w w^T / sum(w)
    (:func:`_proves_weighted`; ``gram`` is not used).

    As in the verifier, no library result is taken on trust: a shift is refused from the sizes
    first (p > n - centred: rank-deficient; p above :data:`SHIFT_MAX_FEATURES`); the design,
    G (also checked as a product), the shift and the trace must be finite; and the factor the
    Cholesky routine returns must be finite with a positive diagonal and reproduce A~
    (:func:`_factor_ok`), never inferred from the absence of an exception.
    """
    n, p = Xd.shape
    if not (math.isfinite(mu) and mu > 0) or 4 * (p + 2) * U >= 1 or (n + 2) * U >= 0.25:
        return False
    if p > n - int(bool(centred)) or p > SHIFT_MAX_FEATURES:
        return False
    if weights is not None:
        return _proves_weighted(Xd, mu, centred, np.asarray(weights, dtype=np.float64))
    with np.errstate(all="ignore"):
        if not all(np.isfinite(Xd[b]).all() for b in _chunks(n, p)):
            return False
        e = _rat_up(Fraction(1, 2 ** 53) / (1 - Fraction(1, 2 ** 53))) if centred else 0.0
        fro = float(pos_sum_hi(_sumsq_hi(_sumsq_rows(Xd, 0), n)))
        shift = float(_up(mu + float(_up(gamma(n) * fro))))
        shift = float(_up(shift + float(n) * float(p) * ETA))
        shift = float(_up(shift + float(_up(float(_up(2.0 * e + e * e)) * fro))))
        if centred:
            absum = pos_sum_hi(np.abs(Xd), axis=0)
            s = _up(_up(np.abs(Xd.sum(axis=0)) + _up(gamma(n - 1) * absum)) + _up(e * absum))
            shift = float(_up(shift + float(_up(float(pos_sum_hi(_up(s * s))) / n))))
        if not (math.isfinite(fro) and math.isfinite(shift)):
            return False
        G = np.matmul(Xd.T, Xd) if gram is None else np.array(gram, dtype=np.float64)
        if G.shape != (p, p) or not _product_consistent(Xd.T, Xd, G):
            return False
        return _shifted_factor_ok(G, shift)



def _shifted_factor_ok(G: np.ndarray, shift: float) -> bool:
    """Rump's test on a checked Gram matrix ``G`` (its upper triangle, symmetrised) less
    ``shift`` on the diagonal: the diagonal lowered by the factorisation's error bound c must
    stay positive, and the library's Cholesky factor of the result must pass
    :func:`_factor_ok` (the verifier's section 5)."""
    p = G.shape[0]
    G = np.triu(G) + np.triu(G, 1).T
    d = _dn(np.diag(G) - shift)
    if (d < 0).any():
        return False
    N = p + 1  # as the verifier: covers a factorisation dividing through reciprocals
    under = float(_up(4.0 * ETA * N * float(_up(2.0 * (N + 1) + float(d.max())))))
    c = float(_up(_up(0.5 * float(_up(gamma(2 * (N + 1)) * float(pos_sum_hi(d))))) + under))
    a_diag = _dn(d - c)
    if not (math.isfinite(c) and np.isfinite(a_diag).all()) or (a_diag <= 0).any():
        return False
    G[np.diag_indices_from(G)] = a_diag
    try:
        L = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:
        return False
    return _factor_ok(G, L, under)

def _proves_weighted(Xd: np.ndarray, mu: float, centred: bool, w: np.ndarray) -> bool:
    """The weighted shift: with Y = fl(w * Xd) (row scaling) and G = fl(Xd^T Y), X^T Q X - mu I
    >= G - tau I, tau = mu + (gamma_n + u)(1 + u) Fro_w + 2 (sqrt(p) + 1) ||col abs sums|| ETA
    + n p ETA (the products and the weighting) + (2e + e^2) Fro_w (the centring) + sum_j s_j^2 /
    sum(w) (the rank-one term, s_j >= |w^T (X - 1 m^T)_j|), Fro_w >= sum_i w_i ||Xd_i||^2; then
    Rump's test as for the plain shift (the verifier's section 5, restated)."""
    n, p = Xd.shape
    if int(np.count_nonzero(w > 0)) - int(bool(centred)) < p:
        return False
    with np.errstate(all="ignore"):
        if not all(np.isfinite(Xd[b]).all() for b in _chunks(n, p)):
            return False
        Y = w[:, None] * Xd
        if not all(np.isfinite(Y[b]).all() for b in _chunks(n, p)):
            return False
        e = _rat_up(Fraction(1, 2 ** 53) / (1 - Fraction(1, 2 ** 53))) if centred else 0.0
        colabs = pos_sum_hi(np.abs(Xd), axis=0)
        colw = pos_sum_hi(_up(np.abs(Y) * np.abs(Xd)), axis=0)
        colw = _up(_up(colw + _up(ETA * colabs)) * _rat_up(1 / (1 - Fraction(U))))
        fro = float(pos_sum_hi(colw))
        cn = float(_up(np.sqrt(float(pos_sum_hi(_up(colabs * colabs))))))
        eta_w = float(_up(_up(float(np.sqrt(float(p))) + 1.0) * float(_up(cn * ETA))))
        shift = float(_up(mu + float(_up(float(_up(gamma(n) + U))
                                           * float(_up(fro * float(_up(1.0 + U))))))))
        shift = float(_up(shift + float(_up(float(n) * float(p) * ETA + 2.0 * eta_w))))
        shift = float(_up(shift + float(_up(float(_up(2.0 * e + e * e)) * fro))))
        if centred:
            w_lo = float(pos_sum_lo(w))
            if not w_lo > 0:
                return False
            yabs = pos_sum_hi(np.abs(Y), axis=0)
            s = _up(_up(np.abs(Y.sum(axis=0)) + _up(float(_up(gamma(n - 1) + _up(
                2.0 * U + 2.0 * e))) * yabs)) + 2.0 * n * ETA)
            shift = float(_up(shift + float(_up(float(pos_sum_hi(_up(s * s))) / w_lo))))
        if not (math.isfinite(fro) and math.isfinite(shift)):
            return False
        G = np.matmul(Xd.T, Y)
        if G.shape != (p, p) or not _product_consistent(Xd.T, Y, G):
            return False
        return _shifted_factor_ok(G, shift)
