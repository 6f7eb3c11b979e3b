"""Rigorous bound evaluation: node bounds from witnesses and the incumbent's objective, on the
user's raw data, under the verifier's error model (:mod:`sparsecert.proof.rounding`).

The producer claims only what the standalone verifier (:mod:`sparsecert.certificate.verify`)
can prove. This module evaluates the same quantities with its own code (it shares nothing with
the verifier); the per-loss parts (the conjugate sum and the loss sum, from above) are the loss
registry's (:meth:`sparsecert.solvers.losses.Loss.conjugate_sum_upper`,
:meth:`~sparsecert.solvers.losses.Loss.loss_sum_upper`). Matrix products are assumed
conventional (not Strassen): ``gamma_n |A| |x|`` bounds their error in any summation order,
with or without FMA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sparsecert.proof.rounding import (
    CENTRE_ERR,
    ETA,
    Ball,
    U,
    dn,
    gamma,
    gamma_array,
    inv_one_minus,
    norm_hi,
    pos_sum_hi,
    pos_sum_lo,
    sums_to_zero,
    sumsq_hi,
    two_product,
    up,
)
from sparsecert.solvers.losses import Loss, get_loss
from sparsecert.sparse import SparseDesign

__all__ = ["SafeEvaluator", "SampleAndBounds", "WitnessBound"]


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
            g_hi = float(up(g_hi + float(pos_sum_hi(self.h_hi[top]))))
        value = self.k_mid - 2.0 * self.lam * g_mid
        lower = float(dn(self.k_lo - float(up(2.0 * self.lam * g_hi))))
        if not math.isfinite(lower) or not math.isfinite(value):
            return -math.inf, -math.inf
        return float(value), lower


def _on_columns(h: np.ndarray, cols: np.ndarray, p: int) -> np.ndarray:
    """Terms on ``cols`` spread to length ``p``, ``inf`` elsewhere."""
    out = np.full(p, np.inf)
    out[cols] = h
    return out


def box_terms(t, M):
    """H_M(t) for t >= 0 (plain floating point; t^2 / 2 without a box)."""
    if M is None:
        return 0.5 * t * t
    return np.where(t <= M, 0.5 * t * t, M * t - 0.5 * M * M)


def box_terms_hi(t, M):
    """Upper bound of H_M(t) for exact floats t >= 0 (H is nondecreasing on t >= 0)."""
    quad = up(0.5 * up(t * t))
    if M is None:
        return quad
    m2 = max(float(dn(0.5 * float(dn(M * M)))), 0.0)
    return np.where(t <= M, quad, up(up(M * t) - m2))


def bounded_terms(a, lower, upper):
    """H_j(a_j) = sup_{b in [lower_j, upper_j]} (a_j b - b^2 / 2) (plain floating point):
    a^2/2 between the bounds, linear beyond (``lower <= 0 <= upper``, infinite ends allowed)."""
    with np.errstate(invalid="ignore", over="ignore"):
        quad = 0.5 * a * a
        above = upper * a - 0.5 * upper * upper
        below = lower * a - 0.5 * lower * lower
        return np.where(a > upper, above, np.where(a < lower, below, quad))


def _side_hi(t, B):
    """Upper bound of the one-sided term (t^2/2 up to B, linear beyond) at exact floats t >= 0,
    bounds B >= 0 (inf allowed); nondecreasing in t."""
    with np.errstate(invalid="ignore", over="ignore"):
        quad = up(0.5 * up(t * t))
        b2 = np.maximum(dn(0.5 * dn(B * B)), 0.0)
        lin = up(up(B * t) - b2)
        return np.where(t <= B, quad, np.where(np.isnan(lin), np.inf, lin))


def bounded_terms_hi(a_lo, a_hi, lower, upper):
    """Upper bound of H_j(a) over a in [a_lo, a_hi]: H_j is convex with its minimum 0 at 0, so
    the maximum is at an end (each side bounded like the symmetric box's term)."""
    pos = np.where(np.isnan(a_hi), np.inf, np.maximum(a_hi, 0.0))
    neg = np.where(np.isnan(a_lo), np.inf, np.maximum(-a_lo, 0.0))
    return np.maximum(_side_hi(pos, upper), _side_hi(neg, -lower))


@dataclass(frozen=True)
class SampleAndBounds:
    """What a problem adds to the plain one, as the rigorous bounds read it: per-sample
    weights (None: all 1) and offsets (None: all 0), and every coefficient's bounds
    ``coef_lower <= b <= coef_upper`` (None: the symmetric box alone; both or neither)."""

    sample_weight: np.ndarray | None = None
    offset: np.ndarray | None = None
    coef_lower: np.ndarray | None = None
    coef_upper: np.ndarray | None = None

    @classmethod
    def of(cls, prepared) -> SampleAndBounds:
        """Those of a prepared problem (:class:`sparsecert._validation.PreparedProblem`)."""
        return cls(prepared.sample_weight, prepared.offset, prepared.coef_lower,
                   prepared.coef_upper)


class SafeEvaluator:
    """Rigorous bounds of one problem, on the user's raw data.

    A sparse design (:class:`sparsecert.sparse.SparseDesign`) is read as it is, never centred
    (any centre serves a zero-sum dual witness, so none is used: ``m = 0``), and the error
    bound of ``X^T w`` uses, for column ``j``, the length of its dot product, the column's
    number of entries ``nnz_j``: ``|fl(X^T w)_j - (X^T w)_j| <= gamma_{nnz_j} ||X_j|| ||w|| +
    nnz_j eta``. It has no shifted witnesses (no eigenvalue shift).

    Parameters
    ----------
    X : ndarray (n, p) or SparseDesign
        The raw design (as given by the user).
    y : ndarray (n,)
        The raw targets, classification labels already mapped to -1/+1.
    loss : Loss or str
        The loss (with its parameters), or a name of the registry (its default parameters).
    lambda2 : float
    max_abs_coef : float or None
    fit_intercept : bool
    eig_shift : float
        mu (shifted witnesses; the caller proved X^T P X - mu I PSD).
    extras : SampleAndBounds, optional
        The per-sample weights and offsets and the coefficients' bounds (None: none).
    """

    def __init__(self, X, y, loss: Loss | str, lambda2: float, max_abs_coef,
                 fit_intercept: bool, eig_shift: float = 0.0, *,
                 extras: SampleAndBounds | None = None):
        extras = SampleAndBounds() if extras is None else extras
        sample_weight, offset = extras.sample_weight, extras.offset
        coef_lower, coef_upper = extras.coef_lower, extras.coef_upper
        self.sparse = isinstance(X, SparseDesign)
        self.X = X if self.sparse else np.ascontiguousarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.n, self.p = (int(d) for d in self.X.shape)
        self.loss = get_loss(loss) if isinstance(loss, str) else loss
        self.lambda2 = float(lambda2)
        self.M = (None if max_abs_coef is None or math.isinf(float(max_abs_coef))
                  else float(max_abs_coef))
        self.fit_intercept = bool(fit_intercept)
        self.mu = float(eig_shift)
        self.w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        self.o = None if offset is None else np.asarray(offset, dtype=np.float64)
        # every coefficient's bounds with the box (None: the symmetric box alone)
        self.lower = self.upper = None
        if coef_lower is not None:
            box = math.inf if self.M is None else self.M
            self.lower = np.maximum(np.asarray(coef_lower, dtype=np.float64), -box)
            self.upper = np.minimum(np.asarray(coef_upper, dtype=np.float64), box)
        if self.sparse:  # any centre works for a zero-sum dual: none (m = 0), exact
            self.Xd, self.e = None, 0.0
        elif self.fit_intercept:
            # any centre m works (a dual witness sums to zero, P annihilates 1): the rounding
            # of X - 1 m^T is at most e |Xd| entrywise
            centre = self.X.mean(axis=0) if self.w is None else (self.w @ self.X) / self.w.sum()
            self.Xd = self.X - centre
            self.e = CENTRE_ERR
        else:
            self.Xd, self.e = self.X, 0.0
        # an offset o: the conjugate of f(. + o) is f*(z) - z o. For a loss whose conjugate
        # is quadratic (z^2/4 + y z) it joins the linear coefficient y - o; else its own term
        quadratic = self.loss.quadratic_conjugate
        self.o_term = None if (self.o is None or quadratic) else self.o
        ylin, yrad = self.y, np.zeros(self.n)
        if self.o is not None and quadratic:
            ylin = self.y - self.o
            yrad = up(U * np.abs(ylin))
        if self.loss.has_closed_form_refit and self.fit_intercept:
            # the targets are centred as the engine centres them (smaller linear terms)
            # (the rounding of the centring: CENTRE_ERR |yc|, a sparse X's e being 0)
            yc = ylin - (ylin.mean() if self.w is None else (self.w @ ylin) / self.w.sum())
            self.yb = Ball(yc, up(up(CENTRE_ERR * np.abs(yc)) + yrad))
        else:
            self.yb = Ball(ylin, yrad)
        self._col = None
        self._row = None

    @property
    def weighted(self) -> bool:
        return self.w is not None

    # -- norms ----------------------------------------------------------------------------
    @property
    def col_norm(self) -> np.ndarray:
        if self._col is None:
            if self.sparse:  # sums of nnz_j <= max nnz squares
                m = int(self.X.column_nnz().max(initial=0))
                self._col = up(np.sqrt(sumsq_hi(self.X.column_sq_sums(), m)))
            else:
                self._col = up(np.sqrt(sumsq_hi(np.einsum("ij,ij->j", self.Xd, self.Xd),
                                                self.n)))
        return self._col

    @property
    def row_norm(self) -> np.ndarray:
        if self._row is None:
            self._row = up(np.sqrt(sumsq_hi(np.einsum("ij,ij->i", self.Xd, self.Xd), self.p)))
        return self._row

    def _xt(self, w: Ball, cols: np.ndarray | None = None) -> Ball:
        """(X - 1 m^T)^T w as a ball (Cauchy-Schwarz on the a priori product bound); with
        ``cols``, its entries on those columns only."""
        if self.sparse:
            return self._xt_sparse(w, cols)
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
        wn = float(norm_hi(w.mid))
        rn = float(norm_hi(w.rad))
        f = up(up(up(gamma(self.n) + self.e) * wn) + up(up(1.0 + self.e) * rn))
        return Ball(mid, up(up(cn * f) + self.n * ETA))

    def _xt_sparse(self, w: Ball, cols: np.ndarray | None = None) -> Ball:
        """X^T w as a ball for a sparse X (no centre): column j's product is a dot product of
        nnz_j terms, so |fl - exact| <= gamma_{nnz_j} ||X_j|| ||w.mid|| + nnz_j eta, plus
        ||X_j|| ||w.rad|| for the ball."""
        from sparsecert.solvers.perspective._linalg import csc_rmatvec

        X = self.X
        mid = np.empty(self.p)
        csc_rmatvec(X.indptr, X.indices, X.data, np.empty(0),
                    np.ascontiguousarray(w.mid, dtype=np.float64), mid)
        cn, nnz = self.col_norm, X.column_nnz()
        if cols is not None:
            mid, cn, nnz = mid[cols], cn[cols], nnz[cols]
        wn = float(norm_hi(w.mid))
        rn = float(norm_hi(w.rad))
        f = up(up(gamma_array(nnz) * wn) + rn)
        return Ball(mid, up(up(cn * f) + nnz * ETA))

    # -- witnesses ------------------------------------------------------------------------
    def dual_domain(self) -> tuple[np.ndarray, np.ndarray]:
        """dom f*(.; y_i) per sample, as [lower, upper] (weighted: an interval inside the
        domain of z -> w_i f*(z / w_i; y_i) that the verifier accepts, {0} where w_i = 0)."""
        if self.w is not None:
            return self.loss.weighted_dual_domain(self.y, self.w)
        return self.loss.dual_domain(self.y)

    def _terms(self, g: Ball, lam: float, cols: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """(computed, safe upper) terms H_j(a_j), a = -g / (2 lam), g a ball."""
        if self.lower is None:
            a_mid = np.abs(g.mid) / (2.0 * lam)
            a_hi = up(g.mag / (2.0 * lam))
            return box_terms(a_mid, self.M), box_terms_hi(a_hi, self.M)
        lo, hi = (self.lower, self.upper) if cols is None else (self.lower[cols],
                                                                 self.upper[cols])
        a_mid = -g.mid / (2.0 * lam)
        a_up = up(up(-g.mid + g.rad) / (2.0 * lam))
        a_dn = dn(dn(-g.mid - g.rad) / (2.0 * lam))
        return bounded_terms(a_mid, lo, hi), bounded_terms_hi(a_dn, a_up, lo, hi)

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
        if self.w is not None and (z[self.w == 0] != 0).any():
            return None
        if self.fit_intercept and not sums_to_zero(z):
            return None
        with np.errstate(all="ignore"):
            if self.w is None:
                c_mid, c_hi = _by_blocks(self.loss.conjugate_sum_upper, z, self.yb)
            else:
                c_mid, c_hi = _by_blocks(self.loss.weighted_conjugate_sum_upper, z, self.yb,
                                         self.w)
            k_mid, k_lo = -c_mid, -c_hi
            if self.o_term is not None:  # + o^T zeta, from below
                od = float(z @ self.o_term)
                err = up(up(gamma(self.n) * float(pos_sum_hi(up(np.abs(z) *
                                                              np.abs(self.o_term)))))
                         + self.n * ETA)
                k_mid, k_lo = k_mid + od, float(dn(k_lo + float(dn(od - err))))
                if not math.isfinite(k_lo):
                    k_lo = -math.inf
            g = self._xt(Ball(z, np.zeros(self.n)), cols)
            lam = self.lambda2
            h_mid, h_hi = self._terms(g, lam, cols)
            if cols is not None:
                h_mid, h_hi = _on_columns(h_mid, cols, self.p), _on_columns(h_hi, cols, self.p)
            return WitnessBound(k_mid=k_mid, k_lo=k_lo, lam=lam, h_mid=h_mid, h_hi=h_hi)

    def shifted(self, b: np.ndarray) -> WitnessBound | None:
        """Terms of a shifted witness b~ (a loss that takes the shift, mu > 0 proven by the
        caller)."""
        if not self.loss.takes_shift or not self.mu > 0 or self.sparse:
            return None
        b = np.asarray(b, dtype=np.float64)
        if not np.isfinite(b).all():
            return None
        if self.w is not None:
            return self._shifted_weighted(b)
        n, p = self.n, self.p
        with np.errstate(all="ignore"):
            vmid = self.Xd @ b
            f = up(up(gamma(p) + self.e) * float(norm_hi(b)))
            v = Ball(vmid, up(up(self.row_norm * f) + p * ETA))
            y = self.yb
            if self.fit_intercept:
                sv, sy = v.total(), y.total()
                pv2_hi = up(pos_sum_hi(up(v.mag * v.mag))
                            - float(dn(float(dn(sv.mig * sv.mig)) / n)))
                py2_lo = dn(pos_sum_lo(np.maximum(dn(y.mig * y.mig), 0.0))
                            - float(up(float(up(sy.mag * sy.mag)) / n)))
                pv2_mid = float(vmid @ vmid) - float(vmid.sum()) ** 2 / n
                py2_mid = float(y.mid @ y.mid) - float(y.mid.sum()) ** 2 / n
                d = v - y
                md = d.total()
                mmid = md.mid / n
                mrad = float(up(up(md.rad / n) + up(up(U * abs(mmid)) + ETA)))
                w = d - Ball(np.full(n, mmid), np.full(n, mrad))
            else:
                pv2_hi = pos_sum_hi(up(v.mag * v.mag))
                py2_lo = pos_sum_lo(np.maximum(dn(y.mid * y.mid), 0.0))
                pv2_mid, py2_mid = float(vmid @ vmid), float(y.mid @ y.mid)
                w = v - y
            return self._shifted_terms(b, self._xt(w), (pv2_mid, pv2_hi), (py2_mid, py2_lo))

    def _shifted_terms(self, b: np.ndarray, g: Ball, pv2: tuple, py2: tuple) -> WitnessBound:
        """The terms of a shifted witness b~ from ``g``, an enclosure of X^T Q (v - y), and
        (computed, upper) of v^T Q v and (computed, lower) of y^T Q y (Q: the identity, the
        centring or the weighted centring; see :meth:`shifted`): s = 2 g - 2 mu b~,
        lam' = lambda2 + mu (rounded down), K = y^T Q y - v^T Q v + mu ||b~||^2 (its lower
        bound rounded down)."""
        mu = self.mu
        (pv2_mid, pv2_hi), (py2_mid, py2_lo) = pv2, py2
        t2 = (2.0 * mu) * b
        smid = 2.0 * g.mid - t2
        srad = up(up(2.0 * g.rad) + up(up(up(U * np.abs(t2)) + ETA) + up(U * np.abs(smid))))
        lam = float(dn(self.lambda2 + mu))
        h_mid, h_hi = self._terms(Ball(smid, srad), lam)
        mb_lo = max(float(dn(mu * float(pos_sum_lo(np.maximum(dn(b * b), 0.0))))), 0.0)
        k_lo = float(dn(dn(py2_lo - pv2_hi) + mb_lo))
        k_mid = py2_mid - pv2_mid + mu * float(b @ b)
        return WitnessBound(k_mid=k_mid, k_lo=k_lo, lam=lam, h_mid=h_mid, h_hi=h_hi)

    def _shifted_weighted(self, b: np.ndarray) -> WitnessBound | None:
        """A shifted witness of the weighted least squares (``docs/certificate-format.md``,
        4.2): with Q = W, or W - w w^T / sum(w) with an intercept (Q 1 = 0) and X^T Q X - mu I
        PSD, the bound is y^T Q y - v^T Q v + mu ||b~||^2 - 2 lam' g*(-s / (2 lam')) with
        v = X b~, s = 2 X^T Q (v - y) - 2 mu b~ (y: the targets less the offsets)."""
        n, p, w = self.n, self.p, self.w
        cen = self.fit_intercept
        w_hi, w_lo = float(pos_sum_hi(w)), float(pos_sum_lo(w))
        if cen and not w_lo > 0:
            return None
        with np.errstate(all="ignore"):
            vmid = self.Xd @ b
            f = up(up(gamma(p) + self.e) * float(norm_hi(b)))
            v = Ball(vmid, up(up(self.row_norm * f) + p * ETA))
            y = self.yb

            def wsum(x: Ball) -> Ball:
                t = w * x.mid
                r = up(up(up(gamma(n) * float(pos_sum_hi(up(np.abs(t))))) + n * ETA)
                       + float(pos_sum_hi(up(w * x.rad))))
                return Ball(float(t.sum()), r)

            def quad(x: Ball) -> tuple[float, float, float]:
                """(computed, lower, upper) of x^T Q x over the ball."""
                mid = float(w @ (x.mid * x.mid))
                hi = float(pos_sum_hi(up(w * up(x.mag * x.mag))))
                lo = float(pos_sum_lo(np.maximum(dn(w * np.maximum(dn(x.mig * x.mig), 0.0)),
                                                 0.0)))
                if not cen:
                    return mid, lo, hi
                sx = wsum(x)
                mid -= float(sx.mid) ** 2 / float(w.sum())
                hi = float(up(hi - max(float(dn(float(dn(sx.mig * sx.mig)) / w_hi)), 0.0)))
                lo = float(dn(lo - float(up(float(up(sx.mag * sx.mag)) / w_lo))))
                return mid, lo, hi

            pv2_mid, _, pv2_hi = quad(v)
            py2_mid, py2_lo, _ = quad(y)
            d = v - y
            if cen:
                sd = wsum(d)
                wc = float(w.sum())
                mdc = float(sd.mid) / wc
                mdr = float(up(up(up(sd.rad / w_lo) + up(abs(float(sd.mid)) * up(
                    up(w_hi - w_lo) / dn(w_lo * w_lo)))) + up(up(U * abs(mdc)) + ETA)))
                d = d - Ball(np.full(n, mdc), np.full(n, mdr))
            ec = w * d.mid
            e = Ball(ec, up(up(w * d.rad) + up(up(U * np.abs(ec)) + ETA)))
            out = self._shifted_terms(b, self._xt(e), (pv2_mid, pv2_hi), (py2_mid, py2_lo))
            if not math.isfinite(out.k_lo):
                out.k_lo = -math.inf
            return out

    def witness(self, kind: str, vec: np.ndarray, cols: np.ndarray | None = None
                ) -> WitnessBound | None:
        """Terms of a ("dual", zeta) or ("shifted", b) witness (``cols``: see :meth:`dual`;
        a shifted witness is always evaluated on every column)."""
        return self.dual(vec, cols) if kind == "dual" else self.shifted(vec)

    # -- incumbent --------------------------------------------------------------------------
    def objective(self, coef: np.ndarray, intercept: float) -> tuple[float, float]:
        """(computed value, safe upper bound) of F(coef, intercept) on the raw data.

        x_i^T b + c (or, for a loss of the residual, y_i - x_i^T b - c) is evaluated by
        error-free transformations (Dekker's TwoProduct, then Ogita-Rump-Oishi's Sum2), so a
        column with a huge offset and an intercept costs nothing; then the loss's own upper
        enclosure bounds the sum of its terms.
        """
        coef = np.asarray(coef, dtype=np.float64)
        S = np.flatnonzero(coef)
        cb = coef[S]
        # a sparse X: its support's columns in blocks of rows (never all n rows densely)
        A = ((lambda r0, r1: self.X.columns(S, (r0, r1))) if self.sparse else self.X[:, S])
        big = _abs_max(self.X.data[_entries(self.X, S)]) if self.sparse else _abs_max(A)
        c = np.full(self.n, float(intercept) if self.fit_intercept else 0.0)
        with np.errstate(all="ignore"):
            if big >= 2.0 ** 995 or _abs_max(cb) >= 2.0 ** 995:
                return math.nan, math.inf
            y = self.y
            offs = [] if self.o is None else [self.o]
            if self.loss.residual_form:
                mid, hi = self.loss.loss_sum_upper(
                    lin_ball(A, -cb, [y, -c] + [-o for o in offs]), y, self.w)
            else:
                mid, hi = self.loss.loss_sum_upper(lin_ball(A, cb, [c] + offs), y, self.w)
            ridge = float(up(self.lambda2 * float(pos_sum_hi(up(coef * coef)))))
            value = mid + self.lambda2 * float(coef @ coef)
            upper = float(up(hi + ridge))
        return float(value), (upper if math.isfinite(upper) else math.inf)


#: samples per block of the conjugate sums (their temporaries stay small)
_CONJ_BLOCK = 1 << 15


def _by_blocks(fn, z: np.ndarray, yb: Ball, w: np.ndarray | None = None) -> tuple[float, float]:
    """``fn``'s ``(computed, upper bound)`` of a sum over the samples, summed over blocks of
    samples (the blocks' bounds added with upward rounding: a bound of the whole sum)."""
    n = z.shape[0]
    if n <= _CONJ_BLOCK:
        return fn(z, yb) if w is None else fn(z, yb, w)
    mid, hi = 0.0, 0.0
    for a in range(0, n, _CONJ_BLOCK):
        b = a + _CONJ_BLOCK
        yblk = Ball(yb.mid[a:b], yb.rad[a:b])
        m, h = fn(z[a:b], yblk) if w is None else fn(z[a:b], yblk, w[a:b])
        mid += float(m)
        hi = float(up(hi + float(h)))
    return mid, hi


def _abs_max(a: np.ndarray) -> float:
    """max |a_i| (0 for an empty array; NaN propagates), without a temporary of |a|."""
    return float(max(a.max(), -a.min())) if a.size else 0.0


def _entries(X, S: np.ndarray) -> np.ndarray:
    """The positions in ``X.data`` of the entries of the columns ``S`` of a sparse X."""
    if not len(S):
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(X.indptr[j], X.indptr[j + 1]) for j in S])


