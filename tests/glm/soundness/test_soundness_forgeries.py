"""Hand-written certificates from a second red-team pass over the verifier's bounds.

Each test forges a certificate (JSON and sidecar consistent, hashes right) whose claim is false
in exact rational arithmetic (tests/glm/soundness/_exact.py) and checks that the verifier refuses
it. Before its fix, each of these certificates was accepted.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from _exact import ridge_on_support, squared_optimum

from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate import verify as V


def _one_node(X, y, k, lam, lb, ub, witness, derive):
    p = X.shape[1]
    return Certificate.build(
        X, y, problem=dict(loss="squared", k=k, lambda2=lam, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=np.zeros(p), intercept=0.0, objective=ub),
        bounds=dict(lower_bound=lb, upper_bound=ub, status="optimal", rel_gap_tol=1e-4),
        eig_shift=0.0,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=witness, derive_fixings=derive)])


def test_a_huber_term_that_is_not_a_number_ranks_first():
    """inf - inf in X^T zeta (or inf * 0 in a radius) is NaN; sorted, NaN goes last, so it
    used to drop out of the top-beta sums of the bound fixings' regions."""
    h = V._huber_up(np.array([np.nan, 1.0, 0.0]), None)
    assert h[0] == np.inf and h[1] >= 0.5
    h = V._huber_up(np.array([np.nan, 1.0, 3.0]), 2.0)
    assert h[0] == np.inf and h[2] >= 4.0
    t = V._Terms(k_low=4.0, lam=1.0, h_up=V._huber_up(np.array([np.nan, 0.0, 0.0]), None))
    state = np.zeros(3, dtype=np.int8)
    for j, v in ([1, 1], [2, 1]):  # regions where variable 0 is free with budget 1
        assert V._fixing_bounds(t, state, 1, [(j, v)])[0] == -np.inf
    assert V._fixing_bounds(t, state, 1, [(1, 0)])[0] > 3.9  # z_1 = 1 leaves no budget for 0
    assert V._fixing_bounds(t, state, 2, [(1, 0)])[0] == -np.inf
    assert V._region_bound(t, V._g_star_up(t.h_up, state, 1)) == -np.inf


def test_overflowing_gradient_column_cannot_hide_the_optimum():
    """Column 0 is ~1e308: the exact (X^T zeta)_0 = 2e307, but the two halves of the product
    overflow to +inf and -inf, and OpenBLAS's split accumulators return NaN. The region cut off
    by the root's bound fixing [1, 1] (supports inside {0, 2}) holds the optimum, support {0};
    its bound must not be computed as if h_0 were absent (the verifier derives that fixing only
    if its region's bound is proven)."""
    X = np.zeros((4, 3))
    X[:, 0] = [1e308, 1e308, 0.95e308, 0.95e308]
    X[:, 1] = 1.0
    X[:, 2] = 3.0
    y = np.array([-1.0, -1.0, 1.0, 1.0])
    lb, ub = 4.0 - 1e-12, 4.0 + 1e-12
    assert squared_optimum(X, y, 1, 1.0) < lb  # the claim is false: b_0 ~ -2.6e-310 fits
    cert = _one_node(X, y, 1, 1.0, lb, ub, ("dual", -2.0 * y), True)
    rep = verify_certificate(cert, X, y)
    assert rep.exit_code == 1 and rep.failed_checks == ["leaf_bounds"], str(rep)


def _overflow_edge_data(n=113, m=13, k=7, alpha=2.0**-19):
    """y: one entry near sqrt(max float) and m entries near 2^485 placed so that numpy's
    8-accumulator sum of the squares (rounded down) rounds up at every step and overflows,
    while the exact sum of squares is below the largest float; x fits y partly."""
    y2 = math.sqrt(2.0**970 * 1.001)
    big = float(np.sqrt(float(Fraction(2**1024) - k * Fraction(2**971))))
    y = np.zeros(n)
    y[1] = big - 2 * np.spacing(big)
    rows = 1 + 8 * np.arange(1, m + 1)
    y[rows] = y2
    x = np.zeros(n)
    x[1] = alpha
    x[rows] = 1.0
    return x[:, None], y


def test_a_sum_of_squares_that_overflows_is_no_lower_bound_of_the_largest_float():
    X, y = _overflow_edge_data()
    squares = V._sq_dn(y)
    exact = sum(Fraction(float(v)) ** 2 for v in y)
    assert exact < Fraction(np.finfo(float).max)  # the exact sum does not overflow...
    with np.errstate(over="ignore"):
        if not np.isinf(squares.sum()):  # ...but numpy's does (its pairwise order)
            pytest.skip("this numpy sums in an order that does not overflow here")
        assert Fraction(float(V._sum_dn(squares))) <= exact


def test_shifted_witness_at_the_overflow_edge_cannot_claim_above_the_optimum():
    """||y||^2 is computed as inf but is exactly below the largest float; the lower bound of
    ||P y||^2 in the shifted witness's constant used to be the largest float, several ulps
    above the truth, enough to certify a lower bound above the exact optimum."""
    X, y = _overflow_edge_data()
    lam = 1.0
    xx = sum(Fraction(float(v)) ** 2 for v in X[:, 0])
    mu = float(xx * (1 - Fraction(1, 2**30)))
    assert V.proves_eig_shift(X, mu, False)[0]
    opt = squared_optimum(X, y, 1, lam)  # exact rational optimum (k = p = 1)
    lb = float(opt)
    if Fraction(lb) <= opt:
        lb = float(np.nextafter(lb, np.inf))
    b = float(ridge_on_support(X, y, [0], lam, False)[1][0])
    _, ub = V.objective_upper_bound(X, y, V.Problem("squared", lam), np.array([b]), 0.0)
    assert Fraction(lb) > opt and lb <= ub < np.inf
    cert = Certificate.build(
        X, y, problem=dict(loss="squared", k=1, lambda2=lam, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=np.array([b]), intercept=0.0, objective=ub),
        bounds=dict(lower_bound=lb, upper_bound=ub, status="optimal", rel_gap_tol=1e-4),
        eig_shift=mu,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=("shifted", np.array([b])))])
    rep = verify_certificate(cert, X, y)
    assert rep.exit_code == 1 and rep.failed_checks == ["leaf_bounds"], str(rep)


@pytest.mark.parametrize("result", [-np.inf, np.nan])
@pytest.mark.parametrize("loss", ["squared", "squared_hinge"])
def test_a_non_finite_linear_term_gives_no_conjugate_bound(loss, result, monkeypatch):
    """The conjugate's upper bound never takes a non-finite sum y^T zeta at its word: -inf
    would make the dual bound +inf (any lower bound accepted), NaN would poison comparisons.
    The sum comes back as -inf or NaN here, as an overflowing accumulation could."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 3))
    y = np.where(rng.standard_normal(6) > 0, 1.0, -1.0)
    zeta = -0.1 * y  # inside both conjugates' domains
    des = V._Design(X, y, loss, False)
    honest = V._conjugate_sum_up(loss, zeta[None, :], des)
    assert np.all(np.isfinite(honest))
    monkeypatch.setattr(V, "_rows_dot", lambda Z, v: np.full(Z.shape[0], result))
    forged = V._conjugate_sum_up(loss, zeta[None, :], des)
    assert np.all(np.asarray(forged) == np.inf)
