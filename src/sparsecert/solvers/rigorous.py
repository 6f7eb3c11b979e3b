"""Safe (rigorous) evaluation on the solver side: node bounds, the incumbent's objective, the
eigenvalue-shift proof and the exact zero-sum rounding of dual witnesses.

The producer claims only what the standalone verifier (:mod:`sparsecert.certificate.verify`)
can prove. This module evaluates the same quantities under the same error model, with its own
code (it shares nothing with the verifier):

* every floating-point quantity that enters a bound is a *ball* ``(mid, rad)`` with
  ``|exact - mid| <= rad`` componentwise; radii come from a priori bounds (``gamma_m = m u / (1 -
  m u)`` for sums and dot products of length ``m``, applied to sums of absolute values or to
  column / row norms by Cauchy-Schwarz, plus ``ETA`` per product for underflow) and are rounded
  upward (``numpy.nextafter`` after every operation on radii);
* numpy's ``exp``, ``log`` and ``log1p`` are assumed accurate to ``EPS_ELEM = 2^-40`` relative
  (the verifier checks this on start-up);
* matrix products are conventional (not Strassen): ``gamma_n |A| |x|`` bounds their error in
  any summation order, with or without FMA.

A claim is made with :data:`CLAIM_FACTOR` times the radius (see :func:`claim_lower`), so that the
verifier, whose own radius for the same quantity is within a factor 1.5 of ours, still proves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

# the one producer-side rounding module (the names this module's code was written with)
from sparsecert.proof.claims import (
    CLAIM_FACTOR,
    claim_lower,
    claim_lower_array,
    claim_upper,
)
from sparsecert.proof.rounding import (
    ETA,
    Ball,
    U,
    gamma,
    pos_sum_hi,
    pos_sum_lo,
)
from sparsecert.proof.rounding import dn as _dn
from sparsecert.proof.rounding import elem_err as _elem_err
from sparsecert.proof.rounding import inv_one_minus as _inv_one_minus
from sparsecert.proof.rounding import norm_hi as _norm_hi
from sparsecert.proof.rounding import rat_up as _rat_up
from sparsecert.proof.rounding import sum_hi as _sum_hi
from sparsecert.proof.rounding import sumsq_hi as _sumsq_hi
from sparsecert.proof.rounding import up as _up

__all__ = [
    "CLAIM_FACTOR",
    "SafeEvaluator",
    "WitnessBound",
    "claim_lower",
    "claim_lower_array",
    "claim_upper",
    "exact_zero_sum",
    "proves_eig_shift",
]

# ----------------------------------------------------------------------------------------------
# Node bounds
# ----------------------------------------------------------------------------------------------


@dataclass
class WitnessBound:
    """What a witness contributes to every node that uses it.

    bound(node) = K - 2 lam g*_node(a) with a = -grad / (2 lam); ``k_mid``/``k_lo`` are the
    computed and the safe value of K, ``h_mid``/``h_hi`` the computed and the safe (upper)
    Huber terms H_M(a_j).
    """

    k_mid: float
    k_lo: float
    lam: float
    h_mid: np.ndarray
    h_hi: np.ndarray

    def node(self, fixed_in: np.ndarray, fixed_out: np.ndarray, k: int) -> tuple[float, float]:
        """(computed value, safe lower bound) for the node with these fixings (bool masks)."""
        free = ~(fixed_in | fixed_out)
        budget = k - int(fixed_in.sum())
        g_mid = float(self.h_mid[fixed_in].sum())
        g_hi = float(pos_sum_hi(self.h_hi[fixed_in])) if fixed_in.any() else 0.0
        if budget > 0 and free.any():
            idx = np.flatnonzero(free)
            if budget < idx.size:
                top = idx[np.argpartition(-self.h_hi[idx], budget - 1)[:budget]]
                top_mid = np.sort(self.h_mid[idx])[-budget:].sum()
            else:
                top, top_mid = idx, self.h_mid[idx].sum()
            g_mid += float(top_mid)
            g_hi = float(_up(g_hi + float(pos_sum_hi(self.h_hi[top]))))
        value = self.k_mid - 2.0 * self.lam * g_mid
        lower = float(_dn(self.k_lo - float(_up(2.0 * self.lam * g_hi))))
        if not math.isfinite(lower) or not math.isfinite(value):
            return -math.inf, -math.inf
        return float(value), lower


def _on_columns(h: np.ndarray, cols: np.ndarray, p: int) -> np.ndarray:
    """Terms on ``cols`` spread to length ``p``, ``inf`` elsewhere."""
    out = np.full(p, np.inf)
    out[cols] = h
    return out


def _huber(t, M):
    """H_M(t) for t >= 0 (plain floating point)."""
    if M is None:
        return 0.5 * t * t
    return np.where(t <= M, 0.5 * t * t, M * t - 0.5 * M * M)


def _huber_hi(t, M):
    """Upper bound of H_M(t) for exact floats t >= 0 (H is nondecreasing on t >= 0)."""
    quad = _up(0.5 * _up(t * t))
    if M is None:
        return quad
    m2 = max(float(_dn(0.5 * float(_dn(M * M)))), 0.0)
    return np.where(t <= M, quad, _up(_up(M * t) - m2))


class SafeEvaluator:
    """Rigorous bounds of one problem, on the user's raw data.

    Parameters
    ----------
    X : ndarray (n, p)
        The raw design (as given by the user).
    y : ndarray (n,)
        The raw targets, classification labels already mapped to -1/+1.
    loss : str
    lambda2 : float
    max_abs_coef : float or None
    fit_intercept : bool
    eig_shift : float
        mu (shifted witnesses; the caller proved X^T P X - mu I PSD).
    """

    def __init__(self, X, y, loss: str, lambda2: float, max_abs_coef, fit_intercept: bool,
                 eig_shift: float = 0.0):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.n, self.p = self.X.shape
        self.loss = loss
        self.lambda2 = float(lambda2)
        self.M = (None if max_abs_coef is None or math.isinf(float(max_abs_coef))
                  else float(max_abs_coef))
        self.fit_intercept = bool(fit_intercept)
        self.mu = float(eig_shift)
        if self.fit_intercept:
            # any centre m works (a dual witness sums to zero, P annihilates 1): the rounding
            # of X - 1 m^T is at most e |Xd| entrywise
            self.Xd = self.X - self.X.mean(axis=0)
            self.e = _rat_up(Fraction(1, 2 ** 53) / (1 - Fraction(1, 2 ** 53)))
        else:
            self.Xd, self.e = self.X, 0.0
        if loss == "squared" and self.fit_intercept:
            yc = self.y - self.y.mean()
            self.yb = Ball(yc, _up(self.e * np.abs(yc)))
        else:
            self.yb = Ball(self.y, np.zeros(self.n))
        self._col = None
        self._row = None

    # -- norms ----------------------------------------------------------------------------
    @property
    def col_norm(self) -> np.ndarray:
        if self._col is None:
            self._col = _up(np.sqrt(_sumsq_hi(np.einsum("ij,ij->j", self.Xd, self.Xd), self.n)))
        return self._col

    @property
    def row_norm(self) -> np.ndarray:
        if self._row is None:
            self._row = _up(np.sqrt(_sumsq_hi(np.einsum("ij,ij->i", self.Xd, self.Xd), self.p)))
        return self._row

    def _xt(self, w: Ball, cols: np.ndarray | None = None) -> Ball:
        """(X - 1 m^T)^T w as a ball (Cauchy-Schwarz on the a priori product bound); with
        ``cols``, its entries on those columns only."""
        # with most columns asked for, the product over every column read on ``cols`` (one
        # pass over X); with few, the product over a copy of those columns (each entry's error
        # bound below holds for any order of its sum, so both are proven alike)
        if cols is None or 4 * cols.size >= self.p:
            mid = w.mid @ self.Xd
            cn = self.col_norm
            if cols is not None:
                mid, cn = mid[cols], cn[cols]
        else:
            mid, cn = w.mid @ self.Xd[:, cols], self.col_norm[cols]
        wn = float(_norm_hi(w.mid))
        rn = float(_norm_hi(w.rad))
        f = _up(_up(_up(gamma(self.n) + self.e) * wn) + _up(_up(1.0 + self.e) * rn))
        return Ball(mid, _up(_up(cn * f) + self.n * ETA))

    # -- witnesses ------------------------------------------------------------------------
    def dual_domain(self) -> tuple[np.ndarray, np.ndarray]:
        """dom f*(.; y_i) per sample, as [lower, upper]."""
        y = self.y
        if self.loss == "squared":
            return np.full(self.n, -np.inf), np.full(self.n, np.inf)
        if self.loss == "logistic":
            return np.where(y > 0, -1.0, 0.0), np.where(y > 0, 0.0, 1.0)
        if self.loss == "squared_hinge":
            return np.where(y > 0, -np.inf, 0.0), np.where(y > 0, 0.0, np.inf)
        return -y, np.full(self.n, np.inf)

    def dual_witness(self, zeta: np.ndarray) -> np.ndarray:
        """A dual witness the verifier accepts, from an (approximate) dual point: clipped into
        the domain and, with an intercept, rounded to an exactly zero sum."""
        lo, hi = self.dual_domain()
        z = np.clip(np.asarray(zeta, dtype=np.float64), lo, hi)
        if self.fit_intercept and not _sums_to_zero(z):
            z = exact_zero_sum(z, lo, hi)
        return z

    def dual(self, zeta: np.ndarray, cols: np.ndarray | None = None) -> WitnessBound | None:
        """Terms of a dual witness (None when outside the domain or not zero-sum).

        With ``cols`` (column indices) only the terms of those columns are computed (each term
        is a function of its own column, the witness and the labels); the others are ``inf``,
        so that a node bound that read one would be ``-inf``, never too high.
        """
        z = np.asarray(zeta, dtype=np.float64)
        lo, hi = self.dual_domain()
        if not (np.isfinite(z).all() and (z >= lo).all() and (z <= hi).all()):
            return None
        if self.fit_intercept and not _sums_to_zero(z):
            return None
        with np.errstate(all="ignore"):
            c_mid, c_hi = self._conj_sum(z)
            g = self._xt(Ball(z, np.zeros(self.n)), cols)
            lam = self.lambda2
            a_mid = np.abs(g.mid) / (2.0 * lam)
            a_hi = _up(g.mag / (2.0 * lam))
            h_mid, h_hi = _huber(a_mid, self.M), _huber_hi(a_hi, self.M)
            if cols is not None:
                h_mid, h_hi = _on_columns(h_mid, cols, self.p), _on_columns(h_hi, cols, self.p)
            return WitnessBound(k_mid=-c_mid, k_lo=-c_hi, lam=lam, h_mid=h_mid, h_hi=h_hi)

    def _conj_sum(self, z: np.ndarray) -> tuple[float, float]:
        """(computed, upper bound) of sum_i f*(z_i; y_i) (z in the domain)."""
        y, n = self.yb, self.n
        if self.loss in ("squared", "squared_hinge"):
            zz = float(z @ z)
            quad_hi = float(_up(0.25 * float(_sumsq_hi(zz, n))))
            lin = float(z @ y.mid)
            absdot = float(pos_sum_hi(_up(np.abs(z) * np.abs(y.mid))))
            lin_err = _up(_up(_up(gamma(n) * absdot) + n * ETA)
                          + pos_sum_hi(_up(np.abs(z) * y.rad)))
            return 0.25 * zz + lin, float(_up(quad_hi + float(_up(lin + lin_err))))
        if self.loss == "logistic":
            t = -y.mid * z
            with np.errstate(divide="ignore", invalid="ignore"):
                lt, l1 = np.log(t), np.log1p(-t)
                mid = np.where(t > 0, t * lt, 0.0) + np.where(t < 1, (1.0 - t) * l1, 0.0)
            w = 1.0 - t
            l1_hi = _up(l1 + _elem_err(l1))
            p1 = np.where(t > 0, _up(t * _up(lt + _elem_err(lt))), 0.0)
            p2 = np.where(t < 1, np.maximum(_up(np.maximum(_dn(w), 0.0) * l1_hi),
                                            _up(_up(w) * l1_hi)), 0.0)
            return float(mid.sum()), _sum_hi(_up(p1 + p2))
        # poisson: w log w - w at w = z + y (convex: its maximum on an interval is at an end)
        w = z + y.mid
        with np.errstate(divide="ignore", invalid="ignore"):
            mid = np.where(w > 0, w * np.log(w) - w, 0.0)
        ends = [np.maximum(_dn(w), 0.0), _up(w)]
        vals = []
        for x in ends:
            with np.errstate(divide="ignore", invalid="ignore"):
                lx = np.log(x)
                vals.append(np.where(x > 0, _up(_up(x * _up(lx + _elem_err(lx))) - x), 0.0))
        return float(mid.sum()), _sum_hi(np.maximum(vals[0], vals[1]))

    def shifted(self, b: np.ndarray) -> WitnessBound | None:
        """Terms of a shifted witness b~ (squared loss, mu > 0 proven by the caller)."""
        if self.loss != "squared" or not self.mu > 0:
            return None
        b = np.asarray(b, dtype=np.float64)
        if not np.isfinite(b).all():
            return None
        n, p, mu = self.n, self.p, self.mu
        with np.errstate(all="ignore"):
            vmid = self.Xd @ b
            f = _up(_up(gamma(p) + self.e) * float(_norm_hi(b)))
            v = Ball(vmid, _up(_up(self.row_norm * f) + p * ETA))
            y = self.yb
            if self.fit_intercept:
                sv, sy = v.total(), y.total()
                pv2_hi = _up(pos_sum_hi(_up(v.mag * v.mag))
                             - float(_dn(float(_dn(sv.mig * sv.mig)) / n)))
                py2_lo = _dn(pos_sum_lo(np.maximum(_dn(y.mig * y.mig), 0.0))
                             - float(_up(float(_up(sy.mag * sy.mag)) / n)))
                pv2_mid = float(vmid @ vmid) - float(vmid.sum()) ** 2 / n
                py2_mid = float(y.mid @ y.mid) - float(y.mid.sum()) ** 2 / n
                d = v - y
                md = d.total()
                mmid = md.mid / n
                mrad = float(_up(_up(md.rad / n) + _up(_up(U * abs(mmid)) + ETA)))
                w = d - Ball(np.full(n, mmid), np.full(n, mrad))
            else:
                pv2_hi = pos_sum_hi(_up(v.mag * v.mag))
                py2_lo = pos_sum_lo(np.maximum(_dn(y.mid * y.mid), 0.0))
                pv2_mid, py2_mid = float(vmid @ vmid), float(y.mid @ y.mid)
                w = v - y
            g = self._xt(w)
            t2 = (2.0 * mu) * b
            smid = 2.0 * g.mid - t2
            srad = _up(_up(2.0 * g.rad) + _up(_up(_up(U * np.abs(t2)) + ETA)
                                              + _up(U * np.abs(smid))))
            lam = float(_dn(self.lambda2 + mu))
            a_mid = np.abs(smid) / (2.0 * lam)
            a_hi = _up(_up(np.abs(smid) + srad) / (2.0 * lam))
            mb_lo = max(float(_dn(mu * float(pos_sum_lo(np.maximum(_dn(b * b), 0.0))))), 0.0)
            k_lo = float(_dn(_dn(py2_lo - pv2_hi) + mb_lo))
            k_mid = py2_mid - pv2_mid + mu * float(b @ b)
            return WitnessBound(k_mid=k_mid, k_lo=k_lo, lam=lam, h_mid=_huber(a_mid, self.M),
                                h_hi=_huber_hi(a_hi, self.M))

    def witness(self, kind: str, vec: np.ndarray, cols: np.ndarray | None = None
                ) -> WitnessBound | None:
        """Terms of a ("dual", zeta) or ("shifted", b) witness (``cols``: see :meth:`dual`;
        a shifted witness is always evaluated on every column)."""
        return self.dual(vec, cols) if kind == "dual" else self.shifted(vec)

    # -- incumbent --------------------------------------------------------------------------
    def objective(self, coef: np.ndarray, intercept: float) -> tuple[float, float]:
        """(computed value, safe upper bound) of F(coef, intercept) on the raw data.

        x_i^T b + c (or y_i - x_i^T b - c for the squared loss) is evaluated by error-free
        transformations (Dekker's TwoProduct, then Ogita-Rump-Oishi's Sum2), so a column with
        a huge offset and an intercept costs nothing; then each loss term is bounded above.
        """
        coef = np.asarray(coef, dtype=np.float64)
        S = np.flatnonzero(coef)
        A, cb = self.X[:, S], coef[S]
        c = np.full(self.n, float(intercept) if self.fit_intercept else 0.0)
        with np.errstate(all="ignore"):
            if (A.size and np.abs(A).max() >= 2.0 ** 995) or (cb.size and
                                                              np.abs(cb).max() >= 2.0 ** 995):
                return math.nan, math.inf
            y = self.y
            if self.loss == "squared":
                r = _lin_ball(A, -cb, [y, -c])
                mid = float((r.mid * r.mid).sum())
                hi = float(pos_sum_hi(_up(r.mag * r.mag)))
            else:
                u = _lin_ball(A, cb, [c])
                mid, hi = self._loss_sum(u)
            ridge = float(_up(self.lambda2 * float(pos_sum_hi(_up(coef * coef)))))
            value = mid + self.lambda2 * float(coef @ coef)
            upper = float(_up(hi + ridge))
        return float(value), (upper if math.isfinite(upper) else math.inf)

    def _loss_sum(self, u: Ball) -> tuple[float, float]:
        y = self.y
        if self.loss == "logistic":
            mid = float(np.logaddexp(0.0, -y * u.mid).sum())
            z = _up(-y * u.mid + u.rad)  # softplus is nondecreasing
            e = np.exp(-np.abs(z))
            lg = np.log1p(_up(e + _elem_err(e)))
            return mid, float(pos_sum_hi(_up(np.maximum(z, 0.0) + _up(lg + _elem_err(lg)))))
        if self.loss == "squared_hinge":
            m = 1.0 - y * u.mid
            mid = float((np.maximum(m, 0.0) ** 2).sum())
            mh = np.maximum(_up(_up(m + u.rad) + _up(U * np.abs(m))), 0.0)
            return mid, float(pos_sum_hi(_up(mh * mh)))
        mid = float((np.exp(u.mid) - y * u.mid).sum())
        hi = None
        for x in (u.lo, u.hi):  # convex: the maximum is at an end
            ex = np.exp(x)
            val = _up(_up(ex + _elem_err(ex)) + _up(-y * x))
            hi = val if hi is None else np.maximum(hi, val)
        return mid, _sum_hi(hi)


def _lin_ball(A: np.ndarray, coef: np.ndarray, extra: list[np.ndarray]) -> Ball:
    """Rows of A @ coef plus the ``extra`` vectors, nearly exactly (TwoProduct + Sum2).

    Sum2 (Ogita, Rump, Oishi, SIAM J. Sci. Comput. 2005): |res - s| <= u |s| + gamma_m^2
    sum |t_i| for m terms; a product below 2^-968, whose error term may not be exact, adds
    2^-1020 to the radius.
    """
    n = A.shape[0] if A.ndim == 2 else extra[0].shape[0]
    terms = []
    tiny = np.zeros(n)
    for j in range(A.shape[1]):
        a, b = A[:, j], coef[j]
        p = a * b
        sa = 134217729.0 * a
        ah = sa - (sa - a)
        al = a - ah
        sb = 134217729.0 * b
        bh = sb - (sb - b)
        bl = b - bh
        err = al * bl - (((p - ah * bh) - al * bh) - ah * bl)
        small = (np.abs(p) < 2.0 ** -968) & (a != 0)
        tiny = tiny + small
        terms.append(p)
        terms.append(np.where(small, 0.0, err))
    terms.extend(extra)
    s = terms[0].copy()
    comp = np.zeros(n)
    for t in terms[1:]:
        x = s + t
        z = x - s
        comp = comp + ((s - (x - z)) + (t - z))
        s = x
    res = s + comp
    m = len(terms)
    g2 = float(_up(gamma(m) * gamma(m)))
    absum = pos_sum_hi(np.abs(np.stack(terms)), axis=0)
    rad = _up(_up(_up(U * np.abs(res)) + _up(g2 * absum)) * _inv_one_minus(U))
    return Ball(res, _up(rad + tiny * 2.0 ** -1020))


# ----------------------------------------------------------------------------------------------
# Zero sums and the eigenvalue shift
# ----------------------------------------------------------------------------------------------


def _sums_to_zero(z: np.ndarray) -> bool:
    """Whether the exact sum of the float64 entries is zero (``math.fsum`` is correctly rounded;
    finite entries whose partial sums overflow, or infinities, are not a zero-sum witness)."""
    try:
        return math.fsum(z.tolist()) == 0.0
    except (OverflowError, ValueError):
        return False


def exact_zero_sum(zeta: np.ndarray, lower: np.ndarray | None = None,
                   upper: np.ndarray | None = None) -> np.ndarray:
    """A vector close to ``zeta`` whose exact sum is zero (``math.fsum(out) == 0.0``), inside
    ``[lower, upper]``.

    The entries are moved to a common power-of-two grid ``q`` fine enough that every partial sum
    is exact, the mean is removed, and the remaining integer number of grid units is spread over
    the entries with room inside the box.

    Raises
    ------
    ValueError
        If the box leaves no room to reach a zero sum.
    """
    z = np.asarray(zeta, dtype=np.float64)
    n = z.size
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, dtype=np.float64)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=np.float64)
    z = np.clip(z - z.mean(), lo, hi)
    scale = max(float(np.abs(z).max(initial=0.0)),
                float(np.abs(lo[np.isfinite(lo)]).max(initial=0.0)),
                float(np.abs(hi[np.isfinite(hi)]).max(initial=0.0)), 1e-300)
    e = math.frexp(scale)[1]  # scale < 2**e
    q = math.ldexp(1.0, e + math.ceil(math.log2(n + 1)) + 1 - 52)
    big = float(2 ** 52)
    lo_u = np.ceil(np.clip(lo / q, -big, big)).astype(np.int64)
    hi_u = np.floor(np.clip(hi / q, -big, big)).astype(np.int64)
    units = np.clip(np.rint(z / q).astype(np.int64), lo_u, hi_u)
    r = int(units.sum())  # entries are < 2**(52 - log2 n): the int64 sum is exact
    if r != 0:
        room = (units - lo_u) if r > 0 else (hi_u - units)
        order = np.argsort(-room, kind="stable")
        need = abs(r)
        take = np.minimum(room[order], need)
        cum = np.cumsum(take)
        take = np.where(cum <= need, take, np.maximum(0, need - (cum - take)))
        if int(take.sum()) != need:
            raise ValueError("the box [lower, upper] leaves no room for an exact zero sum")
        units[order] -= np.sign(r) * take
    out = units.astype(np.float64) * q
    if math.fsum(out.tolist()) != 0.0:  # cannot happen: all entries lie on the grid q
        raise RuntimeError("exact_zero_sum: internal error, the sum is not exactly zero")
    return out


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


def _product_consistent(A: np.ndarray, B: np.ndarray, C, extra: float = 0.0) -> bool:
    """Whether C, a library's A @ B, is finite and consistent with A and B: for two fixed
    weight vectors w (irregular magnitudes summing to < 1, one of them with irregular signs),
    fl(C w) and fl(A fl(B w)) computed elementwise differ by at most twice what a conventional
    product (|C - AB| <= gamma_k |A||B| + k ETA + ``extra``) and these sums allow: gamma_q
    |C||w| + (2 gamma_k + gamma_q) |A|v + (q + 2k) ETA + q ETA sum|A| + extra, v >= |B||w|,
    |fl(B w)|."""
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
    gk, gq = gamma(k), gamma(q)
    for w in (w0, np.where((j * 0.7548776662466927) % 1.0 < 0.5, w0, -w0)):
        t, tmag = np.empty(k), np.empty(k)
        for b in _chunks(k, q):
            prod = B[b] * w
            t[b] = prod.sum(axis=1)
            tmag[b] = np.abs(prod).sum(axis=1)
        tmag = _sumsq_hi(tmag, q)  # a dot product of |B| and |w|: (fl + q ETA) / (1 - gamma_q)
        v = _up(np.maximum(np.abs(t), tmag))
        for b in _chunks(m, max(k, q)):
            cw = C[b] * w
            s1, s1mag = cw.sum(axis=1), _sumsq_hi(np.abs(cw).sum(axis=1), q)
            blk = A[b]
            s2 = (blk * t).sum(axis=1)
            ab = np.abs(blk)
            asum = _up(ab.sum(axis=1) * _inv_one_minus(gamma(max(k - 1, 0))))
            amag = _sumsq_hi((ab * v).sum(axis=1), k)
            tol = _up(_up(gq * s1mag) + _up(_up(2.0 * gk + gq) * amag))
            tol = _up(_up(_up(tol + (q + 2 * k) * ETA) + _up(q * ETA * asum)) + extra)
            tol = _up(2.0 * tol)
            if not ((np.abs(s1 - s2) <= tol) & np.isfinite(tol)).all():
                return False
    return True


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
                     gram: np.ndarray | None = None) -> bool:
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
        G = np.triu(G) + np.triu(G, 1).T
        d = _dn(np.diag(G) - shift)
        if (d < 0).any():
            return False
        N = p + 1  # as the verifier: covers a factorisation dividing through reciprocals
        under = float(_up(4.0 * ETA * N * float(_up(2.0 * (N + 1) + float(d.max())))))
        c = float(_up(_up(0.5 * float(_up(gamma(2 * (N + 1)) * float(pos_sum_hi(d)))))
                      + under))
        a_diag = _dn(d - c)
        if not (math.isfinite(c) and np.isfinite(a_diag).all()) or (a_diag <= 0).any():
            return False
        G[np.diag_indices_from(G)] = a_diag
        try:
            L = np.linalg.cholesky(G)
        except np.linalg.LinAlgError:
            return False
        return _factor_ok(G, L, under)
