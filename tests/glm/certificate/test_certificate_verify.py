"""The standalone verifier on genuine enumeration certificates and on every kind of tampering."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from _certgen import (
    TNode,
    brute_force_optimum,
    enumeration_certificate,
    forge,
    make_data,
    raw_proof,
    records_of,
    reforge,
    rehashed,
    with_records,
    write_files,
)

from sparsecert.certificate import Certificate, verify_certificate

K, LAM = 3, 0.5


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def sq():
    """Squared loss, no intercept, dual witnesses."""
    X, y = make_data("squared", n=30, p=6, seed=0)
    cert, info = enumeration_certificate(X, y, "squared", K, LAM)
    return X, y, cert, info


@pytest.fixture(scope="module")
def sq_shift():
    """Squared loss with an intercept and a proven eigenvalue shift: shifted witnesses."""
    X, y = make_data("squared", n=30, p=6, seed=0)
    Xc = X - X.mean(0)
    mu = 0.5 * np.linalg.eigvalsh(Xc.T @ Xc)[0]
    cert, info = enumeration_certificate(X, y, "squared", K, LAM, fit_intercept=True,
                                         witness="shifted", eig_shift=mu)
    return X, y, cert, info


@pytest.fixture(scope="module")
def logi_icpt():
    """Logistic loss with intercept, raw labels {0, 1}, dual witnesses with exact zero sum."""
    X, y = make_data("logistic", n=40, p=5, seed=2, labels=(0.0, 1.0))
    cert, info = enumeration_certificate(X, y, "logistic", 2, 0.3, fit_intercept=True)
    return X, y, cert, info


def _edit(cert: Certificate):
    """A forger's copy: the document, the tree and its nodes in preorder."""
    doc, root = forge(cert)
    return doc, root, root.preorder()


def _write(tmp_path, cert: Certificate, name="cert"):
    return write_files(tmp_path, cert, name)


def _with_doc(cert: Certificate, doc: dict) -> Certificate:
    """The certificate's proof file under another document (the proof unchanged)."""
    return Certificate(doc, cert.proof_bytes())


def _failed(rep):
    return set(rep.failed_checks)


# ------------------------------------------------------------------------------ genuine


@pytest.mark.parametrize(
    "loss, fit_intercept, witness, M, labels",
    [
        ("squared", False, "dual", None, None),
        ("squared", True, "dual", None, None),
        ("squared", True, "shifted", None, None),
        ("squared", False, "shifted", 0.4, None),
        ("squared", False, "dual", 0.4, None),
        ("squared", True, "dual", 0.4, None),
        ("logistic", False, "dual", None, None),
        ("logistic", True, "dual", None, (0.0, 1.0)),
        ("squared_hinge", False, "dual", None, (1.0, 2.0)),
        ("squared_hinge", True, "dual", None, (-1.0, 1.0)),
        ("poisson", False, "dual", None, None),
        ("poisson", True, "dual", None, None),
    ],
)
def test_genuine_certificate_verifies_and_matches_brute_force(
    tmp_path, loss, fit_intercept, witness, M, labels
):
    X, y = make_data(loss, n=25, p=6, seed=1, labels=labels or (-1.0, 1.0))
    mu = 0.0
    if witness == "shifted":
        Xd = X - X.mean(0) if fit_intercept else X
        mu = 0.5 * np.linalg.eigvalsh(Xd.T @ Xd)[0]
    cert, info = enumeration_certificate(X, y, loss, K, 0.7, M=M, fit_intercept=fit_intercept,
                                         witness=witness, eig_shift=mu)
    path = tmp_path / "c.json"
    cert.save(path)
    rep = verify_certificate(path, X, y)
    assert rep.ok, str(rep)
    assert rep.exit_code == 0
    ref = brute_force_optimum(X, y, loss, K, 0.7, M=M, fit_intercept=fit_intercept)
    assert rep.certified_lower_bound <= ref + 1e-9 * max(1.0, abs(ref))
    assert rep.certified_lower_bound == pytest.approx(ref, rel=1e-7)
    assert cert.upper_bound == pytest.approx(ref, rel=1e-7)
    if M is not None:  # the box is active at the optimum, otherwise the case tests nothing
        assert np.abs(info["coef"]).max() == pytest.approx(M)


