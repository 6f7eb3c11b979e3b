"""Incumbent heuristics: exact refits against scipy, beam search and swaps against enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from _bruteforce import brute_force, solve_support
from _data import sparse_glm_data

from sparsecert.solvers.heuristics import (
    SupportRefitter,
    beam_search,
    round_relaxation,
    swap_search,
)


def _data(loss, n=50, p=10, seed=0):
    return sparse_glm_data(loss, n, p, seed)


@pytest.mark.parametrize("loss", ["squared", "logistic", "squared_hinge", "poisson"])
@pytest.mark.parametrize("M", [np.inf, 0.2])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_refit_matches_scipy(loss, M, fit_intercept):
    X, y = _data(loss)
    S = (0, 3, 6, 8)
    ref = SupportRefitter(X, y, loss, 0.3, M, fit_intercept=fit_intercept)
    model = ref.fit(S)
    want, coef, c = solve_support(X, y, S, loss, 0.3, None if np.isinf(M) else M, fit_intercept)
    assert model.objective == pytest.approx(want, rel=1e-8, abs=1e-8)
    assert model.objective <= want + 1e-8 * max(1, abs(want))
    if np.isfinite(M):
        assert np.max(np.abs(model.coef)) <= M
    if not fit_intercept:
        assert model.intercept == 0.0
    # objective is recomputed exactly from the returned coefficients
    assert ref.objective(model.support, model.coef, model.intercept) == model.objective


def test_refit_cache_and_empty_support():
    X, y = _data("squared")
    ref = SupportRefitter(X, y, "squared", 1.0)
    a = ref.fit((3, 0))
    b = ref.fit((0, 3))
    assert a is b and ref.n_fits == 1
    empty = ref.fit(())
    assert empty.objective == pytest.approx(float(y @ y))


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_beam_and_swap_reach_the_enumerated_optimum(loss):
    X, y = _data(loss, p=9)
    ref = SupportRefitter(X, y, loss, 0.3)
    best = swap_search(ref, beam_search(ref, 3), 3)
    want, support = brute_force(X, y, 3, loss, 0.3)
    assert best.objective == pytest.approx(want, rel=1e-7)
    assert set(best.support) == set(support)


def test_swap_never_worsens_and_respects_fixings():
    X, y = _data("logistic", p=9, seed=3)
    ref = SupportRefitter(X, y, "logistic", 0.3)
    start = ref.fit((1, 2, 4))
    allowed = np.ones(9, bool)
    allowed[0] = False
    out = swap_search(ref, start, 3, fixed_in=(1,), allowed=allowed)
    assert out.objective <= start.objective
    assert 1 in out.support and 0 not in out.support and len(out.support) <= 3


def test_round_relaxation_takes_fixed_in_and_largest_free():
    X, y = _data("squared", p=6)
    ref = SupportRefitter(X, y, "squared", 1.0)
    relaxed = np.array([0.0, 0.9, 0.1, 0.5, 0.3, 0.2])
    fi = np.zeros(6, bool)
    fi[0] = True
    fo = np.zeros(6, bool)
    fo[1] = True
    model = round_relaxation(ref, relaxed, 3, fi, fo)
    assert model.support == (0, 3, 4)
