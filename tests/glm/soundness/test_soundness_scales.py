"""The verifier's region bounds at extreme scales, against exact arithmetic.

Random tiny problems whose data, witnesses, weights and boxes range over 1e-320 .. 1e307
(subnormals, overflowing products and sums of squares, zero and duplicated columns), random
fixings, and every bound fixing of the node: each finite safe bound the verifier computes must
be at most the exact value of its witness's bound for that region (a dual witness: an upper
enclosure of D(zeta) from tests/glm/soundness/_exact.py; a shifted witness: the tangent bound of
section 4.2 in ``fractions``, with the verifier's own weight lambda'). An overflow, a NaN or a lost
rounding error anywhere makes some case fail.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from _certgen import zero_sum
from _exact import dual_value_upper

from sparsecert.certificate import verify as V

_EXPONENTS = (-320, -300, -160, -150, -20, 0, 0, 0, 20, 150, 154, 160, 300, 307)


def _scale(rng) -> float:
    return 10.0 ** int(rng.choice(_EXPONENTS))


def _design(rng, n, p):
    X = rng.standard_normal((n, p)) * _scale(rng)
    if rng.random() < 0.3:
        X[:, rng.integers(p)] = 0.0
    if rng.random() < 0.3 and p > 1:
        X[:, 1] = X[:, 0]
    return np.where(np.isfinite(X), X, 1e308)


def _orthogonal(X, v, rng):
    """v minus its least-squares projection on a few columns of X (computed in floats)."""
    cols = X[:, rng.permutation(X.shape[1])[:int(rng.integers(1, X.shape[1] + 1))]]
    with np.errstate(all="ignore"):
        try:
            out = v - cols @ np.linalg.lstsq(cols, v, rcond=None)[0]
        except np.linalg.LinAlgError:
            return v
    return out if np.isfinite(out).all() else v


def _node(rng, p, k):
    perm = rng.permutation(p)
    n_in = int(rng.integers(0, min(k, p) + 1))
    n_out = int(rng.integers(0, p - n_in + 1))
    fin, fout = sorted(perm[:n_in].tolist()), sorted(perm[n_in:n_in + n_out].tolist())
    state = np.zeros(p, dtype=np.int8)
    state[fout], state[fin] = 2, 1
    fixings = [(j, int(rng.integers(0, 2))) for j in range(p) if state[j] == 0]
    return fin, fout, state, fixings


def _regions(fin, fout, fixings, k):
    """(bound-fixing index or None, S1, S0) of the node itself and its fixings' regions."""
    out = [(None, fin, fout)]
    for q, (j, v) in enumerate(fixings):
        s1, s0 = (fin + [j], fout) if v == 0 else (fin, fout + [j])
        if len(s1) <= k:
            out.append((q, s1, s0))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_dual_witness_bounds_at_extreme_scales(seed):
    rng = np.random.default_rng(1000 + seed)
    checked = 0
    while checked < 150:
        loss = str(rng.choice(["squared", "logistic", "squared_hinge", "poisson"]))
        n, p = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        X = _design(rng, n, p)
        if loss == "squared":
            y = rng.standard_normal(n) * _scale(rng)
        elif loss == "poisson":
            y = np.abs(rng.standard_normal(n)) * _scale(rng) * (rng.random(n) < 0.8)
        else:
            y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y = np.where(np.isfinite(y), y, 1e308)
        fit = bool(rng.random() < 0.4)
        lam = 10.0 ** int(rng.choice([-300, -20, -3, 0, 3, 20, 300]))
        M = None if rng.random() < 0.5 else 10.0 ** int(rng.choice([-300, -5, 0, 5, 300]))
        k = int(rng.integers(0, p + 2))
        lo, hi = V.dual_domain_bounds(loss, y)
        z = rng.standard_normal(n) * _scale(rng)
        if rng.random() < 0.5:  # X^T zeta cancels: the rounding error dominates the terms
            z = _orthogonal(X, z, rng)
        z = np.clip(z, np.maximum(lo, -1e308), np.minimum(hi, 1e308))
        if fit:
            z = zero_sum(z, lo, hi)
        if V._dual_problem(loss, z, y, fit) is not None:
            continue
        fin, fout, state, fixings = _node(rng, p, k)
        with np.errstate(all="ignore"):
            t = V._dual_terms(V._Design(X, y, loss, fit), z[None, :], lam, M)[0]
            own = V._region_bound(t, V._g_star_up(t.h_up, state, k))
            fixed = V._fixing_bounds(t, state, k, fixings) if fixings else []
        for q, s1, s0 in _regions(fin, fout, fixings, k):
            got = own if q is None else fixed[q]
            if math.isfinite(got):
                exact = dual_value_upper(X, y, loss, lam, M, k, s1, s0, z, fit_intercept=fit)
                assert Decimal(got) <= exact, (loss, X, y, z, fit, lam, M, k, s1, s0)
                checked += 1


