"""scikit-learn estimators: the estimator checks, agreement with certify, labels, pandas, CV."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsecert.api import certify, verify
from sparsecert.datasets import make_synthetic
from sparsecert.estimators import (
    KSparseHingeClassifier,
    KSparseHuberRegressor,
    KSparseLinearRegression,
    KSparseLogisticRegression,
    KSparsePoissonRegression,
)
from sparsecert.path import KSparseCV, KSparseLinearRegressionCV

CHECKED = [
    KSparseLinearRegression(),
    KSparseLinearRegression(k=1, fit_intercept=False, max_abs_coef=10.0),
    KSparsePoissonRegression(),
    KSparseLogisticRegression(),
    KSparseHingeClassifier(),
    KSparseHuberRegressor(huber_delta=0.5),
    # the CV estimators on two candidates and two folds, to keep the checks fast
    KSparseLinearRegressionCV(ks=[1, 3], cv=2),
    KSparseCV(KSparseLogisticRegression(), ks=[1, 3], cv=2),
]

# One check is expected to fail, for least squares only: sample weights with a sparse X and an
# intercept are refused with one line (the weighted centring would densify X). (Some of
# sklearn's data sets are badly conditioned for the intercept of the non-squared losses, e.g.
# columns near 100; there the certifier may stop with status "tree_exhausted" and a gap above
# rel_gap, and the estimator says so in a ConvergenceWarning: the checks still pass.)


def _expected_failures(estimator) -> dict:
    base = getattr(estimator, "estimator", estimator)
    if getattr(base, "_loss", None) == "squared" and getattr(base, "fit_intercept", True):
        return {"check_sample_weight_equivalence_on_sparse_data":
                "sample weights with a sparse X and an intercept are refused for least "
                "squares (the weighted centring would densify X)"}
    return {}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # see above
@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reg_data():
    X, y, _ = make_synthetic(40, 10, 3, seed=3)
    return X, y + 2.0  # a non-zero mean, so the intercept matters


@pytest.fixture(scope="module")
def clf_data():
    X, y, _ = make_synthetic(50, 8, 2, loss="logistic", seed=4)
    return X, y  # labels in {-1, +1}


def test_linear_equals_certify(reg_data):
    X, y = reg_data
    est = KSparseLinearRegression(k=3, lambda2=0.5).fit(X, y)
    res = certify(X, y, 3, 0.5, fit_intercept=True, verbose=0)
    np.testing.assert_allclose(est.coef_, res.coef, rtol=1e-10, atol=1e-12)
    assert est.intercept_ == pytest.approx(res.intercept, rel=1e-10, abs=1e-12)
    assert tuple(est.support_) == tuple(sorted(res.support))
    assert est.objective_ == pytest.approx(res.objective, rel=1e-12)
    assert est.status_ == "optimal" and est.gap_ <= 1e-4
    assert est.lower_bound_ <= est.objective_
    # the prediction is the linear model, and the certificate verifies on the training data
    np.testing.assert_allclose(est.predict(X), X @ res.coef + res.intercept, rtol=1e-10)
    assert verify(est.certificate_, X, y).ok
    assert est.verify_certificate(X, y).ok


def test_verify_certificate_checks_this_estimators_problem_and_model(reg_data):
    """The estimator's verification poses its own problem (not the certificate's) and requires
    the certificate's incumbent to be coef_ / intercept_."""
    X, y = reg_data
    est = KSparseLinearRegression(k=3, lambda2=0.5, rel_gap=0.25).fit(X, y)
    rep = est.verify_certificate(X, y)
    assert rep.ok and ("estimator_model", True) in [(n, ok) for n, ok, _ in rep.checks]
    assert rep.rel_gap_tolerance == 0.25  # the estimator's own tolerance by default
    assert all(src == "user" for _, src in rep.parameters.values())
    other = KSparseLinearRegression(k=3, lambda2=2.0).fit(X, y)
    swapped = copy.deepcopy(est)
    swapped.certificate_ = other.certificate_  # a valid certificate, of another problem
    rep = swapped.verify_certificate(X, y)
    assert not rep.ok and rep.exit_code == 1
    assert "parameters" in [n for n, _ in rep.failures]
    nudged = copy.deepcopy(est)
    nudged.coef_[nudged.support_[0]] += 1e-9  # a model the certificate does not prove
    rep = nudged.verify_certificate(X, y)
    assert not rep.ok and [n for n, _ in rep.failures] == ["estimator_model"]


