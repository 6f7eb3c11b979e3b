"""Directed rounding on the producer side: the one place the proof producer (and the search's
reduced-cost fixing) takes its rounding-error bounds from.

The error model is the verifier's (``docs/certificate-format.md``, section 7), written again here
on purpose (the standalone verifier shares no code with the producer):

* one floating-point operation with a finite result ``r`` has its exact value in
  ``[prev(r), next(r)]``; :func:`up` and :func:`dn` step one float outward;
* a sum or dot product of ``m`` terms, in any order, is within ``gamma_m`` times the sum of the
  absolute terms (plus ``ETA`` per product for underflow), ``gamma_m = m u / (1 - m u)``;
* numpy's ``exp``, ``log`` and ``log1p`` are accurate to ``EPS_ELEM`` relative (the verifier
  checks this on start-up).

A quantity that enters a bound is a :class:`Ball` ``(mid, rad)`` with ``|exact - mid| <= rad``
componentwise, or a one-sided bound; radii are combined with every operation rounded upward.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["U", "ETA", "EPS_ELEM", "CENTRE_ERR", "up", "dn", "rat_up", "rat_dn", "gamma",
           "gamma_array", "inv_one_minus", "inv_one_plus", "elem_err", "pos_sum_hi",
           "pos_sum_lo", "sum_hi", "sumsq_hi", "norm_hi", "sums_to_zero", "two_product",
           "Ball"]

U = 2.0 ** -53
ETA = 2.0 ** -1074
EPS_ELEM = 2.0 ** -40


_F64 = np.float64


def up(x):
    """The next float toward +inf (elementwise; a float64 for a scalar, as numpy gives it, by
    the standard library's ``nextafter``: a fifth of numpy's cost on one number)."""
    if type(x) is float or type(x) is _F64:
        return _F64(math.nextafter(x, math.inf))
    return np.nextafter(x, np.inf)


def dn(x):
    """The next float toward -inf (elementwise; a scalar as in :func:`up`)."""
    if type(x) is float or type(x) is _F64:
        return _F64(math.nextafter(x, -math.inf))
    return np.nextafter(x, -np.inf)


def rat_up(q: Fraction) -> float:
    """The smallest float >= the rational ``q``."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def rat_dn(q: Fraction) -> float:
    """The largest float <= the rational ``q``."""
    f = float(q)
    return f if Fraction(f) <= q else math.nextafter(f, -math.inf)


#: an upper bound of the relative error of centring a column, ``u / (1 - u)``
CENTRE_ERR = rat_up(Fraction(1, 2 ** 53) / (1 - Fraction(1, 2 ** 53)))

_G: dict[int, float] = {}


def gamma(m: int) -> float:
    """Float upper bound of gamma_m = m u / (1 - m u) (ValueError when m u >= 1/2)."""
    if m not in _G:
        mu = Fraction(max(m, 0), 2 ** 53)
        if mu >= Fraction(1, 2):
            raise ValueError("problem too large for the rounding-error bounds")
        _G[m] = rat_up(mu / (1 - mu))
    return _G[m]


def gamma_array(m: np.ndarray) -> np.ndarray:
    """Float upper bounds of gamma_m for an integer array ``m`` (ValueError when some m u >=
    1/2): ``m u`` and ``1 - m u`` are exact in float64 (u a power of two, m < 2^52), so the
    one rounded operation is the division, rounded up by :func:`up`."""
    m = np.maximum(np.asarray(m, dtype=np.int64), 0)
    if m.size and int(m.max()) >= 2 ** 52:
        raise ValueError("problem too large for the rounding-error bounds")
    mu = m.astype(np.float64) * U
    return np.where(m > 0, up(mu / (1.0 - mu)), 0.0)


@functools.lru_cache(maxsize=1024)
def inv_one_minus(g: float) -> float:
    """Float upper bound of 1 / (1 - g), exactly (a pure function of ``g``: memoised, since a
    certificate's assembly asks it for the same few gamma values thousands of times)."""
    return rat_up(1 / (1 - Fraction(g)))


@functools.lru_cache(maxsize=1024)
def inv_one_plus(g: float) -> float:
    """Float lower bound of 1 / (1 + g), exactly (memoised like :func:`inv_one_minus`)."""
    return rat_dn(1 / (1 + Fraction(g)))


_E2 = rat_up(Fraction(EPS_ELEM) / (1 - Fraction(EPS_ELEM)))


def elem_err(c):
    """Radius of a numpy exp/log/log1p result ``c`` at an exact argument."""
    return up(up(_E2 * np.abs(c)) + 2.0 * ETA)


