"""The producer's rigorous witness terms against exact rational arithmetic.

A dual witness zeta contributes, per column j, an upper bound of H_M(|x_j^T zeta| / (2 lambda2))
(:meth:`sparsecert.proof.bounds.SafeEvaluator.dual`). The product X^T zeta is formed over
every column or over a copy of the columns asked for (whichever passes over less memory); both
must give terms above the exact ones, on every column asked for, and ``inf`` elsewhere.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from sparsecert.proof.bounds import SafeEvaluator
from sparsecert.proof.witnesses import exact_zero_sum


def _exact_terms(X, z, lam, M):
    """H_M(|x_j^T z| / (2 lam)) in exact arithmetic, per column."""
    out = []
    for j in range(X.shape[1]):
        g = abs(sum(Fraction(float(z[i])) * Fraction(float(X[i, j])) for i in range(X.shape[0])))
        t = g / (2 * Fraction(lam))
        out.append(t * t / 2 if M is None or t <= Fraction(M) else
                   Fraction(M) * t - Fraction(M) ** 2 / 2)
    return out


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("M", [None, 0.5])
@pytest.mark.parametrize("seed", range(8))
def test_dual_terms_are_above_the_exact_terms_on_the_columns_asked_for(fit_intercept, M, seed):
    rng = np.random.default_rng(seed)
    n, p = 9, 16
    # columns of very different scales and offsets, so that rounding shows in the products
    X = rng.normal(size=(n, p)) * 10.0 ** rng.integers(-6, 7, size=p) + rng.normal(size=p) * 1e3
    y = rng.normal(size=n)
    lam = 0.37
    z = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4, size=n)
    if fit_intercept:  # a zero-sum witness: X^T z is the same for any centring of X
        z = exact_zero_sum(z)
    ev = SafeEvaluator(X, y, "squared", lam, M, fit_intercept)
    exact = _exact_terms(X, z, lam, M)
    for cols in (None, np.arange(p), np.flatnonzero(rng.random(p) < 0.8), np.array([3, 11])):
        wb = ev.dual(z, cols)
        asked = np.arange(p) if cols is None else cols
        for j in range(p):
            if j in asked:
                assert Fraction(float(wb.h_hi[j])) >= exact[j], (cols, j)
            else:
                assert wb.h_hi[j] == np.inf
