"""The command line on the extended problem: a weight column and an offset column (of a .csv,
arrays of a .npz, or .npy files), bounds, signs, forced-in and excluded features, for certify
and verify; bad input one line on stderr and exit 2."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _cli import one_error_line
from _extended_ref import brute_force

from sparsecert.certificate.verify import verify_certificate
from sparsecert.cli.main import main


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 30
    X = rng.standard_normal((n, 4))
    y = X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(n)
    w = rng.uniform(0.0, 2.0, n)
    w[4] = 0.0
    o = 0.2 * rng.standard_normal(n)
    cols = {"a": X[:, 0], "b": X[:, 1], "wt": w, "c": X[:, 2], "target": y, "d": X[:, 3],
            "off": o}
    rows = [",".join(repr(float(v[i])) for v in cols.values()) for i in range(n)]
    (tmp_path / "d.csv").write_text(",".join(cols) + "\n" + "\n".join(rows) + "\n")
    np.savez(tmp_path / "d.npz", X=X, y=y, w=w, o=o)
    np.save(tmp_path / "w.npy", w)
    return tmp_path, X, y, w, o


def test_weight_and_offset_columns_certify_and_verify(files, capsys, monkeypatch):
    tmp, X, y, w, o = files
    monkeypatch.chdir(tmp)
    args = ["--k", "2", "--lambda2", "0.1", "--no-fit-intercept", "--exclude", "0",
            "--coef-bounds=-0.8,2"]
    assert main(["certify", "--data", "d.csv", "--target", "target", "--sample-weight", "wt",
                 "--offset", "off", "--out", "c.json", "--quiet", *args]) == 0
    out = capsys.readouterr().out
    assert "optimal" in out and "verified" in out
    # the certificate is about the data without the weight and offset columns, with them
    lower, upper = np.full(4, -0.8), np.full(4, 2.0)
    ref = brute_force(X, y, 2, "squared", 0.1, w=w, o=o, exclude=[0], lower=lower, upper=upper)
    rep = verify_certificate(str(tmp / "c.json"), X, y, sample_weight=w, offset=o, exclude=[0],
                             coef_bounds=(-0.8, 2.0))
    assert rep.ok, str(rep)
    objective = float(out.split("objective ")[1].split(",")[0])
    assert objective == pytest.approx(ref[0], rel=1e-6)
    # verify with the same columns; the .npz arrays and a .npy file name the same vectors
    base = ["verify", "c.json", "--quiet"]
    assert main([*base, "--data", "d.csv", "--target", "target", "--sample-weight", "wt",
                 "--offset", "off", "--exclude", "0"]) == 0
    assert main([*base, "--data", "d.npz", "--sample-weight", "w.npy", "--offset", "o"]) == 0
    capsys.readouterr()
    # without the offset the data is not the certified data; other posed parameters fail
    assert main([*base, "--data", "d.npz", "--sample-weight", "w"]) == 1
    assert main([*base, "--data", "d.npz", "--sample-weight", "w", "--offset", "o",
                 "--positive"]) == 1
    assert main([*base, "--data", "d.npz", "--sample-weight", "w", "--offset", "o",
                 "--always-select", "1"]) == 1
    assert "FAILED: parameters" in capsys.readouterr().out
    # show states the optional parts of the problem (the column names label the features)
    assert main(["show", "c.json"]) == 0
    also = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  also")]
    assert also and "weighted samples" in also[0] and "offsets" in also[0]
    assert "bounds on 4 coefficient(s)" in also[0] and "excluded: a" in also[0]


@pytest.mark.parametrize("extra,match", [
    (["--sample-weight", "nope"], "no column 'nope'"),
    (["--sample-weight", "target"], "is the target column"),
    (["--sample-weight", "wt", "--offset", "wt"], "the same column"),
    (["--offset", "missing.npy"], "does not exist"),
    (["--sample-weight", "a"], "sample-weight: sample_weight.* is negative"),
    (["--always-select", "0,1", "--exclude", "1"], "overlap"),
    (["--always-select", "0,1,2"], "more than k = 2"),
    (["--coef-bounds", "1,2"], "coef-bounds.*excludes b = 0"),
    (["--coef-bounds=-1,-2"], "coef-bounds"),
    (["--exclude", "9"], "exclude"),
    (["--always-select", "x"], "comma-separated column indices"),
])
def test_bad_extended_options_are_one_line_and_exit_2(files, capsys, monkeypatch, extra, match):
    tmp = files[0]
    monkeypatch.chdir(tmp)
    code = main(["certify", "--data", "d.csv", "--target", "target", "--k", "2", "--lambda2",
                 "0.1", "--quiet", "--out", "c.json", *extra])
    assert code == 2
    assert re.search(match, one_error_line(capsys))
    assert not (tmp / "c.json").exists()


def test_npz_weights_of_the_wrong_length_or_sign(files, capsys, monkeypatch):
    tmp, X, y, w, o = files
    monkeypatch.chdir(tmp)
    np.savez(tmp / "short.npz", X=X, y=y, w=w[:5])
    bad = w.copy()
    bad[3] = np.nan
    np.savez(tmp / "nan.npz", X=X, y=y, w=bad)
    for data, match in (("short.npz", "length 5"), ("nan.npz", "not finite")):
        assert main(["certify", "--data", data, "--sample-weight", "w", "--k", "2",
                     "--lambda2", "0.1", "--quiet", "--out", "c.json"]) == 2
        assert match in one_error_line(capsys)
    assert main(["certify", "--sample-weight", "w", "--quiet", "--out", "c.json"]) == 2
    assert "needs --data" in one_error_line(capsys)
