"""The certified path over k and the cross-validated choice of k."""

from __future__ import annotations

import numpy as np
import pytest
from _bruteforce import brute_force
from sklearn.model_selection import KFold

from sparsecert.api import certify, verify
from sparsecert.datasets import make_synthetic
from sparsecert.estimators import KSparseLinearRegression, KSparseLogisticRegression
from sparsecert.path import KSparseCV, KSparseLinearRegressionCV, certify_path


@pytest.fixture(scope="module")
def data():
    X, y, _ = make_synthetic(40, 9, 3, rho=0.6, snr=3.0, seed=11)
    return X, y


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_path_equals_separate_certify(data, fit_intercept):
    X, y = data
    ks = [3, 1, 2, 4]  # any order: solved increasing
    path = certify_path(X, y, ks, 0.7, fit_intercept=fit_intercept, rel_gap=1e-8)
    np.testing.assert_array_equal(path.ks, [1, 2, 3, 4])
    assert len(path) == 4
    for k, res in zip(path.ks, path, strict=True):
        ref = certify(X, y, int(k), 0.7, fit_intercept=fit_intercept, rel_gap=1e-8, verbose=0)
        assert res.status == ref.status == "optimal"
        assert res.objective == pytest.approx(ref.objective, rel=1e-7)
        assert set(res.support) == set(ref.support)
        np.testing.assert_allclose(res.coef, ref.coef, rtol=1e-6, atol=1e-9)
        assert res.intercept == pytest.approx(ref.intercept, rel=1e-6, abs=1e-9)
        # each point carries its own certificate, for its own k
        rep = verify(res.certificate, X, y)
        assert rep.ok, rep.failures
        assert res.certificate.to_dict()["problem"]["k"] == int(k)
    assert path.result_for(2) is path[1]
    with pytest.raises(KeyError):
        path.result_for(7)


def test_path_certificates_identical_to_certify(data):
    """Without warm incumbents a path point is the same search as certify: the certificate
    (problem, model, bounds, tree, witnesses via the sidecar hash) is identical but for the
    producer record (timings)."""
    X, y = data
    path = certify_path(X, y, [1, 2, 3], 0.7, fit_intercept=True, warm_start=False)
    for k, res in zip(path.ks, path, strict=True):
        a = res.certificate.to_dict()
        b = certify(X, y, int(k), 0.7, fit_intercept=True, verbose=0).certificate.to_dict()
        assert a.keys() == b.keys()
        for key in a:
            if key != "producer":
                assert a[key] == b[key], key


def test_path_matches_enumeration(data):
    X, y = data
    path = certify_path(X, y, range(1, 5), 1.3, fit_intercept=False, rel_gap=1e-9)
    for k, res in zip(path.ks, path, strict=True):
        val, supp = brute_force(X, y, int(k), "squared", 1.3)
        assert res.objective == pytest.approx(val, rel=1e-8)
        assert tuple(sorted(res.support)) == supp
    obj = path.objectives
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]))  # non-increasing in k
    assert np.all(path.lower_bounds <= obj * (1 + 1e-12))
    assert "objective" in path.summary()


def test_path_without_warm_start_same_answers(data):
    X, y = data
    warm = certify_path(X, y, [1, 2, 3], 0.7, rel_gap=1e-9)
    cold = certify_path(X, y, [1, 2, 3], 0.7, rel_gap=1e-9, warm_start=False)
    np.testing.assert_allclose(warm.objectives, cold.objectives, rtol=1e-8)
    assert warm.supports == [tuple(s) for s in cold.supports]


def test_path_warm_incumbent_is_used(monkeypatch):
    """The previous point's model is offered before the search starts. With the engine's own
    root heuristics disabled (they return the empty model), the first incumbent at k = 3 is the
    empty model without warm start, and at most the k = 2 optimum with it."""
    import sparsecert.bnb.incumbents as incumbents

    X, y, _ = make_synthetic(30, 8, 2, seed=5)
    monkeypatch.setattr(incumbents, "beam_search", lambda refitter, k, **kw: refitter.fit(()))
    monkeypatch.setattr(incumbents, "swap_search", lambda refitter, model, k, **kw: model)
    warm = certify_path(X, y, [2, 3], 0.5, fit_intercept=False, rel_gap=1e-9)
    cold = certify_path(X, y, [2, 3], 0.5, fit_intercept=False, rel_gap=1e-9, warm_start=False)
    empty = float(y @ y)
    assert cold[1].search.history[0].upper_bound == pytest.approx(empty)
    assert warm[1].search.history[0].upper_bound <= warm[0].objective * (1 + 1e-12) < empty
    # both still certify the same optimum
    assert warm[1].objective == pytest.approx(cold[1].objective, rel=1e-8)
    assert verify(warm[1].certificate, X, y).ok