def test_linear_intercept_is_exact(reg_data):
    """With an intercept the objective is minimised over it: no better constant exists."""
    X, y = reg_data
    est = KSparseLinearRegression(k=2).fit(X, y)
    r = y - X @ est.coef_ - est.intercept_
    assert abs(r.mean()) < 1e-10


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("cls, loss", [(KSparseLogisticRegression, "logistic"),
                                       (KSparseHingeClassifier, "squared_hinge")])
def test_classifier_equals_certify(clf_data, cls, loss, fit_intercept):
    X, y = clf_data
    est = cls(k=2, lambda2=1.0, fit_intercept=fit_intercept).fit(X, y)
    res = certify(X, y, 2, 1.0, loss=loss, fit_intercept=fit_intercept, verbose=0)
    np.testing.assert_allclose(est.coef_, res.coef, rtol=1e-10, atol=1e-12)
    assert est.intercept_ == pytest.approx(res.intercept, rel=1e-10, abs=1e-12)
    assert est.objective_ == pytest.approx(res.objective, rel=1e-12)
    np.testing.assert_array_equal(est.classes_, [-1.0, 1.0])
    d = est.decision_function(X)
    np.testing.assert_allclose(d, X @ res.coef + res.intercept, rtol=1e-10)
    np.testing.assert_array_equal(est.predict(X), np.where(d > 0, 1.0, -1.0))
    assert est.verify_certificate(X, y).ok


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_poisson_equals_certify(fit_intercept):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 6)) * 0.3
    y = rng.poisson(np.exp(X[:, 1] - 0.5 * X[:, 4] + 0.5)).astype(float)
    est = KSparsePoissonRegression(k=2, fit_intercept=fit_intercept).fit(X, y)
    res = certify(X, y, 2, 1.0, loss="poisson", fit_intercept=fit_intercept, verbose=0)
    np.testing.assert_allclose(est.coef_, res.coef, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.predict(X), np.exp(X @ res.coef + res.intercept), rtol=1e-10)
    assert est.verify_certificate(X, y).ok
    with pytest.raises(ValueError, match="non-negative"):
        KSparsePoissonRegression().fit(X, y - 5)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_huber_equals_certify(reg_data, fit_intercept):
    X, y = reg_data
    y = y.copy()
    y[:3] += 10.0  # outliers
    est = KSparseHuberRegressor(k=3, lambda2=0.5, huber_delta=0.8,
                                fit_intercept=fit_intercept).fit(X, y)
    res = certify(X, y, 3, 0.5, loss="huber", loss_params={"huber_delta": 0.8},
                  fit_intercept=fit_intercept, verbose=0)
    np.testing.assert_array_equal(est.coef_, res.coef)
    assert est.intercept_ == res.intercept and est.status_ == "optimal"
    assert est.certificate_.problem["huber_delta"] == 0.8
    assert est.verify_certificate(X, y).ok
    est.set_params(huber_delta=0.9)  # another problem: the certificate no longer proves it
    assert est.verify_certificate(X, y).failed_checks == ["parameters"]
    with pytest.raises(ValueError, match="KSparseHuberRegressor: huber_delta must be"):
        KSparseHuberRegressor(huber_delta=0.0).fit(X, y)
    cv = KSparseCV(KSparseHuberRegressor(lambda2=0.5, huber_delta=0.8), ks=[1, 3], cv=2)
    cv.fit(X, y)
    assert cv.best_estimator_.certificate_.problem["huber_delta"] == 0.8