def pos_sum_hi(v, axis=None):
    """Upper bound of the exact sum of nonnegative entries (any summation order); 0.0 for no
    entries."""
    v = np.asarray(v, dtype=np.float64)
    if axis is None and v.size == 0:
        return 0.0
    m = v.size if axis is None else v.shape[axis]
    return up(v.sum(axis=axis) * inv_one_minus(gamma(max(m - 1, 0))))


def pos_sum_lo(v, axis=None):
    """Lower bound (>= 0) of the exact sum of nonnegative entries."""
    v = np.asarray(v, dtype=np.float64)
    m = v.size if axis is None else v.shape[axis]
    return np.maximum(dn(v.sum(axis=axis) * inv_one_plus(gamma(max(m - 1, 0)))), 0.0)


def sum_hi(v) -> float:
    """Upper bound of the exact sum of entries of any sign."""
    v = np.asarray(v, dtype=np.float64)
    return float(up(float(v.sum()) + up(gamma(max(v.size - 1, 0)) * pos_sum_hi(np.abs(v)))))


def sumsq_hi(s, m: int):
    """Upper bound of sum x_i^2 (m terms) given its computed value s."""
    return up(up(s + m * ETA) * inv_one_minus(gamma(m)))


def norm_hi(v, axis=None):
    """Upper bound of the Euclidean norm of exact floats ``v`` (along ``axis``; a long vector
    in blocks, whose bounds are added with upward rounding: the temporaries stay small)."""
    v = np.asarray(v, dtype=np.float64)
    if axis is None and v.ndim == 1 and v.size > _NORM_BLOCK:
        total = 0.0
        for s in range(0, v.size, _NORM_BLOCK):
            b = np.abs(v[s:s + _NORM_BLOCK])
            total = float(up(total + float(pos_sum_hi(up(b * b)))))
        return up(np.sqrt(total))
    v = np.abs(v)
    return up(np.sqrt(pos_sum_hi(up(v * v), axis=axis)))


#: entries per block of :func:`norm_hi` of a long vector
_NORM_BLOCK = 1 << 15


@dataclass
class Ball:
    """Midpoint-radius enclosure: ``|exact - mid| <= rad`` (arrays or scalars)."""

    mid: np.ndarray
    rad: np.ndarray

    @property
    def hi(self):
        """Upper bound of the exact value."""
        return up(self.mid + self.rad)

    @property
    def lo(self):
        """Lower bound of the exact value."""
        return dn(self.mid - self.rad)

    @property
    def mag(self):
        """Upper bound of |exact|."""
        return up(np.abs(self.mid) + self.rad)

    @property
    def mig(self):
        """Lower bound (>= 0) of |exact|."""
        return np.maximum(dn(np.abs(self.mid) - self.rad), 0.0)

    def __sub__(self, other: Ball) -> Ball:
        m = self.mid - other.mid
        return Ball(m, up(up(self.rad + other.rad) + up(U * np.abs(m))))

    def total(self) -> Ball:
        """The sum of the entries."""
        m = float(self.mid.sum())
        n = self.mid.size
        r = up(pos_sum_hi(self.rad) + up(gamma(max(n - 1, 0)) * pos_sum_hi(np.abs(self.mid))))
        return Ball(m, r)

    def norm_hi(self) -> float:
        """Upper bound of the Euclidean norm of the exact vector."""
        return float(up(np.sqrt(pos_sum_hi(up(self.mag * self.mag)))))


def two_product(a, b):
    """``(p, err)`` with ``p = fl(a b)`` and Dekker's error term ``err`` (Veltkamp's split by
    ``2^27 + 1``): ``a b = p + err`` exactly when nothing underflows (``|p| >= 2^-968``) and
    nothing overflows in the split (``|a|, |b| < 2^995``); the callers check those ranges."""
    p = a * b
    sa = 134217729.0 * a
    ah = sa - (sa - a)
    al = a - ah
    sb = 134217729.0 * b
    bh = sb - (sb - b)
    bl = b - bh
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


def sums_to_zero(z: np.ndarray) -> bool:
    """Whether the exact sum of the float64 entries is zero (``math.fsum`` is correctly rounded;
    finite entries whose partial sums overflow, or infinities, are not a zero-sum witness)."""
    try:
        return exact_sum(z) == 0.0
    except (OverflowError, ValueError):
        return False


#: entries per block of :func:`exact_sum` (a block is a Python list: 32 bytes an entry)
_FSUM_BLOCK = 1 << 14


def exact_sum(z: np.ndarray) -> float:
    """``math.fsum`` of the float64 entries (the correctly rounded exact sum), fed in blocks so
    that no Python list of all the entries is ever made."""
    z = np.asarray(z, dtype=np.float64).reshape(-1)
    return math.fsum(v for s in range(0, z.size, _FSUM_BLOCK)
                     for v in z[s:s + _FSUM_BLOCK].tolist())
