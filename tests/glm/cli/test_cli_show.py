"""``sparsecert show`` parses a certificate as strictly as ``verify`` does and never prints a
certificate whose claims contradict each other as "optimal"; ``verify`` fails such claims with
a check that says so."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _certgen import enumeration_certificate, make_data
from _cli import one_error_line

from sparsecert.certificate import verify_certificate
from sparsecert.certificate.summary import claims_problems, format_summary
from sparsecert.cli.main import main


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X, y = make_data("squared", n=12, p=4, seed=1)
    cert, _ = enumeration_certificate(X, y, "squared", 2, 0.5)
    d = tmp_path_factory.mktemp("show")
    cert.save(d / "cert.json")
    np.savez(d / "data.npz", X=X, y=y)
    return d, X, y


def _write(d, text: str, name="edit"):
    (d / f"{name}.json").write_text(text)
    (d / f"{name}.proof").write_bytes((d / "cert.proof").read_bytes())
    return str(d / f"{name}.json")


def _text(d):
    return (d / "cert.json").read_text()


def _edit(doc, part, key, value):
    doc[part][key] = value
    return doc


@pytest.mark.parametrize("edit, needle", [
    (lambda s: s.replace('"lower_bound": ', '"lower_bound": NaN, "x": ', 1), "NaN"),
    (lambda s: s.replace('"lower_bound": ', '"lower_bound": 1.0, "lower_bound": ', 1),
     "duplicate key 'lower_bound'"),
    (lambda s: s.replace('"upper_bound": ', '"upper_bound": 1' + "0" * 400 + ', "x": ', 1),
     "overflows"),
    (lambda s: json.dumps(_edit(json.loads(s), "incumbent", "intercept", 10 ** 400)),
     "overflows"),
    (lambda s: json.dumps(_edit(json.loads(s), "incumbent", "coef", [10 ** 400] * 4)),
     "overflows"),
    (lambda s: s.replace('"k": ', '"k": 1' + "0" * 400 + ', "x": ', 1), "out of range"),
    (lambda s: s.replace('"status": "optimal"', '"status": "great"', 1), "status"),
])
def test_show_refuses_what_verify_refuses_with_one_line(saved, capsys, edit, needle):
    d, _, _ = saved
    path = _write(d, edit(_text(d)))
    assert main(["show", path]) == 2
    line = one_error_line(capsys)
    assert needle in line and line.count("edit.json") == 1, line
    assert main(["verify", path, "--data", str(d / "data.npz")]) == 2
    assert needle in one_error_line(capsys)


def test_a_huge_integer_in_an_informational_field_is_printed_not_a_crash(saved, capsys):
    d, _, _ = saved
    doc = json.loads(_text(d))
    doc["producer"]["elapsed"] = 10 ** 400
    assert main(["show", _write(d, json.dumps(doc))]) == 0
    out = capsys.readouterr()
    assert "elapsed ?" in out.out and "Traceback" not in out.err


def _doc(d, **bounds):
    doc = json.loads(_text(d))
    doc["bounds"].update(bounds)
    return doc


def test_show_marks_a_lower_bound_above_the_upper_bound(saved, capsys):
    d, X, y = saved
    doc = json.loads(_text(d))
    ub = doc["bounds"]["upper_bound"]
    doc["bounds"]["lower_bound"] = ub + 1.0  # the stored gap is left as it was
    path = _write(d, json.dumps(doc))
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "status    : INCONSISTENT (claims optimal)" in out and "above the upper bound" in out
    assert "status    : optimal" not in out
    assert "meaning   : none: the claims contradict each other" in out
    rep = verify_certificate(path, X, y)
    assert {"bounds_order", "status"} <= set(rep.failed_checks), str(rep)
    assert "inconsistent" in dict(rep.failures)["bounds_order"]
    assert "lower bound above the upper bound" in dict(rep.failures)["status"]
    assert "inf" not in str(rep).split("[")[0]  # no 'relative gap inf' line
    assert main(["verify", path, "--data", str(d / "data.npz")]) == 1
    assert "relative gap inf" not in capsys.readouterr().out


def test_show_marks_a_stored_gap_that_is_not_the_bounds_gap(saved, capsys):
    d, X, y = saved
    doc = json.loads(_text(d))
    doc["bounds"]["relative_gap"] = 0.5
    path = _write(d, json.dumps(doc))
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "INCONSISTENT" in out and "stored relative gap 0.5" in out


def test_show_marks_optimal_with_a_gap_above_the_tolerance(saved, capsys):
    d, X, y = saved
    doc = json.loads(_text(d))
    bd = doc["bounds"]
    bd["lower_bound"] = bd["upper_bound"] - 0.5 * max(1.0, abs(bd["upper_bound"]))
    bd["absolute_gap"] = bd["upper_bound"] - bd["lower_bound"]
    bd["relative_gap"] = bd["absolute_gap"] / max(1.0, abs(bd["upper_bound"]))
    path = _write(d, json.dumps(doc))
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "INCONSISTENT (claims optimal)" in out and "above the certificate's tolerance" in out
    assert "status" in verify_certificate(path, X, y).failed_checks


def test_an_honest_certificate_shows_its_status(saved, capsys):
    d, _, _ = saved
    assert main(["show", str(d / "cert.json")]) == 0
    out = capsys.readouterr().out
    assert "status    : optimal" in out and "INCONSISTENT" not in out
    doc = json.loads(_text(d))
    assert claims_problems(doc["bounds"]) == []
    doc["bounds"].update(status="time_limit", lower_bound=doc["bounds"]["lower_bound"] - 1.0)
    doc["bounds"].pop("absolute_gap")
    doc["bounds"].pop("relative_gap")
    assert claims_problems(doc["bounds"]) == []  # a weak bound is no contradiction
    assert "status    : time_limit" in format_summary(doc)