def test_path_root_warm_start(monkeypatch, data):
    """Each root relaxation after the first starts from the previous root's relaxed solution."""
    import sparsecert.bnb.evaluate as ev

    X, y = data
    roots = []
    real = ev.solve_node

    def spy(prob, k, fixed_in, fixed_out, **kw):
        res = real(prob, k, fixed_in, fixed_out, **kw)
        if not fixed_in.any() and not fixed_out.any():
            roots.append((k, kw["warm_start"], res.coef.copy()))
        return res

    monkeypatch.setattr(ev, "solve_node", spy)
    certify_path(X, y, [1, 2, 3], 0.7)
    assert [r[0] for r in roots] == [1, 2, 3]
    assert roots[0][1] is None
    for prev, cur in zip(roots[:-1], roots[1:], strict=True):
        np.testing.assert_array_equal(cur[1], prev[2])
    roots.clear()
    certify_path(X, y, [1, 2], 0.7, warm_start=False)
    assert all(r[1] is None for r in roots)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_path_logistic(data, fit_intercept):
    X, _ = data
    _, ylog, _ = make_synthetic(40, 9, 3, loss="logistic", seed=2)
    path = certify_path(X, ylog, [1, 2], 1.0, loss="logistic", fit_intercept=fit_intercept)
    for k, res in zip(path.ks, path, strict=True):
        ref = certify(X, ylog, int(k), 1.0, loss="logistic", fit_intercept=fit_intercept,
                      verbose=0)
        assert res.intercept == pytest.approx(ref.intercept, rel=1e-3, abs=1e-6)
        assert res.objective == pytest.approx(ref.objective, rel=2e-4)
        assert verify(res.certificate, X, ylog).ok


@pytest.mark.parametrize("ks, exc, match", [
    ([], ValueError, "empty"),
    ([0, 1], ValueError, "1 <= k"),
    ([1, 10], ValueError, "n_features = 9"),
    ([1, 1], ValueError, "repeated"),
    ([1.5], TypeError, "integers"),
    ("ab", TypeError, "integers"),
])
def test_path_bad_ks(data, ks, exc, match):
    X, y = data
    with pytest.raises(exc, match=match):
        certify_path(X, y, ks, 1.0)


def test_path_bad_lambda(data):
    X, y = data
    with pytest.raises(ValueError, match="lambda2"):
        certify_path(X, y, [1], 0.0)


# ----------------------------------------------------------------------------------------------
def _manual_cv(X, y, ks, lam, cv):
    scores = np.zeros((cv.get_n_splits(), len(ks)))
    for i, (tr, te) in enumerate(cv.split(X, y)):
        for j, k in enumerate(ks):
            est = KSparseLinearRegression(k=k, lambda2=lam).fit(X[tr], y[tr])
            scores[i, j] = est.score(X[te], y[te])
    return scores


def test_linear_cv_equals_manual_cv(data):
    X, y = data
    cv = KFold(3, shuffle=True, random_state=0)
    est = KSparseLinearRegressionCV(ks=[1, 2, 3, 5], lambda2=0.7, cv=cv).fit(X, y)
    manual = _manual_cv(X, y, [1, 2, 3, 5], 0.7, cv)
    np.testing.assert_allclose(est.cv_scores_, manual, rtol=1e-6, atol=1e-9)
    assert est.k_ == [1, 2, 3, 5][int(np.argmax(manual.mean(0)))]
    ref = KSparseLinearRegression(k=est.k_, lambda2=0.7).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-10)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-10)
    assert est.status_ == "optimal"


def test_generic_cv_classifier():
    X, y, _ = make_synthetic(60, 7, 2, loss="logistic", seed=8)
    ystr = np.where(y > 0, "yes", "no")
    base = KSparseLogisticRegression(fit_intercept=False, lambda2=1.0)
    est = KSparseCV(base, ks=[1, 2, 3, 20], cv=3).fit(X, ystr)
    np.testing.assert_array_equal(est.ks_, [1, 2, 3, 7])  # 20 > p is the same problem as k = p
    assert est.cv_scores_.shape == (3, 4)
    np.testing.assert_array_equal(est.classes_, ["no", "yes"])
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    assert set(est.predict(X)) <= {"no", "yes"}
    assert np.count_nonzero(est.coef_) <= est.k_
    assert est.score(X, ystr) == pytest.approx(np.mean(est.predict(X) == ystr))


def test_cv_rejects_foreign_estimator(data):
    from sklearn.linear_model import Ridge

    X, y = data
    with pytest.raises(TypeError, match="sparsecert estimator"):
        KSparseCV(Ridge()).fit(X, y)


def test_cv_pandas_names(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    est = KSparseLinearRegressionCV(ks=[1, 2], cv=3).fit(df, y)
    assert list(est.feature_names_in_) == list(df.columns)
    # the refit sees the names, so its certified result names the selected features
    assert list(est.best_estimator_.feature_names_in_) == list(df.columns)
    assert est.result_.feature_names == tuple(df.columns)
    with pytest.warns(UserWarning, match="feature names"):
        plain = est.predict(X)
    np.testing.assert_allclose(est.predict(df), plain)
    with pytest.raises(ValueError, match="same order"):
        est.predict(df[df.columns[::-1]])
