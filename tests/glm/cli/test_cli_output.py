"""What the command line and the result print: feature names, the start line, help texts."""

from __future__ import annotations

import argparse
import importlib
import json

import numpy as np
import pytest
from _certgen import make_data

import sparsecert
from sparsecert.cli.io import feature_names, load_data
from sparsecert.cli.main import build_parser, main

NAMES = ["age", "dose", "weight", "height", "score"]


@pytest.fixture(scope="module")
def data():
    return make_data("squared", n=24, p=5, seed=0)


@pytest.fixture
def csv_file(tmp_path, data):
    X, y = data
    # the target column sits between features: names must follow the remaining columns
    header = ",".join(NAMES[:2] + ["target"] + NAMES[2:])
    rows = [",".join(repr(float(v)) for v in np.r_[X[i, :2], y[i], X[i, 2:]])
            for i in range(len(y))]
    path = tmp_path / "data.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_every_certify_option_has_help_text():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        assert parser.description, f"sparsecert {name} --help has no description"
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            what = action.option_strings[0] if action.option_strings else action.metavar
            assert action.help, f"sparsecert {name} {what} has no help"


def test_help_names_every_exit_code():
    cli = importlib.import_module("sparsecert.cli.main")  # the package exports main()
    epilog = build_parser().epilog
    for code in (cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_USAGE, cli.EXIT_GAP,
                 cli.EXIT_INTERRUPTED):
        assert f" {code} " in epilog, code


def test_csv_header_gives_the_feature_names(csv_file):
    assert feature_names(csv_file, "target") == NAMES
    # a spreadsheet's "CSV UTF-8" starts with a byte-order mark: not part of the first name
    bom = csv_file.with_name("bom.csv")
    bom.write_bytes(b"\xef\xbb\xbf" + csv_file.read_bytes())
    assert feature_names(bom, "target") == NAMES
    X, y, _ = load_data(csv_file, target="target")
    X_bom, y_bom, _ = load_data(bom, target="target")
    assert np.array_equal(X, X_bom) and np.array_equal(y, y_bom)
    assert feature_names(str(csv_file).replace(".csv", ".npz")) is None
    assert feature_names(None)[:3] == ["age", "sex", "bmi"]  # the default diabetes job


def test_certify_prints_names_and_the_size_once(csv_file, tmp_path, capsys):
    out = tmp_path / "cert.json"
    code = main(["certify", "--data", str(csv_file), "--target", "target", "--k", "2",
                 "--lambda2", "0.5", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    start = text.splitlines()[0]
    assert start.count("n=24") == 1 and "samples" not in start, start
    model = next(ln for ln in text.splitlines() if ln.startswith("model"))
    doc = json.loads(out.read_text())
    idx = doc["incumbent"]["support"]
    coef = doc["incumbent"]["coef"]
    assert len(idx) == 2
    for j in idx:  # the printed name is the column's, whatever the target's position
        assert f"{abs(coef[j]):.6g} {NAMES[j]}" in model, model
    assert "b[" not in model


def test_quiet_line_names_the_support(csv_file, tmp_path, capsys):
    code = main(["certify", "--data", str(csv_file), "--target", "target", "--k", "1",
                 "--lambda2", "0.5", "--out", str(tmp_path / "q.json"), "--quiet"])
    line = capsys.readouterr().out.strip()
    assert code == 0 and len(line.splitlines()) == 1
    assert any(f"({name})" in line for name in NAMES), line


def test_npz_data_keep_index_labels(tmp_path, data, capsys):
    X, y = data
    np.savez(tmp_path / "d.npz", X=X, y=y)
    code = main(["certify", "--data", str(tmp_path / "d.npz"), "--k", "2", "--lambda2", "0.5",
                 "--out", str(tmp_path / "n.json")])
    model = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("model"))
    assert code == 0 and model.count("b[") == 2


def test_api_takes_names_from_a_dataframe(data):
    pd = pytest.importorskip("pandas")
    X, y = data
    df = pd.DataFrame(X, columns=NAMES)
    res = sparsecert.certify(df, pd.Series(y), 2, 0.5, verbose=0)
    ref = sparsecert.certify(X, y, 2, 0.5, verbose=0)
    assert res.feature_names == tuple(NAMES)
    assert ref.feature_names is None
    assert res.objective == ref.objective and res.support == ref.support
    assert all(NAMES[j] in res.summary() for j in res.support)
    # integer column labels are not names (as scikit-learn's feature_names_in_)
    assert sparsecert.certify(pd.DataFrame(X), y, 2, 0.5, verbose=0).feature_names is None


def test_api_feature_names_argument(data):
    X, y = data
    res = sparsecert.certify(X, y, 2, 0.5, verbose=0, feature_names=NAMES)
    assert res.feature_names == tuple(NAMES)
    with pytest.raises(ValueError, match="4 names for 5 features"):
        sparsecert.certify(X, y, 2, 0.5, verbose=0, feature_names=NAMES[:4])
    with pytest.raises(TypeError, match="sequence of strings"):
        sparsecert.certify(X, y, 2, 0.5, verbose=0, feature_names=list(range(5)))


def test_no_box_reads_the_same_in_certify_verify_and_show(csv_file, tmp_path, capsys):
    """``max_abs_coef`` without a box is rendered one way (None) by every command."""
    out = str(tmp_path / "box.json")
    data = ["--data", str(csv_file), "--target", "target"]
    assert main(["certify", *data, "--k", "1", "--lambda2", "0.5", "--out", out]) == 0
    assert main(["verify", out, *data]) == 0
    assert main(["show", out]) == 0
    text = capsys.readouterr().out
    assert "max_abs_coef=inf" not in text
    assert text.count("max_abs_coef=None") >= 3, text