def test_eigen_shift_certificate_verifies(sq_shift):
    X, y, cert, _ = sq_shift
    rep = verify_certificate(cert, X, y)
    assert rep.ok, str(rep)
    assert "proven positive definite" in dict((n, m) for n, _, m in rep.checks)["eig_shift"]
    ref = brute_force_optimum(X, y, "squared", K, LAM, fit_intercept=True)
    assert rep.certified_lower_bound == pytest.approx(ref, rel=1e-7)


def test_in_memory_dict_and_path_agree(tmp_path, sq):
    X, y, cert, _ = sq
    path = tmp_path / "c.json"
    cert.save(path)
    r_obj = verify_certificate(cert, X, y)
    r_path = verify_certificate(path, X, y)
    r_dict = verify_certificate(json.loads(path.read_text()), X, y,
                                proof=tmp_path / "c.proof")
    r_bytes = verify_certificate(json.loads(path.read_text()), X, y, proof=cert.proof_bytes())
    r_loaded = verify_certificate(Certificate.load(path), X, y)
    for r in (r_obj, r_path, r_dict, r_bytes, r_loaded):
        assert r.ok, str(r)
        assert r.certified_lower_bound == r_obj.certified_lower_bound
        assert r.checks == r_obj.checks or [c[0] for c in r.checks] == [c[0] for c in r_obj.checks]
    assert verify_certificate(json.loads(path.read_text()), X, y).exit_code == 2  # no proof


def test_report_text_and_exit_codes(sq):
    X, y, cert, _ = sq
    rep = verify_certificate(cert, X, y)
    text = str(rep)
    assert "VERIFIED" in text and "safe lower bound" in text and "leaf_bounds" in text
    assert "k=3 (certificate)" in text and "rel_gap=0.0001 (user)" in text
    assert rep.gap_within_tolerance and rep.rel_gap_tolerance == 1e-4
    assert rep.relative_gap <= 1e-8
    assert verify_certificate(cert, X, y, rel_gap=0.0).exit_code == 3  # claims leave a slack
    assert verify_certificate(cert, X, y, rel_gap=1e-8).exit_code == 0


# ------------------------------------------------------------------------------ tampering


def test_changed_dual_entry_without_rehash_fails_the_proof_hash(tmp_path, sq):
    X, y, cert, info = sq
    doc, root, nodes = _edit(cert)
    nodes[info["best_leaf"]].witness[1][0] += 0.3
    rep = verify_certificate(_write(tmp_path, reforge(doc, root, rehash=False)), X, y)
    assert _failed(rep) == {"proof"} and "SHA-256" in rep.failures[0][1]
    assert rep.exit_code == 1


def test_changed_dual_entry_with_rehash_fails_leaf_bound(tmp_path, sq):
    X, y, cert, info = sq
    doc, root, nodes = _edit(cert)
    nodes[info["best_leaf"]].witness[1][0] += 0.3
    rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert _failed(rep) == {"leaf_bounds"}
    assert f"leaf {info['best_leaf']} (" in dict(rep.failures)["leaf_bounds"]


def test_changed_shifted_entry_with_rehash_fails_leaf_bound(tmp_path, sq_shift):
    X, y, cert, info = sq_shift
    doc, root, nodes = _edit(cert)
    b = nodes[info["best_leaf"]].witness[1]
    b[np.flatnonzero(b)[0]] += 0.3
    rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert _failed(rep) == {"leaf_bounds"}
    assert f"leaf {info['best_leaf']} (" in dict(rep.failures)["leaf_bounds"]


