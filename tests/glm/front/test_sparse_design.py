"""Sparse design matrices (scipy.sparse CSR / CSC): the canonical form and its hash, the compiled
sparse products, and the same answer and a verifying certificate as the dense equivalent
(against the dense path and the brute-force reference), through certify, certify_path and the
estimators; a tampered sparse X or sidecar is refused by the standalone verifier."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from _bruteforce import brute_force

import sparsecert
from sparsecert.certificate.verify import _main as verify_main
from sparsecert.certificate.verify import _sparse_input, array_sha256, verify_certificate
from sparsecert.certificate.verify import csc_sha256 as verifier_csc_sha256
from sparsecert.solvers.perspective._linalg import (
    design_sq_norms,
    rmatvec_sq,
    sparse_design,
    sub_design,
    xb,
    xtz,
)
from sparsecert.sparse import as_sparse_design

LAM = 0.1


def _data(loss: str, n: int = 40, p: int = 8, density: float = 0.35, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, random_state=seed, format="csr",
                  data_rvs=lambda m: rng.choice([-2.0, -1.0, 0.5, 1.0, 3.0], size=m))
    b = np.zeros(p)
    b[[1, 3, p - 2]] = [1.0, -1.5, 0.8]
    u = X @ b
    if loss == "squared":
        y = u + 0.3 * rng.standard_normal(n)
    elif loss == "logistic":
        y = np.where(u + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    else:  # poisson
        y = rng.poisson(np.exp(0.4 * u)).astype(float)
    return X, y


# ------------------------------------------------------------------------------ canonical form


def test_canonical_form_and_hash_do_not_depend_on_the_representation():
    X, _ = _data("squared")
    ref = as_sparse_design(X)
    coo = X.tocoo()
    shuffled = sp.csc_matrix(X)
    order = np.random.default_rng(1).permutation  # unsorted rows within each column
    for j in range(shuffled.shape[1]):
        a, b = shuffled.indptr[j], shuffled.indptr[j + 1]
        perm = order(b - a) + a
        shuffled.indices[a:b] = shuffled.indices[perm].copy()
        shuffled.data[a:b] = shuffled.data[perm].copy()
    shuffled.has_sorted_indices = False
    with_zero = X.copy()
    with_zero.data[0] = 0.0  # an explicit zero: the matrix without that entry
    without = sp.csr_matrix(with_zero.toarray())
    for other in (X.tocsc(), coo, shuffled, sp.csr_matrix(X, dtype=np.float32).astype(np.float64),
                  sp.csr_array(X)):
        d = as_sparse_design(other)
        assert d.sha256() == ref.sha256()
        np.testing.assert_array_equal(d.toarray(), X.toarray())
    assert as_sparse_design(with_zero).sha256() == as_sparse_design(without).sha256()
    assert as_sparse_design(with_zero).nnz == X.nnz - 1
    # the verifier's own code gives the same hash (from the arrays, and from the dense matrix)
    assert verifier_csc_sha256(_sparse_input(X)) == ref.sha256()
    assert ref.sha256() != array_sha256(X.toarray())  # (a dense X keeps the dense hash)


@pytest.mark.parametrize("bad, message", [
    (lambda X: sp.csr_matrix((np.r_[np.nan, X.data[1:]], X.indices, X.indptr), X.shape),
     "NaN or infinite"),
    (lambda X: sp.coo_matrix(([1.0, 2.0], ([0, 0], [1, 1])), shape=(3, 3)), "twice"),
    (lambda X: sp.csr_matrix(np.array([[2 ** 53 + 1, 0], [0, 1]], dtype=np.int64)),
     "not exactly a float64"),
    (lambda X: sp.csr_matrix((0, 3)), "at least one sample"),
])
def test_bad_sparse_input_is_one_line(bad, message):
    X, y = _data("squared")
    Xb = bad(X)
    with pytest.raises((ValueError, TypeError), match=message) as exc:
        sparsecert.certify(Xb, np.zeros(Xb.shape[0]), k=1, lambda2=LAM, verbose=False)
    assert "\n" not in str(exc.value)


# ------------------------------------------------------------------------------ kernels


@pytest.mark.parametrize("centred", [False, True])
def test_sparse_products_equal_the_dense_ones(centred):
    X, _ = _data("squared", n=30, p=9)
    d = as_sparse_design(X)
    dense = X.toarray()
    m = dense.mean(axis=0) if centred else None
    D = sparse_design(d, m)
    Xc = dense - (m if centred else 0.0)
    rng = np.random.default_rng(3)
    b = rng.standard_normal(9) * (rng.random(9) < 0.5)
    z = rng.standard_normal(30)
    np.testing.assert_allclose(xb(D, b), Xc @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(xtz(D, z), Xc.T @ z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(design_sq_norms(D), (Xc * Xc).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(rmatvec_sq(D, z), (Xc * Xc).T @ z, rtol=1e-10, atol=1e-12)
    cols = np.array([1, 4, 8])
    Dc = sub_design(D, cols)
    np.testing.assert_allclose(xtz(Dc, z), Xc[:, cols].T @ z, rtol=1e-12, atol=1e-12)


def test_row_subset_and_scaling_of_a_sparse_design():
    X, _ = _data("squared", n=20, p=5)
    d = as_sparse_design(X)
    rows = np.array([0, 3, 4, 11, 19])
    np.testing.assert_array_equal(d.take_rows(rows).toarray(), X.toarray()[rows])
    s = np.linspace(0.5, 2.0, 20)
    np.testing.assert_allclose(d.scale_rows(s).toarray(), s[:, None] * X.toarray())


# ------------------------------------------------------------------------------ certify


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_certify_sparse_equals_dense_and_brute_force(loss, fit_intercept, tmp_path):
    X, y = _data(loss)
    k = 3
    rs = sparsecert.certify(X, y, k=k, lambda2=LAM, loss=loss, fit_intercept=fit_intercept,
                            verbose=False)
    rd = sparsecert.certify(X.toarray(), y, k=k, lambda2=LAM, loss=loss,
                            fit_intercept=fit_intercept, verbose=False)
    assert rs.status == rd.status == "optimal"
    np.testing.assert_array_equal(np.flatnonzero(rs.coef), np.flatnonzero(rd.coef))
    assert rs.objective == pytest.approx(rd.objective, rel=1e-7)
    if loss == "squared":  # (the other losses' brute force is slow: one small case below)
        best = brute_force(X.toarray(), y, k, loss, LAM, fit_intercept=fit_intercept)
        assert rs.objective == pytest.approx(best[0], rel=1e-6)
    path = tmp_path / "c.json"
    rs.save(path)
    doc = json.loads(path.read_text())
    assert doc["problem"]["X_format"] == "csc"
    for X_given in (X, X.tocsc(), X.toarray()):  # sparse or dense: the same matrix
        rep = verify_certificate(path, X_given, y)
        assert rep.ok, rep.failures


@pytest.mark.parametrize("loss", ["logistic", "poisson"])
def test_certify_sparse_equals_brute_force_tiny(loss):
    X, y = _data(loss, n=20, p=5, density=0.5, seed=2)
    res = sparsecert.certify(X, y, k=2, lambda2=LAM, loss=loss, verbose=False)
    best = brute_force(X.toarray(), y, 2, loss, LAM, fit_intercept=True)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(best[0], rel=1e-6)
    assert verify_certificate(res.certificate, X, y).ok


def test_tampered_sparse_data_or_sidecar_is_refused(tmp_path):
    X, y = _data("logistic")
    res = sparsecert.certify(X, y, k=3, lambda2=LAM, loss="logistic", verbose=False)
    path = tmp_path / "c.json"
    res.save(path)
    assert verify_certificate(path, X, y).ok
    X2 = X.copy()
    X2.data[5] *= 1.0 + 2.0 ** -40  # one entry, one ulp-scale change
    rep = verify_certificate(path, X2, y)
    assert not rep.ok and "data_hash" in rep.failed_checks
    X3 = X.tolil()
    X3[0, 0] = 1e-300 if X[0, 0] == 0 else 0.0  # one entry more or less
    assert "data_hash" in verify_certificate(path, X3.tocsr(), y).failed_checks
    # the proof file changed (one byte), or the model changed in the document: refused
    proof = tmp_path / "c.proof"
    raw = bytearray(proof.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    proof.write_bytes(bytes(raw))
    rep = verify_certificate(path, X, y)
    assert not rep.ok and rep.exit_code in (1, 2)
    res.save(tmp_path / "d.json")
    doc = json.loads((tmp_path / "d.json").read_text())
    coef = doc["incumbent"]["coef"]
    j = next(i for i, v in enumerate(coef) if v)
    coef[j] *= 1.5
    (tmp_path / "d.json").write_text(json.dumps(doc))
    rep = verify_certificate(tmp_path / "d.json", X, y)
    assert not rep.ok and rep.exit_code == 1


def test_verifier_cli_reads_a_sparse_X_as_index_value_arrays(tmp_path, capsys):
    X, y = _data("squared")
    res = sparsecert.certify(X, y, k=3, lambda2=LAM, verbose=False)
    res.save(tmp_path / "c.json")
    d = as_sparse_design(X)
    np.savez(tmp_path / "data.npz", X_indptr=d.indptr, X_indices=d.indices, X_data=d.data,
             X_shape=np.array(d.shape), y=y)
    assert verify_main([str(tmp_path / "c.json"), str(tmp_path / "data.npz")]) == 0
    np.savez(tmp_path / "csr.npz", X_indptr=X.indptr, X_indices=X.indices, X_data=X.data,
             X_shape=np.array(X.shape), X_format=np.array("csr"), y=y)
    assert verify_main([str(tmp_path / "c.json"), str(tmp_path / "csr.npz")]) == 0
    bad = d.data.copy()
    bad[0] += 1.0
    np.savez(tmp_path / "bad.npz", X_indptr=d.indptr, X_indices=d.indices, X_data=bad,
             X_shape=np.array(d.shape), y=y)
    assert verify_main([str(tmp_path / "c.json"), str(tmp_path / "bad.npz")]) == 1
    capsys.readouterr()


def test_certify_path_and_estimators_take_sparse_X():
    X, y = _data("squared")
    ps = sparsecert.certify_path(X, y, ks=[1, 2, 3], lambda2=LAM, verbose=False)
    pd = sparsecert.certify_path(X.toarray(), y, ks=[1, 2, 3], lambda2=LAM, verbose=False)
    assert ps.statuses == pd.statuses == ["optimal"] * 3
    np.testing.assert_allclose(ps.objectives, pd.objectives, rtol=1e-7)
    assert ps.supports == pd.supports
    es = sparsecert.KSparseLinearRegression(k=3, lambda2=LAM).fit(X, y)
    ed = sparsecert.KSparseLinearRegression(k=3, lambda2=LAM).fit(X.toarray(), y)
    np.testing.assert_array_equal(np.flatnonzero(es.coef_), np.flatnonzero(ed.coef_))
    np.testing.assert_allclose(es.coef_, ed.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(es.predict(X), ed.predict(X.toarray()), rtol=1e-6, atol=1e-9)
    assert es.verify_certificate(X, y).ok
    Xl, yl = _data("logistic")
    clf = sparsecert.KSparseLogisticRegression(k=2, lambda2=LAM).fit(Xl.tocsc(), yl)
    ref = sparsecert.KSparseLogisticRegression(k=2, lambda2=LAM).fit(Xl.toarray(), yl)
    np.testing.assert_array_equal(clf.predict(Xl), ref.predict(Xl.toarray()))


def test_sample_weights_with_a_sparse_X():
    X, y = _data("logistic")
    w = np.random.default_rng(4).integers(0, 3, size=y.size).astype(float)
    rs = sparsecert.certify(X, y, k=2, lambda2=LAM, loss="logistic", sample_weight=w,
                            verbose=False)
    rd = sparsecert.certify(X.toarray(), y, k=2, lambda2=LAM, loss="logistic",
                            sample_weight=w, verbose=False)
    assert rs.status == rd.status == "optimal"
    assert rs.objective == pytest.approx(rd.objective, rel=1e-7)
    assert verify_certificate(rs.certificate, X, y, sample_weight=w).ok
    Xs, ys = _data("squared")
    ws = np.linspace(0.5, 2.0, ys.size)
    r1 = sparsecert.certify(Xs, ys, k=2, lambda2=LAM, sample_weight=ws, fit_intercept=False,
                            verbose=False)
    r2 = sparsecert.certify(Xs.toarray(), ys, k=2, lambda2=LAM, sample_weight=ws,
                            fit_intercept=False, verbose=False)
    assert r1.objective == pytest.approx(r2.objective, rel=1e-7)
    with pytest.raises(ValueError, match="sample_weight with a sparse X and an intercept"):
        sparsecert.certify(Xs, ys, k=2, lambda2=LAM, sample_weight=ws, verbose=False)


def test_a_positive_eig_shift_is_refused_with_a_sparse_X():
    X, y = _data("squared")
    with pytest.raises(ValueError, match="needs a dense X"):
        sparsecert.certify(X, y, k=2, lambda2=LAM, eig_shift=0.5, verbose=False)


def test_command_line_certifies_a_sparse_X_from_its_npz_arrays(tmp_path, capsys):
    from sparsecert.cli.main import main

    X, y = _data("squared")
    data = tmp_path / "d.npz"
    np.savez(data, X_indptr=X.indptr, X_indices=X.indices, X_data=X.data,
             X_shape=np.array(X.shape), X_format=np.array("csr"), y=y)
    out = tmp_path / "c.json"
    assert main(["certify", "--data", str(data), "--k", "3", "--lambda2", str(LAM), "--out",
                 str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["problem"]["X_format"] == "csc"
    assert verify_certificate(out, X.toarray(), y).ok
    np.savez(tmp_path / "bad.npz", X_indptr=X.indptr, X_indices=X.indices, X_data=X.data,
             X_shape=np.array(X.shape), X_format=np.array("coo"), y=y)
    capsys.readouterr()
    assert main(["certify", "--data", str(tmp_path / "bad.npz"), "--k", "3", "--lambda2",
                 "0.1", "--out", str(tmp_path / "b.json")]) == 2
    assert "X_format" in capsys.readouterr().err