@pytest.mark.parametrize("cls", [KSparseLogisticRegression, KSparseHingeClassifier])
def test_labels_01_pm1_strings_same_model(clf_data, cls):
    X, ypm = clf_data
    y01 = (ypm > 0).astype(int)
    ystr = np.where(ypm > 0, "spam", "ham")  # "ham" < "spam": ham is classes_[0] (coded -1)
    fits = [cls(k=2).fit(X, yy) for yy in (ypm, y01, ystr)]
    for f in fits[1:]:
        np.testing.assert_allclose(f.coef_, fits[0].coef_, rtol=1e-12, atol=1e-14)
        assert f.objective_ == pytest.approx(fits[0].objective_, rel=1e-12)
    np.testing.assert_array_equal(fits[1].classes_, [0, 1])
    np.testing.assert_array_equal(fits[2].classes_, ["ham", "spam"])
    np.testing.assert_array_equal(fits[2].predict(X), np.where(fits[0].predict(X) > 0,
                                                               "spam", "ham"))
    for f, yy in zip(fits, (ypm, y01, ystr), strict=True):  # certificates check on raw labels
        assert f.verify_certificate(X, yy).ok
    with pytest.raises(ValueError, match="not seen in fit"):
        fits[2].verify_certificate(X, np.where(ypm > 0, "spam", "eggs"))
    assert not fits[2].verify_certificate(X, np.roll(ystr, 1)).ok  # not the training labels
    # the negative class is classes_[0] even when the positive label comes first in y
    yswap = np.where(ypm > 0, "a_neg", "b_pos")
    flipped = cls(k=2).fit(X, yswap)  # f(u, -y) = f(-u, y): the model changes sign
    np.testing.assert_allclose(flipped.coef_, -fits[0].coef_, rtol=1e-8, atol=1e-10)
    assert flipped.intercept_ == pytest.approx(-fits[0].intercept_, rel=1e-8, abs=1e-10)


def test_logistic_predict_proba(clf_data):
    X, y = clf_data
    est = KSparseLogisticRegression(k=3).fit(X, np.where(y > 0, "b", "a"))
    P = est.predict_proba(X)
    d = est.decision_function(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(P[:, 1], 1.0 / (1.0 + np.exp(-d)), rtol=1e-12)
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), P, rtol=1e-12)
    np.testing.assert_array_equal(est.predict(X), est.classes_[(P[:, 1] > 0.5).astype(int)])
    assert not hasattr(KSparseHingeClassifier(), "predict_proba")


def test_multiclass_rejected(clf_data):
    X, _ = clf_data
    y3 = np.arange(X.shape[0]) % 3
    with pytest.raises(ValueError, match="Only binary classification"):
        KSparseLogisticRegression().fit(X, y3)


def test_pandas_feature_names(reg_data):
    pd = pytest.importorskip("pandas")
    X, y = reg_data
    cols = [f"gene_{j}" for j in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols)
    est = KSparseLinearRegression(k=3).fit(df, pd.Series(y))
    np.testing.assert_array_equal(est.feature_names_in_, cols)
    ref = KSparseLinearRegression(k=3).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-12)
    np.testing.assert_allclose(est.predict(df), ref.predict(X), rtol=1e-12)
    assert not hasattr(ref, "feature_names_in_")
    # the names reach the certifier: the result names the selected features
    assert est.result_.feature_names == tuple(cols)
    assert ref.result_.feature_names is None
    assert all(f"gene_{j}" in est.result_.summary() for j in est.support_)
    with pytest.warns(UserWarning, match="feature names"):
        est.predict(X)  # fitted with names, predicting without
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df[cols[::-1]])


def test_pipeline_clone_gridsearch(reg_data):
    X, y = reg_data
    pipe = make_pipeline(StandardScaler(), KSparseLinearRegression(k=2))
    pipe.fit(X, y)
    assert pipe[-1].support_.size <= 2
    assert pipe[-1].verify_certificate(pipe[:-1].transform(X), y).ok
    assert not pipe[-1].verify_certificate(X, y).ok  # the certificate is about the scaled X
    c = clone(pipe)
    assert not hasattr(c[-1], "coef_")
    assert c.get_params()["ksparselinearregression__k"] == 2
    gs = GridSearchCV(pipe, {"ksparselinearregression__k": [1, 3],
                             "ksparselinearregression__lambda2": [0.1, 10.0]}, cv=3)
    gs.fit(X, y)
    assert gs.best_params_["ksparselinearregression__k"] in (1, 3)
    assert len(gs.cv_results_["mean_test_score"]) == 4
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    # the refitted best model equals a direct fit with those parameters
    best = gs.best_estimator_[-1]
    direct = make_pipeline(StandardScaler(), KSparseLinearRegression(
        k=gs.best_params_["ksparselinearregression__k"],
        lambda2=gs.best_params_["ksparselinearregression__lambda2"])).fit(X, y)
    np.testing.assert_allclose(best.coef_, direct[-1].coef_, rtol=1e-10)


