"""The extended problem end to end: sample weights, offsets, per-coefficient bounds and signs,
forced-in and excluded features, through ``certify`` and ``verify``, against the brute-force
reference of ``_extended_ref`` (every allowed support solved by cvxpy)."""

from __future__ import annotations

import numpy as np
import pytest
from _extended_ref import brute_force, objective

import sparsecert


def _data(loss, n=24, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    u = X[:, 0] - 0.8 * X[:, 1] + 0.5 * X[:, 3]
    if loss in ("squared", "huber"):
        y = u + 0.3 * rng.standard_normal(n)
    elif loss in ("logistic", "squared_hinge"):
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-2 * u)), 1.0, -1.0)
    else:  # poisson
        y = rng.poisson(np.exp(0.4 * u)).astype(float)
    return X, y


def _check(res, X, y, loss, k, lam, *, verify_kw, ref_kw, fit_intercept=False):
    ref, support = brute_force(X, y, k, loss, lam, fit_intercept=fit_intercept, **ref_kw)
    assert res.status == "optimal", res.summary()
    tol = 2e-6 * max(1.0, abs(ref))
    assert abs(res.objective - ref) <= tol, (res.objective, ref)
    assert res.lower_bound <= ref + tol
    assert tuple(res.support) == support or abs(res.objective - ref) <= tol
    # the returned model's objective, recomputed here on the user's data
    w, o = ref_kw.get("w"), ref_kw.get("o")
    assert objective(X, y, res.coef, res.intercept, loss, lam, w=w, o=o) == \
        pytest.approx(res.objective, rel=1e-9, abs=1e-9)
    rep = sparsecert.verify(res, X, y, **verify_kw)
    assert rep.ok, str(rep)
    return ref


@pytest.mark.parametrize("loss,fit_intercept", [("squared", True), ("logistic", False),
                                                ("poisson", True), ("squared_hinge", True),
                                                ("huber", False)])
def test_weights_and_offsets_match_the_brute_force(loss, fit_intercept):
    X, y = _data(loss)
    rng = np.random.default_rng(3)
    w = rng.uniform(0.2, 3.0, len(y))
    w[[2, 7]] = 0.0
    o = 0.3 * rng.standard_normal(len(y))
    k, lam = 2, 0.2
    res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=fit_intercept,
                             sample_weight=w, offset=o, verbose=0)
    _check(res, X, y, loss, k, lam, fit_intercept=fit_intercept,
           verify_kw=dict(sample_weight=w, offset=o), ref_kw=dict(w=w, o=o))
    # without its weights (or with other ones) the certificate is not about this data
    assert not sparsecert.verify(res, X, y, offset=o).ok
    assert not sparsecert.verify(res, X, y, sample_weight=w * 2, offset=o).ok
    assert not sparsecert.verify(res, X, y, sample_weight=w).ok


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
def test_bounds_signs_forced_and_excluded_match_the_brute_force(loss):
    X, y = _data(loss, seed=1)
    k, lam = 3, 0.1
    lower = np.array([-np.inf, -0.3, 0.0, -1.0, -2.0])
    upper = np.array([0.4, np.inf, 1.0, np.inf, 2.0])
    kw = dict(coef_bounds=(lower, upper), always_select=[2], exclude=[0])
    res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=True, verbose=0, **kw)
    ref = _check(res, X, y, loss, k, lam, fit_intercept=True, verify_kw=kw,
                 ref_kw=dict(lower=lower, upper=upper, always_select=[2], exclude=[0]))
    assert res.coef[0] == 0.0
    assert np.all(res.coef >= lower) and np.all(res.coef <= upper)
    assert 2 in res.support or res.coef[2] == 0.0
    # the constraints cost something here: the plain problem's optimum is lower
    plain = brute_force(X, y, k, loss, lam, fit_intercept=True)[0]
    assert plain < ref - 1e-6
    # a user posing other bounds or other forced features fails the check 'parameters'
    for other in (dict(kw, coef_bounds=(lower, upper + 1)), dict(kw, exclude=[]),
                  dict(kw, always_select=[2, 4])):
        rep = sparsecert.verify(res, X, y, **other)
        assert not rep.ok and "parameters" in rep.failed_checks, str(rep)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_positive_matches_the_brute_force(loss):
    X, y = _data(loss, seed=2)
    k, lam = 2, 0.1
    res = sparsecert.certify(X, y, k, lam, loss=loss, positive=True, max_abs_coef=1.5,
                             fit_intercept=False, verbose=0)
    p = X.shape[1]
    _check(res, X, y, loss, k, lam, verify_kw=dict(positive=True),
           ref_kw=dict(lower=np.zeros(p), upper=np.full(p, 1.5)))
    assert np.all(res.coef >= 0)


def _certificate_fields(res):
    doc = res.certificate.to_dict()
    return doc["problem"], doc["bounds"]


def test_a_zero_weight_certifies_the_problem_without_its_row():
    X, y = _data("logistic", seed=4)
    w = np.ones(len(y))
    w[[1, 5, 6]] = 0.0
    keep = w > 0
    a = sparsecert.certify(X, y, 2, 0.3, loss="logistic", sample_weight=w, verbose=0)
    b = sparsecert.certify(X[keep], y[keep], 2, 0.3, loss="logistic", verbose=0)
    assert a.support == b.support
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    assert a.lower_bound == pytest.approx(b.lower_bound, rel=1e-9)
    assert sparsecert.verify(a, X, y, sample_weight=w).ok
    # the weighted certificate's claims hold on the reduced data's problem too (the same
    # optimum): its lower bound is below the reduced problem's proven objective
    assert a.lower_bound <= b.objective * (1 + 1e-12)


def test_integer_weights_certify_the_problem_with_repeated_rows():
    X, y = _data("poisson", seed=5)
    w = np.random.default_rng(0).integers(1, 4, len(y)).astype(float)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    a = sparsecert.certify(X, y, 2, 0.2, loss="poisson", fit_intercept=True, sample_weight=w,
                           verbose=0)
    b = sparsecert.certify(X[rep], y[rep], 2, 0.2, loss="poisson", fit_intercept=True,
                           verbose=0)
    assert a.support == b.support
    assert a.objective == pytest.approx(b.objective, rel=1e-9)
    assert a.lower_bound == pytest.approx(b.lower_bound, rel=1e-7)
    assert sparsecert.verify(a, X, y, sample_weight=w).ok
    assert sparsecert.verify(b, X[rep], y[rep]).ok


def test_certify_path_carries_the_extended_problem_to_every_point():
    from sparsecert.path import certify_path

    X, y = _data("squared", seed=6)
    w = np.random.default_rng(2).uniform(0.0, 2.0, len(y))
    kw = dict(sample_weight=w, offset=0.1 * X[:, 4], coef_bounds=(-0.6, None), exclude=[3],
              always_select=[2], fit_intercept=True)
    path = certify_path(X, y, ks=[1, 2, 3], lambda2=0.1, verbose=0, **kw)
    for k in (1, 2, 3):
        r = path.result_for(k)
        ref = brute_force(X, y, k, "squared", 0.1, w=w, o=kw["offset"], exclude=[3],
                          always_select=[2], lower=np.full(5, -0.6), upper=np.full(5, np.inf),
                          fit_intercept=True)[0]
        assert r.objective == pytest.approx(ref, rel=2e-6)
        assert sparsecert.verify(r, X, y, sample_weight=w, offset=kw["offset"]).ok