def test_dual_entry_outside_domain_fails_witness_check(tmp_path):
    X, y = make_data("logistic", n=30, p=5, seed=3)
    cert, info = enumeration_certificate(X, y, "logistic", 2, 0.3)
    doc, root, nodes = _edit(cert)
    nodes[info["best_leaf"]].witness[1][0] = 2.0 * y[0]  # t = -y z = -2: outside [0, 1]
    rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert _failed(rep) == {"leaf_witnesses"}
    assert "outside the domain" in dict(rep.failures)["leaf_witnesses"]
    assert f"(node {info['best_leaf']})" in dict(rep.failures)["leaf_witnesses"]


def test_dual_without_exact_zero_sum_fails_with_intercept(tmp_path, logi_icpt):
    X, y, cert, info = logi_icpt
    assert verify_certificate(cert, X, y).ok
    doc, root, nodes = _edit(cert)
    z = nodes[info["best_leaf"]].witness[1]
    z *= 1.0 + 1e-15 * np.arange(z.size)
    rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert "leaf_witnesses" in _failed(rep)
    assert "fsum" in dict(rep.failures)["leaf_witnesses"]


def test_shifted_witness_rejected_without_squared_loss_or_shift(tmp_path, sq_shift, logi_icpt):
    X, y, cert, _ = sq_shift
    doc = cert.to_dict()
    doc["relaxation"]["eig_shift"] = 0.0
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert "leaf_witnesses" in _failed(rep)
    assert "proven eigenvalue shift" in dict(rep.failures)["leaf_witnesses"]
    X, y, cert, _ = logi_icpt
    p = X.shape[1]
    nodes = [dict(id=0, parent=None, branch_var=None, branch_value=None, status="open",
                  witness=("shifted", np.ones(p)))]
    bad = Certificate.build(X, y, problem=cert.problem, incumbent=dict(
        coef=np.zeros(p), intercept=0.0, objective=50.0), bounds=dict(
        lower_bound=-1e9, upper_bound=50.0, status="time_limit"), nodes=nodes, eig_shift=1e-3)
    rep = verify_certificate(bad, X, y)
    assert {"eig_shift", "leaf_witnesses"} <= _failed(rep)


def test_a_dropped_record_fails_tree_structure(tmp_path, sq):
    """The last leaf's record removed and the header's count lowered to match: the root's
    subtree no longer adds up."""
    X, y, cert, _ = sq
    proof = cert.proof_bytes()
    recs = records_of(proof)[:-1]
    n, p = X.shape
    rows = _dual_rows(proof)
    bad = raw_proof(n, p, [tuple(r) for r in recs], duals=rows)
    rep = verify_certificate(rehashed(cert.to_dict(), bad), X, y)
    assert _failed(rep) == {"tree_structure"}, str(rep)
    assert "not a tree in preorder" in dict(rep.failures)["tree_structure"]


def _dual_rows(proof: bytes) -> np.ndarray:
    import struct

    n_nodes, n_dual = struct.unpack_from("<QQ", proof, 16)
    n = struct.unpack_from("<Q", proof, 48)[0]
    return np.frombuffer(proof, dtype="<f8", count=n * n_dual,
                         offset=64 + 16 * n_nodes).reshape(-1, n)


def test_a_root_alone_without_witness_fails_witness(tmp_path, sq):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    alone = reforge(doc, TNode(status="pruned"))
    rep = verify_certificate(alone, X, y)
    assert _failed(rep) == {"leaf_witnesses"}
    assert "no witness" in dict(rep.failures)["leaf_witnesses"]
    # no more witness slots than the tree has nodes (the format's cost bound): refused unread
    n, p = X.shape
    bad = raw_proof(n, p, [(1, 0, 0, 0)], duals=_dual_rows(cert.proof_bytes())[:2])
    rep = verify_certificate(rehashed(doc, bad), X, y)
    assert rep.exit_code == 2 and "more than one per node" in rep.error_line, str(rep)