def test_fit_does_not_change_params_or_inputs(reg_data):
    X, y = reg_data
    X0, y0 = X.copy(), y.copy()
    est = KSparseLinearRegression(k=50, lambda2=2.0)
    before = est.get_params()
    est.fit(X, y)
    assert est.get_params() == before
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    # k above n_features: the constraint is inactive, i.e. plain ridge with an intercept
    Xc, yc = X - X.mean(0), y - y.mean()
    ridge = np.linalg.solve(Xc.T @ Xc + 2.0 * np.eye(X.shape[1]), Xc.T @ yc)
    np.testing.assert_allclose(est.coef_, ridge, rtol=1e-8, atol=1e-10)


def test_time_limit_leaves_usable_model_and_warns():
    X, y, _ = make_synthetic(60, 40, 8, rho=0.8, snr=1.0, seed=7)
    est = KSparseLinearRegression(k=8, lambda2=0.01, time_limit=0.05, rel_gap=0.0)
    with pytest.warns(ConvergenceWarning, match="relative gap"):
        est.fit(X, y)
    assert est.status_ == "time_limit"
    assert est.gap_ > 0 and est.lower_bound_ <= est.objective_
    assert np.count_nonzero(est.coef_) <= 8
    assert np.all(np.isfinite(est.predict(X)))
    assert verify(est.certificate_, X, y).exit_code in (0, 3)


def test_no_warning_when_optimal(reg_data):
    X, y = reg_data
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        KSparseLinearRegression(k=2).fit(X, y)


@pytest.mark.parametrize("params, exc, match", [
    (dict(k=0), ValueError, "k must be >= 1"),
    (dict(k=2.5), TypeError, "k must be an integer"),
    (dict(lambda2=0.0), ValueError, "lambda2"),
    (dict(lambda2="big"), TypeError, "lambda2"),
    (dict(max_abs_coef=-1.0), ValueError, "max_abs_coef"),
    (dict(fit_intercept="yes"), TypeError, "fit_intercept"),
    (dict(rel_gap=1.5), ValueError, "rel_gap"),
    (dict(time_limit=0), ValueError, "time_limit"),
    (dict(n_jobs=0), ValueError, "n_jobs"),
])
def test_bad_params(reg_data, params, exc, match):
    X, y = reg_data
    with pytest.raises(exc, match=match):
        KSparseLinearRegression(**params).fit(X, y)


def test_bad_data_and_unfitted(reg_data):
    X, y = reg_data
    est = KSparseLinearRegression()
    with pytest.raises(NotFittedError):
        est.predict(X)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="inconsistent"):
        est.fit(X, y[:-1])
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :-1])


def test_pickle_roundtrip(clf_data):
    X, y = clf_data
    est = KSparseLogisticRegression(k=2, fit_intercept=False).fit(X, y)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est2.predict_proba(X), est.predict_proba(X))
    assert verify(est2.certificate_, X, y).ok


@pytest.mark.parametrize("cls", [KSparseLogisticRegression, KSparseHingeClassifier,
                                 KSparsePoissonRegression])
def test_intercept_non_squared_losses(cls):
    """Imbalanced targets: the (default) unpenalised intercept is used and helps; with it the
    proven lower bound is below the no-intercept optimum (a larger feasible set)."""
    X, _, beta = make_synthetic(80, 6, 2, seed=6)
    u = X @ beta + 1.5
    rng = np.random.default_rng(1)
    if cls is KSparsePoissonRegression:
        y = rng.poisson(np.exp(0.3 * u)).astype(float)
    else:
        y = np.where(u + 0.5 * rng.standard_normal(80) > 0, 1.0, -1.0)
    with_c = cls(k=2).fit(X, y)  # default fit_intercept=True
    without = cls(k=2, fit_intercept=False).fit(X, y)
    assert with_c.intercept_ > 0.1 and without.intercept_ == 0.0
    assert with_c.status_ == "optimal"
    assert with_c.objective_ < without.objective_
    assert with_c.lower_bound_ <= without.objective_
    assert with_c.verify_certificate(X, y).ok
