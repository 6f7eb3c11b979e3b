"""Standalone verifier of sparsecert certificates (format version 3).

This file imports **only numpy and the Python standard library**: not the solvers, not the
branch-and-bound engine, not even the rest of sparsecert (the certificate writer included). It is
an independent implementation of ``docs/certificate-format.md``. Every number that enters a bound
is recomputed here from the certificate, its proof file and the data, together with a
rigorous bound on its floating-point error, so that a verified certificate is true in exact
arithmetic (see "Why a verified certificate is true" in the format document). The file can be
copied and run on its own::

    python verify.py cert.json data.npz          # data.npz holds arrays X and y
    python -m sparsecert.certificate.verify cert.json data.npz --k 5 --jobs 2

The certificate's proof (``cert.proof``, next to ``cert.json``) is a binary file of node records
in depth-first preorder and witness rows; it is read as a stream, with the tree's fixings on an
undo stack, so the memory is O(depth + p) plus the data and a bounded cache of witness terms,
whatever the number of nodes, and subtrees can be checked in worker processes.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

# The format's constants, restated here on purpose (the verifier shares no code with the writer;
# tests/glm/certificate/test_certificate_format.py checks that they agree with
# sparsecert.certificate.schema).
FORMAT_NAME = "sparsecert-certificate"
FORMAT_VERSION = 3
LOSSES = ("squared", "logistic", "squared_hinge", "poisson", "huber")
CLASSIFICATION_LOSSES = ("logistic", "squared_hinge")
#: the parameters a loss has, part of the problem (in the certificate's ``problem``)
LOSS_PARAMETERS = {"huber": ("huber_delta",)}
STATUSES = ("optimal", "time_limit", "node_limit", "interrupted", "tree_exhausted",
            "precision_limited")
NODE_STATUSES = ("branched", "pruned", "solved", "open")
WITNESS_KINDS = ("dual", "shifted")
#: ``problem.X_format`` of a sparse X (absent: dense)
SPARSE_X_FORMAT = "csc"
RELATIVE_GAP_DEFINITION = "(UB - LB) / max(1, |UB|)"
#: The relative-gap tolerance a verification is judged against unless the user gives one.
DEFAULT_REL_GAP = 1e-4

# ----------------------------------------------------------------------------------------------
# The error model. IEEE 754 binary64, round to nearest: for one operation with a finite result
# r = fl(a op b), the exact value lies in [prev(r), next(r)]; |r - exact| <= U |r| + ETA (ETA
# covers underflow of a product or quotient). A floating-point dot product of length m (BLAS, any
# order, with or without FMA) is within GAMMA(m) sum |a_i b_i| + m ETA of the exact one.
# ----------------------------------------------------------------------------------------------
U = 2.0 ** -53
ETA = 2.0 ** -1074
#: Assumed relative accuracy of numpy's exp, log and log1p (checked at start-up, see
#: :func:`elementary_functions_check`): |f_numpy(x) - f(x)| <= EPS_ELEM |f(x)| + ETA.
EPS_ELEM = 2.0 ** -40
_TINY = 2.0 ** -968  # below this a product's rounding error may not be representable (Dekker)
_SPLIT_MAX = 2.0 ** 995  # Veltkamp splitting overflows above this


def array_sha256(a: np.ndarray) -> str:
    """SHA-256 of ASCII ``'<f8 ' + 'x'.join(shape) + '\\n'`` then the C-order little-endian
    float64 bytes of ``a``."""
    arr = np.ascontiguousarray(np.asarray(a, dtype=np.float64), dtype="<f8")
    header = "<f8 " + "x".join(str(d) for d in arr.shape) + "\n"
    h = hashlib.sha256(header.encode("ascii"))
    h.update(memoryview(arr).cast("B"))
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()


__all__ = [
    "VerificationReport",
    "verify_certificate",
    "Problem",
    "node_lower_bound",
    "objective_upper_bound",
    "proves_eig_shift",
    "elementary_functions_check",
    "binary_labels",
    "dual_domain_bounds",
    "loss_sum_bounds",
    "conjugate_sum_upper",
    "DEFAULT_REL_GAP",
]

_MAX_LISTED = 5  # how many offending items a failure message names
_NOT_GIVEN: Any = object()


# ----------------------------------------------------------------------------------------------
# Directed rounding helpers (the radius arithmetic is itself rounded outward)
# ----------------------------------------------------------------------------------------------


def _up(x):
    """The next float above: an upper bound of the exact result of the one operation that
    produced ``x`` (finite ``x``)."""
    return np.nextafter(x, np.inf)


def _dn(x):
    """The next float below: a lower bound of the exact result of the operation."""
    return np.nextafter(x, -np.inf)


def _float_up(q: Fraction) -> float:
    f = float(q)
    return f if Fraction(f) >= q else float(np.nextafter(f, np.inf))


def _float_dn(q: Fraction) -> float:
    f = float(q)
    return f if Fraction(f) <= q else float(np.nextafter(f, -np.inf))


_GAMMA_CACHE: dict[int, float] = {}


def _gamma(m: int) -> float:
    """A float >= gamma_m = m U / (1 - m U) (exact rational arithmetic, rounded up)."""
    m = max(int(m), 0)
    if m not in _GAMMA_CACHE:
        mu = Fraction(m, 2 ** 53)
        if mu >= Fraction(1, 2):
            raise ValueError(f"problem too large for the error bounds (m = {m})")
        _GAMMA_CACHE[m] = _float_up(mu / (1 - mu))
    return _GAMMA_CACHE[m]


_FACTOR_CACHE: dict[tuple[int, bool], float] = {}


def _sum_up_factor(m: int) -> float:
    """A float >= 1 / (1 - gamma_{m-1}): exact sum of m nonnegatives <= fl(sum) * factor."""
    key = (int(m), True)
    if key not in _FACTOR_CACHE:
        g = Fraction(_gamma(max(m - 1, 0)))
        _FACTOR_CACHE[key] = _float_up(1 / (1 - g))
    return _FACTOR_CACHE[key]


def _sum_dn_factor(m: int) -> float:
    """A float <= 1 / (1 + gamma_{m-1}): exact sum of m nonnegatives >= fl(sum) * factor."""
    key = (int(m), False)
    if key not in _FACTOR_CACHE:
        g = Fraction(_gamma(max(m - 1, 0)))
        _FACTOR_CACHE[key] = _float_dn(1 / (1 + g))
    return _FACTOR_CACHE[key]


def _sum_up(v: np.ndarray, axis=None):
    """Upper bound of the exact sum of a nonnegative array (along ``axis``)."""
    v = np.asarray(v, dtype=np.float64)
    m = v.size if axis is None else v.shape[axis]
    return _up(v.sum(axis=axis) * _sum_up_factor(m))


def _sum_dn(v: np.ndarray, axis=None):
    """Lower bound (>= 0) of the exact sum of a nonnegative array.

    A floating-point sum that overflows gives 0: its rounded partial sums may overflow while the
    exact sum is just below the largest float, which ``_dn(inf)`` would return."""
    v = np.asarray(v, dtype=np.float64)
    m = v.size if axis is None else v.shape[axis]
    s = v.sum(axis=axis)
    return np.where(np.isinf(s), 0.0, np.maximum(_dn(s * _sum_dn_factor(m)), 0.0))


def _signed_sum_up(v: np.ndarray) -> float:
    """Upper bound of the exact sum of an array of any signs."""
    v = np.asarray(v, dtype=np.float64)
    s = float(v.sum())
    err = float(_up(_gamma(max(v.size - 1, 0)) * _sum_up(np.abs(v))))
    return float(_up(s + err))


def _dot_self_up(s: np.ndarray, m: int) -> np.ndarray:
    """Upper bound of sum_i x_i^2 (m terms) from its floating-point value s (products and sums
    rounded, any order): exact <= (s + m ETA) / (1 - gamma_m)."""
    k = _float_up(1 / (1 - Fraction(_gamma(m))))
    return _up(_up(s + m * ETA) * k)


def _sq_up(v):
    """Elementwise upper bound of v^2."""
    return _up(v * v)


def _sq_dn(v):
    """Elementwise lower bound (>= 0) of v^2."""
    return np.maximum(_dn(v * v), 0.0)


def _norm_up(v: np.ndarray, axis=None):
    """Upper bound of the Euclidean norm."""
    return _up(np.sqrt(_sum_up(_sq_up(np.abs(v)), axis=axis)))


def _elem_radius(c):
    """Error bound of numpy's exp/log/log1p result ``c`` at an exact float argument:
    |f(x) - c| <= EPS2 |c| + 2 ETA with EPS2 >= EPS_ELEM / (1 - EPS_ELEM)."""
    return _up(_up(_EPS2 * np.abs(c)) + 2 * ETA)


_EPS2 = _float_up(Fraction(EPS_ELEM) / (1 - Fraction(EPS_ELEM)))
_CENTRE_ERR = _float_up(Fraction(1, 2 ** 53) / (1 - Fraction(1, 2 ** 53)))  # u / (1 - u)


# ----------------------------------------------------------------------------------------------
# Library results are checked, never taken from the absence of an exception. The error model
# (IEEE elementwise arithmetic and sums, section 7.2) is the trusted base; a BLAS product, a
# LAPACK factorisation, a sort or a selection is checked by the code below before it enters a
# bound, and a result that fails its check gives no bound.
# ----------------------------------------------------------------------------------------------

_BLOCK_BYTES = 1 << 23  # the temporaries of the elementwise passes below (8 MiB per block)


def _row_blocks(m: int, width: int):
    """Slices of the rows of an (m, width) array whose float64 temporaries stay small."""
    step = max(1, _BLOCK_BYTES // (8 * max(int(width), 1)))
    for i in range(0, m, step):
        yield slice(i, min(i + step, m))


def _squares_sum(A: np.ndarray, axis: int) -> np.ndarray:
    """fl(sum of squares) of the columns (axis 0) or rows (axis 1) of A, by elementwise products
    and sums only (no BLAS), in row blocks (any order of the sum is covered by the error
    model)."""
    m, q = A.shape
    out = np.zeros(q) if axis == 0 else np.empty(m)
    for b in _row_blocks(m, q):
        blk = A[b]
        sq = blk * blk
        if axis == 0:
            out += sq.sum(axis=0)
        else:
            out[b] = sq.sum(axis=1)
    return out


def _check_weights(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Two fixed weight vectors for the product checks, an irregular positive sequence and the
    same with irregular signs, of magnitudes in [2^-(c+1), 2^-c) with 2^c >= q (so a weighted
    sum of finite entries cannot overflow)."""
    c = max(int(q) - 1, 0).bit_length()
    j = np.arange(q)
    w = (1.0 + (j * 0.6180339887498949) % 1.0) * 2.0 ** -(c + 1)
    return w, np.where((j * 0.7548776662466927) % 1.0 < 0.5, w, -w)


def _row_sum_blocks(M: np.ndarray):
    """Blocks of M for per-row sums, read in M's memory order: yields ``(blk, part, put)``.
    ``blk * part(w)`` are the products ``M_ij w_j`` of the block (``part(w)``: the entries of
    ``w`` it meets), ``put(acc, t)`` adds the block's per-row sums of ``t`` into ``acc``. A
    column-major M (a transposed view) is read down its columns, in blocks of columns (any
    order of a sum is covered by the error model); otherwise in blocks of rows."""
    m, q = M.shape
    if M.flags.f_contiguous and not M.flags.c_contiguous:
        MT = M.T
        for b in _row_blocks(q, m):
            def put(acc: np.ndarray, t: np.ndarray) -> None:
                acc += t.sum(axis=0)
            yield MT[b], (lambda w, b=b: w[b, None]), put
    else:
        for b in _row_blocks(m, q):
            def put(acc: np.ndarray, t: np.ndarray, b=b) -> None:
                acc[b] = t.sum(axis=1)
            yield M[b], (lambda w: w), put


def _weighted_rows_all(M: np.ndarray, ws: tuple[np.ndarray, ...]
                       ) -> tuple[list[np.ndarray], np.ndarray]:
    """Per row i of M and each w in ``ws`` (vectors of equal magnitudes, ``|w| = |ws[0]|``):
    fl(sum_j M_ij w_j), and one upper bound of sum_j |M_ij w_j| for all of them (the products'
    magnitudes are the same for every w: rounding is symmetric in the sign), by elementwise
    products and sums (no BLAS), in M's memory order (:func:`_row_sum_blocks`)."""
    m, q = M.shape
    vals = [np.zeros(m) for _ in ws]
    mag = np.zeros(m)
    for blk, part, put in _row_sum_blocks(M):
        for val, w in zip(vals, ws, strict=True):
            t = blk * part(w)
            put(val, t)
        np.abs(t, out=t)
        put(mag, t)
    return vals, _dot_self_up(mag, q)  # a dot product of |M| and |w|: (fl + q ETA) / (1 - g_q)


