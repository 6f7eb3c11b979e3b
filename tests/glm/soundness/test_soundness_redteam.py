"""Hand-written certificates from a red-team pass over the verifier's input handling.

Each test is an attack that, before its fix, either crashed the verifier with a traceback or let
the JSON say something other than what the verifier checked. JSON and sidecar are rewritten
together with consistent SHA-256 hashes, as a forger would.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _certgen import enumeration_certificate, make_data

from sparsecert.certificate import verify as V
from sparsecert.certificate import verify_certificate
from sparsecert.certificate.schema import npz_bytes, sha256_bytes


@pytest.fixture(scope="module")
def sq_icpt():
    X, y = make_data("squared", n=12, p=4, seed=3)
    cert, _ = enumeration_certificate(X, y, "squared", 2, 0.5, fit_intercept=True)
    return X, y, cert


def _write(tmp_path, doc, arrays, text=None):
    side = npz_bytes(arrays)
    doc["arrays"]["sha256"] = sha256_bytes(side)
    (tmp_path / "c.npz").write_bytes(side)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc) if text is None else text(json.dumps(doc)))
    return path


def test_zero_sum_check_survives_an_overflowing_partial_sum():
    big = [1e308, 1e308, -1e308, -1e308]
    assert V._sums_to_zero(np.array(big))  # math.fsum raises OverflowError here
    assert not V._sums_to_zero(np.array(big + [5e-324]))
    assert not V._sums_to_zero(np.array([1e308, 1e308, -1e308, -1e308 * (1 - 2**-52)]))
    assert V._sums_to_zero(np.array([0.1, -0.1, -0.0]))


def test_huge_cancelling_dual_with_an_intercept_is_refused_not_a_crash(tmp_path, sq_icpt):
    X, y, cert = sq_icpt
    doc, arrays = cert.to_dict(), {k: v.copy() for k, v in cert.arrays.items()}
    z = arrays["dual_values"]
    z[:, :] = 0.0
    z[:, :4] = [1e308, 1e308, -1e308, -1e308]  # sums to exactly 0: a valid, useless witness
    rep = verify_certificate(_write(tmp_path, doc, arrays), X, y)
    assert rep.exit_code == 1 and "leaf_bounds" in rep.failed_checks, str(rep)
    z[:, 4] = 5e-324  # now the exact sum is not 0
    rep = verify_certificate(_write(tmp_path, doc, arrays), X, y)
    assert rep.exit_code == 1 and "leaf_witnesses" in rep.failed_checks, str(rep)


def test_duplicate_json_keys_are_an_input_error(tmp_path, sq_icpt):
    """A reader (or another parser) may see the first value where the verifier sees the last."""
    X, y, cert = sq_icpt
    doc, arrays = cert.to_dict(), dict(cert.arrays)
    lb = doc["bounds"]["lower_bound"]
    path = _write(tmp_path, doc, arrays, text=lambda s: s.replace(
        '"lower_bound": ', f'"lower_bound": {lb + 1e6!r}, "lower_bound": ', 1))
    rep = verify_certificate(path, X, y)
    assert rep.exit_code == 2 and "duplicate key 'lower_bound'" in rep.error_line


def test_format_version_must_be_an_integer(tmp_path, sq_icpt):
    X, y, cert = sq_icpt
    doc, arrays = cert.to_dict(), dict(cert.arrays)
    doc["format_version"] = 2.0
    rep = verify_certificate(_write(tmp_path, doc, arrays), X, y)
    assert rep.exit_code == 2 and "format_version" in rep.error_line


@pytest.mark.parametrize("content", [b"PK\x03\x04garbage", b"", b"not a zip"])
def test_standalone_verifier_unreadable_data_is_one_line(tmp_path, capsys, sq_icpt, content):
    X, y, cert = sq_icpt
    cert_path = _write(tmp_path, cert.to_dict(), dict(cert.arrays))
    data = tmp_path / "d.npz"
    data.write_bytes(content)
    assert V._main([str(cert_path), str(data)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def _fixing_attack(doc, how):
    nodes = doc["tree"]["nodes"]
    root = next(nd for nd in nodes if nd["parent"] is None)
    child = next(nd for nd in nodes if nd["parent"] == root["id"] and nd["branch_value"] == 0)
    grandchildren = [nd for nd in nodes if nd["parent"] == child["id"]]
    j_next = grandchildren[0]["branch_var"] if grandchildren else None
    if how == "ancestor_fixing_then_branch":  # the child fixes the variable its children branch on
        child["fixings"] = [[j_next, 0]]
    elif how == "repeated":
        child["fixings"] = [[j_next, 0], [j_next, 0]]
    elif how == "already_fixed":
        child["fixings"] = [[child["branch_var"], 1]]
    elif how == "too_many_in":  # k + 1 variables fixed to 1 at the root
        root["fixings"] = [[j, 1] for j in range(doc["problem"]["k"] + 1)]
    return doc


@pytest.mark.parametrize("how", ["ancestor_fixing_then_branch", "repeated", "already_fixed",
                                 "too_many_in"])
def test_bound_fixings_that_break_the_partition_are_refused(tmp_path, sq_icpt, how):
    X, y, cert = sq_icpt
    doc = _fixing_attack(cert.to_dict(), how)
    rep = verify_certificate(_write(tmp_path, doc, dict(cert.arrays)), X, y)
    assert rep.exit_code == 1 and "tree_fixings" in rep.failed_checks, str(rep)


def test_shifted_offsets_that_wrap_around_in_int64_are_an_input_error(tmp_path, sq_icpt):
    """[0, 5e18, -5e18, 0] decreases, but np.diff wraps -1e19 around to a positive int64."""
    X, y, cert = sq_icpt
    doc, arrays = cert.to_dict(), {k: v.copy() for k, v in cert.arrays.items()}
    arrays["shifted_offsets"] = np.array([0, 5 * 10**18, -5 * 10**18, 0], dtype="<i8")
    arrays["shifted_indices"] = np.zeros(0, dtype="<i8")
    arrays["shifted_values"] = np.zeros(0)
    rep = verify_certificate(_write(tmp_path, doc, arrays), X, y)
    assert rep.exit_code == 2 and "shifted_offsets" in rep.error_line, str(rep)
