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