def test_a_subtree_size_that_lies_fails_tree_structure(sq):
    X, y, cert, _ = sq
    proof = cert.proof_bytes()
    for delta in (-1, 1, 10 ** 6):
        recs = records_of(proof)
        recs[0, 3] = max(0, int(recs[0, 3]) + delta)
        rep = verify_certificate(rehashed(cert.to_dict(), with_records(proof, recs)), X, y)
        assert "tree_structure" in _failed(rep) or "leaf_bounds" in _failed(rep), str(rep)
        assert not rep.ok


def test_branching_on_a_variable_a_branching_above_fixed_fails(sq):
    X, y, cert, _ = sq
    doc, root, nodes = _edit(cert)
    inner = next(nd for nd in nodes[1:] if nd.kids)
    inner.var = root.var  # var already fixed by the root's branching
    rep = verify_certificate(reforge(doc, root), X, y)
    assert _failed(rep) == {"tree_fixings"}
    assert "a branching above it already fixed" in dict(rep.failures)["tree_fixings"]


def test_edited_lower_bound_fails(tmp_path, sq):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    bd = doc["bounds"]
    bd["lower_bound"] += 1.0  # forger keeps the informational gap fields consistent
    bd["absolute_gap"] = bd["upper_bound"] - bd["lower_bound"]
    bd["relative_gap"] = bd["absolute_gap"] / max(1.0, abs(bd["upper_bound"]))
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert {"leaf_bounds", "bounds_order", "status"} >= _failed(rep) >= {"leaf_bounds"}
    # the smallest forgery: the claim raised by one ulp above the verifier's own bound
    good = verify_certificate(cert, X, y).certified_lower_bound
    doc2 = cert.to_dict()
    doc2["bounds"]["lower_bound"] = float(np.nextafter(good, np.inf))
    rep2 = verify_certificate(_write(tmp_path, _with_doc(cert, doc2), name="c2"), X, y)
    assert _failed(rep2) == {"leaf_bounds"}
    doc2["bounds"]["lower_bound"] = good
    assert verify_certificate(_write(tmp_path, _with_doc(cert, doc2), name="c3"), X, y).ok


def test_edited_coefficient_fails_objective(tmp_path, sq):
    X, y, cert, info = sq
    doc = cert.to_dict()
    j = doc["incumbent"]["support"][0]
    doc["incumbent"]["coef"][j] *= 1.001
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert _failed(rep) == {"incumbent_objective"}


def test_added_coefficient_fails_support_and_sparsity(tmp_path, sq):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    j = next(j for j in range(6) if j not in doc["incumbent"]["support"])
    doc["incumbent"]["coef"][j] = 1e-3
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert {"incumbent_sparsity", "incumbent_support"} <= _failed(rep)


def test_coefficient_outside_box_fails(tmp_path):
    X, y = make_data("squared", n=25, p=5, seed=1)
    cert, _ = enumeration_certificate(X, y, "squared", 2, LAM, M=0.4)
    doc = cert.to_dict()
    doc["problem"]["max_abs_coef"] = 0.3
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert "incumbent_box" in _failed(rep)


@pytest.mark.parametrize("which", ["X", "y"])
def test_changed_data_value_fails_hash_naming_the_array(sq, which):
    X, y, cert, _ = sq
    X2, y2 = X.copy(), y.copy()
    (X2 if which == "X" else y2).flat[3] += 1e-12
    rep = verify_certificate(cert, X2, y2)
    assert _failed(rep) == {"data_hash"}
    assert f"SHA-256 of {which} differs" in dict(rep.failures)["data_hash"]


def test_wrong_data_shape_fails(sq):
    X, y, cert, _ = sq
    rep = verify_certificate(cert, X[:, :5], y)
    assert _failed(rep) == {"data_shape"} and rep.exit_code == 1


def test_edited_k_fails(tmp_path, sq):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    doc["problem"]["k"] = K - 1  # the leaves with K variables in are empty regions now
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert _failed(rep) == {"incumbent_sparsity"}
    doc = cert.to_dict()
    doc["problem"]["k"] = K + 1  # leaves with budget 0 now have budget 1: their bounds drop
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc), name="c2"), X, y)
    assert _failed(rep) == {"leaf_bounds"}


