"""Hand-written certificates from red-team passes over the verifier's input handling.

Each test is an attack that either crashed a verifier with a traceback or let the JSON (or the
proof file) say something other than what the verifier checked. JSON and proof file are
rewritten together with consistent SHA-256 hashes, as a forger would.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _certgen import (
    TNode,
    enumeration_certificate,
    forge,
    make_data,
    records_of,
    reforge,
    rehashed,
    with_records,
    write_files,
)

from sparsecert.certificate import verify as V
from sparsecert.certificate import verify_certificate


@pytest.fixture(scope="module")
def sq_icpt():
    X, y = make_data("squared", n=12, p=4, seed=3)
    cert, _ = enumeration_certificate(X, y, "squared", 2, 0.5, fit_intercept=True)
    return X, y, cert


def _write(tmp_path, cert, text=None):
    path = write_files(tmp_path, cert, "c")
    if text is not None:
        path.write_text(text(json.dumps(cert.to_dict())))
    return path


def test_zero_sum_check_survives_an_overflowing_partial_sum():
    big = [1e308, 1e308, -1e308, -1e308]
    assert V._sums_to_zero(np.array(big))  # math.fsum raises OverflowError here
    assert not V._sums_to_zero(np.array(big + [5e-324]))
    assert not V._sums_to_zero(np.array([1e308, 1e308, -1e308, -1e308 * (1 - 2**-52)]))
    assert V._sums_to_zero(np.array([0.1, -0.1, -0.0]))


def test_huge_cancelling_dual_with_an_intercept_is_refused_not_a_crash(tmp_path, sq_icpt):
    X, y, cert = sq_icpt
    doc, root = forge(cert)
    for nd in root.preorder():
        if nd.witness is not None:
            z = np.zeros_like(nd.witness[1])
            z[:4] = [1e308, 1e308, -1e308, -1e308]  # sums to exactly 0: a valid, useless one
            nd.witness = ("dual", z)
    rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert rep.exit_code == 1 and "leaf_bounds" in rep.failed_checks, str(rep)
    for nd in root.preorder():
        if nd.witness is not None:
            nd.witness[1][4] = 5e-324  # now the exact sum is not 0
    rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert rep.exit_code == 1 and "leaf_witnesses" in rep.failed_checks, str(rep)


def test_duplicate_json_keys_are_an_input_error(tmp_path, sq_icpt):
    """A reader (or another parser) may see the first value where the verifier sees the last."""
    X, y, cert = sq_icpt
    lb = cert.lower_bound
    path = _write(tmp_path, cert, text=lambda s: s.replace(
        '"lower_bound": ', f'"lower_bound": {lb + 1e6!r}, "lower_bound": ', 1))
    rep = verify_certificate(path, X, y)
    assert rep.exit_code == 2 and "duplicate key 'lower_bound'" in rep.error_line


def test_format_version_must_be_an_integer(tmp_path, sq_icpt):
    X, y, cert = sq_icpt
    doc = cert.to_dict()
    doc["format_version"] = 3.0
    rep = verify_certificate(_write(tmp_path, rehashed(doc, cert.proof_bytes())), X, y)
    assert rep.exit_code == 2 and "format_version" in rep.error_line


@pytest.mark.parametrize("content", [b"PK\x03\x04garbage", b"", b"not a zip"])
def test_standalone_verifier_unreadable_data_is_one_line(tmp_path, capsys, sq_icpt, content):
    X, y, cert = sq_icpt
    cert_path = _write(tmp_path, cert)
    data = tmp_path / "d.npz"
    data.write_bytes(content)
    assert V._main([str(cert_path), str(data)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_branching_on_a_variable_fixed_above_is_refused(tmp_path, sq_icpt):
    """A child branches on the variable its parent branched on: its subtree would repeat the
    parent's region (and a chain of them would be as deep as the file is long)."""
    X, y, cert = sq_icpt
    doc, root = forge(cert)
    child = root.kids[0]
    assert child.kids
    child.var = root.var
    rep = verify_certificate(_write(tmp_path, reforge(doc, root)), X, y)
    assert rep.exit_code == 1 and rep.failed_checks == ["tree_fixings"], str(rep)


@pytest.mark.parametrize("field, value, needle", [
    ("head", 0x20, "reserved bits"),
    ("head", 0x18, "reserved bits"),  # witness kind 3
    ("head", 1 << 8, "reserved bits"),
    ("var", 4, "not in [0, 4)"),
    ("slot", 1, "without a witness kind"),
])
def test_malformed_records_fail_the_structure(sq_icpt, field, value, needle):
    X, y, cert = sq_icpt
    proof = cert.proof_bytes()
    recs = records_of(proof)
    col = ("head", "var", "slot", "size0").index(field)
    target = 0 if field in ("var", "slot") else 1  # the root (branched) or its first child
    if field == "slot":
        recs[0, 0] &= ~np.uint32(0x18)  # the root has no witness of its own ...
    recs[target, col] = value if field != "head" else (recs[target, col] | value)
    rep = verify_certificate(rehashed(cert.to_dict(), with_records(proof, recs)), X, y)
    assert rep.exit_code == 1 and rep.failed_checks == ["tree_structure"], str(rep)
    assert needle in rep.failures[0][1] and f"node {target}:" in rep.failures[0][1]


def test_a_flag_to_derive_fixings_without_any_witness_is_a_witness_problem(sq_icpt):
    X, y, cert = sq_icpt
    doc = cert.to_dict()
    root = TNode(status="open", derive=True)
    rep = verify_certificate(reforge(doc, root), X, y)
    assert rep.failed_checks == ["leaf_witnesses"] and "no witness" in rep.failures[0][1]


def test_more_than_k_variables_branched_in_is_an_empty_region(sq_icpt):
    """Branching z_j = 1 on more than k variables along a path: that region is empty (no
    support has more than k), so nothing below it is read or bounded (here a malformed
    record)."""
    X, y, cert = sq_icpt
    from _certgen import branch, zero_sum

    doc = cert.to_dict()
    k = doc["problem"]["k"]
    zeta = zero_sum(-2.0 * (y - y.mean()))  # a witness of every region (a weak one)
    deep = TNode(status="open", raw=dict(head=0xFF))  # k + 1 variables in: never read
    for j in reversed(range(k + 1)):
        deep = branch(j, TNode(status="open"), deep)
    deep.witness = ("dual", zeta)
    doc["bounds"].update(lower_bound=-1e9, status="time_limit")
    rep = verify_certificate(reforge(doc, deep), X, y)
    assert rep.ok and rep.exit_code == 3, str(rep)
    assert "(1 records in empty or covered regions not read)" in dict(
        (n, m) for n, _, m in rep.checks)["tree_structure"]
