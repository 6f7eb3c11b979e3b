"""The estimators on the extended problem: ``fit(X, y, sample_weight=, offset=)`` and the
hyper-parameters ``coef_bounds``, ``positive``, ``always_select`` and ``exclude``, against
``certify`` and the brute-force reference (cvxpy over the allowed supports)."""

from __future__ import annotations

import numpy as np
import pytest
from _extended_ref import brute_force

from sparsecert.api import certify
from sparsecert.estimators import (
    KSparseHuberRegressor,
    KSparseLinearRegression,
    KSparseLogisticRegression,
    KSparsePoissonRegression,
)


def _reg(n=24, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return X, X[:, 0] - 0.8 * X[:, 1] + 0.3 * rng.standard_normal(n) + 1.0


def test_weighted_fit_is_certify_with_weights_and_the_brute_force():
    X, y = _reg()
    w = np.random.default_rng(1).uniform(0, 2, len(y))
    m = KSparseLinearRegression(k=2, lambda2=0.1).fit(X, y, sample_weight=w)
    r = certify(X, y, 2, 0.1, sample_weight=w, verbose=0)
    assert np.array_equal(m.coef_, r.coef) and m.intercept_ == r.intercept
    ref = brute_force(X, y, 2, "squared", 0.1, w=w, fit_intercept=True)[0]
    assert m.objective_ == pytest.approx(ref, rel=1e-6)
    assert m.verify_certificate(X, y, sample_weight=w).ok
    # without the weights, or with others, the certificate is not about this problem
    assert not m.verify_certificate(X, y).ok
    assert not m.verify_certificate(X, y, sample_weight=w + 1).ok


def test_a_number_weighs_every_sample_and_unit_weights_are_the_plain_problem():
    X, y = _reg(seed=2)
    plain = KSparseLinearRegression(k=2).fit(X, y)
    ones = KSparseLinearRegression(k=2).fit(X, y, sample_weight=1.0)
    three = KSparseLinearRegression(k=2, lambda2=3.0).fit(X, y, sample_weight=3.0)
    assert ones.certificate_.to_dict()["problem"] == plain.certificate_.to_dict()["problem"]
    assert np.array_equal(ones.coef_, plain.coef_)
    # 3 * (loss + 1 * ||b||^2) = 3 * loss + 3 ||b||^2: the same minimiser
    assert np.allclose(three.coef_, plain.coef_, atol=1e-6)
    assert three.objective_ == pytest.approx(3 * plain.objective_, rel=1e-7)


@pytest.mark.parametrize("cls,loss", [(KSparseLinearRegression, "squared"),
                                      (KSparsePoissonRegression, "poisson"),
                                      (KSparseLogisticRegression, "logistic"),
                                      (KSparseHuberRegressor, "huber")])
def test_bounds_and_selection_hyper_parameters_match_the_brute_force(cls, loss):
    X, y = _reg(seed=3)
    if loss == "poisson":
        y = np.random.default_rng(0).poisson(np.exp(0.4 * X[:, 0])).astype(float)
    if loss == "logistic":
        y = np.where(y > np.median(y), "yes", "no")
    lower, upper = np.array([-0.5, -2, -2, 0.0, -2]), np.array([0.5, 2, 0.2, 2, 2])
    m = cls(k=2, lambda2=0.2, coef_bounds=(lower, upper), always_select=(3,), exclude=(1,))
    m.fit(X, y)
    assert m.status_ == "optimal"
    assert m.coef_[1] == 0.0 and np.all(m.coef_ >= lower) and np.all(m.coef_ <= upper)
    y_ref = np.where(y == "yes", 1.0, -1.0) if loss == "logistic" else y
    ref = brute_force(X, y_ref, 2, loss, 0.2, lower=lower, upper=upper, always_select=[3],
                      exclude=[1], fit_intercept=True)[0]
    assert m.objective_ == pytest.approx(ref, rel=2e-6)
    assert m.verify_certificate(X, y).ok
    # another estimator's problem (no exclusion) does not verify this certificate
    other = cls(k=2, lambda2=0.2, coef_bounds=(lower, upper), always_select=(3,))
    other.n_features_in_ = m.n_features_in_
    for name in ("coef_", "intercept_", "certificate_", "classes_"):
        if hasattr(m, name):
            setattr(other, name, getattr(m, name))
    rep = other.verify_certificate(X, y)
    assert not rep.ok and "parameters" in rep.failed_checks


def test_positive_and_an_offset_in_fit_and_predict():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 4))
    exposure = rng.uniform(0.5, 3.0, 30)
    y = rng.poisson(exposure * np.exp(0.5 * X[:, 0] - 0.5 * X[:, 2])).astype(float)
    o = np.log(exposure)
    m = KSparsePoissonRegression(k=2, lambda2=0.1, positive=True).fit(X, y, offset=o)
    ref = brute_force(X, y, 2, "poisson", 0.1, o=o, lower=np.zeros(4), upper=np.full(4, np.inf),
                      fit_intercept=True)[0]
    assert m.objective_ == pytest.approx(ref, rel=2e-6)
    assert np.all(m.coef_ >= 0) and m.coef_[2] == 0.0
    assert np.allclose(m.predict(X[:5], offset=o[:5]), np.exp(X[:5] @ m.coef_ + m.intercept_)
                       * exposure[:5])
    assert np.allclose(m.predict(X[:5]), np.exp(X[:5] @ m.coef_ + m.intercept_))
    assert m.verify_certificate(X, y, offset=o).ok
    assert not m.verify_certificate(X, y).ok
    with pytest.raises(ValueError, match="offset has 2 entries"):
        m.predict(X[:5], offset=o[:2])


@pytest.mark.parametrize("fit_kw,params,match", [
    (dict(sample_weight=-np.ones(24)), {}, "sample_weight.* is negative"),
    (dict(sample_weight=np.ones(5)), {}, "sample_weight has 5 entries, X has 24"),
    (dict(sample_weight=np.r_[np.nan, np.ones(23)]), {}, "sample_weight.* not finite"),
    (dict(sample_weight=np.zeros(24)), {}, "zero everywhere"),
    (dict(offset=np.ones(3)), {}, "offset has 3 entries"),
    (dict(offset=np.r_[np.inf, np.ones(23)]), {}, "offset.* not finite"),
    ({}, dict(k=1, always_select=(0, 1)), "more than k = 1"),
    ({}, dict(always_select=(0,), exclude=(0,)), "overlap"),
    ({}, dict(coef_bounds=(1.0, 2.0)), "lower = 1.0 excludes b = 0"),
    ({}, dict(coef_bounds=(-1.0, -2.0)), "coef_bounds"),
    ({}, dict(exclude=(7,)), "exclude"),
])
def test_bad_extended_input_is_one_clear_error(fit_kw, params, match):
    X, y = _reg()
    with pytest.raises(ValueError, match=match) as info:
        KSparseLinearRegression(**params).fit(X, y, **fit_kw)
    assert "\n" not in str(info.value)