def test_edited_lambda2_fails(tmp_path, sq):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    doc["problem"]["lambda2"] = LAM * 1.01
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert "incumbent_objective" in _failed(rep)


def test_edited_upper_bound_fails(tmp_path, sq):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    doc["bounds"]["upper_bound"] -= 0.5
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert {"incumbent_objective", "bounds_order", "status"} >= _failed(rep) >= {
        "incumbent_objective"}
    # one ulp below what the verifier proves about the incumbent is already refused
    proven = verify_certificate(cert, X, y).objective_upper
    doc = cert.to_dict()
    doc["bounds"]["upper_bound"] = float(np.nextafter(proven, -np.inf))
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc), name="c2"), X, y)
    assert "incumbent_objective" in _failed(rep)


def test_optimal_status_with_large_gap_fails(tmp_path, sq):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    bd = doc["bounds"]
    bd["lower_bound"] -= 10.0  # an honest but weak bound
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert _failed(rep) == {"status"}
    bd["status"] = "time_limit"
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc), name="c2"), X, y)
    assert rep.ok and not rep.gap_within_tolerance and rep.exit_code == 3
    assert verify_certificate(tmp_path / "c2.json", X, y, rel_gap=1.0).exit_code == 0


def test_own_tolerance_never_replaces_the_users(tmp_path, sq):
    """A certificate with its own tolerance 1e9 and a lower bound of -1e6 is valid, but it is
    not verified as optimal: the default tolerance is 1e-4, the user's."""
    X, y, cert, _ = sq
    doc = cert.to_dict()
    doc["bounds"].update(lower_bound=-1e6, rel_gap_tolerance=1e9, status="optimal")
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert rep.ok and rep.exit_code == 3 and not rep.gap_within_tolerance
    assert rep.rel_gap_tolerance == 1e-4 and rep.relative_gap > 1e3


def test_too_large_eigen_shift_fails(tmp_path, sq_shift):
    X, y, cert, _ = sq_shift
    doc = cert.to_dict()
    Xc = X - X.mean(0)
    doc["relaxation"]["eig_shift"] = np.linalg.eigvalsh(Xc.T @ Xc)[0] * (1 + 1e-12)
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert {"eig_shift", "leaf_witnesses"} == _failed(rep)
    assert "not proven positive definite" in dict(rep.failures)["eig_shift"]


def test_labels_follow_the_data_rule(tmp_path):
    """The coding of labels comes from the data (smaller -> -1), never from the certificate:
    a model certified for the reversed coding (negated coefficients) is refused."""
    X, y = make_data("logistic", n=30, p=5, seed=4, labels=(0.0, 1.0))
    good, _ = enumeration_certificate(X, y, "logistic", 2, 0.3)
    assert verify_certificate(good, X, y).ok
    forged, _ = enumeration_certificate(X, 1.0 - y, "logistic", 2, 0.3)  # coded [1, 0]
    doc = forged.to_dict()
    doc["problem"]["y_sha256"] = good.problem["y_sha256"]  # re-bound to the true labels
    doc["problem"]["labels"] = [1.0, 0.0]  # a v1-style field: ignored
    rep = verify_certificate(_write(tmp_path, _with_doc(forged, doc)), X, y)
    assert not rep.ok and {"incumbent_objective", "leaf_bounds"} & _failed(rep)
    y3 = y.copy()
    y3[0] = 2.0  # three label values: no coding exists
    bad, _ = enumeration_certificate(X, y, "logistic", 2, 0.3)
    doc = bad.to_dict()
    from sparsecert.certificate.schema import array_sha256

    doc["problem"]["y_sha256"] = array_sha256(y3)
    rep = verify_certificate(_write(tmp_path, _with_doc(bad, doc), name="c3"), X, y3)
    assert _failed(rep) == {"labels"} and "two distinct" in dict(rep.failures)["labels"]


# ------------------------------------------------------------------------------ malformed


