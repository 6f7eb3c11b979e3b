"""The ``sparsecert`` command line: verify / show / certify, bad input and exit codes."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from _certgen import enumeration_certificate, make_data
from _cli import one_error_line

from sparsecert.cli.main import main

SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.fixture(scope="module")
def problem():
    X, y = make_data("squared", n=24, p=5, seed=0)
    cert, info = enumeration_certificate(X, y, "squared", 2, 0.5)
    return X, y, cert, info


@pytest.fixture
def files(tmp_path, problem):
    X, y, cert, _ = problem
    cert.save(tmp_path / "cert.json")
    np.savez(tmp_path / "data.npz", X=X, y=y)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    header = ",".join([f"f{j}" for j in range(X.shape[1])] + ["target"])
    rows = [",".join(repr(float(v)) for v in np.r_[X[i], y[i]]) for i in range(len(y))]
    (tmp_path / "data.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    return tmp_path


# ------------------------------------------------------------------------------ verify


@pytest.mark.parametrize(
    "data_args",
    [["--data", "data.npz"], ["--data", "X.npy", "--y", "y.npy"],
     ["--data", "data.csv", "--target", "target"]],
)
def test_verify_genuine_exit_0(files, capsys, data_args):
    args = [a if not a.endswith((".npz", ".npy", ".csv")) else str(files / a) for a in data_args]
    assert main(["verify", str(files / "cert.json"), *args]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out and "leaf_bounds" in out


def test_verify_with_two_processes_gives_the_same_report(files, capsys):
    args = ["verify", str(files / "cert.json"), "--data", str(files / "data.npz")]
    assert main(args) == 0
    serial = capsys.readouterr().out
    assert main(args + ["--jobs", "2"]) == 0
    parallel = capsys.readouterr().out

    def checks(text: str) -> list[str]:  # the check lines (the time line differs)
        return [ln for ln in text.splitlines() if ln.strip().startswith("[")]

    assert len(checks(serial)) > 10 and checks(parallel) == checks(serial)
    assert "with 2 processes" in parallel


def test_verify_tampered_exit_1_names_the_check(files, capsys):
    doc = json.loads((files / "cert.json").read_text())
    doc["incumbent"]["coef"][doc["incumbent"]["support"][0]] += 0.01
    (files / "cert.json").write_text(json.dumps(doc))
    assert main(["verify", str(files / "cert.json"), "--data", str(files / "data.npz")]) == 1
    out = capsys.readouterr().out
    assert "FAILED: incumbent_objective" in out and "[FAIL] incumbent_objective" in out


def test_verify_other_data_exit_1(files, capsys, problem):
    X, y, _, _ = problem
    np.savez(files / "other.npz", X=X, y=y + 1e-9)
    assert main(["verify", str(files / "cert.json"), "--data", str(files / "other.npz"),
                 "--quiet"]) == 1
    assert "data_hash" in capsys.readouterr().out


def test_verify_gap_above_tolerance_exit_3(files, capsys, problem):
    X, y, cert, _ = problem
    doc = cert.to_dict()
    bd = doc["bounds"]
    bd.update(lower_bound=bd["upper_bound"] - 1.0, status="time_limit")
    bd["absolute_gap"] = bd["upper_bound"] - bd["lower_bound"]
    bd["relative_gap"] = bd["absolute_gap"] / max(1.0, abs(bd["upper_bound"]))
    (files / "weak.json").write_text(json.dumps(doc))
    (files / "weak.proof").write_bytes((files / "cert.proof").read_bytes())  # found by name
    args = ["verify", str(files / "weak.json"), "--data", str(files / "data.npz")]
    assert main(args) == 3
    assert "gap above tolerance" in capsys.readouterr().out
    assert main(args + ["--rel-gap", "0.5"]) == 0


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda d: ["verify", str(d / "missing.json"), "--data", str(d / "data.npz")],
         "missing.json"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "missing.npz")],
         "does not exist"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "data.csv")],
         "--target"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "data.csv"), "--target",
                    "nope"], "no column 'nope'"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "X.npy")], "--y"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "bad.npz")],
         "not a readable"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "noy.npz")],
         "no array y"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "text.csv"), "--target",
                    "t"], "is not a number"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "nan.npz")], "NaN"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "data.txt")],
         "unsupported"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "ragged.csv"), "--target",
                    "t"], "has 2 fields"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "y2d.npz")], "1-D"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "rows.npz")],
         "3 rows but y has 2"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "obj.npz")],
         "cannot"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "index.csv"), "--target",
                    "t"], "column 1 has no name in the header (a row index"),
        (lambda d: ["certify", "--data", str(d / "noheader.csv"), "--target", "t", "--k", "1",
                    "--lambda2", "1"], "the first line holds numbers: a .csv needs a header"),
        (lambda d: ["certify", "--data", str(d / "semicolon.csv"), "--target", "t", "--k", "1",
                    "--lambda2", "1"], "does not seem to be comma-separated"),
        (lambda d: ["verify", str(d / "cert.json"), "--data", str(d / "gap.csv"), "--target",
                    "t"], "line 3, column 'b' is empty (a missing value"),
        (lambda d: ["show", str(d / "missing.json")], "missing.json"),
        (lambda d: ["show", str(d / "data.csv")], "not valid JSON"),
    ],
)
def test_bad_input_exit_2_one_line(files, capsys, make, needle):
    (files / "bad.npz").write_bytes(b"PK\x03\x04 this is not a zip")
    np.savez(files / "noy.npz", X=np.ones((3, 2)))
    (files / "text.csv").write_text("a,b,t\n1,2,3\n4,five,6\n")
    np.savez(files / "nan.npz", X=np.array([[1.0, np.nan]]), y=np.array([1.0]))
    (files / "data.txt").write_text("1 2 3\n")
    (files / "ragged.csv").write_text("a,b,t\n1,2,3\n4,5\n")
    (files / "index.csv").write_text(",a,b,t\n0,1,2,3\n1,4,5,7\n")  # pandas' to_csv()
    (files / "noheader.csv").write_text("1,2,3\n4,5,7\n")
    (files / "semicolon.csv").write_text("a;b;t\n1;2;3\n4;5;7\n")
    (files / "gap.csv").write_text("a,b,t\n1,2,3\n4,,7\n")
    np.savez(files / "y2d.npz", X=np.ones((3, 2)), y=np.ones((3, 1)))
    np.savez(files / "rows.npz", X=np.ones((3, 2)), y=np.ones(2))
    np.savez(files / "obj.npz", X=np.array([[1, "a"]], dtype=object), y=np.ones(1))
    assert main(make(files)) == 2
    assert needle in one_error_line(capsys)


def test_certify_data_beyond_float64_range_exit_2_one_line(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "huge.npz", X=rng.normal(size=(20, 4)) * 1e300, y=rng.normal(size=20))
    assert main(["certify", "--data", str(tmp_path / "huge.npz"), "--k", "2", "--lambda2",
                 "1"]) == 2
    assert "too large for float64" in one_error_line(capsys)


@pytest.mark.parametrize("text", ["{ not json", None, "[" * 100000 + "]" * 100000])
def test_unreadable_certificate_exit_2_from_verify_and_show(files, capsys, text):
    """A truncated or unparsable certificate is an input error for both commands: exit 2, one
    line, never a traceback."""
    full = (files / "cert.json").read_text()
    (files / "junk.json").write_text(full[: len(full) // 2] if text is None else text)
    (files / "junk.proof").write_bytes((files / "cert.proof").read_bytes())
    assert main(["verify", str(files / "junk.json"), "--data", str(files / "data.npz")]) == 2
    assert one_error_line(capsys).count("junk.json") == 1
    assert main(["show", str(files / "junk.json")]) == 2
    assert one_error_line(capsys).count("junk.json") == 1


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d.update(format_version=1), "format version 1 is not supported"),
    (lambda d: d["problem"].update(lambda2=10 ** 400), "overflows"),
    (lambda d: d["problem"].update(k=10 ** 400), "out of range"),
    (lambda d: d["bounds"].update(lower_bound="NaN"), "finite number"),
    (lambda d: d.update(proof=[[[[[["x"]]]]]]), "JSON object"),
])
def test_malformed_certificate_exit_2_one_line(files, capsys, edit, needle):
    doc = json.loads((files / "cert.json").read_text())
    edit(doc)
    (files / "bad.json").write_text(json.dumps(doc))
    (files / "bad.proof").write_bytes((files / "cert.proof").read_bytes())
    assert main(["verify", str(files / "bad.json"), "--data", str(files / "data.npz")]) == 2
    assert needle in one_error_line(capsys)


def test_verify_needs_data(files, capsys):
    assert main(["verify", str(files / "cert.json")]) == 2
    assert "--data" in one_error_line(capsys)


def test_verify_user_fixes_the_problem(files, capsys):
    cert, data = str(files / "cert.json"), str(files / "data.npz")
    assert main(["verify", cert, "--data", data, "--k", "2", "--lambda2", "0.5", "--loss",
                 "squared", "--no-fit-intercept", "--max-abs-coef", "inf"]) == 0
    out = capsys.readouterr().out
    assert "k=2 (user)" in out and "lambda2=0.5 (user)" in out
    assert main(["verify", cert, "--data", data]) == 0
    assert "k=2 (certificate)" in capsys.readouterr().out
    for extra, needle in ((["--k", "3"], "k = 3 (user) but 2"),
                          (["--lambda2", "0.25"], "lambda2 = 0.25 (user) but 0.5"),
                          (["--fit-intercept"], "fit_intercept = True (user) but False"),
                          (["--max-abs-coef", "2"], "max_abs_coef = 2 (user) but None"),
                          (["--loss", "logistic"], "loss = logistic (user) but squared")):
        assert main(["verify", cert, "--data", data, *extra]) == 1
        out = capsys.readouterr().out
        assert "[FAIL] parameters" in out and needle in out, out


def test_renamed_pair_still_verifies(files, capsys):
    (files / "cert.json").rename(files / "renamed.json")
    (files / "cert.proof").rename(files / "renamed.proof")
    assert main(["verify", str(files / "renamed.json"), "--data", str(files / "data.npz")]) == 0
    assert "VERIFIED" in capsys.readouterr().out


def test_usage_errors_exit_2(capsys):
    assert main([]) == 2
    assert main(["certify", "--k", "zero"]) == 2
    assert main(["certify", "--jobs", "0"]) == 2
    capsys.readouterr()
    assert main(["certify", "--batch-size", "0"]) == 2
    assert "batch_size must be >= 1, got 0" in one_error_line(capsys)
    assert main(["certify", "--rel-gap", "-1"]) == 2
    assert main(["verify"]) == 2
    assert main(["--version"]) == 0
    assert "sparsecert" in capsys.readouterr().out
    for bad, needle in ((["--k", "-1"], "-1 must be >= 0"), (["--k", "1.5"], "not an integer"),
                        (["--rel-gap", "nan"], "nan must be a finite number >= 0"),
                        (["--rel-gap", "inf"], "inf must be a finite number >= 0"),
                        (["--jobs", "0"], "0 must be >= 1 (or -1: one per core)")):
        assert main(["verify", "c.json", "--data", "d.npz", *bad]) == 2
        assert needle in one_error_line(capsys)
    for argv in (["certify", "--k", "0"], ["certify", "--lambda2", "x"], ["verify"],
                 ["certify", "--bogus"], ["show", "a.json", "b.json"], ["nosuchcommand"]):
        assert main(argv) == 2
        assert "--help')" in one_error_line(capsys), argv  # one line, no usage block


# ------------------------------------------------------------------------------ show


def test_show_prints_summary(files, capsys, problem):
    _, _, cert, _ = problem
    assert main(["show", str(files / "cert.json")]) == 0
    out = capsys.readouterr().out
    assert "status    : optimal" in out and f"support   : {cert.incumbent['support']}" in out
    assert "leaves" in out


# ------------------------------------------------------------------------------ certify input


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--k", "9", "--lambda2", "1"], "k = 9"),
        (["--k", "2", "--lambda2", "0"], "lambda2 must be > 0"),
        (["--k", "2", "--lambda2", "-1"], "got -1.0"),
        (["--k", "2"], "--k and --lambda2 are required"),
        (["--k", "2", "--lambda2", "1", "--loss", "logistic"], "binary labels"),
        (["--k", "2", "--lambda2", "1", "--max-abs-coef", "-1"], "max_abs_coef"),
        (["--k", "2", "--lambda2", "1", "--loss", "huber", "--huber-delta", "0"],
         "huber_delta must be a finite number > 0"),
        (["--k", "2", "--lambda2", "1", "--huber-delta", "1"],
         "is a parameter of the huber loss, not of loss='squared'"),
    ],
)
def test_certify_bad_parameters_exit_2(files, capsys, extra, needle):
    assert main(["certify", "--data", str(files / "data.npz"), *extra]) == 2
    assert needle in one_error_line(capsys)


def test_certify_missing_target_column_exit_2(files, capsys):
    assert main(["certify", "--data", str(files / "data.csv"), "--target", "y", "--k", "2",
                 "--lambda2", "1"]) == 2
    assert "no column 'y'" in one_error_line(capsys)


# ------------------------------------------------------------------------------ certify flow


class _FakeResult:
    """What sparsecert.api.certify_prepared returns, built here from the enumeration
    certificate."""

    def __init__(self, cert, info):
        self.certificate = cert
        self.status = cert.status
        self.objective = cert.upper_bound
        self.lower_bound = cert.lower_bound
        self.gap = cert.bounds["relative_gap"]
        self.coef = info["coef"]
        self.intercept = info["intercept"]
        self.n_nodes = len(cert.nodes)
        self.time = 0.0

    def save(self, path):
        return self.certificate.save(path)


@pytest.fixture
def fake_api(monkeypatch):
    """Stand-in for the solver so the certify flow of the CLI is tested on its own."""
    calls = []

    def certify_prepared(prepared, options, *, feature_names=None):
        spec = prepared.spec
        calls.append(dict(prepared=prepared, feature_names=feature_names,
                          **{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)},
                          **{f.name: getattr(options, f.name)
                             for f in dataclasses.fields(options)}))
        cert, info = enumeration_certificate(prepared.X, prepared.y, spec.loss, spec.k,
                                             spec.lambda2,
                                             M=spec.max_abs_coef if spec.has_box else None,
                                             fit_intercept=spec.fit_intercept)
        return _FakeResult(cert, info)

    mod = types.ModuleType("sparsecert.api")
    mod.certify_prepared = certify_prepared
    monkeypatch.setitem(sys.modules, "sparsecert.api", mod)
    return calls


def test_certify_flow_with_stand_in_solver(files, capsys, fake_api, monkeypatch):
    """The command prepares the problem once (its checks run before anything is printed) and
    hands that prepared problem, with the options as the records hold them, to the solver."""
    import sparsecert._validation as validation

    prepared = []
    prepare = validation.prepare
    monkeypatch.setattr(validation, "prepare",
                        lambda *a, **kw: prepared.append(prepare(*a, **kw)) or prepared[-1])
    out = files / "new.json"
    code = main(["certify", "--data", str(files / "data.npz"), "--k", "2", "--lambda2", "0.5",
                 "--out", str(out), "--jobs", "2", "--batch-size", "32", "--rel-gap", "1e-6",
                 "--time-limit", "30"])
    assert code == 0
    text = capsys.readouterr().out
    assert "status      : optimal" in text and "VERIFIED" in text
    assert out.exists() and (files / "new.proof").exists()
    call = dict(fake_api[0])
    assert len(prepared) == 1 and call.pop("prepared") is prepared[0]
    assert {key: call[key] for key in ("k", "lambda2", "loss", "max_abs_coef", "fit_intercept",
                                        "eig_shift", "rel_gap", "abs_gap", "time_limit",
                                        "node_limit", "n_jobs", "batch_size", "backend",
                                        "verbose", "feature_names")} == dict(
        k=2, lambda2=0.5, loss="squared", max_abs_coef=math.inf, fit_intercept=True,
        eig_shift="auto", rel_gap=1e-6, abs_gap=1e-9, time_limit=30.0, node_limit=None,
        n_jobs=2, batch_size=32, backend="threads", verbose=1, feature_names=None)
    assert main(["verify", str(out), "--data", str(files / "data.npz")]) == 0


def test_certify_unsupported_option_exit_2(files, capsys, monkeypatch):
    def certify_prepared(*a, **kw):
        raise NotImplementedError("fit_intercept=True is implemented for the squared loss only")

    mod = types.ModuleType("sparsecert.api")
    mod.certify_prepared = certify_prepared
    monkeypatch.setitem(sys.modules, "sparsecert.api", mod)
    X, y = make_data("logistic", n=20, p=4, seed=0)
    np.savez(files / "cls.npz", X=X, y=y)
    assert main(["certify", "--data", str(files / "cls.npz"), "--k", "2", "--lambda2", "1",
                 "--loss", "logistic", "--fit-intercept"]) == 2
    assert "not supported" in one_error_line(capsys)


def test_certify_refuses_an_out_in_a_missing_folder_before_solving(files, capsys, fake_api):
    assert main(["certify", "--data", str(files / "data.npz"), "--k", "2", "--lambda2", "0.5",
                 "--out", str(files / "nodir" / "c.json")]) == 2
    assert "nodir does not exist" in one_error_line(capsys)
    assert fake_api == []  # refused before the (possibly long) solve


def test_certify_default_job_uses_diabetes(tmp_path, monkeypatch, capsys, fake_api):
    monkeypatch.chdir(tmp_path)
    # the stand-in enumerates all supports: keep it quick by capping k through the flag
    assert main(["certify", "--k", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "sparsecert-certificate.json: verified" in out
    assert fake_api[0]["fit_intercept"] is True and fake_api[0]["lambda2"] == 0.1
    assert fake_api[0]["verbose"] == 0
    assert (tmp_path / "sparsecert-certificate.json").exists()
    assert (tmp_path / "sparsecert-certificate.proof").exists()
    assert main(["verify", "sparsecert-certificate.json", "--quiet"]) == 2  # no data: no guess


def test_python_dash_m_sparsecert_runs():
    run = subprocess.run([sys.executable, "-m", "sparsecert", "--help"], capture_output=True,
                         text=True, env={"PYTHONPATH": str(SRC)}, timeout=120)
    assert run.returncode == 0 and "certify" in run.stdout


# ------------------------------------------------------------------------------ with the solver


def test_certify_end_to_end_with_the_solver(files, capsys):
    out = files / "real.json"
    assert main(["certify", "--data", str(files / "data.npz"), "--k", "2", "--lambda2", "0.5",
                 "--out", str(out), "--quiet"]) == 0
    assert main(["verify", str(out), "--data", str(files / "data.npz"), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["bounds"]["status"] == "optimal"


def test_certify_huber_with_the_solver(files, capsys):
    """``--loss huber`` and its threshold come from the loss registry; the threshold is in the
    certificate and the verifier takes it from the user like any parameter."""
    out, data = files / "huber.json", str(files / "data.npz")
    assert main(["certify", "--data", data, "--k", "2", "--lambda2", "0.5", "--loss", "huber",
                 "--huber-delta", "0.75", "--out", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["problem"]["loss"] == "huber" and doc["problem"]["huber_delta"] == 0.75
    capsys.readouterr()
    assert main(["verify", str(out), "--data", data, "--huber-delta", "0.75", "--quiet"]) == 0
    assert main(["verify", str(out), "--data", data, "--huber-delta", "0.5", "--quiet"]) == 1
    assert "parameters" in capsys.readouterr().out
    assert main(["show", str(out)]) == 0
    assert "huber loss (huber_delta=0.75)" in capsys.readouterr().out


def test_certify_default_diabetes_job_with_the_solver(tmp_path, monkeypatch, capsys):
    from sklearn.datasets import load_diabetes

    monkeypatch.chdir(tmp_path)
    assert main(["certify", "--quiet"]) == 0
    X, y = load_diabetes(return_X_y=True)
    np.savez(tmp_path / "diabetes.npz", X=X, y=y)
    assert main(["verify", "sparsecert-certificate.json", "--data", "diabetes.npz"]) == 0
    out = capsys.readouterr().out
    assert "VERIFIED" in out


def test_certify_node_limit_gives_honest_status(files, capsys):
    X, y = make_data("squared", n=40, p=8, seed=9)
    np.savez(files / "d8.npz", X=X, y=y)
    code = main(["certify", "--data", str(files / "d8.npz"), "--k", "3", "--lambda2", "0.01",
                 "--node-limit", "1", "--rel-gap", "0", "--out", str(files / "nl.json"),
                 "--quiet"])
    doc = json.loads((files / "nl.json").read_text())
    assert code == (0 if doc["bounds"]["relative_gap"] <= 0.0 else 3)
    # the quiet line says what the exit code says, as verify --quiet does
    line = capsys.readouterr().out.strip()
    assert line.endswith("verified" if code == 0 else "verified, gap above tolerance"), line


def test_interrupt_before_a_model_exists_exits_130_one_line(monkeypatch, capsys):
    """Ctrl-C while the first run compiles (the search proper returns its best model instead):
    one line and exit 130, no traceback."""
    import importlib

    cli = importlib.import_module("sparsecert.cli.main")  # the module (the package exports main)

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_cmd_certify", interrupted)
    assert main(["certify"]) == cli.EXIT_INTERRUPTED == 130
    err = capsys.readouterr().err
    assert err.strip() == "sparsecert: interrupted"