def _weighted_rows(M: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row i of M: (fl(sum_j M_ij w_j), an upper bound of sum_j |M_ij w_j|), by elementwise
    products and sums (no BLAS)."""
    vals, mag = _weighted_rows_all(M, (w,))
    return vals[0], mag


def _abs_rows(A: np.ndarray, ts: list[np.ndarray], vs: list[np.ndarray]):
    """Per row i of A: fl(sum_l A_il t_l) for each t in ``ts``, fl(sum_l |A_il|) and
    fl(sum_l |A_il| v_l) for each v in ``vs`` (v >= 0), by elementwise products and sums (no
    BLAS), in A's memory order (:func:`_row_sum_blocks`)."""
    m = A.shape[0]
    s2 = [np.zeros(m) for _ in ts]
    amag = [np.zeros(m) for _ in vs]
    asum = np.zeros(m)
    for blk, part, put in _row_sum_blocks(A):
        for acc, t in zip(s2, ts, strict=True):
            put(acc, blk * part(t))
        ab = np.abs(blk)
        put(asum, ab)
        for acc, v in zip(amag, vs, strict=True):
            put(acc, ab * part(v))
    return s2, asum, amag


def _product_rows_ok(A: np.ndarray, B: np.ndarray, C: Any,
                     Bw: list[tuple[np.ndarray, np.ndarray]] | None = None,
                     extra: float = 0.0) -> np.ndarray:
    """Which rows of C, a library's product A @ B (BLAS), are consistent with A and B.

    For each of two fixed weight vectors w (:func:`_check_weights`), s1 = fl(C w) and s2 =
    fl(A fl(B w)) are computed here by elementwise products and sums. If |C - AB| <= gamma_k
    |A||B| + k ETA + ``extra`` entrywise (a conventional product, section 7.2) they differ by at
    most gamma_q |C||w| + (2 gamma_k + gamma_q) |A| v + (q + 2k) ETA + q ETA sum|A| + extra,
    with v >= |B||w| and v >= |fl(B w)|; a row is accepted when it is finite and |fl(s1 - s2)|
    is within twice that (rounded up) for both vectors. A row of a wrong product (NaN, inf,
    zeros, another matrix's product) fails unless its error is orthogonal to both vectors.
    ``Bw``: the cached ``_weighted_rows(B, w)`` of both vectors. The two vectors have the same
    magnitudes, so |C||w| and sum|A| are computed once, and each matrix is read once for both.
    """
    m, k = A.shape
    q = B.shape[1]
    C = np.asarray(C)
    if C.shape != (m, q) or C.dtype != np.float64:
        return np.zeros(m, dtype=bool)
    ok = np.ones(m, dtype=bool)
    for b in _row_blocks(m, q):
        ok[b] &= np.isfinite(C[b]).all(axis=1)
    gk, gq = _gamma(k), _gamma(q)
    ws = _check_weights(q)
    if Bw is None:
        tvals, tmag = _weighted_rows_all(B, ws)
        Bw = [(t, tmag) for t in tvals]
    vs = [_up(np.maximum(np.abs(t), tmag)) for t, tmag in Bw]
    s1s, s1mag = _weighted_rows_all(C, ws)
    s2s, asum, amags = _abs_rows(A, [t for t, _ in Bw], vs)
    asum = _up(asum * _sum_up_factor(k))
    for s1, s2, amag in zip(s1s, s2s, amags, strict=True):
        amag = _dot_self_up(amag, k)  # >= sum_l |A_il| v_l (a dot product of |A| and v)
        tol = _up(_up(gq * s1mag) + _up(_up(2.0 * gk + gq) * amag))
        tol = _up(_up(_up(tol + (q + 2 * k) * ETA) + _up(q * ETA * asum)) + extra)
        tol = _up(2.0 * tol)
        ok &= (np.abs(s1 - s2) <= tol) & np.isfinite(tol)  # no check: no bound
    return ok


def _checked_product(A: np.ndarray, B: np.ndarray,
                     Bw: list[tuple[np.ndarray, np.ndarray]] | None = None) -> np.ndarray:
    """fl(A @ B) from the library (BLAS), every row that fails :func:`_product_rows_ok` set to
    NaN (which gives no bound downstream)."""
    m, q = A.shape[0], B.shape[1]
    C = np.matmul(A, B)
    ok = _product_rows_ok(A, B, C, Bw)
    if ok.all():
        return C
    out = np.full((m, q), np.nan)
    if ok.any():
        out[ok] = C[ok]
    return out


# ----------------------------------------------------------------------------------------------
# The elementary-function assumption, checked against exact rational enclosures
# ----------------------------------------------------------------------------------------------

# Fixed-point integers: v represents v / 2^_W. Every floor division or shift errs by less than
# one unit; the series below need at most a few hundred terms, so their accumulated error is far
# below _ERR units (a generous budget: 2^32 units = 2^-1168).
_W = 1200
_ONE = 1 << _W
_ERR = 1 << 32


def _atanh2_fx(zf: int) -> int:
    """2 atanh(z) = log((1 + z) / (1 - z)) for z = zf / 2^_W, |z| <= 1/3 (error < 2^20 units:
    the term errors grow by at most one unit per step and the series stops within 800 terms)."""
    z2 = (zf * zf) >> _W
    term, total, j = zf, 0, 0
    while term != 0 and j < 800:
        total += term // (2 * j + 1)
        term = (term * z2) >> _W
        j += 1
    return 2 * total


_LN2_FX: int | None = None


def _ln2_fx() -> int:
    global _LN2_FX
    if _LN2_FX is None:
        _LN2_FX = _atanh2_fx(_ONE // 3)  # log 2 = 2 atanh(1/3)
    return _LN2_FX


def _fx_div(num: int, den: int) -> int:
    """floor(num / den * 2^_W)."""
    return (num << _W) // den


def _log_enclosure(a: Fraction) -> tuple[Fraction, Fraction]:
    """[lo, hi] containing log(a), a > 0 rational."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    m = a / Fraction(2) ** e  # in (1/2, 2)
    if m >= Fraction(4, 3):
        m, e = m / 2, e + 1
    elif m < Fraction(2, 3):
        m, e = m * 2, e - 1
    z = (m - 1) / (m + 1)  # |z| <= 1/5
    v = _atanh2_fx(_fx_div(z.numerator, z.denominator)) + e * _ln2_fx()
    return Fraction(v - _ERR, _ONE), Fraction(v + _ERR, _ONE)


def _log1p_enclosure(x: Fraction) -> tuple[Fraction, Fraction]:
    """[lo, hi] containing log(1 + x), x > -1 rational (relative accuracy near x = 0)."""
    if -Fraction(1, 2) <= x <= 1:
        z = x / (2 + x)
        v = _atanh2_fx(_fx_div(z.numerator, z.denominator))
        return Fraction(v - _ERR, _ONE), Fraction(v + _ERR, _ONE)
    return _log_enclosure(1 + x)


def _exp_enclosure(x: Fraction) -> tuple[Fraction, Fraction]:
    """[lo, hi] containing exp(x), x rational with |x| <= 800 (x = k log 2 + r, |r| < 0.4)."""
    k = round(float(x) / math.log(2.0))
    r = _fx_div(x.numerator, x.denominator) - k * _ln2_fx()  # error < 1100 * 2^20 units
    term, total, j = _ONE, 0, 0
    while term != 0 and j < 800:
        total += term
        j += 1
        term = ((term * r) >> _W) // j
    scale = Fraction(2) ** k
    return Fraction(total - _ERR, _ONE) * scale, Fraction(total + _ERR, _ONE) * scale


_ELEM_OK: tuple[bool, str] | None = None


def elementary_functions_check() -> tuple[bool, str]:
    """Check numpy's exp, log and log1p against exact rational enclosures on fixed points.

    The verifier's bounds assume ``|f_numpy(x) - f(x)| <= EPS_ELEM |f(x)| + ETA`` (EPS_ELEM =
    2^-40, thousands of ulps above the documented error of any libm). This start-up check makes
    a grossly inaccurate platform refuse to verify instead of accepting false bounds.

    Returns
    -------
    (ok, message)
    """
    global _ELEM_OK
    if _ELEM_OK is not None:
        return _ELEM_OK
    cases: list[tuple[str, float]] = []
    cases += [("exp", x) for x in (-744.0, -700.5, -30.25, -1.0, -1e-8, 0.0, 1e-12, 0.5, 1.0,
                                   2.75, 10.0, 88.0, 300.5, 709.0)]
    cases += [("log", x) for x in (5e-324, 1e-300, 1e-20, 1e-5, 0.3, 0.5, 0.999999, 1.0,
                                   1.0 + 2.0 ** -52, 1.5, 2.0, 10.0, 1e5, 1e300)]
    cases += [("log1p", x) for x in (-0.9999, -0.5, -1e-10, -2.0 ** -60, 0.0, 1e-300,
                                     2.0 ** -60, 1e-10, 0.5, 1.0, 3.0, 1e10, 1e300)]
    worst, bad = 0.0, []
    accepted: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for name, x in cases:
        qx = Fraction(x)
        if name == "exp":
            lo, hi = _exp_enclosure(qx)
            got = float(np.exp(np.float64(x)))
        elif name == "log":
            lo, hi = _log_enclosure(qx)
            got = float(np.log(np.float64(x)))
        else:
            lo, hi = _log1p_enclosure(qx)
            got = float(np.log1p(np.float64(x)))
        allowed = Fraction(EPS_ELEM) * min(abs(lo), abs(hi)) + Fraction(ETA)
        if lo <= 0 <= hi and lo != hi:  # sign-straddling enclosure cannot happen here
            allowed = Fraction(ETA)
        # the floats g with |g - lo| <= allowed and |g - hi| <= allowed, for the array calls
        xs, a_s, b_s = accepted.setdefault(name, ([], [], []))
        xs.append(x)
        a_s.append(_float_up(hi - allowed))
        b_s.append(_float_dn(lo + allowed))
        if not math.isfinite(got):
            bad.append(f"{name}({x!r}) = {got!r}")
            continue
        g = Fraction(got)
        err = max(abs(g - lo), abs(g - hi))
        if err > allowed:
            bad.append(f"{name}({x!r}) = {got!r}")
        elif min(abs(lo), abs(hi)) > 2 ** -1000:
            worst = max(worst, float(err / min(abs(lo), abs(hi))))
    if not bad:
        bad = _array_calls_problems(accepted)
    if bad:
        _ELEM_OK = (False, "numpy's exp/log/log1p are less accurate than the assumed relative "
                           f"error 2^-40 on this platform: {', '.join(bad[:_MAX_LISTED])}")
    else:
        _ELEM_OK = (True, f"numpy's exp, log, log1p within 2^-40 relative error on "
                          f"{len(cases)} reference points (worst {worst:.1e}), in scalar calls "
                          "and in array calls of lengths 1 to 1000, misaligned and strided")
    return _ELEM_OK


#: Array lengths of the elementary-function self-test: around every SIMD width and unrolling
#: (2, 4, 8, 16 lanes, loops of 32 and 64) and a long array.
_ELEM_LENGTHS = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000)


def _array_calls_problems(accepted: dict[str, tuple[list[float], list[float], list[float]]]
                          ) -> list[str]:
    """The reference points again, through the array code paths the bounds use (vectorised
    loops differ from the scalar ones): each point at many positions of arrays of the lengths
    :data:`_ELEM_LENGTHS`, contiguous from offsets 0, 1 and 3 (misaligned) and with stride 2;
    every result must lie in its point's accepted interval."""
    bad: list[str] = []
    for name, (xs_l, a_l, b_l) in accepted.items():
        func = getattr(np, name)
        xs, lo, hi = np.array(xs_l), np.array(a_l), np.array(b_l)
        m = xs.size
        for length in _ELEM_LENGTHS:
            for offset, stride in ((0, 1), (1, 1), (3, 1), (0, 2)):
                idx = (np.arange(offset + stride * length) * 7 + length) % m
                sel = idx[offset::stride]
                arg = xs[idx][offset::stride]
                got = func(arg)
                if not (isinstance(got, np.ndarray) and got.shape == arg.shape
                        and got.dtype == np.float64):
                    bad.append(f"{name} on an array of length {length} returned "
                               f"{type(got).__name__}")
                    break
                wrong = np.flatnonzero(~((got >= lo[sel]) & (got <= hi[sel])))
                if wrong.size:
                    i = int(wrong[0])
                    bad.append(f"{name}({float(arg[i])!r}) = {float(got[i])!r} in an array of "
                               f"length {length} (offset {offset}, stride {stride})")
                    break
    return bad


# ----------------------------------------------------------------------------------------------
# Labels and the design used by the bounds
# ----------------------------------------------------------------------------------------------


def binary_labels(y: np.ndarray) -> np.ndarray:
    """The package's one label rule: y has exactly two distinct values; the smaller maps to -1
    and the larger to +1. Raises ValueError otherwise."""
    y = np.asarray(y, dtype=np.float64)
    lo, hi = _label_values(y)
    if not lo < hi or not ((y == lo) | (y == hi)).all():
        n_vals = np.unique(y).size  # for the message only
        raise ValueError(f"a classification loss needs exactly two distinct label values; y has "
                         f"{n_vals}")
    return np.where(y == hi, 1.0, -1.0)


def _label_values(y: np.ndarray) -> tuple[float, float]:
    """(smallest, largest) entry of y (reductions: no sort is trusted for the label rule)."""
    if y.size == 0:
        return math.nan, math.nan
    return float(y.min()), float(y.max())


def dual_domain_bounds(loss: str, y: np.ndarray, huber_delta: float | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample interval [lower, upper] equal to dom f*(.; y_i) (labels already -1/+1;
    ``huber_delta``: the Huber loss's threshold)."""
    y = np.asarray(y, dtype=np.float64)
    inf = np.full(y.shape, np.inf)
    if loss == "squared":
        return -inf, inf.copy()
    if loss == "logistic":  # t = -y z in [0, 1]
        return np.where(y > 0, -1.0, 0.0), np.where(y > 0, 0.0, 1.0)
    if loss == "squared_hinge":  # y z <= 0
        return np.where(y > 0, -np.inf, 0.0), np.where(y > 0, 0.0, np.inf)
    if loss == "poisson":  # z + y >= 0
        return -y, inf.copy()
    if loss == "huber":  # |z| <= 2 delta (2 delta exact in binary; inf if it overflows: all z)
        d2 = 2.0 * _huber_delta(huber_delta)
        return np.full(y.shape, -d2), np.full(y.shape, d2)
    raise ValueError(f"unknown loss {loss!r}")


def _huber_delta(delta: float | None) -> float:
    if delta is None or not (math.isfinite(delta) and delta > 0):
        raise ValueError(f"the huber loss needs huber_delta, a finite number > 0, got {delta!r}")
    return float(delta)


class _Design:
    """The data as the bounds use them, with the error bounds of their preparation.

    With an intercept the columns are centred with the verifier's own mean m: Xd = fl(X - 1 m^T)
    and |Xd - (X - 1 m^T)| <= e |Xd| entrywise, e = u / (1 - u). Because every dual witness sums
    to exactly zero, X^T zeta = (X - 1 m^T)^T zeta for any m, so the centring costs nothing but
    this rounding, which enters every bound below.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, loss: str, fit_intercept: bool,
                 huber_delta: float | None = None, extra: _Extras | None = None):
        self.X = X
        self.n, self.p = X.shape
        self.loss = loss
        self.delta = huber_delta
        self.centred = bool(fit_intercept)
        ex = extra if extra is not None else _Extras()
        self.w, self.lo, self.hi = ex.w, ex.lo, ex.hi
        if self.centred:  # any centre is exact (zero-sum witnesses; P or Q annihilates 1)
            self.Xd = X - (X.mean(axis=0) if ex.w is None else (ex.w @ X) / ex.w.sum())
            self.e = _CENTRE_ERR
        else:
            self.Xd = X
            self.e = 0.0
        self.y = y
        self.o, self.yd, self.yr = _linear_target(y, self.n, loss, self.centred, ex)
        self._coln = None
        self._rown = None
        self._xd_w = None
        self._xdt_w = None

    @property
    def coln(self) -> np.ndarray:
        """Upper bounds of the column norms of Xd."""
        if self._coln is None:
            self._coln = _up(np.sqrt(_dot_self_up(_squares_sum(self.Xd, 0), self.n)))
        return self._coln

    @property
    def rown(self) -> np.ndarray:
        """Upper bounds of the row norms of Xd."""
        if self._rown is None:
            self._rown = _up(np.sqrt(_dot_self_up(_squares_sum(self.Xd, 1), self.p)))
        return self._rown

    def times_xd(self, Z: np.ndarray) -> np.ndarray:
        """fl(Z Xd) (rows fl(Xd^T zeta)), checked (:func:`_checked_product`)."""
        if self._xd_w is None:
            self._xd_w = [_weighted_rows(self.Xd, w) for w in _check_weights(self.p)]
        return _checked_product(Z, self.Xd, self._xd_w)

    def times_xdt(self, B: np.ndarray) -> np.ndarray:
        """fl(B Xd^T) (rows fl(Xd b)), checked (:func:`_checked_product`)."""
        if self._xdt_w is None:
            self._xdt_w = [_weighted_rows(self.Xd.T, w) for w in _check_weights(self.n)]
        return _checked_product(B, self.Xd.T, self._xdt_w)

    def xt_ball_radius(self, nzc: np.ndarray, nzr: np.ndarray | float) -> np.ndarray:
        """Radius of (X - 1m^T)^T z around fl(Xd^T zc), for z in the ball (zc, zr), given
        upper bounds nzc >= ||zc|| and nzr >= ||zr|| (arrays of shape (m,)): one row per z.

        |(Xe^T z)_j - fl(Xd^T zc)_j| <= ||Xd_j|| ((gamma_n + e) ||zc|| + (1 + e) ||zr||) + n ETA
        (Cauchy-Schwarz on the a priori bound gamma_n |Xd|^T |zc|, plus the centring error).
        """
        ge = _up(_gamma(self.n) + self.e)
        oe = _up(1.0 + self.e)
        a = _up(_up(ge * np.asarray(nzc)) + _up(oe * np.asarray(nzr)))
        return _up(_up(self.coln[None, :] * a[:, None]) + self.n * ETA)


# ----------------------------------------------------------------------------------------------
# A sparse X: its canonical compressed sparse column form, its hash and its products
# ----------------------------------------------------------------------------------------------

#: entries per block of the passes over a sparse X (the temporaries stay small)
_SPARSE_BLOCK = 1 << 16


class _CSC:
    """A matrix in canonical compressed sparse column form (section 3): ``indptr`` (p + 1,
    int64, from 0, non-decreasing, to nnz), ``indices`` (nnz row indices, int64, strictly
    increasing within each column, in [0, n)) and ``data`` (nnz finite non-zero float64)."""

    ndim = 2

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                 shape: tuple[int, int]):
        self.indptr, self.indices, self.data = indptr, indices, data
        self.shape = (int(shape[0]), int(shape[1]))

    @property
    def nnz(self) -> int:
        return int(self.data.size)

    def counts(self) -> np.ndarray:
        """The number of entries of each column."""
        return np.diff(self.indptr)

    def column_blocks(self):
        """Ranges [j0, j1) of columns of about _SPARSE_BLOCK entries at most."""
        p = self.shape[1]
        j0 = 0
        while j0 < p:
            j1 = int(np.searchsorted(self.indptr, self.indptr[j0] + _SPARSE_BLOCK,
                                     side="right")) - 1
            j1 = min(max(j1, j0 + 1), p)
            yield j0, j1
            j0 = j1

    def segment_sums(self, fn) -> np.ndarray:
        """Per column j, fl(sum over its entries e of fn(block's entries)[e]) (elementwise
        operations and numpy's sums only; 0 for an empty column). ``fn(a, b)`` returns the
        values of the entries a:b."""
        out = np.zeros(self.shape[1])
        for j0, j1 in self.column_blocks():
            a, b = int(self.indptr[j0]), int(self.indptr[j1])
            ptr = self.indptr[j0:j1 + 1] - a
            full = np.flatnonzero(np.diff(ptr) > 0)
            if full.size:
                out[j0 + full] = np.add.reduceat(fn(a, b), ptr[full])
        return out

    def columns(self, S: np.ndarray) -> np.ndarray:
        """The columns S as a dense (n, len(S)) array."""
        out = np.zeros((self.shape[0], len(S)))
        for t, j in enumerate(np.asarray(S, dtype=np.int64).tolist()):
            a, b = int(self.indptr[j]), int(self.indptr[j + 1])
            out[self.indices[a:b], t] = self.data[a:b]
        return out

    def toarray(self) -> np.ndarray:
        """The dense matrix."""
        out = np.zeros(self.shape)
        cols = np.repeat(np.arange(self.shape[1]), self.counts())
        out[self.indices, cols] = self.data
        return out


def csc_sha256(X: _CSC) -> str:
    """The hash of a sparse X (section 3): ASCII ``"csc <i8 <i8 <f8 {n}x{p} {nnz}\\n"``, then
    indptr and indices as little-endian int64 and data as little-endian float64."""
    n, p = X.shape
    h = hashlib.sha256(f"csc <i8 <i8 <f8 {n}x{p} {X.nnz}\n".encode("ascii"))
    for arr, dt in ((X.indptr, "<i8"), (X.indices, "<i8"), (X.data, "<f8")):
        for s in range(0, arr.size, _SPARSE_BLOCK):
            h.update(np.ascontiguousarray(arr[s:s + _SPARSE_BLOCK], dtype=dt).tobytes())
    return h.hexdigest()


def _is_sparse_input(X: Any) -> bool:
    """A sparse matrix given by its arrays (scipy's CSR / CSC, read through their ``indptr``,
    ``indices``, ``data`` and ``shape`` attributes; scipy itself is not imported)."""
    return (not isinstance(X, np.ndarray) and all(
        hasattr(X, a) for a in ("indptr", "indices", "data", "shape")))


def _sparse_input(X: Any) -> _CSC:
    """A sparse matrix as given (duck-typed) in canonical CSC form; ValueError / TypeError
    with one line when it is not a consistent, finite, exactly-float64 CSR or CSC matrix."""
    fmt = getattr(X, "format", None)
    if fmt not in ("csr", "csc"):
        raise TypeError(f"X is a sparse matrix of format {fmt!r}: give it as CSR or CSC")
    try:
        shape = tuple(X.shape)
        n, p = (int(d) for d in shape)
    except (TypeError, ValueError):
        raise ValueError(f"X has no valid 2-D shape ({_short(getattr(X, 'shape', None))})") \
            from None
    return _canonical_csc(fmt, X.indptr, X.indices, X.data, (n, p))


def _canonical_csc(fmt: str, indptr: Any, indices: Any, data: Any,
                   shape: tuple[int, int]) -> _CSC:
    """Check a CSR or CSC matrix given by its arrays and return its canonical CSC form. Every
    check runs before anything is allocated from a size the arrays claim (their own lengths
    bound the cost): shapes, index ranges, a non-decreasing indptr ending at nnz; then the
    values (numeric, finite, exactly float64), the sort (checked: a permutation in (column,
    row) order), no entry stored twice, and explicit zeros dropped."""
    n, p = shape
    if n < 1 or p < 1:
        raise ValueError(f"X has shape {shape}: at least one sample and one feature needed")
    major, minor = (n, p) if fmt == "csr" else (p, n)
    ptr, idx, val = np.asarray(indptr), np.asarray(indices), np.asarray(data)
    if ptr.ndim != 1 or idx.ndim != 1 or val.ndim != 1:
        raise ValueError("X's sparse arrays (indptr, indices, data) must be 1-D")
    if ptr.dtype.kind not in "iu" or idx.dtype.kind not in "iu":
        raise TypeError(f"X's indptr and indices must be integers, got {ptr.dtype} and "
                        f"{idx.dtype}")
    if val.dtype.kind not in "biuf":
        raise TypeError(f"X must be numeric, got sparse values of dtype {val.dtype}")
    nnz = val.size
    if ptr.size != major + 1:
        raise ValueError(f"X's indptr has {ptr.size} entries; a {fmt.upper()} matrix of shape "
                         f"{shape} has {major + 1}")
    if idx.size != nnz:
        raise ValueError(f"X's indices ({idx.size}) and data ({nnz}) differ in length")
    if not ((ptr >= 0).all() and (ptr <= nnz).all()):  # range first: diff could wrap around
        raise ValueError(f"X's indptr must lie in [0, nnz = {nnz}]")
    ptr = ptr.astype(np.int64)
    if ptr[0] != 0 or ptr[-1] != nnz or (np.diff(ptr) < 0).any():
        raise ValueError("X's indptr must start at 0, never decrease and end at nnz")
    if nnz and not ((idx >= 0).all() and (idx < minor).all()):
        raise ValueError(f"X's indices must lie in [0, {minor})")
    idx = idx.astype(np.int64)
    v64 = np.ascontiguousarray(val, dtype=np.float64)
    bad = _inexact_entry(val, v64)
    if bad is not None:
        raise ValueError(f"X stores the value {val[bad]} at entry {bad[0]}, which is not exactly "
                         f"a float64 (it would be verified as {float(v64[bad])!r}): give the data "
                         "as float64")
    if not np.isfinite(v64).all():
        raise ValueError("X must not contain NaN or infinity")
    own = np.repeat(np.arange(major, dtype=np.int64), np.diff(ptr))  # each entry's major index
    cols, rows = (idx, own) if fmt == "csr" else (own, idx)
    del own
    key_sorted = nnz < 2 or bool(((cols[1:] > cols[:-1]) |
                                  ((cols[1:] == cols[:-1]) & (rows[1:] > rows[:-1]))).all())
    if not key_sorted:
        order = np.asarray(np.lexsort((rows, cols)))
        seen = np.zeros(nnz, dtype=bool)
        if order.shape != (nnz,) or order.dtype.kind not in "iu" or (nnz and (
                order.min() < 0 or order.max() >= nnz)):
            raise ValueError("X's entries could not be sorted (the library's sort failed)")
        seen[order] = True
        cols, rows, v64 = cols[order], rows[order], v64[order]
        del order
        step_ok = (cols[1:] > cols[:-1]) | ((cols[1:] == cols[:-1]) & (rows[1:] >= rows[:-1]))
        if not (seen.all() and step_ok.all()):
            raise ValueError("X's entries could not be sorted (the library's sort failed)")
        twice = np.flatnonzero((cols[1:] == cols[:-1]) & (rows[1:] == rows[:-1]))
        if twice.size:
            e = int(twice[0])
            raise ValueError(f"X stores entry ({int(rows[e])}, {int(cols[e])}) twice (its value "
                             "would be a floating-point sum): give each entry once")
    keep = v64 != 0.0  # an explicit zero is not an entry
    if not keep.all():
        cols, rows, v64 = cols[keep], rows[keep], v64[keep]
    ptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=p), out=ptr[1:])
    return _CSC(ptr, rows, v64, (n, p))


def _dense_to_csc(X: np.ndarray) -> _CSC:
    """The canonical CSC form of a dense matrix (its non-zeros in column order, checked)."""
    n, p = X.shape
    cols, rows = (np.asarray(a, dtype=np.int64) for a in np.nonzero(X.T))
    vals = X[rows, cols]
    ordered = cols.size < 2 or bool(((cols[1:] > cols[:-1]) |
                                     ((cols[1:] == cols[:-1]) & (rows[1:] > rows[:-1]))).all())
    if not (ordered and (vals != 0.0).all() and cols.size == np.count_nonzero(X)):
        raise ValueError("X's non-zero entries could not be listed (the library's nonzero "
                         "failed)")
    ptr = np.zeros(p + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=p), out=ptr[1:])
    return _CSC(ptr, rows, np.ascontiguousarray(vals, dtype=np.float64), (n, p))


def _as_format(X: np.ndarray | _CSC, x_format: str | None) -> np.ndarray | _CSC:
    """X in the form the certificate's hash is defined on: canonical CSC for a sparse
    certificate, dense (formed here: the verifier of a dense certificate reads X densely)
    otherwise."""
    if x_format == SPARSE_X_FORMAT:
        return X if isinstance(X, _CSC) else _dense_to_csc(X)
    return X.toarray() if isinstance(X, _CSC) else X


def _data_sha256(X: np.ndarray | _CSC) -> str:
    return csc_sha256(X) if isinstance(X, _CSC) else array_sha256(X)


def _gamma_array(m: np.ndarray) -> np.ndarray:
    """Floats >= gamma_m for an integer array m (m U and 1 - m U are exact in float64: the one
    rounded operation is the division, rounded up)."""
    m = np.asarray(m, dtype=np.int64)
    if m.size and int(m.max()) >= 2 ** 51:
        raise ValueError("problem too large for the error bounds")
    mu = m.astype(np.float64) * U
    return np.where(m > 0, _up(mu / (1.0 - mu)), 0.0)


class _SparseDesign:
    """A sparse X (canonical CSC) as the bounds use it, never centred: with an intercept every
    dual witness sums to exactly zero, so X^T zeta = (X - 1 m^T)^T zeta for any m, m = 0
    included (and a sparse certificate has no shifted witnesses). Column j's product is a dot
    product of nnz_j terms: |fl(X^T z)_j - (X^T z)_j| <= gamma_{nnz_j} ||X_j|| ||z|| + nnz_j ETA.
    """

    centred = False
    e = 0.0

    def __init__(self, X: _CSC, y: np.ndarray, loss: str, fit_intercept: bool,
                 huber_delta: float | None = None, extra: _Extras | None = None):
        self.X = X
        self.n, self.p = X.shape
        self.loss = loss
        self.delta = huber_delta
        ex = extra if extra is not None else _Extras()
        self.w, self.lo, self.hi = ex.w, ex.lo, ex.hi
        self.y = y
        self.o, self.yd, self.yr = _linear_target(y, self.n, loss, bool(fit_intercept), ex)
        self._counts = X.counts()
        self._coln = None

    @property
    def coln(self) -> np.ndarray:
        """Upper bounds of the column norms of X."""
        if self._coln is None:
            X = self.X
            sq = X.segment_sums(lambda a, b: X.data[a:b] * X.data[a:b])
            m = int(self._counts.max(initial=0))
            self._coln = _up(np.sqrt(_dot_self_up(sq, m)))
        return self._coln

    def times_xd(self, Z: np.ndarray) -> np.ndarray:
        """fl(Z X) (rows fl(X^T zeta)), by elementwise products and numpy's sums only."""
        X = self.X
        out = np.empty((Z.shape[0], self.p))
        for r in range(Z.shape[0]):
            z = Z[r]
            out[r] = X.segment_sums(lambda a, b, z=z: X.data[a:b] * z[X.indices[a:b]])
        return out

    def xt_ball_radius(self, nzc: np.ndarray, nzr: np.ndarray | float) -> np.ndarray:
        """Radius of X^T z around fl(X^T zc) for z in the ball (zc, zr), given nzc >= ||zc||
        and nzr >= ||zr|| (one row per z): ||X_j|| (gamma_{nnz_j} ||zc|| + ||zr||) + nnz_j ETA."""
        g = _gamma_array(self._counts)
        nzc = np.asarray(nzc, dtype=np.float64)
        nzr = np.broadcast_to(np.asarray(nzr, dtype=np.float64), nzc.shape)
        a = _up(_up(g[None, :] * nzc[:, None]) + nzr[:, None])
        return _up(_up(self.coln[None, :] * a) + self._counts[None, :] * ETA)


def _design_of(X: np.ndarray | _CSC, y: np.ndarray, loss: str, fit_intercept: bool,
               huber_delta: float | None = None, extra: _Extras | None = None):
    """The data as the bounds use them: :class:`_Design` or :class:`_SparseDesign`."""
    if isinstance(X, _CSC):
        return _SparseDesign(X, y, loss, fit_intercept, huber_delta, extra)
    return _Design(X, y, loss, fit_intercept, huber_delta, extra)


def _support_columns(X: np.ndarray | _CSC, S: np.ndarray) -> np.ndarray:
    """The columns S of X, dense."""
    return X.columns(S) if isinstance(X, _CSC) else X[:, S]


@dataclass
class _Terms:
    k_low: float  # lower bound of the constant part (-sum f* for a dual witness)
    lam: float  # the weight lambda' (a float <= the exact weight)
    h_up: np.ndarray  # upper bounds of H_M(a_j), a = -grad / (2 lambda')


def _huber_up(t: np.ndarray, M: float | None) -> np.ndarray:
    """Upper bound of H_M(t) for t >= 0 (exact floats; H is nondecreasing in t).

    A t that is not a number (an overflowing product X^T zeta computed as inf - inf, a radius
    inf * 0) gives +inf: it must rank as the largest term, never drop out of a top-beta sum."""
    t = np.where(np.isnan(t), np.inf, t)
    quad = _up(0.5 * _sq_up(t))
    if M is None:
        return quad
    half_m2 = max(float(_dn(0.5 * float(_dn(M * M)))), 0.0)
    lin = _up(_up(M * t) - half_m2)
    return np.where(t <= M, quad, lin)


def _abs_a_up(gc: np.ndarray, gr: np.ndarray, lam: float) -> np.ndarray:
    """Upper bound of |g| / (2 lam) for g in the ball (gc, gr)."""
    return _up(_up(np.abs(gc) + gr) / (2.0 * lam))


def _rows_dot(Z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """fl(Z v) by elementwise products and a sum per row (the error model; no BLAS)."""
    return (Z * v).sum(axis=1)


def _linear_part_up(Z: np.ndarray, des: _Design) -> np.ndarray:
    """Upper bound of the linear part ``sum_i y_i zeta_i`` of a quadratic conjugate for each
    row zeta of Z (``y``: the design's ``yd``, centred for the squared loss with an intercept,
    less the offset, with its rounding radius ``yr``)."""
    n = Z.shape[1]
    y = des.yd
    lin_c = _rows_dot(Z, y)
    # a sum that overflowed (or gave NaN) is no estimate: then there is no upper bound
    lin_c = np.where(np.isfinite(lin_c), lin_c, np.inf)
    s_abs = _sum_up(_up(np.abs(Z) * np.abs(y)[None, :]), axis=1)
    lin_r = _up(_up(_up(_gamma(n) * s_abs) + n * ETA)
                + _sum_up(_up(np.abs(Z) * des.yr[None, :]), axis=1))
    return _up(lin_c + lin_r)


def _conjugate_sum_up(loss: str, Z: np.ndarray, des: _Design) -> np.ndarray:
    """Upper bound of sum_i f*(zeta_i; y_i) for each row zeta of Z (inside the domain)."""
    y = des.yd
    if loss in ("squared", "squared_hinge", "huber"):  # z^2/4 + y z (inside the domain)
        q4 = _up(0.25 * _sum_up(_sq_up(Z), axis=1))
        return _up(q4 + _linear_part_up(Z, des))
    out = np.empty(Z.shape[0])
    for r in range(Z.shape[0]):
        z = Z[r]
        if loss == "logistic":
            v = _entropy_up(-y * z)  # t = -y zeta exact; in [0, 1] (domain checked)
        else:  # poisson: phi(w) = w log w - w, w = zeta + y >= 0 (checked), convex
            w = z + y
            ends = (np.maximum(_dn(w), 0.0), _up(w))
            v = np.maximum(_xlogx_minus_x_up(ends[0]), _xlogx_minus_x_up(ends[1]))
        out[r] = _signed_sum_up(v)
    return out


def _xlogx_minus_x_up(x: np.ndarray) -> np.ndarray:
    """Upper bound of x log x - x at exact floats x >= 0 (0 at x = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lx = np.log(x)
        v = _up(_up(x * _up(lx + _elem_radius(lx))) - x)
    return np.where(x > 0, v, 0.0)


# ----------------------------------------------------------------------------------------------
# The problem's extensions: sample weights, offsets, per-coefficient bounds, fixed features
# ----------------------------------------------------------------------------------------------

#: the losses whose conjugate is z^2/4 + y z on its domain (an offset joins the linear part)
_QUADRATIC_CONJUGATES = ("squared", "squared_hinge", "huber")


@dataclass
class _Extras:
    """What the problem adds to the plain one: per-sample weights w (None: all 1) and offsets o
    (None: all 0), every coefficient's bounds lo <= b <= hi (None: the symmetric box only), and
    the features forced in (z_j = 1, counted in k) and out (z_j = 0)."""

    w: np.ndarray | None = None
    o: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    forced_in: tuple[int, ...] = ()
    forced_out: tuple[int, ...] = ()


def _product_is_exact(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fl(a b), whether it equals the exact product a b): Dekker's error term is 0, the
    product is not below the range where that term is itself exact (or a factor is 0), and the
    splitting cannot overflow."""
    with np.errstate(all="ignore"):
        p, e = _two_prod(a, b)
    zero = (a == 0) | (b == 0)
    fine = (np.abs(a) < _SPLIT_MAX) & (np.abs(b) < _SPLIT_MAX) & (np.abs(p) >= _TINY)
    return p, zero | (fine & (e == 0) & np.isfinite(p))


def _linear_target(y: np.ndarray, n: int, loss: str, centred: bool, ex: _Extras
                   ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """``(o, yd, yr)`` of a design (dense or sparse): the offset term, the linear coefficient
    ``yd`` of the loss's conjugate and its rounding radius ``yr``.

    An offset o: f(u + o; y) has the conjugate f*(z; y) - z o. For the losses whose conjugate
    is z^2/4 + y z (in its domain) it goes into the linear coefficient y - o (``o`` is then
    None); for the others it is a term of its own (``o``). For least squares with an intercept
    y enters linearly and is centred too (any centre works: only its rounding, and that of
    y - o, adds to ``yr``)."""
    o = ex.o
    y_lin, y_rad = y, None
    if ex.o is not None and loss in _QUADRATIC_CONJUGATES:
        y_lin = y - ex.o
        y_rad = _up(U * np.abs(y_lin))
        o = None
    if loss == "squared" and centred:
        yd = y_lin - (y_lin.mean() if ex.w is None else (ex.w @ y_lin) / ex.w.sum())
        yr = _up(_CENTRE_ERR * np.abs(yd))
        if y_rad is not None:
            yr = _up(yr + y_rad)
        return o, yd, yr
    if y_rad is not None:
        return o, y_lin, y_rad
    return o, y, np.zeros(n)


def _weighted_dual_problem(loss: str, z: np.ndarray, y: np.ndarray, w: np.ndarray,
                           zero_sum: bool, huber_delta: float | None = None) -> str | None:
    """None if zeta is in the domain of sum_i w_i f*(zeta_i / w_i; y_i) (the conjugate of
    w f is w f*(. / w) for w > 0 and the indicator of {0} for w = 0), checked exactly or by a
    sufficient condition, and, when required, sums to exactly 0."""
    if not np.isfinite(z).all():
        return "is not finite"
    zero = w == 0
    bad = np.flatnonzero(zero & (z != 0))
    if bad.size:
        i = int(bad[0])
        return (f"has zeta[{i}] = {z[i]!r} where sample_weight[{i}] = 0 (the conjugate of a "
                "zero-weight term is 0 at 0 only)")
    if loss == "squared":
        ok = np.ones(z.shape, dtype=bool)
    elif loss == "logistic":  # t = -y zeta / w in [0, 1]: 0 <= -y zeta <= w (exact)
        t = -y * z
        ok = (t >= 0) & (t <= w)
    elif loss == "squared_hinge":  # y zeta <= 0 (exact)
        ok = y * z <= 0
    elif loss == "huber":  # |zeta| <= 2 (delta w): delta w exactly or rounded down, then
        # doubled (exact in binary; an overflow to inf means 2 delta w is above every float).
        # Not fl(2 delta) w: 2 delta overflows for delta above half the largest float, and
        # inf * w would admit every finite zeta whatever the weight
        p, exact = _product_is_exact(np.full(w.shape, _huber_delta(huber_delta)), w)
        with np.errstate(over="ignore"):
            ok = np.abs(z) <= 2.0 * np.where(exact, p, np.maximum(_dn(p), 0.0))
    elif loss == "poisson":  # zeta + w y >= 0: exactly, or above -fl(w y) rounded up
        p, exact = _product_is_exact(w, y)
        ok = z >= np.where(exact, -p, _up(-p))
    else:
        raise ValueError(f"unknown loss {loss!r}")
    bad = np.flatnonzero(~(ok | zero))
    if bad.size:
        i = int(bad[0])
        return (f"has zeta[{i}] = {z[i]!r} outside the domain of the weighted {loss} conjugate "
                f"(sample_weight[{i}] = {w[i]!r})")
    if zero_sum and not _sums_to_zero(z):
        return ("does not sum to exactly 0 (math.fsum, exact), as the unpenalised intercept "
                "requires")
    return None


def _entropy_up(t: np.ndarray) -> np.ndarray:
    """Upper bound of t log t + (1 - t) log(1 - t) at exact floats t in [0, 1]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lt = np.log(t)
        l1 = np.log1p(-t)
    a = np.where(t > 0, _up(t * _up(lt + _elem_radius(lt))), 0.0)
    w = 1.0 - t
    w_lo, w_hi = np.maximum(_dn(w), 0.0), _up(w)
    l1_hi = _up(l1 + _elem_radius(l1))
    b = np.where(t < 1, np.maximum(_up(w_lo * l1_hi), _up(w_hi * l1_hi)), 0.0)
    return _up(a + b)


def _conjugate_sum_up_weighted(loss: str, Z: np.ndarray, des: _Design) -> np.ndarray:
    """Upper bound of sum_i w_i f*(zeta_i / w_i; y_i) for each row zeta of Z (inside the
    domain, zeta_i = 0 where w_i = 0, whose term is 0)."""
    w = des.w
    pos = w > 0
    ws = np.where(pos, w, 1.0)  # (no division by 0: those terms are 0)
    y = des.yd
    if loss in _QUADRATIC_CONJUGATES:  # zeta^2 / (4 w) + y zeta
        q = np.where(pos[None, :], _up(_up(0.25 * _sq_up(Z)) / ws[None, :]), 0.0)
        q4 = _sum_up(q, axis=1)
        return _up(q4 + _linear_part_up(Z, des))
    out = np.empty(Z.shape[0])
    for r in range(Z.shape[0]):
        z = Z[r]
        if loss == "logistic":  # w phi(t), t = -y zeta / w in [0, 1], phi convex and <= 0
            t = (-y * z) / ws
            ends = (np.clip(_dn(t), 0.0, 1.0), np.clip(_up(t), 0.0, 1.0))
            v = np.maximum(_entropy_up(ends[0]), _entropy_up(ends[1]))
        else:  # poisson: w psi(x), x = zeta / w + y >= 0, psi(x) = x log x - x convex
            q = z / ws
            ends = (np.maximum(_dn(_dn(q) + y), 0.0), np.maximum(_up(_up(q) + y), 0.0))
            v = np.maximum(_xlogx_minus_x_up(ends[0]), _xlogx_minus_x_up(ends[1]))
        out[r] = _signed_sum_up(np.where(pos, _up(w * v), 0.0))
    return out


def _offset_dot_dn(Z: np.ndarray, o: np.ndarray) -> np.ndarray:
    """Lower bound of o^T zeta for each row zeta of Z (-inf where the sum is not finite)."""
    n = Z.shape[1]
    s = _rows_dot(Z, o)
    err = _up(_up(_gamma(n) * _sum_up(_up(np.abs(Z) * np.abs(o)[None, :]), axis=1)) + n * ETA)
    lo = _dn(s - err)
    return np.where(np.isfinite(lo), lo, -np.inf)


def _huber_up_vec(t: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Upper bound of the one-sided Huber term (t^2/2 if t <= B, else B t - B^2/2) for exact
    floats t >= 0 and bounds B >= 0 (inf allowed): nondecreasing in t. NaN gives +inf."""
    t = np.where(np.isnan(t), np.inf, t)
    with np.errstate(all="ignore"):
        quad = _up(0.5 * _sq_up(t))
        half_b2 = np.maximum(_dn(0.5 * _dn(B * B)), 0.0)
        lin = _up(_up(B * t) - half_b2)
        return np.where(t <= B, quad, np.where(np.isnan(lin), np.inf, lin))


def _bounded_terms_up(gc: np.ndarray, gr: np.ndarray, lam: float, lo: np.ndarray,
                      hi: np.ndarray) -> np.ndarray:
    """Upper bounds of H_j(a_j) = sup_{b in [lo_j, hi_j]} (a_j b - b^2/2) with a = -g / (2 lam)
    for g in the ball (gc, gr): H_j is convex with its minimum 0 at 0 (lo_j <= 0 <= hi_j), so
    its maximum over a's interval is at an end, t^2/2 up to the bound on that side, linear
    beyond."""
    with np.errstate(all="ignore"):
        a_hi = _up(_up(-gc + gr) / (2.0 * lam))
        a_lo = _dn(_dn(-gc - gr) / (2.0 * lam))
        up_side = _huber_up_vec(np.where(np.isnan(a_hi), np.nan, np.maximum(a_hi, 0.0)), hi)
        dn_side = _huber_up_vec(np.where(np.isnan(a_lo), np.nan, np.maximum(-a_lo, 0.0)), -lo)
    return np.maximum(up_side, dn_side)


def _dual_terms(des: _Design, Z: np.ndarray, lam: float, M: float | None) -> list[_Terms]:
    """Terms of dual witnesses (rows of Z; domain and zero sum already checked)."""
    if des.w is None:
        C = _conjugate_sum_up(des.loss, Z, des)
    else:
        C = _conjugate_sum_up_weighted(des.loss, Z, des)
    K = -C
    if des.o is not None:  # + o^T zeta (the offset's part of the conjugate), from below
        K = _dn(K + _offset_dot_dn(Z, des.o))
    G = des.times_xd(Z)  # fl(Xd^T zeta), one row per witness (NaN: the product failed its check)
    R = des.xt_ball_radius(_norm_up(Z, axis=1), np.zeros(Z.shape[0]))
    out = []
    for r in range(Z.shape[0]):
        if des.lo is None:
            h = _huber_up(_abs_a_up(G[r], R[r], lam), M)
        else:
            h = _bounded_terms_up(G[r], R[r], lam, des.lo, des.hi)
        k_low = float(K[r]) if not np.isnan(K[r]) else -math.inf
        out.append(_Terms(k_low=k_low, lam=lam, h_up=h))
    return out


def _shifted_terms(des: _Design, B: np.ndarray, lam2: float, mu: float,
                   M: float | None) -> list[_Terms]:
    """Terms of shifted witnesses b~ (rows of B), squared loss, proven shift mu > 0.

    With Q = X^T P X - mu I PSD (P = I, or the centring projector with an intercept), for all b:
    ||P(y - Xb)||^2 - mu ||b||^2 >= ||Py||^2 - ||u~||^2 + mu ||b~||^2 + s.b with u~ = P X b~,
    s = 2 X^T P (X b~ - y) - 2 mu b~; the bound uses the weight lambda' = lambda2 + mu rounded
    down (a smaller weight only weakens the bound).
    """
    if des.w is not None:
        return _shifted_terms_weighted(des, B, lam2, mu, M)
    n, p = des.n, des.p
    lamp = float(_dn(lam2 + mu))
    out = []
    V = des.times_xdt(B)  # fl(Xd b~), one row per witness (NaN: failed its check)
    bn = _norm_up(B, axis=1)
    gpe = _up(_gamma(p) + des.e)
    yc, yr = des.yd, des.yr
    # ||P y||^2 (lower bound)
    if des.centred:
        sy = _up(_up(abs(float(yc.sum())) + _up(_gamma(n - 1) * _sum_up(np.abs(yc))))
                 + _sum_up(yr))
        py2_low = float(_dn(_sum_dn(_sq_dn(np.maximum(_dn(np.abs(yc) - yr), 0.0)))
                            - _up(_sq_up(sy) / n)))
    else:
        py2_low = float(_sum_dn(_sq_dn(yc)))
    Wc, Wr = np.empty((B.shape[0], n)), np.empty((B.shape[0], n))
    pv2_up = np.empty(B.shape[0])
    for r in range(B.shape[0]):
        vc = V[r]
        vr = _up(_up(des.rown * _up(gpe * bn[r])) + p * ETA)
        vv_up = _sum_up(_sq_up(_up(np.abs(vc) + vr)))
        if des.centred:
            s_c = float(vc.sum())
            s_r = float(_up(_sum_up(vr) + _up(_gamma(n - 1) * _sum_up(np.abs(vc)))))
            s_lo = max(float(_dn(abs(s_c) - s_r)), 0.0)
            pv2_up[r] = _up(vv_up - max(float(_dn(_sq_dn(s_lo) / n)), 0.0))
        else:
            pv2_up[r] = vv_up
        dc = vc - yc
        dr = _up(_up(vr + yr) + _up(U * np.abs(dc)))
        if des.centred:
            sdc = float(dc.sum())
            sdr = float(_up(_sum_up(dr) + _up(_gamma(n - 1) * _sum_up(np.abs(dc)))))
            mdc = sdc / n
            mdr = float(_up(_up(sdr / n) + _up(_up(U * abs(mdc)) + ETA)))
            wc = dc - mdc
            wr = _up(_up(dr + mdr) + _up(U * np.abs(wc)))
        else:
            wc, wr = dc, dr
        Wc[r], Wr[r] = wc, wr
    Gc = des.times_xd(Wc)  # fl(Xd^T w)
    Gr = des.xt_ball_radius(_norm_up(Wc, axis=1), _norm_up(Wr, axis=1))
    for r in range(B.shape[0]):
        k_low, h = _shifted_row_terms(des, B[r], (Gc[r], Gr[r]), mu, lamp, M, py2_low, pv2_up[r])
        out.append(_Terms(k_low=k_low, lam=lamp, h_up=h))
    return out


def _shifted_row_terms(des: _Design, b: np.ndarray, g: tuple, mu: float, lamp: float,
                       M: float | None, py2_low: float, pv2_up: float) -> tuple:
    """``(k_low, h_up)`` of one shifted witness b~ from ``g``, the ball (centre, radius) of
    X^T Q (v - y), a lower bound of y^T Q y and an upper bound of v^T Q v: s = 2 g - 2 mu b~
    enclosed, ``h_up`` the upper bounds of the terms of s at lam' (the box's Huber terms or the
    per-coefficient bounds'), ``k_low`` = y^T Q y - v^T Q v + mu ||b~||^2 rounded down."""
    gc, gr = g
    t2 = (2.0 * mu) * b
    sc = 2.0 * gc - t2
    sr = _up(_up(2.0 * gr) + _up(_up(_up(U * np.abs(t2)) + ETA) + _up(U * np.abs(sc))))
    h = (_huber_up(_abs_a_up(sc, sr, lamp), M) if des.lo is None else
         _bounded_terms_up(sc, sr, lamp, des.lo, des.hi))
    mb_low = float(np.maximum(_dn(mu * _sum_dn(_sq_dn(b))), 0.0))
    return float(_dn(_dn(py2_low - pv2_up) + mb_low)), h


def _shifted_terms_weighted(des: _Design, B: np.ndarray, lam2: float, mu: float,
                            M: float | None) -> list[_Terms]:
    """Terms of shifted witnesses b~ (rows of B) of the weighted squared loss, with Q = W (no
    intercept) or W - w w^T / sum(w) (Q 1 = 0), X^T Q X - mu I PSD (proven): for all b,
    (y - Xb)^T Q (y - Xb) - mu ||b||^2 >= y^T Q y - v^T Q v + mu ||b~||^2 + s.b with v = X b~
    and s = 2 X^T Q (v - y) - 2 mu b~, where Q d = w * (d - (w^T d / sum(w)) 1). (y is y - o
    with an offset; every vector may be taken centred, Q annihilating 1.)"""
    n, p = des.n, des.p
    w = des.w
    lamp = float(_dn(lam2 + mu))
    V = des.times_xdt(B)  # fl(Xd b~), one row per witness (NaN: failed its check)
    bn = _norm_up(B, axis=1)
    gpe = _up(_gamma(p) + des.e)
    yc, yr = des.yd, des.yr
    w_hi, w_lo = float(_sum_up(w)), float(_sum_dn(w))
    cen = des.centred
    if cen and not w_lo > 0:
        return [_Terms(k_low=-math.inf, lam=lamp, h_up=np.full(p, np.inf))
                for _ in range(B.shape[0])]

    def wsum_ball(c: np.ndarray, r: np.ndarray) -> tuple[float, float]:
        """(fl(w^T c), radius) of w^T x for x in the ball (c, r)."""
        t = w * c
        s_c = float(t.sum())
        s_r = float(_up(_up(_up(_gamma(n) * _sum_up(_up(np.abs(t)))) + n * ETA)
                        + _sum_up(_up(w * r))))
        return s_c, s_r

    def quad_hi(c: np.ndarray, r: np.ndarray) -> float:
        """Upper bound of x^T Q x over the ball (c, r)."""
        ww = float(_sum_up(_up(w * _sq_up(_up(np.abs(c) + r)))))
        if not cen:
            return ww
        s_c, s_r = wsum_ball(c, r)
        s_lo = max(float(_dn(abs(s_c) - s_r)), 0.0)
        return float(_up(ww - max(float(_dn(_sq_dn(s_lo) / w_hi)), 0.0)))

    def quad_lo(c: np.ndarray, r: np.ndarray) -> float:
        """Lower bound of x^T Q x over the ball (c, r)."""
        ww = float(_sum_dn(_dn(w * _sq_dn(np.maximum(_dn(np.abs(c) - r), 0.0)))))
        ww = max(ww, 0.0)
        if not cen:
            return ww
        s_c, s_r = wsum_ball(c, r)
        s_hi = float(_up(abs(s_c) + s_r))
        return float(_dn(ww - float(_up(_sq_up(s_hi) / w_lo))))

    py2_low = quad_lo(yc, yr)
    out_k, Ec, Er = [], np.empty((B.shape[0], n)), np.empty((B.shape[0], n))
    for r in range(B.shape[0]):
        vc = V[r]
        vr = _up(_up(des.rown * _up(gpe * bn[r])) + p * ETA)
        pv2_up = quad_hi(vc, vr)
        dc = vc - yc
        dr = _up(_up(vr + yr) + _up(U * np.abs(dc)))
        if cen:  # md = w^T d / sum(w), as a ball (numerator and denominator enclosed)
            s_c, s_r = wsum_ball(dc, dr)
            w_c = float(w.sum())
            mdc = s_c / w_c
            mdr = float(_up(_up(_up(s_r / w_lo) + _up(abs(s_c) * _up(_up(w_hi - w_lo) / _dn(
                w_lo * w_lo)))) + _up(_up(U * abs(mdc)) + ETA)))
            gc = dc - mdc
            gr = _up(_up(dr + mdr) + _up(U * np.abs(gc)))
        else:
            gc, gr = dc, dr
        ec = w * gc
        er = _up(_up(w * gr) + _up(_up(U * np.abs(ec)) + ETA))
        Ec[r], Er[r] = ec, er
        out_k.append(pv2_up)
    Gc = des.times_xd(Ec)  # fl(Xd^T Q d)
    Gr = des.xt_ball_radius(_norm_up(Ec, axis=1), _norm_up(Er, axis=1))
    out = []
    for r in range(B.shape[0]):
        k_low, h = _shifted_row_terms(des, B[r], (Gc[r], Gr[r]), mu, lamp, M, py2_low, out_k[r])
        out.append(_Terms(k_low=k_low if not math.isnan(k_low) else -math.inf, lam=lamp,
                          h_up=h))
    return out


def _g_star_up(h: np.ndarray, state: np.ndarray, k: int) -> float:
    """Upper bound of g*_node = sum_{S1} H + (sum of the budget largest H over the free set).

    ``state``: 0 free, 1 fixed in (S1), 2 fixed out (S0)."""
    s1 = state == 1
    free = state == 0
    budget = k - int(s1.sum())
    total = float(_sum_up(h[s1])) if s1.any() else 0.0
    hf = h[free]
    if budget > 0 and hf.size:
        total = float(_up(total + _top_sum_up(hf, budget)))
    return total


def _top_sum_up(hf: np.ndarray, budget: int) -> float:
    """Upper bound of the sum of the ``budget`` largest entries of hf (no NaN; inf allowed).

    The library's selection (``np.partition``) only proposes the threshold theta, the
    budget-th largest value; the code here checks it, #{h > theta} <= budget <= #{h >= theta},
    and sums the entries above theta plus (budget - #{h > theta}) copies of theta. A wrong
    selection fails the check and gives +inf (no bound)."""
    if budget >= hf.size:
        return float(_sum_up(hf))
    if np.isnan(hf).any():
        return math.inf
    part = np.partition(hf, hf.size - budget)
    try:
        theta = float(part[hf.size - budget])
    except (IndexError, TypeError, ValueError):
        return math.inf
    above = hf > theta
    n_above = int(above.sum())
    if not n_above <= budget <= int((hf >= theta).sum()):
        return math.inf
    total = float(_sum_up(hf[above])) if n_above else 0.0
    if budget > n_above:
        total = float(_up(total + float(_up((budget - n_above) * theta))))
    return total


def _region_bound(t: _Terms, g_up: float) -> float:
    """Lower bound K - 2 lam g* of one region (-inf if anything is not finite)."""
    v = float(_dn(t.k_low - float(_up(2.0 * t.lam * g_up))))
    return v if math.isfinite(v) else -math.inf


def _region_bounds(t: _Terms, g_up: np.ndarray) -> np.ndarray:
    """:func:`_region_bound` elementwise (-inf where anything is not finite)."""
    with np.errstate(all="ignore"):
        v = _dn(t.k_low - _up(2.0 * t.lam * np.asarray(g_up, dtype=np.float64)))
    return np.where(np.isfinite(v), v, -math.inf)


def _free_region_bounds(t: _Terms, state: np.ndarray, k: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The bounds of the two regions of every free variable of a node (section 4.4), from one
    checked sort of the free Huber terms: ``(free variables, bound of {z_j = 1}, bound of
    {z_j = 0})``, each region bounded with the node's fixings (``state``: 0 free, 1 in, 2 out)
    plus j. A region that puts more than k variables in S1 is empty: bound +inf. None when
    the library's sort fails its check (no bound for any of them).

    With the free terms h in decreasing order and T_m an upper bound of the sum of the m
    largest (the exact sum of m nonnegative floats is at most fl(sum) / (1 - gamma_{m-1})):
    region z_j = 1 has g* = sum_{S1} h + (T_beta if rank(j) <= beta - 2 else h_j + T_{beta-1}),
    region z_j = 0 has g* = sum_{S1} h + (T_{beta+1} - h_j if rank(j) <= beta - 1 else T_beta).
    """
    h = t.h_up
    s1 = state == 1
    free_idx = np.flatnonzero(state == 0)
    budget = k - int(np.count_nonzero(s1))
    hs1 = float(_sum_up(h[s1])) if s1.any() else 0.0
    hf = h[free_idx]
    m = hf.size
    order = _checked_descending_order(hf)
    if order is None:  # the library's sort failed its check: no bound
        return None
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)
    hs = hf[order]

    def top(q: int) -> float:
        q = min(max(q, 0), m)
        if q == 0:
            return 0.0
        return float(_up(float(hs[:q].sum()) * _sum_up_factor(q)))

    with np.errstate(all="ignore"):
        t_b = top(budget)
        if budget >= 1:
            g_in = np.where(rank <= budget - 2, t_b, _up(hf + top(budget - 1)))
            b_in = _region_bounds(t, _up(hs1 + g_in))
        else:  # z_j = 1 would put more than k variables in S1: an empty region
            b_in = np.full(m, math.inf)
        g_out = np.where(rank <= budget - 1, _up(top(budget + 1) - hf), t_b)
        b_out = _region_bounds(t, _up(hs1 + g_out))
    return free_idx, b_in, b_out


def _fixing_bounds(t: _Terms, state: np.ndarray, k: int,
                   fixings: list[tuple[int, int]]) -> list[float]:
    """Bounds of the regions {z_j = 1 - v} of the given (j, v) (each j free at the node), from
    :func:`_free_region_bounds` (the regions the verifier derives its bound fixings from)."""
    regions = _free_region_bounds(t, state, k)
    if regions is None:
        return [-math.inf] * len(fixings)
    free_idx, b_in, b_out = regions
    pos = np.full(state.size, -1, dtype=np.int64)
    pos[free_idx] = np.arange(free_idx.size)
    return [float(b_in[pos[j]] if v == 0 else b_out[pos[j]]) for j, v in fixings]


def _checked_descending_order(hf: np.ndarray) -> np.ndarray | None:
    """The library's sort (``np.argsort``) of hf in decreasing order, checked to be a
    permutation of the indices along which hf does not increase; None if it is not."""
    m = hf.size
    if np.isnan(hf).any():
        return None
    order = np.asarray(np.argsort(-hf, kind="stable"))
    if order.shape != (m,) or order.dtype.kind not in "iu":
        return None
    if m == 0:
        return order.astype(np.int64)
    if order.min() < 0 or order.max() >= m:
        return None
    seen = np.zeros(m, dtype=bool)
    seen[order] = True
    hs = hf[order]
    if not (seen.all() and (hs[:-1] >= hs[1:]).all()):
        return None
    return order.astype(np.int64)


@dataclass(frozen=True)
class Problem:
    """The problem a bound of :func:`node_lower_bound` or :func:`objective_upper_bound` is
    about: ``min sum_i w_i f(x_i^T b + c + o_i, y_i) + lambda2 ||b||^2`` with ``||b||_0 <= k``
    and ``|b_j| <= max_abs_coef`` (None or inf: no box), ``coef_lower <= b <= coef_upper``
    (None: the box alone), ``c = 0`` unless ``fit_intercept``; ``huber_delta`` is the Huber
    loss's threshold (that loss only); ``sample_weight`` and ``offset`` None mean all 1 and
    all 0. ``k`` is not needed by :func:`objective_upper_bound`."""

    loss: str
    lambda2: float
    k: int | None = None
    max_abs_coef: float | None = None
    fit_intercept: bool = False
    huber_delta: float | None = None
    sample_weight: Any = None
    offset: Any = None
    coef_lower: Any = None
    coef_upper: Any = None


def node_lower_bound(X: np.ndarray, y: np.ndarray, problem: Problem, fixed_in: Iterable[int],
                     fixed_out: Iterable[int], witness: tuple[str, np.ndarray],
                     eig_shift: float = 0.0) -> float:
    """Rigorous lower bound of a node's optimum from one witness (the verifier's formula).

    Parameters
    ----------
    X, y : the raw data (labels of classification losses already -1/+1).
    problem : the problem (its ``k`` given).
    fixed_in, fixed_out : the features the node fixes in (z_j = 1) and out (z_j = 0).
    witness : ("dual", zeta) with zeta of length n, or ("shifted", b) with b of length p.
    eig_shift : mu (shifted witnesses only; the caller must have proven X^T P X - mu I PSD).

    Returns
    -------
    float
        A lower bound, valid in exact arithmetic, of min F over the node's supports; ``-inf``
        when the witness is outside the domain, breaks the zero sum, or overflows.
    """
    loss, k, lambda2, max_abs_coef = problem.loss, problem.k, problem.lambda2, \
        problem.max_abs_coef
    fit_intercept, huber_delta = problem.fit_intercept, problem.huber_delta
    sample_weight, offset = problem.sample_weight, problem.offset
    coef_lower, coef_upper = problem.coef_lower, problem.coef_upper
    X = _sparse_input(X) if _is_sparse_input(X) else np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    M = None if max_abs_coef is None or math.isinf(max_abs_coef) else float(max_abs_coef)
    extra = _Extras()
    if sample_weight is not None:
        extra.w = np.asarray(sample_weight, dtype=np.float64)
    if offset is not None:
        extra.o = np.asarray(offset, dtype=np.float64)
    if coef_lower is not None:
        box = math.inf if M is None else M
        extra.lo = np.maximum(np.asarray(coef_lower, dtype=np.float64), -box)
        extra.hi = np.minimum(np.asarray(coef_upper, dtype=np.float64), box)
    des = _design_of(X, y, loss, fit_intercept, huber_delta, extra)
    state = np.zeros(des.p, dtype=np.int8)
    state[list(fixed_out)] = 2
    state[list(fixed_in)] = 1
    kind, vec = witness
    vec = np.asarray(vec, dtype=np.float64)[None, :]
    with np.errstate(all="ignore"):
        if kind == "dual":
            problem = (_dual_problem(loss, vec[0], y, fit_intercept, huber_delta)
                       if extra.w is None else
                       _weighted_dual_problem(loss, vec[0], y, extra.w, fit_intercept,
                                              huber_delta))
            if problem is not None:
                return -math.inf
            terms = _dual_terms(des, vec, float(lambda2), M)[0]
        elif kind == "shifted":
            if isinstance(des, _SparseDesign):  # no shift with a sparse X
                return -math.inf
            terms = _shifted_terms(des, vec, float(lambda2), float(eig_shift), M)[0]
        else:
            raise ValueError(f"unknown witness kind {kind!r}")
        return _region_bound(terms, _g_star_up(terms.h_up, state, int(k)))


def _dual_problem(loss: str, z: np.ndarray, y: np.ndarray, zero_sum: bool,
                  huber_delta: float | None = None) -> str | None:
    """None if zeta is in dom f* (exact comparisons) and, when required, sums to exactly 0."""
    if not np.isfinite(z).all():
        return "is not finite"
    lo, hi = dual_domain_bounds(loss, y, huber_delta)
    bad = np.flatnonzero(~((z >= lo) & (z <= hi)))
    if bad.size:
        i = int(bad[0])
        return f"has zeta[{i}] = {z[i]!r} outside the domain of the {loss} conjugate"
    if zero_sum and not _sums_to_zero(z):
        return ("does not sum to exactly 0 (math.fsum, exact), as the unpenalised intercept "
                "requires")
    return None


def _sums_to_zero(z: np.ndarray) -> bool:
    """Whether the exact sum of the float64 entries is 0. ``math.fsum`` is correctly rounded,
    so its result is 0 iff the exact sum is; it raises OverflowError when a partial sum
    overflows (e.g. 1e308 + 1e308 - 1e308 - 1e308), and then the sum is taken exactly with
    integers (every finite float64 is an integer multiple of 2^-1074)."""
    vals = z.tolist()
    try:
        return math.fsum(vals) == 0.0
    except OverflowError:
        total = 0
        for v in vals:
            num, den = v.as_integer_ratio()
            total += num * ((1 << 1074) // den)
        return total == 0


# ----------------------------------------------------------------------------------------------
# The eigenvalue shift: a positive-definiteness proof valid in floating point
# ----------------------------------------------------------------------------------------------


#: The largest number of features for which the verifier attempts the eigenvalue-shift proof
#: (section 5): it holds about three p x p float64 matrices (9.6 GB at this limit). A shift needs
#: p <= n - fit_intercept anyway, so below the limit these matrices are at most three times X.
SHIFT_MAX_FEATURES = 20_000


def shift_refusal(n: int, p: int, mu: float, fit_intercept: bool) -> str | None:
    """Why a shift mu > 0 can never be proven for data of this size (one line), or None.

    Decided from the sizes alone, before anything of size p x p is formed: X^T P X has rank at
    most n - fit_intercept (P = I - 11^T/n has rank n - 1), so with more features its smallest
    eigenvalue is 0 and no positive shift is true; above :data:`SHIFT_MAX_FEATURES` the proof
    is not attempted (bounded memory)."""
    if not (mu > 0 and math.isfinite(mu)):
        return f"eig_shift = {mu!r} is not a positive finite number"
    rank = n - 1 if fit_intercept else n
    if p > rank:
        return (f"eig_shift = {mu!r} > 0 can never be proven here: X^T P X has rank at most "
                f"{rank} (n{' - 1 with an intercept' if fit_intercept else ''}) < p = {p}, so "
                "its smallest eigenvalue is 0 (use dual witnesses, eig_shift = 0)")
    if p > SHIFT_MAX_FEATURES:
        return (f"eig_shift > 0 with p = {p} features: the verifier proves a shift for at most "
                f"{SHIFT_MAX_FEATURES} features (bounded memory; use dual witnesses, "
                "eig_shift = 0)")
    if 4 * (p + 2) * U >= 1 or (n + 2) * U >= 0.25:
        return "problem too large for the floating-point error bounds"
    return None


def _symmetrise_from_upper(G: np.ndarray) -> None:
    """Copy the upper triangle of the square G onto its lower one, in place, by row blocks."""
    p = G.shape[0]
    for b in _row_blocks(p, p):
        G[b, :b.start] = G[:b.start, b].T
        blk = G[b, b].copy()
        G[b, b] = np.triu(blk) + np.triu(blk, 1).T


def _cholesky_problem(A: np.ndarray, L: Any, under: float) -> str | None:
    """Why ``L``, returned by the library's Cholesky factorisation of the symmetric A without an
    error, is not the floating-point factor Rump's criterion needs (None if it is).

    Checked here: the factor is a finite p x p float64 matrix (its lower triangle is used) whose
    diagonal is positive: a pivot that is NaN or infinite compares false with 0 and passes
    OpenBLAS's test, so "no exception" proves nothing. And it reproduces A as a floating-point
    Cholesky factorisation in any order (with a reciprocal) does, L L^T = A + E with |E| <=
    gamma_{p+1} |L||L^T| + (underflow): A is checked against the product L L^T in the projection
    of :func:`_product_rows_ok` (O(p^2), no BLAS), with the underflow term of Rump's constant as
    its absolute slack. The factor of another matrix, the identity or a scaled factor fails."""
    p = A.shape[0]
    L = np.asarray(L)
    if L.shape != A.shape or L.dtype != np.float64:
        return "is not a p x p float64 matrix"
    if not L.flags.writeable:
        L = np.array(L)
    cols = np.arange(p)
    for b in _row_blocks(p, p):  # the lower triangle is the factor
        rows = np.arange(b.start, b.stop)
        L[b] = np.where(cols[None, :] > rows[:, None], 0.0, L[b])
        if not np.isfinite(L[b]).all():
            return ("has NaN or infinite entries (a pivot that is not a number passed the "
                    "library's test)")
    if not (np.diagonal(L) > 0).all():
        return "has a diagonal entry <= 0"
    if not _product_rows_ok(L, L.T, A, extra=float(_up(2.0 * under))).all():
        return ("does not reproduce the matrix (L L^T - A exceeds the backward error of a "
                "floating-point Cholesky factorisation)")
    return None


def proves_eig_shift(X: np.ndarray, mu: float, fit_intercept: bool) -> tuple[bool, str]:
    """Prove that X^T P X - mu I is positive definite (P = I, or I - 11^T/n with an intercept).

    A = X^T P X - mu I >= G - tau I, where G = fl(Xd^T Xd) is the computed Gram matrix of the
    (centred) design and tau = mu + gamma_n ||Xd||_F^2 + n p ETA (Gram rounding) + (2e + e^2)
    ||Xd||_F^2 (centring rounding) + sum_j s_j^2 / n (the rank-one term n m' m'^T, m' the exact
    column means of X - 1m^T). Then S. M. Rump, "Verification of positive definiteness", BIT 46
    (2006), Corollary 2.4: for a symmetric floating-point A' with nonnegative diagonal, if the
    floating-point Cholesky factorisation of A~ (A~_ij = A'_ij off the diagonal, A~_ii <= A'_ii -
    c) runs to completion, where c >= gamma_{2(N+1)} tr(A') / 2 + 4 ETA N (2(N+1) + max_i A'_ii),
    then A' is positive definite. Here A' has off-diagonal G and diagonal <= G_ii - tau, and the
    constant is taken with N = p + 1 (one extra rounding per entry of the factor: a library may
    divide through a computed reciprocal).

    No library result is taken on trust: what can never be proven is refused from the sizes
    first (:func:`shift_refusal`); the design, the Gram matrix (also checked as a product),
    tau, the trace and c must be finite; and "runs to completion" is checked on the factor the
    library returns (:func:`_cholesky_problem`), not read from the absence of an exception.
    """
    n, p = X.shape
    reason = shift_refusal(n, p, mu, fit_intercept)
    if reason is not None:
        return False, reason
    with np.errstate(all="ignore"):
        Xd = X - X.mean(axis=0) if fit_intercept else X
        e = _CENTRE_ERR if fit_intercept else 0.0
        if not _all_finite(Xd):
            return False, "the centred design X - 1 m^T overflows"
        col2 = _dot_self_up(_squares_sum(Xd, 0), n)  # >= ||Xd_j||^2
        # ||P x_j||^2 <= ||x_j - m||^2 <= ||Xd_j||^2 (1 + e)^2 is a diagonal entry of X^T P X,
        # at least its smallest eigenvalue: a shift above it is refused before the Gram matrix
        reason = _diagonal_refusal(col2, e, mu, "squared norm", "X^T P X")
        if reason is not None:
            return False, reason
        fro2 = float(_sum_up(col2))
        gram_err = _up(_up(_gamma(n) * fro2) + float(n) * float(p) * ETA)
        cen_err = _up(_up(2.0 * e + e * e) * fro2)
        tau = _up(_up(mu + gram_err) + cen_err)
        if fit_intercept:
            colsum = np.abs(Xd.sum(axis=0))
            colabs = _sum_up(np.abs(Xd), axis=0)
            s = _up(_up(colsum + _up(_gamma(n - 1) * colabs)) + _up(e * colabs))
            tau = _up(tau + _up(_sum_up(_sq_up(s)) / n))
        return _gram_shift_test(Xd, Xd, fro2, tau, mu)


def _all_finite(A: np.ndarray) -> bool:
    """Whether every entry of the 2-D array A is finite (checked a block of rows at a time)."""
    return all(np.isfinite(A[b]).all() for b in _row_blocks(*A.shape))


def _diagonal_refusal(col: np.ndarray, e: float, mu: float, norm: str, gram: str) -> str | None:
    """Why a shift ``mu`` is refused outright, or None: some column's ``norm`` (upper bounds
    ``col``, times the centring's (1 + e)^2) is at most mu, and it bounds a diagonal entry of
    the matrix ``gram``, hence its smallest eigenvalue, from above."""
    diag_up = _up(col * float(_up(_up(1.0 + e) * _up(1.0 + e))))
    if not (diag_up <= mu).any():
        return None
    j = int(np.flatnonzero(diag_up <= mu)[0])
    return (f"eig_shift = {mu!r} is at least the {norm} of column {j} (<= "
            f"{float(diag_up[j]):.6g}), a diagonal entry of {gram}: it exceeds the smallest "
            "eigenvalue")


def _gram_shift_test(Xd: np.ndarray, Y: np.ndarray, fro: float, tau, mu: float
                     ) -> tuple[bool, str]:
    """Rump's test on G = fl(Xd^T Y) (product-checked) with the rounding bound ``tau`` (and the
    Frobenius bound ``fro`` it was made of), both finite, or the refusal."""
    tau = float(tau)
    if not (math.isfinite(fro) and math.isfinite(tau)):
        return False, "the rounding bound of the Gram matrix overflows"
    G = _checked_product(Xd.T, Y)  # rows that fail the product check are NaN
    return _rump_positive_definite(G, tau, mu)


def _rump_positive_definite(G: np.ndarray, tau: float, mu: float) -> tuple[bool, str]:
    """Rump's test (section 5) that G - tau I is positive definite, G a computed Gram matrix
    (rows that failed their product check are NaN); the message names the shift mu."""
    p = G.shape[0]
    with np.errstate(all="ignore"):
        if not _all_finite(G):
            return False, "the Gram matrix overflows (or failed its check as a product)"
        _symmetrise_from_upper(G)  # exactly symmetric; entrywise bound unchanged
        diag = np.diag(G).copy()
        d1 = _dn(diag - tau)  # diagonal of A' (<= G_ii - tau)
        if (d1 < 0).any():
            return False, (f"a diagonal entry of X^T P X - eig_shift I is negative: eig_shift = "
                           f"{mu!r} exceeds a column's squared norm")
        # Rump's constant for dimension N = p + 1 instead of p: LAPACK/BLAS implementations
        # (OpenBLAS's trsm kernels, reference dtrsm) divide by r_kk through a computed
        # reciprocal, one more rounding per entry of the factor than the analysed algorithm;
        # one more dimension raises every alpha_ij = gamma_{min(i,j)+1} index by one.
        N = p + 1
        tr = float(_sum_up(d1))
        under = float(_up(4.0 * ETA * N * _up(2.0 * (N + 1) + float(d1.max()))))
        c = float(_up(_up(0.5 * _up(_gamma(2 * (N + 1)) * tr)) + under))
        a_diag = _dn(d1 - c)
        if not (math.isfinite(tr) and math.isfinite(c) and np.isfinite(a_diag).all()):
            return False, "the trace of the shifted Gram matrix overflows"
        total = float(_up(tau + c))
        fail = (f"X^T P X - {mu!r} I is not proven positive definite (the floating-point "
                f"Cholesky test with shift {total:.3e} fails): eig_shift is at or above the "
                "smallest eigenvalue, or too close to it")
        if (a_diag <= 0).any():  # a pivot <= a_ii <= 0: no factorisation can complete
            return False, fail
        np.fill_diagonal(G, a_diag)
        try:
            L = np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            return False, fail
        problem = _cholesky_problem(G, L, under)
        if problem is not None:
            return False, (f"X^T P X - {mu!r} I is not proven positive definite: the library's "
                           f"Cholesky factor (shift {total:.3e}) {problem}")
    return True, (f"X^T P X - {mu:.6g} I proven positive definite (Rump's Cholesky test, total "
                  f"shift {total:.3e}; factor finite, pivots > 0, residual checked)")


def proves_eig_shift_weighted(X: np.ndarray, mu: float, fit_intercept: bool,
                              w: np.ndarray) -> tuple[bool, str]:
    """Prove that X^T Q X - mu I is positive definite for the weighted least-squares loss
    sum_i w_i (y_i - x_i^T b - c)^2: Q = W (no intercept) or W - w w^T / sum(w) (the intercept
    minimised out; Q annihilates 1), W = diag(w).

    With Xd = fl(X - 1 m^T) (m: the weighted column means, any centre is exact since Q 1 = 0)
    and Y = fl(w * Xd) row by row, G = fl(Xd^T Y) and Fro_w >= sum_i w_i ||Xd_i||^2:
    X^T Q X - mu I >= G - tau I with tau = mu + (gamma_n + u)(1 + u) Fro_w + u sqrt(p)
    ||col abs sums|| ETA-terms (Gram and weighting rounding) + (2e + e^2) Fro_w (centring) +
    sum_j s_j^2 / sum(w) (the rank-one term, s_j >= |w^T (X - 1m^T)_j|), then Rump's test."""
    n, p = X.shape
    w = np.asarray(w, dtype=np.float64)
    n_eff = int(np.count_nonzero(w > 0))
    reason = shift_refusal(n_eff, p, mu, fit_intercept)
    if reason is not None:
        return False, reason.replace("(n", "(the samples of positive weight")
    with np.errstate(all="ignore"):
        if fit_intercept:
            Xd = X - (w @ X) / w.sum()
            e = _CENTRE_ERR
        else:
            Xd, e = X, 0.0
        if not _all_finite(Xd):
            return False, "the centred design X - 1 m^T overflows"
        Y = w[:, None] * Xd
        if not _all_finite(Y):
            return False, "the weighted design overflows"
        # colw_j >= sum_i w_i Xd_ij^2 (w |Xd| <= (|Y| + ETA) / (1 - u)); Fro_w = sum_j colw_j
        colabs = _sum_up(np.abs(Xd), axis=0)
        colw = _sum_up(_up(np.abs(Y) * np.abs(Xd)), axis=0)
        colw = _up(_up(colw + _up(ETA * colabs)) * _float_up(1 / (1 - Fraction(U))))
        reason = _diagonal_refusal(colw, e, mu, "weighted squared norm", "X^T Q X")
        if reason is not None:
            return False, reason
        fro_w = float(_sum_up(colw))
        eta_w = _up(_up(float(np.sqrt(float(p))) + 1.0) * _up(
            float(_norm_up(colabs)) * ETA))  # the underflow of w_i Xd_ij: ETA |Xd|^T 1 1^T
        gram_err = _up(_up(_up(_gamma(n) + U) * _up(fro_w * _up(1.0 + U)))
                       + _up(float(n) * float(p) * ETA + float(_up(2.0 * eta_w))))
        cen_err = _up(_up(2.0 * e + e * e) * fro_w)
        tau = _up(_up(mu + gram_err) + cen_err)
        if fit_intercept:
            yabs = _sum_up(np.abs(Y), axis=0)
            s_ = _up(_up(np.abs(Y.sum(axis=0)) + _up(_up(_gamma(n - 1) + _up(2.0 * U + 2.0 * e))
                                                     * yabs)) + 2.0 * n * ETA)
            w_lo = float(_sum_dn(w))
            if not w_lo > 0:
                return False, "the sum of the weights is not proven positive"
            tau = _up(tau + _up(_sum_up(_sq_up(s_)) / w_lo))
        return _gram_shift_test(Xd, Y, fro_w, tau, mu)


# ----------------------------------------------------------------------------------------------
# The incumbent's objective, an upper estimate (error-free transformations)
# ----------------------------------------------------------------------------------------------


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    c = 134217729.0 * a  # 2^27 + 1 (Veltkamp)
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    """p + e == a b exactly (Dekker) unless |p| < 2^-968 (then e may be inexact)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = al * bl - (((p - ah * bh) - al * bh) - ah * bl)
    return p, e


def _accurate_rows(cols: np.ndarray, coefs: np.ndarray, extra: list[np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per row i: sum_j cols[i, j] coefs[j] + sum of the ``extra`` vectors, as (value, radius).

    The products are split exactly (Dekker's TwoProduct) and the 2q + len(extra) terms summed
    with Ogita-Rump-Oishi's Sum2: |res - s| <= u |s| + gamma_m^2 sum |t_i| (no underflow needed
    for additions); a product below 2^-968 contributes 2^-1020 to the radius instead.
    """
    n = cols.shape[0]
    terms: list[np.ndarray] = []
    tiny = np.zeros(n)
    for j in range(cols.shape[1]):
        a, b = cols[:, j], coefs[j]
        p, e = _two_prod(a, b)
        small = (np.abs(p) < _TINY) & (a != 0)
        tiny += small
        terms += [p, np.where(small, 0.0, e)]
    terms += list(extra)
    m = len(terms)
    if m == 0:
        return np.zeros(n), np.zeros(n)
    s = terms[0].copy()
    sig = np.zeros(n)
    for t in terms[1:]:
        s, q = _two_sum(s, t)
        sig = sig + q
    res = s + sig
    g2 = float(_up(_gamma(m) * _gamma(m)))
    abs_sum = _sum_up(np.abs(np.stack(terms)), axis=0)
    ku = _float_up(1 / (1 - Fraction(1, 2 ** 53)))
    rad = _up(_up(_up(_up(U * np.abs(res)) + _up(g2 * abs_sum)) * ku) + tiny * 2.0 ** -1020)
    return res, rad


def objective_upper_bound(X: np.ndarray, y: np.ndarray, problem: Problem, coef: np.ndarray,
                          intercept: float) -> tuple[float, float]:
    """(value, upper bound) of F(coef, intercept) = sum_i w_i f(x_i^T coef + c + o_i, y_i) +
    lambda2 ||coef||^2 on the raw data (X dense or sparse; classification labels already
    -1/+1; the loss, ``lambda2``, the Huber threshold, w and o are ``problem``'s); the bound is
    valid in exact arithmetic (inf when it cannot be established)."""
    loss, lambda2, huber_delta = problem.loss, problem.lambda2, problem.huber_delta
    sample_weight, offset = problem.sample_weight, problem.offset
    if _is_sparse_input(X) and not isinstance(X, _CSC):
        X = _sparse_input(X)
    X = X if isinstance(X, _CSC) else np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    S = np.flatnonzero(coef)
    cols, cs = _support_columns(X, S), coef[S]
    n = X.shape[0]
    with np.errstate(all="ignore"):
        if (cols.size and np.abs(cols).max() >= _SPLIT_MAX) or (
                cs.size and np.abs(cs).max() >= _SPLIT_MAX):
            return math.nan, math.inf
        c = np.full(n, float(intercept))
        offs = [] if offset is None else [np.asarray(offset, dtype=np.float64)]
        if loss == "squared":  # the residual y - Xb - c - o in one error-free sum
            r, rr = _accurate_rows(cols, -cs, [y, -c] + [-o for o in offs])
            per = _sq_up(_up(np.abs(r) + rr))
            nominal = r * r
            signed = False
        elif loss == "huber":  # likewise; h(r) is nondecreasing in |r|
            r, rr = _accurate_rows(cols, -cs, [y, -c] + [-o for o in offs])
            d = _huber_delta(huber_delta)
            nominal = _robust(r, d)
            per = _robust_up(_up(np.abs(r) + rr), d)
            signed = False
        else:
            u, ur = _accurate_rows(cols, cs, [c] + offs)
            nominal = _loss_nominal(loss, u, y)
            per, signed = _loss_terms_up(loss, u, ur, y)
        if sample_weight is not None:  # w_i times each term (a zero weight's term is 0)
            w = np.asarray(sample_weight, dtype=np.float64)
            per = np.where(w > 0, _up(w * per), 0.0)
            nominal = np.where(w > 0, w * nominal, 0.0)
        up_loss = _signed_sum_up(per) if signed else float(_sum_up(per))
        ridge = float(_up(lambda2 * float(_sum_up(_sq_up(coef)))))
        total = float(_up(up_loss + ridge))
        value = float(nominal.sum() + lambda2 * float(coef @ coef))
    if not math.isfinite(total):
        return value, math.inf
    return value, total


def loss_sum_bounds(loss: str, u: np.ndarray, y: np.ndarray, huber_delta: float | None = None
                    ) -> tuple[float, float]:
    """(computed value, rigorous upper bound) of sum_i f(u_i, y_i) at exact floats u (labels
    of classification losses already -1/+1; ``huber_delta``: the Huber loss's threshold)."""
    u = np.asarray(u, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(all="ignore"):
        if loss == "squared":
            r = y - u
            rr = _up(U * np.abs(r))
            value, upper = float((r * r).sum()), float(_sum_up(_sq_up(_up(np.abs(r) + rr))))
        elif loss == "huber":
            r = y - u
            d = _huber_delta(huber_delta)
            t = _up(_up(np.abs(r)) + _up(U * np.abs(r)))
            value, upper = float(_robust(r, d).sum()), float(_sum_up(_robust_up(t, d)))
        else:
            value = float(_loss_nominal(loss, u, y).sum())
            upper = _loss_sum_up(loss, u, np.zeros(u.shape), y)
    return value, (upper if math.isfinite(upper) else math.inf)


def conjugate_sum_upper(loss: str, zeta: np.ndarray, y: np.ndarray,
                        huber_delta: float | None = None) -> float:
    """Rigorous upper bound of sum_i f*(zeta_i; y_i) (+inf outside the domain; labels of
    classification losses already -1/+1; ``huber_delta``: the Huber loss's threshold)."""
    z = np.asarray(zeta, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if _dual_problem(loss, z, y, False, huber_delta) is not None:
        return math.inf
    des = _Design(np.zeros((y.size, 1)), y, loss, False, huber_delta)
    with np.errstate(all="ignore"):
        v = float(_conjugate_sum_up(loss, z[None, :], des)[0])
    return v if math.isfinite(v) else math.inf


def _robust(r: np.ndarray, d: float) -> np.ndarray:
    """The Huber loss of the residuals r (plain floating point): r^2 if |r| <= d, else
    2 d |r| - d^2."""
    a = np.abs(r)
    return np.where(a <= d, r * r, 2.0 * d * a - d * d)


def _robust_up(t: np.ndarray, d: float) -> np.ndarray:
    """Upper bound of the Huber loss at any residual r with |r| <= t (exact floats t >= 0):
    it is nondecreasing in |r|, so its value at t, rounded up."""
    quad = _sq_up(t)
    lin = _up(_up(2.0 * d * t) - max(float(_dn(d * d)), 0.0))
    return np.where(t <= d, quad, lin)


def _loss_nominal(loss: str, u: np.ndarray, y: np.ndarray) -> np.ndarray:
    if loss == "logistic":
        return np.logaddexp(0.0, -y * u)
    if loss == "squared_hinge":
        m = np.maximum(0.0, 1.0 - y * u)
        return m * m
    return np.exp(u) - y * u


def _loss_sum_up(loss: str, uc: np.ndarray, ur: np.ndarray, y: np.ndarray) -> float:
    """Upper bound of sum_i f(u_i, y_i) for u_i in [uc - ur, uc + ur]."""
    per, signed = _loss_terms_up(loss, uc, ur, y)
    return _signed_sum_up(per) if signed else float(_sum_up(per))


def _loss_terms_up(loss: str, uc: np.ndarray, ur: np.ndarray, y: np.ndarray
                   ) -> tuple[np.ndarray, bool]:
    """Upper bounds of each f(u_i, y_i) for u_i in [uc - ur, uc + ur], and whether they may be
    negative (then they are summed with :func:`_signed_sum_up`)."""
    if loss == "logistic":  # softplus(-y u), nondecreasing in -y u
        zh = _up(-y * uc + ur)
        e = np.exp(-np.abs(zh))
        e_up = _up(e + _elem_radius(e))
        lg = np.log1p(e_up)
        return _up(np.maximum(zh, 0.0) + _up(lg + _elem_radius(lg))), False
    if loss == "squared_hinge":  # max(0, 1 - y u)^2, nondecreasing in 1 - y u
        mc = 1.0 - y * uc
        mh = np.maximum(_up(_up(mc + ur) + _up(U * np.abs(mc))), 0.0)
        return _sq_up(mh), False
    # poisson: exp(u) - y u is convex in u: its maximum over the interval is at an end
    ends = (_dn(uc - ur), _up(uc + ur))
    vals = []
    for v in ends:
        ex = np.exp(v)
        vals.append(_up(_up(ex + _elem_radius(ex)) + _up(-y * v)))
    return np.maximum(vals[0], vals[1]), True


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


@dataclass
class VerificationReport:
    """Outcome of :func:`verify_certificate`.

    Attributes
    ----------
    checks : list of (name, passed, message), in the order they ran.
    certified_lower_bound : min over the tree's regions of the recomputed safe bounds.
    objective_upper : the recomputed upper estimate of the incumbent's objective.
    relative_gap : ``(UB - LB) / max(1, |UB|)`` of the claimed (and proven) bounds, rounded up.
    gap_within_tolerance : relative_gap <= rel_gap_tolerance.
    rel_gap_tolerance : the tolerance the verification was judged against.
    parameters : {name: (value, "user" or "certificate")} of the problem verified.
    input_error : the certificate could not be read (exit code 2).
    summary : a few facts about the certificate for printing.
    seconds : wall time of the verification.
    peak_memory : the verifying process's peak resident memory in bytes (its workers'
        separately in ``summary["worker_peak_memory"]``), None where the platform does not say.
    """

    checks: list[tuple[str, bool, str]] = field(default_factory=list)
    certified_lower_bound: float = math.nan
    objective_upper: float = math.nan
    relative_gap: float = math.nan
    gap_within_tolerance: bool = False
    rel_gap_tolerance: float = DEFAULT_REL_GAP
    parameters: dict[str, tuple[Any, str]] = field(default_factory=dict)
    input_error: bool = False
    summary: dict[str, Any] = field(default_factory=dict)
    complete: bool = False
    seconds: float = math.nan
    peak_memory: int | None = None

    def add(self, name: str, passed: bool, message: str) -> bool:
        self.checks.append((name, bool(passed), message))
        return bool(passed)

    def fail_input(self, name: str, message: str) -> VerificationReport:
        """Record an unreadable or malformed certificate (exit code 2)."""
        self.input_error = True
        self.add(name, False, message)
        return self

    @property
    def ok(self) -> bool:
        """Every check ran and passed."""
        return self.complete and all(passed for _, passed, _ in self.checks)

    @property
    def failures(self) -> list[tuple[str, str]]:
        """(name, message) of every failed check."""
        return [(name, msg) for name, passed, msg in self.checks if not passed]

    @property
    def failed_checks(self) -> list[str]:
        """Names of the failed checks."""
        return [name for name, _ in self.failures]

    @property
    def exit_code(self) -> int:
        """0 verified, 1 failed, 2 unreadable/malformed certificate, 3 verified but the gap is
        above the tolerance."""
        if self.input_error:
            return 2
        if not self.ok:
            return 1
        return 0 if self.gap_within_tolerance else 3

    @property
    def error_line(self) -> str:
        """One line describing why the certificate could not be read (input errors)."""
        return "; ".join(msg for _, msg in self.failures)

    def __str__(self) -> str:
        s = self.summary
        if self.input_error:
            return f"certificate verification: cannot read the certificate: {self.error_line}"
        if self.ok:
            verdict = "VERIFIED" if self.gap_within_tolerance else "VERIFIED (gap above tolerance)"
        else:
            verdict = "FAILED: " + ", ".join(self.failed_checks or ["incomplete"])
        lines = [f"certificate verification: {verdict} (exit code {self.exit_code})"]
        if self.parameters:
            lines.append("  problem     : " + ", ".join(
                f"{k}={_fmt_param(v)} ({src})" for k, (v, src) in self.parameters.items()))
            lines.append(f"  data        : n={s.get('n')}, p={s.get('p')}")
        if "upper_bound" in s:
            lines.append(
                f"  claims      : upper bound {s['upper_bound']:.12g}, lower bound "
                f"{s['lower_bound']:.12g}, status {s['status']}")
        if not math.isnan(self.certified_lower_bound):
            lines.append(
                f"  recomputed  : safe lower bound {self.certified_lower_bound:.12g} (min over "
                f"{s.get('n_regions', '?')} regions of {s.get('n_nodes', '?')} nodes), "
                f"incumbent objective <= {self.objective_upper:.12g}")
        if not math.isnan(self.relative_gap):
            lines.append(
                f"  tolerance   : relative gap {self.relative_gap:.3e} ({RELATIVE_GAP_DEFINITION},"
                f" rounded up) vs {self.rel_gap_tolerance:.3e} (user) -> "
                f"{'within' if self.gap_within_tolerance else 'NOT within'}")
        if not math.isnan(self.seconds):
            mem = ("" if self.peak_memory is None else
                   f", peak memory {self.peak_memory / 2 ** 20:.0f} MB")
            lines.append(f"  cost        : {self.seconds:.2f} s with {s.get('n_jobs', 1)} "
                         f"process{'es' if s.get('n_jobs', 1) > 1 else ''}{mem}")
        for name, passed, msg in self.checks:
            lines.append(f"  [{'ok' if passed else 'FAIL'}] {name}: {msg}")
        return "\n".join(lines)


def _fmt_param(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if v is None:
        return "None"
    return str(v)


# ----------------------------------------------------------------------------------------------
# Parsing (every malformed value is one clear line, never a traceback)
# ----------------------------------------------------------------------------------------------


class _Malformed(Exception):
    pass


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON object hook: a key given twice is an error (parsers disagree on which one wins, so
    a reader of the file could see another claim than the verifier)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in a JSON object")
        out[key] = value
    return out


def _field(d: Any, key: str, where: str) -> Any:
    if not isinstance(d, dict):
        raise _Malformed(f"{where} is not a JSON object")
    if key not in d:
        raise _Malformed(f"missing field {where}.{key}")
    return d[key]


def _as_int(v: Any, where: str, none_ok: bool = False) -> int | None:
    if v is None and none_ok:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Malformed(f"{where} must be an integer, got {_short(v)}")
    if abs(v) > 2 ** 62:
        raise _Malformed(f"{where} is out of range")
    return v


def _as_num(v: Any, where: str, none_ok: bool = False) -> float | None:
    if v is None and none_ok:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Malformed(f"{where} must be a finite number, got {_short(v)}")
    try:
        f = float(v)
    except OverflowError:
        raise _Malformed(f"{where} overflows a float64") from None
    if not math.isfinite(f):
        raise _Malformed(f"{where} must be a finite number, got {_short(v)}")
    if isinstance(v, int) and Fraction(f) != v:
        raise _Malformed(f"{where} = {_short(v)} is not exactly representable as a float64")
    return f


def _as_str(v: Any, where: str, choices: Iterable[str] | None = None) -> str:
    if not isinstance(v, str):
        raise _Malformed(f"{where} must be a string, got {_short(v)}")
    if choices is not None and v not in choices:
        raise _Malformed(f"{where} = {_short(v)} is not one of {list(choices)}")
    return v


def _as_bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _Malformed(f"{where} must be true or false, got {_short(v)}")
    return v


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."



@dataclass
class _Parsed:
    loss: str
    k: int
    lambda2: float
    M: float | None
    fit_intercept: bool
    n: int
    p: int
    X_sha256: str
    y_sha256: str
    coef: np.ndarray
    intercept: float
    support: list[int]
    objective: float
    lb: float
    ub: float
    rel_tol: float
    abs_tol: float
    status: str
    mu: float
    proof_sha256: str
    proof_bytes: int
    loss_params: dict = field(default_factory=dict)  # the loss's parameters
    extensions: dict = field(default_factory=dict)  # the problem's optional fields (2.2)
    X_format: str | None = None  # "csc": X is hashed and read as a sparse matrix

    @property
    def huber_delta(self) -> float | None:
        return self.loss_params.get("huber_delta")


def _parse(doc: Any) -> _Parsed:
    fmt = _field(doc, "format", "certificate")
    if fmt != FORMAT_NAME:
        raise _Malformed(f"format is {_short(fmt)}, expected {FORMAT_NAME!r}")
    ver = _field(doc, "format_version", "certificate")
    if ver == 1 and not isinstance(ver, bool):
        raise _Malformed("format version 1 is not supported by this verifier (its bounds were "
                         "not rigorous): re-run sparsecert certify to write a version "
                         f"{FORMAT_VERSION} certificate")
    if ver == 2 and not isinstance(ver, bool):
        raise _Malformed("format version 2 is not supported by this verifier (it reads version "
                         f"{FORMAT_VERSION}, whose proof is a streamed binary file): re-run "
                         "sparsecert certify, or verify it with a sparsecert release that "
                         "writes version 2")
    if isinstance(ver, bool) or not isinstance(ver, int) or ver != FORMAT_VERSION:
        raise _Malformed(f"format_version {_short(ver)} is not supported (this verifier reads "
                         f"version {FORMAT_VERSION})")
    pr = _field(doc, "problem", "certificate")
    loss = _as_str(_field(pr, "loss", "problem"), "problem.loss", LOSSES)
    k = _as_int(_field(pr, "k", "problem"), "problem.k")
    lambda2 = _as_num(_field(pr, "lambda2", "problem"), "problem.lambda2")
    M = _as_num(_field(pr, "max_abs_coef", "problem"), "problem.max_abs_coef", none_ok=True)
    fit_intercept = _as_bool(_field(pr, "fit_intercept", "problem"), "problem.fit_intercept")
    n = _as_int(_field(pr, "n_samples", "problem"), "problem.n_samples")
    p = _as_int(_field(pr, "n_features", "problem"), "problem.n_features")
    xh = _as_str(_field(pr, "X_sha256", "problem"), "problem.X_sha256")
    yh = _as_str(_field(pr, "y_sha256", "problem"), "problem.y_sha256")
    x_format = None
    if "X_format" in pr:  # absent: a dense X (section 3)
        x_format = _as_str(pr["X_format"], "problem.X_format", (SPARSE_X_FORMAT,))
    if n < 1 or p < 1:
        raise _Malformed(f"problem.n_samples = {n} and problem.n_features = {p} must be >= 1")
    if p > RECORD_MAX:
        raise _Malformed(f"problem.n_features = {p} is more than the format's {RECORD_MAX}")
    if k < 0:
        raise _Malformed(f"problem.k = {k} must be >= 0")
    if lambda2 <= 0:
        raise _Malformed(f"problem.lambda2 = {lambda2} must be > 0")
    if M is not None and M <= 0:
        raise _Malformed(f"problem.max_abs_coef = {M} must be > 0 or null")
    loss_params = {}
    for name in LOSS_PARAMETERS.get(loss, ()):
        value = _as_num(_field(pr, name, "problem"), f"problem.{name}")
        if not value > 0:
            raise _Malformed(f"problem.{name} = {value} must be > 0")
        loss_params[name] = value

    inc = _field(doc, "incumbent", "certificate")
    coef_raw = _field(inc, "coef", "incumbent")
    if not isinstance(coef_raw, list) or len(coef_raw) != p:
        raise _Malformed(f"incumbent.coef must be a list of n_features = {p} numbers")
    coef = np.array([_as_num(v, f"incumbent.coef[{j}]") for j, v in enumerate(coef_raw)],
                    dtype=np.float64)
    intercept = _as_num(_field(inc, "intercept", "incumbent"), "incumbent.intercept")
    sup_raw = _field(inc, "support", "incumbent")
    if not isinstance(sup_raw, list):
        raise _Malformed("incumbent.support must be a list of integers")
    support = [_as_int(x, f"incumbent.support[{i}]") for i, x in enumerate(sup_raw)]
    objective = _as_num(_field(inc, "objective", "incumbent"), "incumbent.objective")

    bd = _field(doc, "bounds", "certificate")
    lb = _as_num(_field(bd, "lower_bound", "bounds"), "bounds.lower_bound")
    ub = _as_num(_field(bd, "upper_bound", "bounds"), "bounds.upper_bound")
    rel_tol = _as_num(_field(bd, "rel_gap_tolerance", "bounds"), "bounds.rel_gap_tolerance")
    abs_tol = _as_num(_field(bd, "abs_gap_tolerance", "bounds"), "bounds.abs_gap_tolerance")
    if rel_tol < 0 or abs_tol < 0:
        raise _Malformed("bounds.rel_gap_tolerance and bounds.abs_gap_tolerance must be >= 0")
    status = _as_str(_field(bd, "status", "bounds"), "bounds.status", STATUSES)

    rx = _field(doc, "relaxation", "certificate")
    mu = _as_num(_field(rx, "eig_shift", "relaxation"), "relaxation.eig_shift")
    if mu < 0:
        raise _Malformed(f"relaxation.eig_shift = {mu} must be >= 0")

    pf = _field(doc, "proof", "certificate")
    psha = _as_str(_field(pf, "sha256", "proof"), "proof.sha256")
    pbytes = _as_int(_field(pf, "bytes", "proof"), "proof.bytes")
    if pbytes < PROOF_HEADER_SIZE:
        raise _Malformed(f"proof.bytes = {pbytes} is less than a proof file's header "
                         f"({PROOF_HEADER_SIZE} bytes)")
    return _Parsed(loss, k, lambda2, M, fit_intercept, n, p, xh, yh, coef, intercept, support,
                   objective, lb, ub, rel_tol, abs_tol, status, mu, psha, pbytes, loss_params,
                   _parse_extensions(pr, n, p, k), x_format)


#: The user's arguments of the problem's optional parts.
_USER_EXTENSIONS = ("sample_weight", "offset", "coef_bounds", "positive", "always_select",
                    "exclude")
#: The problem's optional fields (absent: the plain problem) and their neutral values.
EXTENSION_FIELDS = {"sample_weight_sha256": None, "offset_sha256": None, "coef_lower": None,
                    "coef_upper": None, "always_select": (), "exclude": ()}


def _parse_extensions(pr: dict, n: int, p: int, k: int) -> dict[str, Any]:
    """The problem's optional fields (section 2.2): the hashes of the sample weights and of
    the offsets, every coefficient's bounds (lists of p numbers, null for none) and the
    features forced in and out (sorted lists of distinct indices)."""
    out: dict[str, Any] = dict(EXTENSION_FIELDS)
    for name in ("sample_weight_sha256", "offset_sha256"):
        if name in pr:
            out[name] = _as_str(pr[name], f"problem.{name}")
    for name, inf, sign in (("coef_lower", -math.inf, -1), ("coef_upper", math.inf, 1)):
        if name not in pr:
            continue
        raw = pr[name]
        if not isinstance(raw, list) or len(raw) != p:
            raise _Malformed(f"problem.{name} must be a list of n_features = {p} numbers or "
                             "nulls")
        vals = np.array([inf if v is None else _as_num(v, f"problem.{name}[{j}]")
                         for j, v in enumerate(raw)], dtype=np.float64)
        bad = np.flatnonzero(sign * vals < 0)
        if bad.size:
            j = int(bad[0])
            raise _Malformed(f"problem.{name}[{j}] = {vals[j]!r} excludes b_j = 0 (lower <= 0 "
                             "<= upper)")
        out[name] = vals
    if (out["coef_lower"] is None) != (out["coef_upper"] is None):
        raise _Malformed("problem.coef_lower and problem.coef_upper go together")
    for name in ("always_select", "exclude"):
        if name not in pr:
            continue
        raw = pr[name]
        if not isinstance(raw, list):
            raise _Malformed(f"problem.{name} must be a list of feature indices")
        idx = [_as_int(v, f"problem.{name}[{i}]") for i, v in enumerate(raw)]
        if any(not 0 <= j < p for j in idx) or idx != sorted(set(idx)):
            raise _Malformed(f"problem.{name} must hold distinct increasing indices in [0, "
                             f"{p})")
        out[name] = tuple(idx)
    if set(out["always_select"]) & set(out["exclude"]):
        raise _Malformed("problem.always_select and problem.exclude overlap")
    if len(out["always_select"]) > k:
        raise _Malformed(f"problem.always_select holds more than k = {k} features")
    return out


# ----------------------------------------------------------------------------------------------
# The proof file (section 2.7): read by this code, with every count checked against the file's
# size before anything else is read
# ----------------------------------------------------------------------------------------------

PROOF_SUFFIX = ".proof"
PROOF_MAGIC = b"SCPROOF\0"
PROOF_HEADER_SIZE = 64
RECORD_SIZE = 16
RECORD_MAX = 2 ** 32 - 1
_HEADER = struct.Struct("<8sII6Q")
_RECORD = np.dtype([("head", "<u4"), ("var", "<u4"), ("slot", "<u4"), ("size0", "<u4")])
_STATUS_NAMES = ("branched", "pruned", "solved", "open")
_KIND_NAMES = (None, "dual", "shifted")
#: records read at once (256 KiB)
_RECORD_CHUNK = 1 << 14


def proof_size(n_nodes: int, n_dual: int, n_shifted: int, nnz: int, n: int) -> int:
    """The exact size in bytes of a proof file with these counts (``n`` samples)."""
    return (PROOF_HEADER_SIZE + RECORD_SIZE * n_nodes + 8 * n * n_dual + 8 * (n_shifted + 1)
            + 12 * nnz)


class _Source:
    """Where the proof file's bytes come from (a path, or bytes): opened anew by each reader
    (each worker process has its own position in the file)."""

    def __init__(self, source: Any) -> None:
        self.data = bytes(source) if isinstance(source, (bytes, bytearray, memoryview)) else None
        self.path = None if self.data is not None else os.fspath(source)

    def open(self):
        """A binary file object (OSError if it cannot be opened)."""
        return io.BytesIO(self.data) if self.data is not None else open(self.path, "rb")

    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        return os.stat(self.path).st_size

    def describe(self) -> str:
        return "the given proof bytes" if self.data is not None else self.path


@dataclass(frozen=True)
class _Layout:
    """A proof file's header, checked: the counts and where each section starts."""

    n_nodes: int
    n_dual: int
    n_shifted: int
    nnz: int
    n: int
    p: int

    @property
    def records_at(self) -> int:
        return PROOF_HEADER_SIZE

    @property
    def dual_at(self) -> int:
        return PROOF_HEADER_SIZE + RECORD_SIZE * self.n_nodes

    @property
    def offsets_at(self) -> int:
        return self.dual_at + 8 * self.n * self.n_dual

    @property
    def values_at(self) -> int:
        return self.offsets_at + 8 * (self.n_shifted + 1)

    @property
    def indices_at(self) -> int:
        return self.values_at + 8 * self.nnz

    def slots(self, kind: str) -> int:
        return self.n_dual if kind == "dual" else self.n_shifted


def _read_layout(fh, size: int, c: _Parsed) -> _Layout:
    """The header of an open proof file of ``size`` bytes, checked against the document and
    the size (raises _Malformed): every count is bounded by the file's actual size and by the
    tree (at most one witness slot per node, at most p nonzeros per shifted witness), so no
    count can make the verifier read or allocate more than the file holds."""
    raw = fh.read(PROOF_HEADER_SIZE)
    if len(raw) != PROOF_HEADER_SIZE:
        raise _Malformed(f"the proof file is {size} bytes, shorter than its header")
    magic, version, rsize, n_nodes, n_dual, n_shifted, nnz, n, p = _HEADER.unpack(raw)
    if magic != PROOF_MAGIC:
        raise _Malformed("the proof file does not start with the proof file's magic bytes "
                         "(SCPROOF\\0): it is not a sparsecert proof file")
    if version != FORMAT_VERSION or rsize != RECORD_SIZE:
        raise _Malformed(f"the proof file has version {version} and record size {rsize}; this "
                         f"verifier reads version {FORMAT_VERSION} with {RECORD_SIZE}-byte "
                         "records")
    if (n, p) != (c.n, c.p):
        raise _Malformed(f"the proof file is for n_samples = {n}, n_features = {p}; the "
                         f"certificate's problem has {c.n} and {c.p}")
    if n_nodes < 1:
        raise _Malformed("the proof file holds no node record")
    if n_dual + n_shifted > n_nodes:
        raise _Malformed(f"the proof file declares {n_dual} dual and {n_shifted} shifted "
                         f"witnesses, more than one per node of its {n_nodes}")
    if nnz > p * n_shifted:
        raise _Malformed(f"the proof file declares {nnz} nonzeros for {n_shifted} shifted "
                         f"witnesses of at most p = {p} each")
    if n_nodes > RECORD_MAX:
        raise _Malformed(f"the proof file declares {n_nodes} nodes, more than the format's "
                         f"{RECORD_MAX}")
    want = proof_size(n_nodes, n_dual, n_shifted, nnz, n)
    if want != size:
        raise _Malformed(f"the proof file is {size} bytes, but its header's counts ({n_nodes} "
                         f"nodes, {n_dual} dual and {n_shifted} shifted witnesses, {nnz} "
                         f"nonzeros) make {want}: truncated, padded or a header that lies")
    return _Layout(n_nodes, n_dual, n_shifted, nnz, n, p)


def _hash_file(src: _Source) -> str:
    """SHA-256 of the proof file, read in chunks (memory O(1))."""
    if src.data is not None:
        return hashlib.sha256(src.data).hexdigest()
    h = hashlib.sha256()
    with open(src.path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


class _Reader:
    """Records and witnesses of one proof file, read on demand (each process opens its own)."""

    def __init__(self, src: _Source, layout: _Layout) -> None:
        self.fh = src.open()
        self.L = layout
        self._c0 = 0
        self._cols: tuple[list, list, list, list] = ([], [], [], [])

    def close(self) -> None:
        self.fh.close()

    def _read(self, at: int, count: int) -> bytes:
        self.fh.seek(at)
        raw = self.fh.read(count)
        if len(raw) != count:  # the file changed since its size was checked
            raise _Malformed("the proof file is shorter than when it was checked")
        return raw

    def record(self, pos: int, end: int) -> tuple[int, int, int, int]:
        """(head, var, slot, size0) of record ``pos`` (read in chunks up to ``end``)."""
        q = pos - self._c0
        if not 0 <= q < len(self._cols[0]):
            count = min(_RECORD_CHUNK, max(end, pos + 1) - pos)
            arr = np.frombuffer(self._read(self.L.records_at + RECORD_SIZE * pos,
                                           RECORD_SIZE * count), dtype=_RECORD)
            self._cols = tuple(arr[f].tolist() for f in ("head", "var", "slot", "size0"))
            self._c0, q = pos, 0
        cols = self._cols
        return cols[0][q], cols[1][q], cols[2][q], cols[3][q]

    def upcoming(self, pos: int, limit: int) -> list[tuple[int, int]]:
        """(head, slot) of the records from ``pos`` already read (for prefetching witnesses)."""
        q = pos - self._c0
        h, s = self._cols[0], self._cols[2]
        if not 0 <= q < len(h):
            return []
        return list(zip(h[q:q + limit], s[q:q + limit], strict=True))

    def dual_rows(self, slots: list[int]) -> np.ndarray:
        n = self.L.n
        out = np.empty((len(slots), n))
        for r, s in enumerate(slots):
            out[r] = np.frombuffer(self._read(self.L.dual_at + 8 * n * s, 8 * n), dtype="<f8")
        return out

    def shifted_row(self, s: int) -> np.ndarray | str:
        """Shifted witness s as a dense vector, or what is wrong with it."""
        L = self.L
        o = np.frombuffer(self._read(L.offsets_at + 8 * s, 16), dtype="<u8")
        a, b = int(o[0]), int(o[1])
        if not (a <= b <= L.nnz and b - a <= L.p):
            return (f"has offsets [{a}, {b}) that are not increasing within the {L.nnz} "
                    f"nonzeros, or more than p = {L.p} of them")
        val = np.frombuffer(self._read(L.values_at + 8 * a, 8 * (b - a)), dtype="<f8")
        idx = np.frombuffer(self._read(L.indices_at + 4 * a, 4 * (b - a)), dtype="<u4")
        idx = idx.astype(np.int64)
        if idx.size and (idx[-1] >= L.p or (idx.size > 1 and (np.diff(idx) <= 0).any())):
            return f"has indices that are not strictly increasing in [0, {L.p})"
        if not np.isfinite(val).all():
            return "is not finite"
        out = np.zeros(L.p)
        out[idx] = val
        return out


def read_document(path: str | os.PathLike) -> Any:
    """The JSON document of a certificate file, parsed as strictly as the verifier parses it
    (section 2: UTF-8, no NaN/Infinity, no key twice in an object).

    Raises
    ------
    OSError
        The file cannot be read.
    ValueError
        It is not such JSON (one line).
    """
    path = os.fspath(path)
    with open(path, "rb") as fh:
        raw = fh.read()
    return _strict_json(raw, path)


def check_document(doc: Any) -> None:
    """Check a parsed document as the verifier's check ``format`` does (every field of
    section 2 with its type and constraints); ValueError with one line if it fails."""
    try:
        _parse(doc)
    except _Malformed as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("the JSON document is nested too deeply") from None


def read_proof_header(doc: Any, source: str | os.PathLike | bytes) -> dict[str, int]:
    """The counts of a certificate's proof file (a path or its bytes), read and checked as the
    verifier's check ``proof`` does (except the SHA-256): ``n_nodes``, ``n_dual``,
    ``n_shifted``, ``shifted_nnz``, ``bytes``.

    Raises
    ------
    OSError
        The file cannot be read.
    ValueError
        The document or the proof file is malformed (one line).
    """
    try:
        c = _parse(doc)
        src = _Source(source)
        size = src.size()
        with src.open() as fh:
            L = _read_layout(fh, size, c)
    except _Malformed as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("the JSON document is nested too deeply") from None
    return dict(n_nodes=L.n_nodes, n_dual=L.n_dual, n_shifted=L.n_shifted, shifted_nnz=L.nnz,
                bytes=size)


def proof_path(json_path: str | os.PathLike) -> str:
    """Where the proof file of a certificate lives: next to it, same name, ``.proof``."""
    root, ext = os.path.splitext(os.fspath(json_path))
    return (root if ext.lower() == ".json" else os.fspath(json_path)) + PROOF_SUFFIX


def _strict_json(raw: bytes, where: str) -> Any:
    """Parse JSON strictly (no NaN/Infinity, no key twice in an object). Raises ValueError with
    one line."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant,
                          object_pairs_hook=_unique_keys)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{where} is not valid JSON ({_short(str(exc))})") from None


def _obtain(certificate: Any, proof: Any) -> tuple[Any, Any, str]:
    """(json document or an error string, the proof file's path or bytes or None, its
    description)."""
    ppath = None
    if isinstance(certificate, (str, os.PathLike)):
        path = os.fspath(certificate)
        with open(path, "rb") as fh:  # OSError propagates: an unreadable file is an input error
            raw = fh.read()
        try:
            doc = _strict_json(raw, path)
        except ValueError as exc:
            return str(exc), None, ""
        ppath = proof_path(path)
    elif isinstance(certificate, dict):
        doc = certificate
    elif hasattr(certificate, "to_dict") and hasattr(certificate, "proof_source"):
        try:  # the same strict parse as a file's: what the verifier checks is what was written
            doc = _strict_json(json.dumps(certificate.to_dict(), allow_nan=False).encode(),
                               "the certificate")
        except (ValueError, TypeError, AttributeError) as exc:
            return f"the certificate is not valid JSON ({_short(str(exc))})", None, ""
        if proof is None:
            try:
                src = certificate.proof_source()
            except Exception as exc:  # noqa: BLE001 - a proof the object cannot give
                return doc, None, f"the certificate's proof file is not available ({exc})"
            return doc, src, ("the certificate's proof bytes" if isinstance(src, bytes)
                              else os.fspath(src))
    else:
        raise TypeError("certificate must be a path, a dict or a Certificate, got "
                        f"{type(certificate).__name__}")
    if isinstance(proof, (bytes, bytearray)):
        return doc, bytes(proof), "the given proof bytes"
    if proof is not None:
        ppath = os.fspath(proof)
    if ppath is None:
        return doc, None, "no proof file given for an in-memory certificate"
    return doc, ppath, ppath


def _check_data(X_given: Any, y_given: Any) -> tuple[np.ndarray | _CSC, np.ndarray]:
    if _is_sparse_input(X_given):  # a sparse X, read through its arrays (section 3)
        X_sparse = _sparse_input(X_given)
        _, y64 = _check_data(np.zeros((1, 1)), y_given)
        return X_sparse, y64
    X = np.asarray(X_given)
    y = np.asarray(y_given)
    if X.dtype == object and hasattr(X_given, "iloc") and X.ndim == 2:
        X = _frame_columns(X_given, X)
    if X.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
        raise TypeError(f"X and y must be numeric arrays, got dtypes {X.dtype} and {y.dtype}")
    X64 = np.ascontiguousarray(X, dtype=np.float64)
    y64 = np.ascontiguousarray(y, dtype=np.float64)
    if X64.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X64.shape}")
    if y64.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y64.shape}")
    if not np.isfinite(X64).all() or not np.isfinite(y64).all():
        raise ValueError("X and y must not contain NaN or infinity")
    for name, given, raw, conv in (("X", X_given, X, X64), ("y", y_given, y, y64)):
        bad = _inexact_entry(raw, conv)
        value = None if bad is None else raw[bad]
        if bad is None and not isinstance(given, np.ndarray):
            bad, value = _inexact_given(given, conv)
        if bad is not None:
            where = ", ".join(map(str, bad))
            raise ValueError(f"{name}[{where}] = {str(value)} is not exactly a float64 (it "
                             f"would be verified as {float(conv[bad])!r}): give the data as "
                             "float64")
    return X64, y64


def _frame_columns(frame: Any, fallback: np.ndarray) -> np.ndarray:
    """A data frame whose bool and numeric columns pandas converts to objects together, as
    its columns side by side in a common dtype (float64, or an integer dtype when every
    column is integer or bool, so that exactness is checked on the integers); ``fallback``
    (the object array, refused later) when a column is not numeric."""
    cols = [np.asarray(frame.iloc[:, j]) for j in range(fallback.shape[1])]
    if not cols or any(c.dtype.kind not in "biuf" for c in cols):
        return fallback
    kinds = {c.dtype.kind for c in cols}
    if kinds <= {"b", "i", "u"}:
        return np.column_stack([c.astype(np.int64) if c.dtype.kind == "b" else c
                                for c in cols])
    for j, c in enumerate(cols):
        if c.dtype.kind in "iu":
            bad = _inexact_entry(c, c.astype(np.float64))
            if bad is not None:
                raise ValueError(f"X[{bad[0]}, {j}] = {c[bad]} is not exactly a float64 (it "
                                 f"would be verified as {float(c[bad])!r}): give the data "
                                 "as float64")
    return np.column_stack([c.astype(np.float64) for c in cols])


def _exact_value(v: Any, f: float) -> bool:
    """Whether the number v equals the Python float f exactly (integers compared as Python
    ints: numpy would compare an integer with a float after converting it to float64; a
    Fraction, a Decimal and a long double compare exactly with a Python float)."""
    if type(v) is float:
        return True
    if isinstance(v, (int, np.integer)):
        return int(v) == f
    return bool(v == f)


def _inexact_given(given: Any, conv: np.ndarray) -> tuple[tuple[int, ...] | None, Any]:
    """For data that is not a numpy array (nested lists, a data frame): an entry, and its value,
    that numpy's (or pandas') conversion to float64 already rounded before a dtype could be
    checked (a list mixing floats with integers beyond 2^53; a frame with such an integer column
    beside float columns, which pandas converts through float64)."""
    if hasattr(given, "iloc") and getattr(given, "dtypes", None) is not None and conv.ndim == 2:
        for j in range(conv.shape[1]):
            col = np.asarray(given.iloc[:, j])
            if col.dtype.kind in "fb" and col.dtype.itemsize <= 8:
                continue
            for i, v in enumerate(col.tolist() if col.dtype == object else list(col)):
                if not _exact_value(v, float(conv[i, j])):
                    return (i, j), v
        return None, None
    try:
        obj = np.asarray(given, dtype=object)
    except (TypeError, ValueError):
        return None, None
    if obj.shape != conv.shape:
        return None, None
    for i, (v, f) in enumerate(zip(obj.ravel().tolist(), conv.ravel().tolist(), strict=True)):
        if not _exact_value(v, f):
            return tuple(int(t) for t in np.unravel_index(i, conv.shape)), v
    return None, None


def _inexact_entry(raw: np.ndarray, conv: np.ndarray) -> tuple[int, ...] | None:
    """Index of an entry that the conversion to float64 changed (integers beyond 2^53, long
    doubles), or None: a certificate verified on rounded data says nothing about the data."""
    if raw.dtype.kind in "iu":
        big = np.argwhere((raw > 2 ** 53) | (raw < -(2 ** 53)))
        for idx in map(tuple, big.tolist()):
            if int(conv[idx]) != int(raw[idx]):
                return idx
    elif raw.dtype.kind == "f" and raw.dtype.itemsize > 8:
        diff = np.argwhere(conv.astype(raw.dtype) != raw)
        if diff.size:
            return tuple(diff[0].tolist())
    return None


def _list(items: list, fmt=str) -> str:
    more = f" (and {len(items) - _MAX_LISTED} more)" if len(items) > _MAX_LISTED else ""
    return ", ".join(fmt(x) for x in items[:_MAX_LISTED]) + more


def _user_float(v: Any, name: str) -> float:
    """A parameter the user fixes, as a float64 that is exactly the value given (a certificate
    checked against a rounded parameter would be about another problem)."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating, Fraction)):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    try:
        f = float(v)
    except OverflowError:
        raise ValueError(f"{name} = {_short(v)} is too large for a float64") from None
    if not (math.isnan(f) or _exact_value(v, f)):
        raise ValueError(f"{name} = {_short(v)} is not exactly a float64 (it would be "
                         f"checked as {f!r}): give it as a float")
    return f


def _user_params(loss, k, lambda2, max_abs_coef, fit_intercept, rel_gap,
                 huber_delta=None) -> dict[str, Any]:
    """Validate the parameters the user fixes (ValueError/TypeError with one clear line)."""
    out: dict[str, Any] = {}
    for name, value in (("lambda2", lambda2), ("huber_delta", huber_delta)):
        if value is not None:  # finite numbers > 0
            f = _user_float(value, name)
            if not (math.isfinite(f) and f > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
            out[name] = f
    if loss is not None:
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {list(LOSSES)}, got {loss!r}")
        out["loss"] = loss
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"k must be an integer >= 0, got {k!r}")
        if k < 0:
            raise ValueError(f"k must be an integer >= 0, got {k!r}")
        out["k"] = int(k)
    if max_abs_coef is not _NOT_GIVEN:
        if max_abs_coef is None or _user_float(max_abs_coef, "max_abs_coef") == math.inf:
            out["max_abs_coef"] = None
        else:
            m = _user_float(max_abs_coef, "max_abs_coef")
            if not (m > 0 and math.isfinite(m)):
                raise ValueError(f"max_abs_coef must be > 0 (inf or None: no box), got "
                                 f"{max_abs_coef!r}")
            out["max_abs_coef"] = m
    if fit_intercept is not None:
        if not isinstance(fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be a bool, got {fit_intercept!r}")
        out["fit_intercept"] = bool(fit_intercept)
    g = float(rel_gap)
    if not (g >= 0 and math.isfinite(g)):
        raise ValueError(f"rel_gap must be a finite number >= 0, got {rel_gap!r}")
    return out


def _user_vector(v: Any, name: str) -> np.ndarray:
    """A per-sample vector the user gives with the data (weights, offsets): finite, 1-D,
    exactly float64."""
    arr = np.asarray(v)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    conv = np.ascontiguousarray(arr, dtype=np.float64)
    if conv.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {conv.shape}")
    if not np.isfinite(conv).all():
        raise ValueError(f"{name} must not contain NaN or infinity")
    bad = _inexact_entry(arr, conv)
    if bad is None and not isinstance(v, np.ndarray):
        bad, _ = _inexact_given(v, conv)
    if bad is not None:
        raise ValueError(f"{name}[{bad[0]}] is not exactly a float64: give it as float64")
    return conv


def _user_side(v: Any, name: str, inf: float) -> float | np.ndarray:
    if v is None:
        return inf
    arr = np.asarray([inf if x is None else x for x in v], dtype=object).tolist() \
        if isinstance(v, (list, tuple)) else v
    if np.ndim(arr) == 0:
        f = _user_float(arr, name)
        if math.isnan(f):
            raise ValueError(f"{name} is NaN")
        return f
    conv = np.asarray(arr, dtype=np.float64)
    if conv.ndim != 1 or np.isnan(conv).any():
        raise ValueError(f"{name} must be a number or a 1-D array of numbers (no NaN)")
    return conv


def _user_extensions(sample_weight, offset, coef_bounds, positive, always_select,
                     exclude) -> dict[str, Any]:
    """The problem's optional parts as the user gives them (validated; one clear line)."""
    out: dict[str, Any] = {}
    if sample_weight is not None:
        w = _user_vector(sample_weight, "sample_weight")
        if (w < 0).any():
            raise ValueError("sample_weight must be >= 0")
        out["sample_weight"] = w
    if offset is not None:
        out["offset"] = _user_vector(offset, "offset")
    if coef_bounds is not _NOT_GIVEN:
        if coef_bounds is None:
            out["coef_bounds"] = (-math.inf, math.inf)
        else:
            pair = list(coef_bounds)
            if len(pair) != 2:
                raise ValueError("coef_bounds must be a pair (lower, upper)")
            out["coef_bounds"] = (_user_side(pair[0], "coef_bounds lower", -math.inf),
                                  _user_side(pair[1], "coef_bounds upper", math.inf))
    if positive is not None:
        if not isinstance(positive, (bool, np.bool_)):
            raise TypeError(f"positive must be a bool, got {positive!r}")
        out["positive"] = bool(positive)
    for name, v in (("always_select", always_select), ("exclude", exclude)):
        if v is None:
            continue
        idx = []
        for j in (v.tolist() if isinstance(v, np.ndarray) else list(v)):
            if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or j < 0:
                raise ValueError(f"{name} must hold feature indices (integers >= 0), got {j!r}")
            idx.append(int(j))
        if len(set(idx)) != len(idx):
            raise ValueError(f"{name} holds repeated indices")
        out[name] = tuple(sorted(idx))
    return out


def _problem_bounds(c: _Parsed) -> tuple[np.ndarray, np.ndarray] | None:
    """The certificate's per-coefficient bounds with its box (None: the box alone)."""
    ext = c.extensions
    if ext["coef_lower"] is None:
        return None
    box = math.inf if c.M is None else c.M
    return np.maximum(ext["coef_lower"], -box), np.minimum(ext["coef_upper"], box)


def _user_bounds(user: dict, c: _Parsed) -> tuple[np.ndarray, np.ndarray] | str:
    """Every coefficient's bounds as the user poses them (the user's box, or the
    certificate's), or why they cannot be formed."""
    box = user.get("max_abs_coef", c.M)
    box = math.inf if box is None else box
    lo, hi = np.full(c.p, -box), np.full(c.p, box)
    side_l, side_u = user.get("coef_bounds", (-math.inf, math.inf))
    for name, side in (("lower", side_l), ("upper", side_u)):
        if np.ndim(side) and np.size(side) != c.p:
            return (f"coef_bounds {name} has {np.size(side)} entries, the certificate has "
                    f"n_features = {c.p}")
    lo, hi = np.maximum(lo, side_l), np.minimum(hi, side_u)
    if user.get("positive", False):
        lo = np.maximum(lo, 0.0)
    return lo, hi


def _compare_extensions(rep: VerificationReport, c: _Parsed, user: dict) -> list[str]:
    """The problem's optional parts, the user's against the certificate's (reported like the
    other parameters); the differences, one line each."""
    ext, diffs = c.extensions, []
    for name in ("always_select", "exclude"):
        if name in user:
            rep.parameters[name] = (list(user[name]), "user")
            if user[name] != ext[name]:
                diffs.append(f"{name} = {list(user[name])} (user) but {list(ext[name])} in "
                             "the certificate")
        elif ext[name]:
            rep.parameters[name] = (list(ext[name]), "certificate")
    cert_b = _problem_bounds(c)
    if "coef_bounds" in user or "positive" in user:
        mine = _user_bounds(user, c)
        if isinstance(mine, str):
            diffs.append(mine)
            return diffs
        box = user.get("max_abs_coef", c.M)
        box = math.inf if box is None else box
        theirs = cert_b if cert_b is not None else (np.full(c.p, -box), np.full(c.p, box))
        rep.parameters["coef_bounds"] = ("per coefficient", "user")
        for side, a, b in (("lower", mine[0], theirs[0]), ("upper", mine[1], theirs[1])):
            diff = np.flatnonzero(a != b)
            if diff.size:
                j = int(diff[0])
                diffs.append(f"the {side} bound of coefficient {j} is {a[j]!r} (user) but "
                             f"{b[j]!r} in the certificate")
                break
    elif cert_b is not None:
        rep.parameters["coef_bounds"] = ("per coefficient", "certificate")
    return diffs


def _data_extensions(rep: VerificationReport, c: _Parsed, user: dict
                     ) -> tuple[_Extras | None, str | None]:
    """The weights and offsets the user gives, checked against the certificate's hashes
    (absent: all 1 and all 0), and the problem's other parts: the extras of the bounds, or why
    the data is not the certificate's."""
    ext = c.extensions
    arrays = {}
    for name, neutral in (("sample_weight", 1.0), ("offset", 0.0)):
        given = user.get(name)
        if given is not None and given.shape != (c.n,):
            return None, f"{name} has shape {given.shape}, the certificate has n = {c.n}"
        mine = given if given is not None else np.full(c.n, neutral)
        theirs = ext[name + "_sha256"] or array_sha256(np.full(c.n, neutral))
        if array_sha256(mine) != theirs:
            what = ("is not given, but the certificate is about " + ("weighted" if name ==
                    "sample_weight" else "offset") + " data" if given is None else
                    "differs from the certificate's")
            return None, f"{name} {what}: the data is not the data that was certified"
        arrays[name] = mine if ext[name + "_sha256"] is not None else None
    w = arrays["sample_weight"]
    if w is not None and not (w > 0).any():
        return None, "sample_weight is zero everywhere"
    bounds = _problem_bounds(c)
    lo, hi = (None, None) if bounds is None else bounds
    return _Extras(w=w, o=arrays["offset"], lo=lo, hi=hi, forced_in=ext["always_select"],
                   forced_out=ext["exclude"]), None


# ----------------------------------------------------------------------------------------------
# The verifier
# ----------------------------------------------------------------------------------------------


def _check_jobs(n_jobs: Any) -> int:
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise TypeError(f"n_jobs must be an integer >= 1 (or -1: every core), got {n_jobs!r}")
    n_jobs = int(n_jobs)
    if n_jobs == -1:
        return max(1, os.cpu_count() or 1)
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1 (or -1: every core), got {n_jobs}")
    return n_jobs


def _peak_rss() -> int | None:
    """This process's peak resident memory in bytes (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def verify_certificate(
    certificate: Any,
    X: Any,
    y: Any,
    *,
    loss: str | None = None,
    k: int | None = None,
    lambda2: float | None = None,
    max_abs_coef: float | None = _NOT_GIVEN,
    fit_intercept: bool | None = None,
    rel_gap: float = DEFAULT_REL_GAP,
    proof: Any = None,
    huber_delta: float | None = None,
    sample_weight: Any = None,
    offset: Any = None,
    coef_bounds: Any = _NOT_GIVEN,
    positive: bool | None = None,
    always_select: Any = None,
    exclude: Any = None,
    n_jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> VerificationReport:
    """Verify a certificate against the data, recomputing every bound rigorously.

    Parameters
    ----------
    certificate : path to the JSON file, the parsed JSON dict, or a ``Certificate``.
        A path's proof file is the file next to it with the same name and extension
        ``.proof``.
    X : array_like of shape (n_samples, n_features), or a sparse matrix
        The data exactly as given to the solver. A sparse matrix (scipy's CSR or CSC, read
        through its ``indptr``, ``indices``, ``data`` and ``shape`` attributes: scipy is not
        imported) is checked and put in canonical compressed sparse column form; a certificate
        of a sparse X (``X_format`` ``"csc"``) verifies with X given sparse or dense, and one
        of a dense X with X given dense or sparse (then formed densely here).
    y : array_like of shape (n_samples,)
        The targets / raw labels exactly as given to the solver (classification labels are
        mapped by the package's rule: the smaller of the two values -> -1, the larger -> +1).
    loss, k, lambda2, max_abs_coef, fit_intercept : optional
        The problem as the user poses it; a value that differs from the certificate's fails the
        check ``parameters``. Not given: the certificate's value is used (and reported as such).
        ``max_abs_coef=None`` or ``inf`` means no box.
    rel_gap : float
        Relative-gap tolerance the verification is judged against (default 1e-4, never the
        certificate's own).
    proof : path or bytes, optional
        Override where the proof file comes from.
    huber_delta : float, optional
        The Huber loss's threshold as the user poses it (checked like the parameters above; a
        value given for a certificate of another loss fails the check ``parameters``).
    sample_weight, offset : array_like of shape (n_samples,), optional
        The per-sample weights and offsets, data like X and y: their hashes must be the
        certificate's (not given: all 1 and all 0, which a certificate of weighted or offset
        data fails).
    coef_bounds, positive : optional
        The coefficients' bounds as the user poses them: ``(lower, upper)``, each None, a number
        or one number per feature, and ``b >= 0`` with ``positive``; together with the box
        they must give the certificate's bounds (not given: the certificate's).
    always_select, exclude : sequence of int, optional
        The features forced into and kept out of the model (not given: the certificate's).
    n_jobs : int
        Processes that check subtrees of the tree (-1: one per core). The verdict and every
        message are the same as with 1.
    progress : callable, optional
        Called with a line of progress every few seconds of a long check of the tree.

    Returns
    -------
    VerificationReport

    Raises
    ------
    OSError
        The certificate file cannot be read.
    ValueError, TypeError
        X or y is not a finite numeric matrix / vector, or a parameter is invalid.
    """
    user = _user_params(loss, k, lambda2, max_abs_coef, fit_intercept, rel_gap, huber_delta)
    user.update(_user_extensions(sample_weight, offset, coef_bounds, positive, always_select,
                                 exclude))
    jobs = _check_jobs(n_jobs)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, got {type(progress).__name__}")
    X, y = _check_data(X, y)
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):  # overflow etc. become inf/nan and fail the checks
        rep = _verify(certificate, X, y, user, float(rel_gap), proof, jobs, progress)
    rep.seconds = time.perf_counter() - t0
    rep.peak_memory = _peak_rss()
    rep.summary["n_jobs"] = jobs
    return rep


def _verify(certificate, X, y, user, rel_gap, proof, jobs, progress) -> VerificationReport:
    rep = VerificationReport(rel_gap_tolerance=rel_gap)
    doc, src_given, src_desc = _obtain(certificate, proof)

    # 1. format, required fields, types
    if isinstance(doc, str):
        return rep.fail_input("format", doc)
    try:
        c = _parse(doc)
    except _Malformed as exc:
        return rep.fail_input("format", str(exc))
    except RecursionError:
        return rep.fail_input("format", "the JSON document is nested too deeply")
    rep.add("format", True, f"{FORMAT_NAME} version {FORMAT_VERSION}, all fields present")
    rep.summary.update(n=c.n, p=c.p, upper_bound=c.ub, lower_bound=c.lb, status=c.status)

    # 2. the proof file: its size and header before anything else is read (section 6, cost)
    if src_given is None:
        return rep.fail_input("proof", src_desc)
    src = _Source(src_given)
    try:
        size = src.size()
        if size == c.proof_bytes:
            with src.open() as fh:
                layout = _read_layout(fh, size, c)
    except OSError as exc:
        return rep.fail_input("proof", f"proof file {src_desc} cannot be read "
                                       f"({exc.strerror or exc})")
    except _Malformed as exc:
        return rep.fail_input("proof", str(exc))
    if size != c.proof_bytes:
        rep.add("proof", False, f"the proof file ({src_desc}) is {size} bytes; the certificate "
                                f"records {c.proof_bytes} (a truncated or another file)")
        return rep
    try:
        digest = _hash_file(src)
    except OSError as exc:
        return rep.fail_input("proof", f"proof file {src_desc} cannot be read "
                                       f"({exc.strerror or exc})")
    if digest != c.proof_sha256:
        rep.add("proof", False, f"SHA-256 of the proof file ({src_desc}) is {digest}, the "
                                f"certificate records {c.proof_sha256}")
        return rep
    rep.add("proof", True, f"SHA-256 matches; {layout.n_nodes} nodes, {layout.n_dual} dual "
                           f"and {layout.n_shifted} shifted witnesses")
    rep.summary["n_nodes"] = layout.n_nodes

    # 3. the platform's elementary functions
    ok, msg = elementary_functions_check()
    if not ok:
        return rep.fail_input("elementary_functions", msg)
    rep.add("elementary_functions", True, msg)

    # 4. the problem: the user's values win; a difference is a failed check
    cert_vals = {"loss": c.loss, "k": c.k, "lambda2": c.lambda2, "max_abs_coef": c.M,
                 "fit_intercept": c.fit_intercept, **c.loss_params}
    diffs = [f"{name} = {_fmt_param(user[name])} (user) but the certificate's {c.loss} loss has "
             f"no such parameter" for name in sorted(set(user) - set(cert_vals)
                                                     - set(_USER_EXTENSIONS))]
    for name, cv in cert_vals.items():
        if name in user:
            rep.parameters[name] = (user[name], "user")
            if user[name] != cv:
                diffs.append(f"{name} = {_fmt_param(user[name])} (user) but "
                             f"{_fmt_param(cv)} in the certificate")
        else:
            rep.parameters[name] = (cv, "certificate")
    diffs += _compare_extensions(rep, c, user)
    rep.parameters["rel_gap"] = (rel_gap, "user")
    if diffs:
        rep.add("parameters", False, "; ".join(diffs))
        return rep
    rep.add("parameters", True, ", ".join(f"{k} from the {src}" for k, (_, src) in
                                          rep.parameters.items() if k != "rel_gap"))

    # 5. data
    if X.shape != (c.n, c.p) or y.shape != (c.n,):
        rep.add("data_shape", False, f"data has X {X.shape}, y {y.shape}; the certificate is for "
                                     f"n_samples={c.n}, n_features={c.p}")
        return rep
    rep.add("data_shape", True, f"n={c.n}, p={c.p}")
    try:  # the form the certificate's hash is defined on (section 3)
        X = _as_format(X, c.X_format)
    except (MemoryError, ValueError) as exc:
        return rep.fail_input("data", f"X cannot be read as the certificate's "
                                      f"{'sparse' if c.X_format else 'dense'} X "
                                      f"({_short(str(exc)) or type(exc).__name__})")
    bad = [name for name, h, ok in (("X", c.X_sha256, _data_sha256(X) == c.X_sha256),
                                    ("y", c.y_sha256, array_sha256(y) == c.y_sha256)) if not ok]
    if bad:
        rep.add("data_hash", False, f"SHA-256 of {' and '.join(bad)} differ"
                                    f"{'s' if len(bad) == 1 else ''} from the certificate: the "
                                    "data is not the data that was certified")
        return rep
    extra, problem = _data_extensions(rep, c, user)
    if problem is not None:
        rep.add("data_hash", False, problem)
        return rep
    rep.add("data_hash", True, "SHA-256 of X and y match" + "".join(
        f", and of {name}" for name in ("sample_weight", "offset")
        if c.extensions[name + "_sha256"] is not None))
    try:
        if c.loss in CLASSIFICATION_LOSSES:
            ym = binary_labels(y)
            vals = _label_values(y)
            lab_msg = f"labels mapped {vals[0]:g} -> -1, {vals[1]:g} -> +1 (smaller -> -1)"
        else:
            ym = y
            if c.loss == "poisson" and (y < 0).any():
                i = int(np.flatnonzero(y < 0)[0])
                raise ValueError(f"Poisson needs y >= 0 but y[{i}] = {y[i]!r}")
            lab_msg = "targets valid for the loss"
    except ValueError as exc:
        rep.add("labels", False, str(exc))
        return rep
    rep.add("labels", True, lab_msg)

    # 6. incumbent
    nz = np.flatnonzero(c.coef).tolist()
    rep.add("incumbent_sparsity", len(nz) <= c.k, f"||coef||_0 = {len(nz)}, k = {c.k}")
    rep.add("incumbent_support", c.support == nz,
            "support equals the nonzero coefficients" if c.support == nz else
            f"support field {_short(c.support)} differs from the nonzero coefficients "
            f"{_short(nz)}")
    if c.M is not None:
        over = np.flatnonzero(np.abs(c.coef) > c.M).tolist()
        rep.add("incumbent_box", not over, f"|coef_j| <= {c.M:g}" if not over else
                f"|coef_j| > max_abs_coef = {c.M:g} for j = {_list(over)}")
    if extra.lo is not None:
        out_b = np.flatnonzero(~((extra.lo <= c.coef) & (c.coef <= extra.hi))).tolist()
        rep.add("incumbent_bounds", not out_b,
                "every coefficient within its bounds" if not out_b else
                f"coef_j outside [lower_j, upper_j] for j = {_list(out_b)}")
    if extra.forced_in or extra.forced_out:
        on = [j for j in extra.forced_out if c.coef[j] != 0]
        chosen = len(set(nz) | set(extra.forced_in))
        fine = not on and chosen <= c.k
        rep.add("incumbent_selection", fine,
                f"the excluded features are zero and the forced-in ones with the support make "
                f"{chosen} <= k = {c.k} features" if fine else
                (f"excluded features with nonzero coefficients: {_list(on)}" if on else
                 f"the support with the forced-in features makes {chosen} > k = {c.k} "
                 "features"))
    rep.add("incumbent_intercept", c.fit_intercept or c.intercept == 0.0,
            "intercept allowed (fit_intercept)" if c.fit_intercept else
            "intercept is 0 (fit_intercept is false)" if c.intercept == 0.0 else
            f"intercept is {c.intercept!r} but fit_intercept is false")
    value, upper = objective_upper_bound(
        X, ym, Problem(c.loss, c.lambda2, huber_delta=c.huber_delta, sample_weight=extra.w,
                       offset=extra.o), c.coef, c.intercept if c.fit_intercept else 0.0)
    rep.objective_upper = upper
    rep.add("incumbent_objective", upper <= c.ub,
            f"objective {value:.15g}, proven <= {upper:.15g} <= claimed upper bound "
            f"{c.ub:.15g}" if upper <= c.ub else
            f"the incumbent's objective is only proven <= {upper:.15g} (computed {value:.15g}),"
            f" above the claimed upper bound {c.ub:.15g}")

    # 7. eigenvalue shift
    shift_ok = True
    if c.mu > 0:
        if c.loss != "squared":
            shift_ok = rep.add("eig_shift", False, f"eig_shift = {c.mu!r} > 0 is only defined "
                                                   f"for the squared loss, not {c.loss}")
        elif isinstance(X, _CSC):
            shift_ok = rep.add("eig_shift", False, f"eig_shift = {c.mu!r} > 0 with a sparse X "
                                                   "(X_format csc): a shift is proven for a "
                                                   "dense X only")
        else:
            ok, msg = (proves_eig_shift(X, c.mu, c.fit_intercept) if extra.w is None else
                       proves_eig_shift_weighted(X, c.mu, c.fit_intercept, extra.w))
            shift_ok = rep.add("eig_shift", ok, msg)
    else:
        rep.add("eig_shift", True, "no eigenvalue shift (mu = 0)")

    # 8.-11. the tree, its witnesses and the bounds of its regions, in one streamed walk
    ctx = _Context(c, _design_of(X, ym, c.loss, c.fit_intercept, c.huber_delta, extra), src,
                   layout, ym, shift_ok, extra)
    try:
        out = _check_tree(ctx, jobs, progress)
    except _Malformed as exc:  # the file changed under the verifier
        return rep.fail_input("proof", str(exc))
    except OSError as exc:
        return rep.fail_input("proof", f"proof file {src_desc} cannot be read "
                                       f"({exc.strerror or exc})")
    _report_tree(rep, c, out)

    # 12. the claims
    order_ok = c.lb <= c.ub
    rep.add("bounds_order", order_ok, f"lower bound {c.lb:.15g} <= upper bound {c.ub:.15g}"
            if order_ok else f"lower bound {c.lb:.15g} > upper bound {c.ub:.15g}: the "
                             "certificate's claims are inconsistent")
    if not order_ok:  # no gap to speak of: the status check says why
        rep.add("status", c.status != "optimal",
                f"status {c.status}" + (" is claimed with the lower bound above the upper bound"
                                        if c.status == "optimal" else
                                        " (no optimality claimed)"))
        rep.gap_within_tolerance = False
        rep.complete = True
        return rep
    abs_gap = float(_up(c.ub - c.lb))
    rel = float(_up(abs_gap / max(1.0, abs(c.ub))))
    rep.relative_gap = rel
    own = rel <= c.rel_tol or abs_gap <= c.abs_tol
    if c.status == "optimal":
        rep.add("status", own, f"status optimal: relative gap {rel:.3e} <= {c.rel_tol:.3e} or "
                               f"absolute gap {abs_gap:.3e} <= {c.abs_tol:.3e} (the "
                               "certificate's tolerances)" + ("" if own else " is FALSE"))
    else:
        rep.add("status", True, f"status {c.status} (no optimality claimed)")
    rep.gap_within_tolerance = rel <= rel_gap
    rep.complete = True
    return rep


def _report_tree(rep: VerificationReport, c: _Parsed, out: _Outcome) -> None:
    """The checks of the walk (tree_structure, tree_fixings, leaf_witnesses, leaf_bounds)."""
    if out.stop is not None:
        _, check, msg = out.stop
        rep.add(check, False, msg)
        return
    rep.add("tree_structure", True,
            f"{out.n_visited + out.n_skipped} records form one tree in preorder, "
            f"{out.n_leaves} leaves read, every branched node has the children z_j = 0 and "
            f"z_j = 1 ({out.n_skipped} records in empty or covered regions not read)")
    rep.add("tree_fixings", True,
            "every branching is on a variable no branching above it fixed; the leaves, the "
            "regions of the derived bound fixings and the empty regions partition "
            "{z in {0,1}^p : sum z <= k}"
            + (" with the problem's forced-in and excluded features fixed at the root"
               if c.extensions.get("always_select") or c.extensions.get("exclude") else "")
            + (f" ({out.n_derived} bound fixings derived)" if out.n_derived else ""))
    rep.add("leaf_witnesses", not out.wit,
            f"every region has a usable witness ({out.n_inherited} leaves use an ancestor's)"
            if not out.wit else "; ".join(msg for _, msg in out.wit[:_MAX_LISTED]))
    if out.wit:
        return
    rep.certified_lower_bound = out.min_bound
    rep.summary["n_regions"] = out.n_regions
    if out.bad:
        more = (f" (and {out.n_bad - _MAX_LISTED} more)" if out.n_bad > _MAX_LISTED else "")
        msg = (f"safe bound below the claimed lower bound {c.lb:.15g} at "
               + ", ".join(f"{d} ({v:.15g})" for _, d, v in out.bad[:_MAX_LISTED]) + more)
    else:
        msg = (f"min over {out.n_regions} regions of the safe bounds = {out.min_bound:.15g} >= "
               f"claimed lower bound {c.lb:.15g}")
    rep.add("leaf_bounds", not out.bad, msg)


# ----------------------------------------------------------------------------------------------
# The walk of the tree (sections 2.6 and 6): records in preorder, fixings on an undo stack,
# memory O(depth + p + a bounded cache of witness terms), subtrees in worker processes
# ----------------------------------------------------------------------------------------------


@dataclass
class _Context:
    """What every walk of one verification shares (inherited by forked workers)."""

    c: _Parsed
    des: _Design
    src: _Source
    layout: _Layout
    ym: np.ndarray
    shift_ok: bool
    extra: _Extras = field(default_factory=_Extras)


@dataclass
class _Outcome:
    """What a walk of some subtrees found; outcomes of disjoint subtrees merge. Every item is
    keyed by the preorder index of its node, so a merge keeps what a serial walk reports: the
    first stop, the first witness problems and failing regions in preorder, the counts."""

    stop: tuple[int, str, str] | None = None  # (node, check, message): the walk stopped
    wit: list[tuple[int, str]] = field(default_factory=list)  # the first witness problems
    n_wit: int = 0
    bad: list[tuple[int, str, float]] = field(default_factory=list)  # first failing regions
    n_bad: int = 0
    n_regions: int = 0
    min_bound: float = math.inf
    n_inherited: int = 0
    n_visited: int = 0
    n_skipped: int = 0
    n_leaves: int = 0
    n_derived: int = 0

    def region(self, v: float) -> None:
        self.n_regions += 1
        if not v >= self.min_bound:
            self.min_bound = v if not math.isnan(v) else -math.inf

    def regions(self, v: np.ndarray) -> None:
        if v.size:
            self.n_regions += int(v.size)
            self.min_bound = min(self.min_bound, float(v.min()))

    def witness_problem(self, node: int, msg: str) -> None:
        self.n_wit += 1
        if len(self.wit) < _MAX_LISTED:
            self.wit.append((node, msg))

    def below(self, node: int, desc: str, v: float) -> None:
        self.n_bad += 1
        if len(self.bad) < _MAX_LISTED:
            self.bad.append((node, desc, v))

    def merge(self, other: _Outcome) -> None:
        if other.stop is not None and (self.stop is None or other.stop[0] < self.stop[0]):
            self.stop = other.stop
        self.wit = sorted(self.wit + other.wit)[:_MAX_LISTED]
        self.bad = sorted(self.bad + other.bad)[:_MAX_LISTED]
        for name in ("n_wit", "n_bad", "n_regions", "n_inherited", "n_visited", "n_skipped",
                     "n_leaves", "n_derived"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.min_bound = min(self.min_bound, other.min_bound)


class _Stop(Exception):
    def __init__(self, node: int, check: str, msg: str) -> None:
        super().__init__(msg)
        self.args3 = (node, check, msg)


#: witness terms kept at once: about 64 MiB of Huber terms
_CACHE_BYTES = 1 << 26


class _Walker:
    """Walks subtrees of the proof file's tree in preorder (one per process)."""

    def __init__(self, ctx: _Context, progress: _Progress | None = None) -> None:
        self.ctx = ctx
        c = ctx.c
        self.reader = _Reader(ctx.src, ctx.layout)
        self.k, self.p, self.lb = c.k, c.p, c.lb
        self.cache: OrderedDict[tuple[int, int], _Terms | str] = OrderedDict()
        self.cap = max(8, _CACHE_BYTES // (8 * c.p))
        self.progress = progress

    def close(self) -> None:
        self.reader.close()

    # -- witnesses --------------------------------------------------------------------------
    def _evaluate(self, kind: int, slot: int) -> _Terms | str:
        """The terms of one witness, or why it gives no bound. Each witness is evaluated on its
        own (the same products, so the same bounds, in every process)."""
        ctx, c = self.ctx, self.ctx.c
        M, lam = c.M, c.lambda2
        if kind == 1:
            z = self.reader.dual_rows([slot])
            w = ctx.extra.w
            problem = (_dual_problem(c.loss, z[0], ctx.ym, c.fit_intercept, c.huber_delta)
                       if w is None else
                       _weighted_dual_problem(c.loss, z[0], ctx.ym, w, c.fit_intercept,
                                              c.huber_delta))
            if problem is not None:
                return problem
            return _dual_terms(ctx.des, z, lam, M)[0]
        if c.loss != "squared" or c.mu <= 0:
            return ("needs the squared loss and a proven eigenvalue shift mu > 0 (use a dual "
                    "witness)")
        if not ctx.shift_ok:
            return "needs the eigenvalue shift, which is not proven"
        b = self.reader.shifted_row(slot)
        if isinstance(b, str):
            return b
        return _shifted_terms(ctx.des, b[None, :], lam, c.mu, M)[0]

    def terms(self, wit: tuple[int, int] | None, node: int, out: _Outcome) -> _Terms | None:
        """The terms of a node's witness (own or inherited); None (and a witness problem
        recorded) when it has none or it gives no bound."""
        if wit is None:
            out.witness_problem(node, f"node {node} has no witness (nor any ancestor)")
            return None
        t = self.cache.get(wit)
        if t is None:
            t = self._evaluate(*wit)
            self.cache[wit] = t
            if len(self.cache) > self.cap:
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(wit)
        if isinstance(t, str):
            out.witness_problem(node, f"{_KIND_NAMES[wit[0]]} witness {wit[1]} (node {node}) "
                                      f"{t}")
            return None
        return t

    # -- the walk ---------------------------------------------------------------------------
    def walk(self, pos: int, size: int, state: np.ndarray, branched: np.ndarray,
             inherited: tuple[int, int] | None, split: _Splitter | None = None) -> _Outcome:
        """Walk the subtree of ``size`` records at ``pos`` (its branching from the parent
        already in ``state``, 0 free / 1 in / 2 out; ``branched`` the variables branched on
        above it)."""
        out = _Outcome()
        try:
            self._walk(pos, size, state, branched, inherited, split, out)
        except _Stop as stop:
            out.stop = stop.args3
        return out

    def _walk(self, pos0, size0_, state, branched, inherited, split, out) -> None:
        k, p, lb = self.k, self.p, self.lb
        L = self.ctx.layout
        end = pos0 + size0_
        n_in = int(np.count_nonzero(state == 1))
        # frames: (0, pos, size, j, b, inherited witness) enter a node made by z_j = b from its
        # parent (j = -1: no branching to apply); (1, undo, j) leave a branched node
        stack: list[tuple] = [(0, pos0, size0_, -1, 0, inherited)]
        tick = 0

        def undo_all(undo: list) -> int:
            removed = 0
            for item in reversed(undo):
                removed += int(np.count_nonzero(state[item] == 1))
                state[item] = 0
            return removed

        while stack:
            fr = stack.pop()
            if fr[0] == 1:
                n_in -= undo_all(fr[1])
                branched[fr[2]] = False
                continue
            _, pos, size, j, b, inh = fr
            undo: list = []
            if j >= 0:  # the branching z_j = b that makes this node
                s = state[j]
                if s == 0:
                    if b == 1 and n_in >= k:  # more than k variables in S1: an empty region
                        out.n_skipped += size
                        continue
                    state[j] = 1 if b == 1 else 2
                    n_in += b
                    undo.append(j)
                elif (s == 1) != (b == 1):  # a bound fixing above says otherwise: empty
                    out.n_skipped += size
                    continue
                if split is not None and split.takes(size):
                    split.submit(pos, size, state, branched, inh)
                    n_in -= undo_all(undo)
                    continue
            tick += 1
            if self.progress is not None and tick & 1023 == 0:
                self.progress.tick(out.n_visited + out.n_skipped)
            head, var, slot, size0 = self.reader.record(pos, end)
            if head > 0x1F or (head >> 3) & 3 == 3:
                raise _Stop(pos, "tree_structure", f"node {pos}: malformed record (head "
                                                   f"{head:#x}: reserved bits set)")
            status, derive, wk = head & 3, head & 4, (head >> 3) & 3
            if status == 0:
                if not (size >= 3 and 1 <= size0 <= size - 2):
                    raise _Stop(pos, "tree_structure",
                                f"node {pos}: a branched node whose subtree of {size} records "
                                f"cannot hold a first child's subtree of {size0} records and a "
                                "second one (the records are not a tree in preorder)")
                if var >= p:
                    raise _Stop(pos, "tree_structure", f"node {pos}: branching variable {var} "
                                                       f"not in [0, {p})")
            elif size != 1 or var or size0:
                raise _Stop(pos, "tree_structure",
                            f"node {pos}: a leaf record (status "
                            f"{_STATUS_NAMES[status]}) where {size} records are left for its "
                            "subtree, or with a branching variable or subtree size (the "
                            "records are not a tree in preorder)")
            own = None
            if wk:
                if slot >= L.slots(_KIND_NAMES[wk]):
                    raise _Stop(pos, "tree_structure",
                                f"node {pos}: {_KIND_NAMES[wk]} witness slot {slot} out of range "
                                f"({L.slots(_KIND_NAMES[wk])} stored)")
                own = (wk, slot)
            elif slot:
                raise _Stop(pos, "tree_structure", f"node {pos}: a witness slot without a "
                                                   "witness kind")
            out.n_visited += 1
            wit = own if own is not None else inh
            leaf = status != 0
            t = self.terms(wit, pos, out) if (derive or leaf) else None
            if derive and t is not None:
                base = _region_bound(t, _g_star_up(t.h_up, state, k))
                if base >= lb:  # the node's whole region is bounded: nothing below is needed
                    out.region(base)
                    out.n_skipped += size - 1
                    n_in -= undo_all(undo)
                    continue
                regions = _free_region_bounds(t, state, k)
                if regions is not None:
                    free_idx, b_in, b_out = regions
                    d0, d1 = b_in >= lb, b_out >= lb  # fix j to 0 / to 1
                    n1 = int(np.count_nonzero(d1))
                    if n1 or d0.any():
                        out.regions(b_in[d0])
                        out.regions(b_out[d1])
                        out.n_derived += int(np.count_nonzero(d0)) + n1
                        if (d0 & d1).any() or n_in + n1 > k:  # the regions cover the node
                            out.n_skipped += size - 1
                            n_in -= undo_all(undo)
                            continue
                        i0, i1 = free_idx[d0], free_idx[d1]
                        state[i0] = 2
                        state[i1] = 1
                        n_in += n1
                        undo.extend((i0, i1))
            if leaf:
                out.n_leaves += 1
                if t is not None:
                    out.n_inherited += own is None
                    v = _region_bound(t, _g_star_up(t.h_up, state, k))
                    out.region(v)
                    if not v >= lb:
                        out.below(pos, f"leaf {pos}", v)
                n_in -= undo_all(undo)
                continue
            if branched[var]:
                raise _Stop(pos, "tree_fixings",
                            f"node {pos}: branches on variable {var}, which a branching above "
                            "it already fixed")
            branched[var] = True
            stack.append((1, undo, var))
            stack.append((0, pos + 1 + size0, size - 1 - size0, var, 1, wit))
            stack.append((0, pos + 1, size0, var, 0, wit))


class _Progress:
    """Progress lines of a long walk: at most one every ``interval`` seconds."""

    def __init__(self, report: Callable[[str], None] | None, total: int,
                 interval: float = 5.0) -> None:
        self.report = report
        self.total = total
        self.interval = interval
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.own = 0  # records the master's walk has passed
        self.tasks = 0  # records of the finished tasks
        self.lock = threading.Lock()

    def tick(self, own: int | None = None, task: int = 0) -> None:
        """Count the master's progress (``own``) or a finished task's records (``task``) and
        print a line if the last one is older than the interval."""
        with self.lock:
            if own is not None:
                self.own = own
            self.tasks += task
            now = time.perf_counter()
            if self.report is None or now - self.last < self.interval:
                return
            self.last = now
            done = self.own + self.tasks
            self.report(f"verify: {min(done, self.total):,} of {self.total:,} nodes checked "
                        f"({100.0 * min(done, self.total) / self.total:.0f}%) in "
                        f"{now - self.t0:.1f} s")


class _Splitter:
    """Hands subtrees of the master's walk to worker processes: a subtree of at most
    ``largest`` and at least ``smallest`` records is a task; the master walks the rest."""

    def __init__(self, ctx: _Context, jobs: int, total: int, progress: _Progress) -> None:
        self.ctx = ctx
        self.jobs = jobs
        self.largest = max(_MIN_TASK, total // (8 * jobs))
        self.smallest = max(1, self.largest // 16)
        self.pool = None
        self.pending: list = []
        self.progress = progress

    def takes(self, size: int) -> bool:
        return self.smallest <= size <= self.largest

    def _start(self) -> None:
        import multiprocessing as mp

        global _FORKED
        methods = mp.get_all_start_methods()
        if "fork" in methods:
            _FORKED = self.ctx  # the workers inherit it (and the data) from this process
            self.pool = mp.get_context("fork").Pool(self.jobs, initializer=_start_worker,
                                                    initargs=(None,))
        else:
            c = self.ctx
            state = (c.c, c.des.X, c.ym, c.src.data if c.src.data is not None else c.src.path,
                     c.layout, c.shift_ok, c.extra)
            self.pool = mp.get_context("spawn").Pool(self.jobs, initializer=_start_worker,
                                                     initargs=(state,))

    def submit(self, pos: int, size: int, state: np.ndarray, branched: np.ndarray,
               inherited: tuple[int, int] | None) -> None:
        if self.pool is None:
            self._start()
        task = (pos, size, state.copy(), branched.copy(), inherited)
        self.pending.append(self.pool.apply_async(_run_task, (task,), callback=self._done))

    def _done(self, out: _Outcome) -> None:
        self.progress.tick(task=out.n_visited + out.n_skipped)

    def collect(self, into: _Outcome) -> None:
        try:
            for r in self.pending:
                into.merge(r.get())
        finally:
            self.close()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None


#: the smallest tree split into tasks, and the least records a task holds
_MIN_TASK = 2048
_FORKED: _Context | None = None
_WORKER: _Walker | None = None


def _start_worker(state) -> None:
    """A worker's walker: from the forked parent's context, or rebuilt from ``state``."""
    global _WORKER
    if state is None:
        ctx = _FORKED
    else:
        c, X, ym, src, layout, shift_ok, extra = state
        ctx = _Context(c, _design_of(X, ym, c.loss, c.fit_intercept, c.huber_delta, extra),
                       _Source(src), layout, ym, shift_ok, extra)
    _WORKER = _Walker(ctx)


def _run_task(task) -> _Outcome:
    pos, size, state, branched, inherited = task
    with np.errstate(all="ignore"):
        return _WORKER.walk(pos, size, state, branched, inherited)


def _check_tree(ctx: _Context, jobs: int, report: Callable[[str], None] | None) -> _Outcome:
    """Walk the whole tree: serially, or with ``jobs`` worker processes checking subtrees (the
    same outcome: every subtree is walked by the same code from the same state)."""
    total = ctx.layout.n_nodes
    progress = _Progress(report, total)
    walker = _Walker(ctx, progress)
    state = np.zeros(ctx.c.p, dtype=np.int8)  # 0 free, 1 in, 2 out
    state[list(ctx.extra.forced_out)] = 2  # the root's fixings: the problem's allowed supports
    state[list(ctx.extra.forced_in)] = 1
    branched = np.zeros(ctx.c.p, dtype=bool)
    split = _Splitter(ctx, jobs, total, progress) if jobs > 1 and total >= 2 * _MIN_TASK \
        else None
    try:
        out = walker.walk(0, total, state, branched, None, split)
        if split is not None:
            split.collect(out)
    finally:
        walker.close()
        if split is not None:
            split.close()
    return out


def _npz_sparse(z) -> Any:
    """A sparse X stored in a data ``.npz`` as its index and value arrays (``X_indptr``,
    ``X_indices``, ``X_data``, ``X_shape``, optional ``X_format``): an object with the
    attributes the verifier reads a sparse matrix through (checked by :func:`_sparse_input`)."""
    from types import SimpleNamespace

    missing = [m for m in ("X_indptr", "X_indices", "X_data", "X_shape") if m not in z.files]
    if missing:
        raise KeyError(f"no array X (dense) nor {', '.join(missing)} (a sparse X)")
    fmt = str(z["X_format"]) if "X_format" in z.files else "csc"
    shape = np.asarray(z["X_shape"])
    if shape.shape != (2,) or shape.dtype.kind not in "iu":
        raise ValueError("X_shape must be two integers")
    return SimpleNamespace(format=fmt, indptr=z["X_indptr"], indices=z["X_indices"],
                           data=z["X_data"], shape=(int(shape[0]), int(shape[1])))


def _main(argv: list[str] | None = None) -> int:
    """``python -m sparsecert.certificate.verify CERT.json DATA.npz [options]``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m sparsecert.certificate.verify",
                                 description="Standalone numpy-only certificate verifier.")
    ap.add_argument("certificate")
    ap.add_argument("data", help=".npz file with arrays X and y (and sample_weight, offset "
                                 "when the problem has them); a sparse X as the arrays X_indptr, "
                                 "X_indices, X_data and X_shape (and X_format, 'csc' or 'csr'; "
                                 "default 'csc')")
    ap.add_argument("--loss", choices=LOSSES)
    ap.add_argument("--k", type=int)
    ap.add_argument("--lambda2", type=float)
    ap.add_argument("--max-abs-coef", type=float, default=None, help="inf: no box")
    ap.add_argument("--fit-intercept", action=argparse.BooleanOptionalAction, default=None)
    ap.add_argument("--huber-delta", type=float, default=None)
    ap.add_argument("--rel-gap", type=float, default=DEFAULT_REL_GAP)
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes checking subtrees (-1: one per core; default 1)")
    args = ap.parse_args(argv)
    try:
        with np.load(args.data, allow_pickle=False) as z:
            X, y = (z["X"] if "X" in z.files else _npz_sparse(z)), z["y"]
            data_extra = {name: z[name] for name in ("sample_weight", "offset")
                          if name in z.files}
    except Exception as exc:  # noqa: BLE001 - any unreadable data file is one line, exit 2
        print(f"error: {args.data}: not a readable .npz file with arrays X and y "
              f"({_short(str(exc))})", file=sys.stderr)
        return 2

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        report = verify_certificate(
            args.certificate, X, y, loss=args.loss, k=args.k, lambda2=args.lambda2,
            max_abs_coef=_NOT_GIVEN if args.max_abs_coef is None else args.max_abs_coef,
            fit_intercept=args.fit_intercept, rel_gap=args.rel_gap, huber_delta=args.huber_delta,
            n_jobs=args.jobs, progress=say, **data_extra)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if report.input_error:
        print(f"error: {args.certificate}: {report.error_line}", file=sys.stderr)
        return 2
    print(report)
    return report.exit_code


if __name__ == "__main__":
    sys.exit(_main())