def test_missing_proof_file_is_an_input_error(tmp_path, sq):
    X, y, cert, _ = sq
    path = tmp_path / "c.json"
    cert.save(path)
    (tmp_path / "c.proof").unlink()
    rep = verify_certificate(path, X, y)
    assert _failed(rep) == {"proof"} and "cannot be read" in rep.failures[0][1]
    assert rep.exit_code == 2


def test_garbage_proof_with_matching_hash_is_an_input_error(tmp_path, sq):
    X, y, cert, _ = sq
    garbage = b"not a proof file" * 8
    rep = verify_certificate(rehashed(cert.to_dict(), garbage), X, y)
    assert _failed(rep) == {"proof"} and "magic" in rep.failures[0][1]
    assert rep.exit_code == 2


def test_truncated_proof_file_fails(tmp_path, sq):
    """A proof file cut short: its size is not the one the certificate records (a failed check,
    exit 1); re-recorded, its header no longer matches its size (an input error)."""
    X, y, cert, _ = sq
    proof = cert.proof_bytes()[:-8]
    rep = verify_certificate(cert.to_dict(), X, y, proof=proof)
    assert _failed(rep) == {"proof"} and rep.exit_code == 1
    assert "truncated" in rep.failures[0][1]
    rep = verify_certificate(rehashed(cert.to_dict(), proof), X, y)
    assert rep.exit_code == 2 and "header" in rep.error_line


def test_witness_slot_out_of_range_fails_tree_structure(sq):
    X, y, cert, info = sq
    proof = cert.proof_bytes()
    recs = records_of(proof)
    recs[info["best_leaf"], 2] = 10_000
    rep = verify_certificate(rehashed(cert.to_dict(), with_records(proof, recs)), X, y)
    assert _failed(rep) == {"tree_structure"} and "out of range" in rep.failures[0][1]
    assert f"node {info['best_leaf']}:" in rep.failures[0][1]


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda d: d.update(format="something-else"), "format is"),
        (lambda d: d.update(format_version=99), "not supported"),
        (lambda d: d.update(format_version=1), "format version 1 is not supported"),
        (lambda d: d["bounds"].pop("status"), "missing field bounds.status"),
        (lambda d: d["problem"].update(k="3"), "problem.k must be an integer"),
        (lambda d: d["problem"].update(k=10 ** 400), "out of range"),
        (lambda d: d["problem"].update(lambda2=10 ** 400), "overflows"),
        (lambda d: d["problem"].update(lambda2=2 ** 60 + 1), "not exactly representable"),
        (lambda d: d["problem"].update(loss="hinge"), "problem.loss"),
        (lambda d: d["incumbent"]["coef"].pop(), "incumbent.coef"),
        (lambda d: d.update(format_version=2), "format version 2 is not supported"),
        (lambda d: d.pop("proof"), "missing field certificate.proof"),
        (lambda d: d["proof"].update(bytes="12"), "proof.bytes must be an integer"),
        (lambda d: d["proof"].update(bytes=12), "less than a proof file's header"),
        (lambda d: d["proof"].pop("sha256"), "missing field proof.sha256"),
        (lambda d: d["problem"].update(n_features=2 ** 33), "more than the format's"),
    ],
)
def test_malformed_json_is_an_input_error(tmp_path, sq, edit, needle):
    X, y, cert, _ = sq
    doc = cert.to_dict()
    edit(doc)
    rep = verify_certificate(_write(tmp_path, _with_doc(cert, doc)), X, y)
    assert _failed(rep) == {"format"} and needle in rep.failures[0][1], str(rep)
    assert rep.exit_code == 2 and rep.input_error and needle in rep.error_line