def _huber(a: Fraction, M) -> Fraction:
    a = abs(a)
    if M is None or a <= Fraction(M):
        return a * a / 2
    return Fraction(M) * a - Fraction(M) ** 2 / 2


def _shifted_exact(X, y, lamp, mu, M, k, s1, s0, b, fit) -> Fraction:
    """||Py||^2 - ||PXb||^2 + mu ||b||^2 - 2 lamp g*_region(-s / (2 lamp)), exactly."""
    n, p = X.shape
    Xf = [[Fraction(float(X[i, j])) for j in range(p)] for i in range(n)]
    yf, bf, mu = [Fraction(float(v)) for v in y], [Fraction(float(v)) for v in b], Fraction(mu)

    def P(v):
        m = sum(v) / n if fit else 0
        return [x - m for x in v]

    Xb = [sum(Xf[i][j] * bf[j] for j in range(p)) for i in range(n)]
    w = P([Xb[i] - yf[i] for i in range(n)])
    s = [2 * sum(Xf[i][j] * w[i] for i in range(n)) - 2 * mu * bf[j] for j in range(p)]
    K = sum(v * v for v in P(yf)) - sum(v * v for v in P(Xb)) + mu * sum(v * v for v in bf)
    lamp = Fraction(lamp)
    h = [_huber(-sj / (2 * lamp), M) for sj in s]
    free = [j for j in range(p) if j not in s1 and j not in s0]
    top = sorted((h[j] for j in free), reverse=True)[:max(k - len(s1), 0)]
    return K - 2 * lamp * (sum((h[j] for j in s1), Fraction(0)) + sum(top, Fraction(0)))


@pytest.mark.parametrize("seed", range(2))
def test_shifted_witness_bounds_at_extreme_scales(seed):
    rng = np.random.default_rng(2000 + seed)
    checked = 0
    while checked < 150:
        n, p = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        X = _design(rng, n, p)
        y = rng.standard_normal(n) * _scale(rng)
        b = rng.standard_normal(p) * _scale(rng) * (rng.random(p) < 0.7)
        if rng.random() < 0.5:  # b near the least-squares fit: X^T P (X b - y) cancels
            with np.errstate(all="ignore"):
                fitb = np.linalg.lstsq(X, y, rcond=None)[0] if np.isfinite(X).all() else b
            b = fitb if np.isfinite(fitb).all() else b
        y, b = np.where(np.isfinite(y), y, 1e308), np.where(np.isfinite(b), b, 1e308)
        fit = bool(rng.random() < 0.4)
        lam, mu = (10.0 ** int(rng.choice([-300, -20, -3, 0, 3, 20])) for _ in range(2))
        M = None if rng.random() < 0.5 else 10.0 ** int(rng.choice([-300, -5, 0, 5, 300]))
        k = int(rng.integers(0, p + 2))
        fin, fout, state, fixings = _node(rng, p, k)
        with np.errstate(all="ignore"):
            t = V._shifted_terms(V._Design(X, y, "squared", fit), b[None, :], lam, mu, M)[0]
            own = V._region_bound(t, V._g_star_up(t.h_up, state, k))
            fixed = V._fixing_bounds(t, state, k, fixings) if fixings else []
        for q, s1, s0 in _regions(fin, fout, fixings, k):
            got = own if q is None else fixed[q]
            if math.isfinite(got):
                exact = _shifted_exact(X, y, t.lam, mu, M, k, s1, s0, b, fit)
                assert Fraction(got) <= exact, (X, y, b, fit, lam, mu, M, k, s1, s0)
                checked += 1
