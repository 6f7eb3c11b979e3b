"""sparsecert.certified_gap: the proven gap of a given model, against the brute force (every
support solved by cvxpy), with the certificate whose incumbent is the given model."""

from __future__ import annotations

import numpy as np
import pytest
from _extended_ref import brute_force, objective

import sparsecert


def _data(n=30, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 3] = X[:, 0] + 0.4 * rng.standard_normal(n)
    y = X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + 0.4 * rng.standard_normal(n) + 1.0
    return X, y


def test_the_gap_of_a_poor_model_brackets_the_brute_force_optimum():
    X, y = _data()
    coef = np.zeros(6)
    coef[[3, 4]] = [0.7, 0.2]  # a feasible 2-sparse model, far from the best
    g = sparsecert.certified_gap(X, y, coef, 0.9, lambda2=0.2)
    opt, support = brute_force(X, y, 2, "squared", 0.2, fit_intercept=True)
    own = objective(X, y, coef, 0.9, "squared", 0.2)
    assert g.objective == pytest.approx(own, rel=1e-12)
    assert g.objective_upper >= own
    assert g.lower_bound <= opt * (1 + 1e-9)
    assert g.best_objective == pytest.approx(opt, rel=1e-6)
    assert g.status == "tree_exhausted"  # the search ended; this model's gap stays open
    assert g.absolute_gap >= own - opt - 1e-6
    assert g.gap == pytest.approx((g.objective_upper - g.lower_bound) / max(1, g.objective_upper),
                                  rel=1e-9)
    # the certificate states the given model and verifies
    inc = g.certificate.incumbent
    assert np.array_equal(np.asarray(inc["coef"]), coef) and inc["intercept"] == 0.9
    rep = sparsecert.verify(g.certificate, X, y)
    assert rep.ok, str(rep)
    assert rep.certified_lower_bound <= opt * (1 + 1e-9)


def test_an_optimal_model_is_proven_optimal_and_k_defaults_to_its_sparsity():
    X, y = _data(seed=1)
    r = sparsecert.certify(X, y, 3, 0.1, verbose=0)
    g = sparsecert.certified_gap(X, y, r.coef, r.intercept, lambda2=0.1)
    assert g.certificate.problem["k"] == 3
    assert g.status == "optimal" and g.gap <= 1e-4
    assert sparsecert.verify(g.certificate, X, y, k=3).ok


def test_the_root_bound_alone_within_a_tiny_budget_is_still_proven():
    X, y = _data(n=40, p=10, seed=2)
    coef = np.zeros(10)
    coef[[5, 6, 7]] = 0.1
    g = sparsecert.certified_gap(X, y, coef, 0.0, lambda2=0.05, node_limit=1)
    opt = brute_force(X, y, 3, "squared", 0.05, fit_intercept=True)[0]
    assert g.search.n_evaluated == 1 and g.status == "node_limit"
    assert np.isfinite(g.lower_bound) and g.lower_bound <= opt * (1 + 1e-9)
    assert sparsecert.verify(g.certificate, X, y).ok


@pytest.mark.parametrize("loss", ["logistic", "poisson"])
def test_the_gap_on_the_extended_problem(loss):
    X, y = _data(seed=3)
    if loss == "logistic":
        y = np.where(y > np.median(y), 1.0, -1.0)
    else:
        y = np.random.default_rng(0).poisson(np.exp(0.4 * X[:, 0])).astype(float)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    coef = np.zeros(6)
    coef[2] = 0.3
    kw = dict(sample_weight=w, exclude=[0], positive=True)
    g = sparsecert.certified_gap(X, y, coef, 0.0, k=2, lambda2=0.3, loss=loss,
                                 fit_intercept=False, **kw)
    p = X.shape[1]
    opt = brute_force(X, y, 2, loss, 0.3, w=w, exclude=[0], lower=np.zeros(p),
                      upper=np.full(p, np.inf))[0]
    assert g.lower_bound <= opt * (1 + 1e-7) + 1e-9
    assert g.objective == pytest.approx(objective(X, y, coef, 0.0, loss, 0.3, w=w), rel=1e-12)
    assert g.best_objective <= g.objective + 1e-9
    assert sparsecert.verify(g.certificate, X, y, **kw).ok


@pytest.mark.parametrize("coef,intercept,kw,exc,match", [
    (np.zeros(5), 0.0, {}, ValueError, "coef has 5 entries, X has 6"),
    (np.r_[np.nan, np.zeros(5)], 0.0, {}, ValueError, r"coef\[0\] = nan is not finite"),
    (np.r_[1.0, 1.0, 1.0, 0, 0, 0], 0.0, dict(k=2), ValueError, "3 non-zeros, more than k = 2"),
    (np.r_[1.0, 0, 0, 0, 0, 0], 0.0, dict(exclude=[0]), ValueError, "excluded feature"),
    (np.r_[-1.0, 0, 0, 0, 0, 0], 0.0, dict(positive=True), ValueError, "outside its bounds"),
    (np.r_[3.0, 0, 0, 0, 0, 0], 0.0, dict(max_abs_coef=2.0), ValueError, "outside its bounds"),
    (np.r_[1.0, 0, 0, 0, 0, 0], 0.5, dict(fit_intercept=False), ValueError,
     "fit_intercept=False"),
    (np.r_[1.0, 0, 0, 0, 0, 0], "a", {}, TypeError, "intercept must be a number"),
    (np.r_[1.0, 0, 0, 0, 0, 0], 0.0, dict(always_select=[1, 2]), ValueError,
     "with always_select, 3"),
])
def test_a_model_that_breaks_the_problem_is_one_clear_error(coef, intercept, kw, exc, match):
    X, y = _data()
    kw = {"k": 2, **kw} if "always_select" in kw else kw
    with pytest.raises(exc, match=match) as info:
        sparsecert.certified_gap(X, y, coef, intercept, lambda2=0.1, **kw)
    assert "\n" not in str(info.value)