def test_non_json_and_nan_are_input_errors(tmp_path, sq):
    X, y, cert, _ = sq
    cert.save(tmp_path / "c.json")
    text = (tmp_path / "c.json").read_text()
    (tmp_path / "c.json").write_text(text[: len(text) // 2])
    rep = verify_certificate(tmp_path / "c.json", X, y)
    assert rep.failed_checks == ["format"] and rep.exit_code == 2
    doc = json.loads(text)
    doc["bounds"]["lower_bound"] = float("nan")
    (tmp_path / "c.json").write_text(json.dumps(doc))  # json.dumps writes NaN by default
    rep = verify_certificate(tmp_path / "c.json", X, y)
    assert rep.failed_checks == ["format"] and "NaN" in rep.failures[0][1]
    assert rep.exit_code == 2


def test_unreadable_certificate_and_bad_arguments_raise(tmp_path, sq):
    X, y, cert, _ = sq
    with pytest.raises(OSError):
        verify_certificate(tmp_path / "missing.json", X, y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        verify_certificate(cert, Xn, y)
    with pytest.raises(TypeError):
        verify_certificate(42, X, y)
    with pytest.raises(ValueError, match="rel_gap"):
        verify_certificate(cert, X, y, rel_gap=-1.0)
    with pytest.raises(ValueError, match="lambda2"):
        verify_certificate(cert, X, y, lambda2=0.0)
    with pytest.raises(ValueError, match="loss"):
        verify_certificate(cert, X, y, loss="hinge")


def test_user_parameters_are_checked_and_reported(sq):
    X, y, cert, _ = sq
    rep = verify_certificate(cert, X, y, loss="squared", k=K, lambda2=LAM, max_abs_coef=None,
                             fit_intercept=False)
    assert rep.ok and all(src == "user" for _, src in rep.parameters.values())
    rep = verify_certificate(cert, X, y, max_abs_coef=float("inf"))
    assert rep.ok and rep.parameters["max_abs_coef"] == (None, "user")
    with pytest.raises(ValueError, match="max_abs_coef must be > 0"):  # not "no box"
        verify_certificate(cert, X, y, max_abs_coef=-float("inf"))
    rep = verify_certificate(cert, X, y, k=K + 1, lambda2=2 * LAM)
    assert _failed(rep) == {"parameters"} and rep.exit_code == 1
    msg = dict(rep.failures)["parameters"]
    assert "k = 4 (user) but 3 in the certificate" in msg and "lambda2 = 1" in msg


def test_tampering_never_mutates_the_genuine_certificate(sq):
    X, y, cert, _ = sq
    before, proof = copy.deepcopy(cert.to_dict()), cert.proof_bytes()
    doc, root, nodes = _edit(cert)
    doc["bounds"]["lower_bound"] = 0.0
    for nd in nodes:
        if nd.witness is not None:
            nd.witness[1][:] = 0.0
    assert cert.to_dict() == before and cert.proof_bytes() == proof
    assert verify_certificate(cert, X, y).ok


def test_a_file_field_is_ignored_the_proof_is_found_by_name(tmp_path, sq):
    X, y, cert, _ = sq
    (tmp_path / "sub").mkdir()
    cert.save(tmp_path / "sub" / "a.json")
    doc = json.loads((tmp_path / "sub" / "a.json").read_text())
    doc["proof"]["file"] = "../elsewhere.proof"  # not part of the format: ignored
    (tmp_path / "sub" / "a.json").write_text(json.dumps(doc))
    assert verify_certificate(tmp_path / "sub" / "a.json", X, y).ok
    (tmp_path / "sub" / "a.json").rename(tmp_path / "sub" / "b.json")
    rep = verify_certificate(tmp_path / "sub" / "b.json", X, y)
    assert rep.exit_code == 2 and "b.proof" in rep.error_line


def test_overflowing_witness_gives_no_bound(tmp_path):
    X, y = make_data("poisson", n=20, p=4, seed=0)
    cert, info = enumeration_certificate(X, y, "poisson", 2, 0.5)
    doc, root, nodes = _edit(cert)
    nodes[info["best_leaf"]].witness[1][:] = 1e300  # w log w overflows
    with np.errstate(all="raise"):  # the verifier must not warn or raise on overflow
        rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert rep.failed_checks == ["leaf_bounds"] and rep.certified_lower_bound == -np.inf
