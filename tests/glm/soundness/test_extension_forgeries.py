"""Forged certificates of the extended problem: for each optional field of the problem (the
sample weights' and offsets' hashes, the coefficients' lower and upper bounds, the forced-in
and excluded features), an honest certificate whose field is tampered with so that it states
another problem, and the verifier must refuse it.

Two kinds of forgery per field:

* the field loosened (or the weights / offsets replaced by others, the hash re-computed), the
  claims kept: the claimed lower bound is then false for the stated problem (a feasible model
  of the stated problem, evaluated here, is below it), so only the tree's bounds can refuse;
* the field tightened so that the incumbent breaks it: the incumbent checks refuse.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _extended_ref import objective, solve_support

import sparsecert
from sparsecert.certificate import verify_certificate
from sparsecert.certificate.schema import array_sha256

LAM = 0.1


def _data(seed=0, n=20, p=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = 2.0 * X[:, 0] - 1.5 * X[:, 1] + 0.2 * rng.standard_normal(n)
    return X, y


def _feasible_upper(X, y, S, *, lower=None, upper=None, w=None, o=None):
    """An upper bound on the optimum of a problem: a model on ``S`` solved by cvxpy, clipped
    into the bounds (so feasible), evaluated in numpy."""
    _, coef, _ = solve_support(X, y, S, "squared", LAM, lower=lower, upper=upper, w=w, o=o)
    if lower is not None:
        coef = np.clip(coef, lower, upper)
    return objective(X, y, coef, 0.0, "squared", LAM, w=w, o=o)


#: the checks of the tree's bounds (a shifted witness's shift is proven on the stated data)
BOUNDS = {"leaf_bounds", "leaf_witnesses", "eig_shift"}


def _refused(doc, cert, X, y, **kw):
    rep = verify_certificate(doc, X, y, proof=cert.proof_bytes(), **kw)
    assert not rep.ok and rep.exit_code == 1, str(rep)
    return set(rep.failed_checks)


def _honest(X, y, k=2, **kw):
    res = sparsecert.certify(X, y, k, LAM, fit_intercept=False, verbose=0, **kw)
    assert res.status == "optimal"
    return res


def test_an_excluded_feature_removed_from_the_statement_is_refused():
    X, y = _data()
    res = _honest(X, y, exclude=[0])
    assert sparsecert.verify(res, X, y).ok
    doc = copy.deepcopy(res.certificate.to_dict())
    del doc["problem"]["exclude"]
    # the claim is false for the plain problem: the support {0, 1} is far below it
    assert _feasible_upper(X, y, [0, 1]) < res.lower_bound - 1.0
    assert BOUNDS & _refused(doc, res.certificate, X, y)
    # stated with another excluded feature, the incumbent's feature 1 breaks it
    doc["problem"]["exclude"] = [1]
    assert "incumbent_selection" in _refused(doc, res.certificate, X, y)


def test_a_forced_feature_removed_from_the_statement_is_refused():
    X, y = _data(1)
    res = _honest(X, y, k=1, always_select=[3])
    assert res.support == (3,)
    doc = copy.deepcopy(res.certificate.to_dict())
    del doc["problem"]["always_select"]
    assert _feasible_upper(X, y, [0]) < res.lower_bound - 1.0
    assert BOUNDS & _refused(doc, res.certificate, X, y)
    # forcing another feature in: the incumbent's support and it exceed k = 1
    doc["problem"]["always_select"] = [2]
    assert "incumbent_selection" in _refused(doc, res.certificate, X, y)


def test_an_upper_bound_loosened_or_tightened_in_the_statement_is_refused():
    X, y = _data(2)
    p = X.shape[1]
    res = _honest(X, y, coef_bounds=(None, 0.5))
    doc = copy.deepcopy(res.certificate.to_dict())
    assert doc["problem"]["coef_upper"] == [0.5] * p
    doc["problem"]["coef_upper"] = [None] * p  # no bounds at all (lower is null too)
    up = np.full(p, np.inf)
    assert _feasible_upper(X, y, [0, 1], lower=-up, upper=up) < res.lower_bound - 1.0
    assert BOUNDS & _refused(doc, res.certificate, X, y)
    doc["problem"]["coef_upper"] = [0.25] * p  # tighter than the incumbent's coefficients
    assert "incumbent_bounds" in _refused(doc, res.certificate, X, y)


def test_a_sign_constraint_dropped_from_the_statement_is_refused():
    X, y = _data(3)
    p = X.shape[1]
    res = _honest(X, y, positive=True)
    doc = copy.deepcopy(res.certificate.to_dict())
    assert doc["problem"]["coef_lower"] == [0.0] * p
    doc["problem"]["coef_lower"] = [None] * p
    up = np.full(p, np.inf)
    assert _feasible_upper(X, y, [0, 1], lower=-up, upper=up) < res.lower_bound - 1.0
    assert BOUNDS & _refused(doc, res.certificate, X, y)
    # the user who poses the sign constraint is told the certificate is of another problem
    rep = verify_certificate(doc, X, y, proof=res.certificate.proof_bytes(), positive=True)
    assert "parameters" in rep.failed_checks


def test_weights_replaced_in_the_statement_are_refused():
    X, y = _data(4)
    n = len(y)
    w = np.full(n, 3.0)
    res = _honest(X, y, sample_weight=w)
    doc = copy.deepcopy(res.certificate.to_dict())
    w2 = np.full(n, 0.5)  # the same optimal support, a sixth of the objective
    doc["problem"]["sample_weight_sha256"] = array_sha256(w2)
    assert _feasible_upper(X, y, list(res.support), w=w2) < res.lower_bound / 2
    assert BOUNDS & _refused(doc, res.certificate, X, y, sample_weight=w2)
    # the weights removed: the plain problem (all weights 1)
    del doc["problem"]["sample_weight_sha256"]
    assert BOUNDS & _refused(doc, res.certificate, X, y)
    # the honest statement with other weights given: the data is not the certified data
    assert "data_hash" in _refused(res.certificate.to_dict(), res.certificate, X, y,
                                   sample_weight=w2)


def test_offsets_replaced_in_the_statement_are_refused():
    X, y = _data(5)
    o = np.full(len(y), 4.0)  # no intercept: the offset costs about n * 16
    res = _honest(X, y, offset=o)
    doc = copy.deepcopy(res.certificate.to_dict())
    del doc["problem"]["offset_sha256"]
    assert _feasible_upper(X, y, [0, 1]) < res.lower_bound - 10.0
    assert BOUNDS & _refused(doc, res.certificate, X, y)
    o2 = np.full(len(y), -0.5)
    doc["problem"]["offset_sha256"] = array_sha256(o2)
    assert _feasible_upper(X, y, [0, 1], o=o2) < res.lower_bound - 10.0
    assert BOUNDS & _refused(doc, res.certificate, X, y, offset=o2)


@pytest.mark.parametrize("field,value", [
    ("always_select", [1, 1]), ("exclude", [3, 1]), ("always_select", [0, 1, 2]),
    ("coef_lower", [0.1, 0.0, 0.0, 0.0]), ("sample_weight_sha256", 3),
])
def test_malformed_extension_fields_are_refused(field, value):
    X, y = _data(6)
    res = _honest(X, y)
    doc = copy.deepcopy(res.certificate.to_dict())
    doc["problem"][field] = value
    if field == "coef_lower":
        doc["problem"]["coef_upper"] = [None] * 4
    rep = verify_certificate(doc, X, y, proof=res.certificate.proof_bytes())
    assert not rep.ok and "format" in rep.failed_checks, str(rep)


def test_overlapping_forced_and_excluded_features_are_malformed():
    X, y = _data(7)
    res = _honest(X, y)
    doc = copy.deepcopy(res.certificate.to_dict())
    doc["problem"]["always_select"] = [1]
    doc["problem"]["exclude"] = [1]
    rep = verify_certificate(doc, X, y, proof=res.certificate.proof_bytes())
    assert not rep.ok and "format" in rep.failed_checks, str(rep)