def lin_ball(A, coef: np.ndarray, extra: list[np.ndarray]) -> Ball:
    """Rows of A @ coef plus the ``extra`` vectors, nearly exactly (TwoProduct + Sum2).

    ``A``: a dense (n, m) array, or a function of a row range ``(r0, r1)`` giving those rows
    of the m columns densely (a sparse X's support: only a block of rows is ever dense).

    Sum2 (Ogita, Rump, Oishi, SIAM J. Sci. Comput. 2005): |res - s| <= u |s| + gamma_m^2
    sum |t_i| for m terms; a product below 2^-968, whose error term may not be exact, adds
    2^-1020 to the radius.
    """
    if callable(A):
        rows_of = A
        m = coef.shape[0]
        n = extra[0].shape[0]
    else:
        def rows_of(r0: int, r1: int) -> np.ndarray:
            return A[r0:r1]

        m = A.shape[1]
        n = A.shape[0] if A.ndim == 2 else extra[0].shape[0]
        if n <= max(1, _LIN_BLOCK // (2 * m + len(extra) + 1)):
            return _lin_rows(A, coef, extra)
    step = max(1, _LIN_BLOCK // (2 * m + len(extra) + 1))
    if n > step or callable(A):  # row by row the same: in blocks, the temporaries stay small
        balls = [_lin_rows(rows_of(i, min(i + step, n)), coef, [e[i:i + step] for e in extra])
                 for i in range(0, n, step)]
        return Ball(np.concatenate([b.mid for b in balls]),
                    np.concatenate([b.rad for b in balls]))
    return _lin_rows(A, coef, extra)


#: entries of the temporaries of one block of rows of :func:`lin_ball`
_LIN_BLOCK = 1 << 17


def _lin_rows(A: np.ndarray, coef: np.ndarray, extra: list[np.ndarray]) -> Ball:
    """:func:`lin_ball` of a block of rows."""
    n = A.shape[0] if A.ndim == 2 else extra[0].shape[0]
    terms = []
    tiny = np.zeros(n)
    for j in range(A.shape[1]):
        a, b = A[:, j], coef[j]
        p, err = two_product(a, b)
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
    g2 = float(up(gamma(m) * gamma(m)))
    absum = pos_sum_hi(np.abs(np.stack(terms)), axis=0)
    rad = up(up(up(U * np.abs(res)) + up(g2 * absum)) * inv_one_minus(U))
    return Ball(res, up(rad + tiny * 2.0 ** -1020))
