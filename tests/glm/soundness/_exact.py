"""Exact rational arithmetic references for the soundness tests (``fractions`` only).

Every float is converted exactly (``Fraction(float)``), so the optimum of the squared loss over a
support is the exact solution of its ridge normal equations; the other losses get rigorous
enclosures from ``decimal`` at 60 digits, whose ``exp`` and ``ln`` are correctly rounded: each
term's enclosure is widened, and the terms are summed exactly in ``fractions`` (a 60-digit sum of
terms of very different sizes that cancel would round away more than any widening covers).
"""

from __future__ import annotations

import itertools
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction

import numpy as np


def F(x) -> Fraction:
    return Fraction(float(x))


def solve(A: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Gaussian elimination with exact pivoting (A nonsingular)."""
    n = len(b)
    M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for c in range(n):
        piv = next(r for r in range(c, n) if M[r][c] != 0)
        M[c], M[piv] = M[piv], M[c]
        for r in range(n):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [a - f * bb for a, bb in zip(M[r], M[c], strict=True)]
    return [M[i][n] / M[i][i] for i in range(n)]


def ridge_on_support(X, y, S, lam, fit_intercept) -> tuple[Fraction, list[Fraction], Fraction]:
    """Exact min over b supported on S (and c if fit_intercept) of sum (y - Xb - c)^2 +
    lam ||b||^2: (value, b_S, c)."""
    n = X.shape[0]
    cols = [[F(X[i, j]) for i in range(n)] for j in S]
    yy = [F(v) for v in y]
    if fit_intercept:
        cols.append([Fraction(1)] * n)
    q = len(cols)
    lam = F(lam)
    A = [[sum(a * b for a, b in zip(cols[r], cols[s], strict=True)) for s in range(q)]
         for r in range(q)]
    for r in range(len(S)):
        A[r][r] += lam
    rhs = [sum(a * b for a, b in zip(cols[r], yy, strict=True)) for r in range(q)]
    if q == 0:
        return sum(v * v for v in yy), [], Fraction(0)
    w = solve(A, rhs)
    res = [yy[i] - sum(w[r] * cols[r][i] for r in range(q)) for i in range(n)]
    bS = w[:len(S)]
    c = w[len(S)] if fit_intercept else Fraction(0)
    return sum(r * r for r in res) + lam * sum(b * b for b in bS), bS, c


def squared_optimum(X, y, k, lam, fit_intercept=False) -> Fraction:
    """The exact optimum of the k-sparse ridge problem (all supports of size min(k, p))."""
    p = X.shape[1]
    return min(ridge_on_support(X, y, list(S), lam, fit_intercept)[0]
               for S in itertools.combinations(range(p), min(k, p)))


def node_optimum(X, y, k, lam, fixed_in, fixed_out, fit_intercept=False) -> Fraction:
    """Exact optimum of a node: supports S1 + T, T among the free variables, |T| = budget."""
    p = X.shape[1]
    free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
    budget = k - len(fixed_in)
    return min(ridge_on_support(X, y, sorted(list(fixed_in) + list(T)), lam, fit_intercept)[0]
               for T in itertools.combinations(free, max(0, min(budget, len(free)))))


def squared_objective(X, y, lam, coef, intercept) -> Fraction:
    """Exact F(b, c) of the squared loss."""
    n = X.shape[0]
    c = F(intercept)
    S = np.flatnonzero(coef)
    out = Fraction(0)
    for i in range(n):
        r = F(y[i]) - c - sum(F(X[i, j]) * F(coef[j]) for j in S)
        out += r * r
    return out + F(lam) * sum(F(coef[j]) ** 2 for j in S)


# ------------------------------------------------------------------------------ other losses

_PREC = 60


def _interval_loss(loss: str, u: Decimal, y: Decimal, up: bool) -> Decimal:
    """f(u, y) rounded outward (up=True: an upper bound; else a lower bound)."""
    with localcontext() as ctx:
        ctx.prec = _PREC
        ulp = Decimal(10) ** (-_PREC + 3)
        sgn = 1 if up else -1
        if loss == "logistic":
            z = -y * u
            e = (-abs(z)).exp()
            v = max(z, Decimal(0)) + (1 + e).ln()
        elif loss == "squared_hinge":
            m = max(Decimal(0), 1 - y * u)
            v = m * m
        else:
            v = u.exp() - y * u
        return v + sgn * (abs(v) + 1) * ulp


def _decimal(q: Fraction, rounding) -> Decimal:
    """q rounded to 60 digits in the given direction."""
    with localcontext() as ctx:
        ctx.prec, ctx.rounding = _PREC, rounding
        return Decimal(q.numerator) / Decimal(q.denominator)


def _poisson_end(u: Decimal, y: Decimal, v: Decimal, up: bool) -> Fraction:
    """exp(u) - y v rounded outward (the widening covers both terms: they may cancel)."""
    with localcontext() as ctx:
        ctx.prec = _PREC
        e, yv = u.exp(), y * v
        slack = (abs(e) + abs(yv) + 1) * Decimal(10) ** (-_PREC + 3)
        return Fraction(e - yv + (slack if up else -slack))


def objective_enclosure(X, y, loss, lam, coef, intercept) -> tuple[Decimal, Decimal]:
    """[lo, hi] containing F(coef, intercept) exactly (labels already -1/+1, Poisson y >= 0).

    Each u_i = x_i^T b + c is exact (fractions), rounded outward to 60 digits; each loss term is
    evaluated at the end of that interval where it is largest (smallest), since the logistic and
    squared-hinge terms are nondecreasing in -y u and the Poisson term's exp(u) increases while
    -y u decreases; the sums and the ridge term are exact."""
    S = np.flatnonzero(coef)
    lo = hi = Fraction(0)
    for i in range(X.shape[0]):
        u = F(intercept) + sum((F(X[i, j]) * F(coef[j]) for j in S), Fraction(0))
        ul, uh = _decimal(u, ROUND_FLOOR), _decimal(u, ROUND_CEILING)
        yi = Decimal(float(y[i]))
        if loss == "poisson":
            lo += _poisson_end(ul, yi, uh, up=False)
            hi += _poisson_end(uh, yi, ul, up=True)
        else:  # -y u is largest at ul when y > 0
            big, small = (ul, uh) if yi > 0 else (uh, ul)
            lo += Fraction(_interval_loss(loss, small, yi, up=False))
            hi += Fraction(_interval_loss(loss, big, yi, up=True))
    ridge = F(lam) * sum((F(coef[j]) ** 2 for j in S), Fraction(0))
    return _decimal(lo + ridge, ROUND_FLOOR), _decimal(hi + ridge, ROUND_CEILING)


def _conj(loss: str, z: Decimal, y: Decimal, up: bool) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = _PREC
        ulp = Decimal(10) ** (-_PREC + 3)
        sgn = 1 if up else -1
        if loss == "squared":
            v = z * z / 4 + y * z
        elif loss == "squared_hinge":
            v = y * z + z * z / 4
        elif loss == "logistic":
            t = -y * z
            v = (t * t.ln() if t > 0 else Decimal(0)) + ((1 - t) * (1 - t).ln() if t < 1
                                                         else Decimal(0))
        else:
            w = z + y
            v = w * w.ln() - w if w > 0 else Decimal(0)
        return v + sgn * (abs(v) + 1) * ulp


def _huber(a: Fraction, M) -> Fraction:
    a = abs(a)
    if M is None or a <= F(M):
        return a * a / 2
    return F(M) * a - F(M) * F(M) / 2


def dual_value_upper(X, y, loss, lam, M, k, fixed_in, fixed_out, zeta,
                     fit_intercept=False) -> Decimal:
    """An upper bound of the exact D(zeta) = -sum f*(zeta_i) - 2 lam g*_node(-X^T zeta / 2 lam)
    (y labels already -1/+1; zeta in the domain, summing to exactly 0 with an intercept, which
    makes the centring of X irrelevant). Weak duality: D(zeta) <= the node's optimum, so a
    verifier's bound must be <= this value."""
    n, p = X.shape
    lam = F(lam)
    grad = [sum(F(X[i, j]) * F(zeta[i]) for i in range(n)) for j in range(p)]
    h = [_huber(-g / (2 * lam), M) for g in grad]
    free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
    budget = k - len(fixed_in)
    top = sorted((h[j] for j in free), reverse=True)[:max(budget, 0)]
    g_star = sum(h[j] for j in fixed_in) + sum(top)
    # each term's enclosure at 60 digits, summed exactly (a Decimal sum of terms of very
    # different sizes that cancel would round away more than any relative widening covers)
    conj_lo = sum((Fraction(_conj(loss, Decimal(float(z)), Decimal(float(yy)), up=False))
                   for z, yy in zip(zeta, y, strict=True)), Fraction(0))
    value = -conj_lo - 2 * lam * g_star
    with localcontext() as ctx:
        ctx.prec, ctx.rounding = _PREC, ROUND_CEILING
        return Decimal(value.numerator) / Decimal(value.denominator)


# ------------------------------------------------------- weights, offsets, coefficient bounds


def bounded_h(a: Fraction, lower, upper) -> Fraction:
    """H(a) = sup_{b in [lower, upper]} (a b - b^2/2) exactly (lower <= 0 <= upper, None or an
    infinite float: no bound on that side)."""
    lo = None if lower is None or np.isinf(lower) else F(lower)
    hi = None if upper is None or np.isinf(upper) else F(upper)
    if hi is not None and a > hi:
        return hi * a - hi * hi / 2
    if lo is not None and a < lo:
        return lo * a - lo * lo / 2
    return a * a / 2


def _weighted_conj(loss: str, z: float, y: float, w: float, delta=None):
    """w f*(z / w; y) as an exact Fraction (rational losses) or a lower enclosure (so that
    the dual value built from it is an upper enclosure)."""
    if w == 0:
        assert z == 0
        return Fraction(0)
    zf, yf, wf = F(z), F(y), F(w)
    if loss in ("squared", "squared_hinge", "huber"):
        return zf * zf / (4 * wf) + yf * zf
    with localcontext() as ctx:
        ctx.prec = _PREC
        q = Decimal(zf.numerator) / Decimal(zf.denominator) / Decimal(float(w))
        ulp = Decimal(10) ** (-_PREC + 3)
        v = _conj(loss, q, Decimal(float(y)), up=False)
        return Fraction(Decimal(float(w)) * v - (abs(v) + 1) * Decimal(float(w)) * ulp)


def general_dual_value(X, y, loss, lam, k, fixed_in, fixed_out, zeta, *, w=None, o=None,
                       lower=None, upper=None, M=None) -> Fraction:
    """D(zeta) = -sum_i w_i f*(zeta_i / w_i; y_i) + o^T zeta - 2 lam g*_node(-X^T zeta / 2 lam)
    with H_j the term of the bounds [lower_j, upper_j] (and the box M): exact for the rational
    losses, an upper enclosure for logistic and Poisson (labels -1/+1)."""
    n, p = X.shape
    w = np.ones(n) if w is None else w
    lam = F(lam)
    grad = [sum(F(X[i, j]) * F(zeta[i]) for i in range(n)) for j in range(p)]
    lo = [-np.inf if lower is None else lower[j] for j in range(p)]
    hi = [np.inf if upper is None else upper[j] for j in range(p)]
    if M is not None:
        lo = [max(v, -M) for v in lo]
        hi = [min(v, M) for v in hi]
    h = [bounded_h(-g / (2 * lam), lo[j], hi[j]) for j, g in enumerate(grad)]
    free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
    budget = k - len(fixed_in)
    top = sorted((h[j] for j in free), reverse=True)[:max(budget, 0)]
    g_star = sum((h[j] for j in fixed_in), Fraction(0)) + sum(top, Fraction(0))
    conj = sum((_weighted_conj(loss, zeta[i], y[i], w[i]) for i in range(n)), Fraction(0))
    lin = Fraction(0) if o is None else sum((F(o[i]) * F(zeta[i]) for i in range(n)),
                                            Fraction(0))
    return -conj + lin - 2 * lam * g_star


def general_objective(X, y, loss, lam, coef, intercept, *, w=None, o=None, delta=None):
    """F(b, c) = sum_i w_i f(x_i^T b + c + o_i; y_i) + lam ||b||^2: exact (rational losses) or
    an upper enclosure (logistic, Poisson)."""
    n = X.shape[0]
    w = np.ones(n) if w is None else w
    o = np.zeros(n) if o is None else o
    S = np.flatnonzero(coef)
    total = Fraction(0)
    for i in range(n):
        u = F(intercept) + F(o[i]) + sum((F(X[i, j]) * F(coef[j]) for j in S), Fraction(0))
        yi = F(y[i])
        if loss == "squared":
            t = (yi - u) ** 2
        elif loss == "huber":
            r, d = abs(yi - u), F(delta)
            t = r * r if r <= d else 2 * d * r - d * d
        elif loss == "squared_hinge":
            t = max(Fraction(0), 1 - yi * u) ** 2
        else:
            ul, uh = _decimal(u, ROUND_FLOOR), _decimal(u, ROUND_CEILING)
            yd = Decimal(float(y[i]))
            if loss == "poisson":
                t = _poisson_end(uh, yd, ul, up=True)
            else:
                t = Fraction(_interval_loss(loss, ul if yd > 0 else uh, yd, up=True))
        total += F(w[i]) * t
    return total + F(lam) * sum((F(coef[j]) ** 2 for j in S), Fraction(0))


def weighted_shifted_value(X, y, lam, mu, k, fixed_in, fixed_out, b, fit_intercept, *, w,
                           o=None, lower=None, upper=None, M=None) -> Fraction:
    """The weighted shifted witness's bound exactly: y'^T Q y' - v^T Q v + mu ||b~||^2 -
    2 lam' g*(-s / 2 lam'), v = X b~, s = 2 X^T Q (v - y') - 2 mu b~, y' = y - o, Q = W (- w
    w^T / sum w with an intercept), lam' = fl_down(lam + mu)."""
    n, p = X.shape
    Xf = [[F(X[i, j]) for j in range(p)] for i in range(n)]
    wf = [F(v) for v in w]
    yf = [F(y[i]) - (F(o[i]) if o is not None else 0) for i in range(n)]
    bf = [F(v) for v in b]
    v = [sum(Xf[i][j] * bf[j] for j in range(p)) for i in range(n)]
    W = sum(wf, Fraction(0))

    def Q(x):
        m = sum((wf[i] * x[i] for i in range(n)), Fraction(0)) / W if fit_intercept else 0
        return [wf[i] * (x[i] - m) for i in range(n)]

    def quad(x):
        return sum((a * c for a, c in zip(x, Q(x), strict=True)), Fraction(0))

    d = Q([a - c for a, c in zip(v, yf, strict=True)])
    muf = F(mu)
    s = [2 * sum(Xf[i][j] * d[i] for i in range(n)) - 2 * muf * bf[j] for j in range(p)]
    lam2 = F(np.nextafter(lam + mu, -np.inf))
    lo = [-np.inf if lower is None else lower[j] for j in range(p)]
    hi = [np.inf if upper is None else upper[j] for j in range(p)]
    if M is not None:
        lo = [max(t, -M) for t in lo]
        hi = [min(t, M) for t in hi]
    h = [bounded_h(-t / (2 * lam2), lo[j], hi[j]) for j, t in enumerate(s)]
    free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
    top = sorted((h[j] for j in free), reverse=True)[:max(k - len(fixed_in), 0)]
    g_star = sum((h[j] for j in fixed_in), Fraction(0)) + sum(top, Fraction(0))
    K = quad(yf) - quad(v) + muf * sum(t * t for t in bf)
    return K - 2 * lam2 * g_star
