"""The public entry points: sparsecert.certify / sparsecert.verify, end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from _bruteforce import brute_force

import sparsecert
from sparsecert.certificate import Certificate
from sparsecert.datasets import make_synthetic


def _data(loss="squared", n=60, p=8, seed=0):
    X, y, _ = make_synthetic(n, p, 3, loss=loss, seed=seed, snr=3.0)
    return X, y


def test_certify_is_a_plain_function_with_its_signature():
    import inspect

    import sparsecert.certificate as certificate_pkg

    assert inspect.isfunction(sparsecert.certify)
    params = inspect.signature(sparsecert.certify).parameters
    assert list(params)[:4] == ["X", "y", "k", "lambda2"]
    assert "Solve a k-sparse GLM" in sparsecert.certify.__doc__
    assert Certificate is certificate_pkg.Certificate
    # help(sparsecert.verify) shows its defaults readably (not an object's address)
    assert "object at" not in str(inspect.signature(sparsecert.verify))


def test_verify_takes_the_result_of_certify():
    X, y = _data(n=30, p=5)
    res = sparsecert.certify(X, y, 2, 0.5, verbose=0)
    assert sparsecert.verify(res, X, y).ok
    assert not sparsecert.verify(res, X, y + 1.0).ok


@pytest.mark.parametrize("loss,fit_intercept", [("squared", False), ("squared", True),
                                                ("logistic", False), ("poisson", False)])
def test_certify_verify_roundtrip_matches_enumeration(tmp_path, loss, fit_intercept):
    X, y = _data("logistic" if loss == "logistic" else "squared")
    if loss == "poisson":
        y = np.random.default_rng(1).poisson(np.exp(0.3 * X[:, 0])).astype(float)
    if loss == "logistic":
        y = (y > 0).astype(float)  # {0,1} labels at the API boundary
    k, lam = 3, 0.3
    res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=fit_intercept, verbose=0)
    y_ref = np.where(y > 0, 1.0, -1.0) if loss == "logistic" else y
    ref, support = brute_force(X, y_ref, k, loss, lam, fit_intercept=fit_intercept)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref + 1e-7 * max(1, abs(ref))
    assert res.gap <= 1e-4
    res.save(tmp_path / "c.json")
    rep = sparsecert.verify(tmp_path / "c.json", X, y)
    assert rep.ok and rep.exit_code == 0, str(rep)
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["bounds"]["status"] == "optimal"
    assert doc["problem"]["k"] == k


@pytest.mark.timeout(300)
def test_certificate_identical_across_executors(tmp_path):
    X, y = _data("logistic", p=9, seed=2)
    kw = dict(loss="logistic", verbose=0, rel_gap=0.0, abs_gap=0.0, node_limit=30)
    a = sparsecert.certify(X, y, 3, 0.05, **kw)
    b = sparsecert.certify(X, y, 3, 0.05, n_jobs=2, **kw)
    a.save(tmp_path / "a.json")
    b.save(tmp_path / "b.json")
    ja = json.loads((tmp_path / "a.json").read_text())
    jb = json.loads((tmp_path / "b.json").read_text())
    for doc in (ja, jb):
        doc.pop("producer")  # times and the executor used
    assert ja == jb
    assert (tmp_path / "a.proof").read_bytes() == (tmp_path / "b.proof").read_bytes()


def test_limits_give_honest_certificates(tmp_path):
    X, y = _data("logistic", p=9, seed=3)
    res = sparsecert.certify(X, y, 3, 0.02, loss="logistic", fit_intercept=False,
                             node_limit=2, rel_gap=0.0, abs_gap=0.0, verbose=0)
    assert res.status == "node_limit"
    ref, _ = brute_force(X, y, 3, "logistic", 0.02)
    assert res.lower_bound <= ref + 1e-8 <= res.objective + 2e-8
    res.save(tmp_path / "c.json")
    rep = sparsecert.verify(tmp_path / "c.json", X, y)
    assert rep.ok, str(rep)
    assert rep.exit_code == 3  # verified, but the gap is above the requested tolerance (0)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(k=0), ValueError, "k"), (dict(k=9), ValueError, "k"),
    (dict(lambda2=0.0), ValueError, "lambda2"), (dict(lambda2=-1.0), ValueError, "lambda2"),
    (dict(loss="hinge"), ValueError, "loss"),
    (dict(k=2.5), TypeError, "k must be an integer"),  # a bad type: TypeError everywhere
])
def test_bad_arguments_raise_clear_errors(kwargs, exc, match):
    X, y = _data(p=8)
    args = dict(k=2, lambda2=1.0, loss="squared", verbose=0) | kwargs
    with pytest.raises(exc, match=match):
        sparsecert.certify(X, y, **args)


def test_bad_data_raise_clear_errors():
    X, y = _data(p=6)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        sparsecert.certify(Xn, y, 2, 1.0, verbose=0)
    with pytest.raises(ValueError, match="shape|samples|length"):
        sparsecert.certify(X, y[:-1], 2, 1.0, verbose=0)
    with pytest.raises(ValueError, match="binary|labels"):
        sparsecert.certify(X, np.arange(len(y), dtype=float), 2, 1.0, loss="logistic",
                           verbose=0)
    with pytest.raises(ValueError, match="negative|counts|Poisson|poisson"):
        sparsecert.certify(X, -np.ones(len(y)), 2, 1.0, loss="poisson", verbose=0)


def test_user_data_is_not_modified():
    X, y = _data("logistic", p=6)
    y01 = (y > 0).astype(float)
    X0, y0 = X.copy(), y01.copy()
    sparsecert.certify(X, y01, 2, 1.0, loss="logistic", fit_intercept=False, verbose=0)
    assert np.array_equal(X, X0) and np.array_equal(y01, y0)


def test_main_job_command(tmp_path):
    """`sparsecert certify` with no data: the README's first command."""
    import os
    from pathlib import Path

    src = str(Path(sparsecert.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "sparsecert", "certify"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    assert "VERIFIED" in out.stdout
    assert (tmp_path / "sparsecert-certificate.json").exists()
