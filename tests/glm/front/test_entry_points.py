"""One validation path, one set of defaults, one label rule, across every entry point:
``certify``, ``certify_path``, the estimators and the ``sparsecert certify`` command."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from sparsecert.api import certify, verify
from sparsecert.cli.main import build_parser, main
from sparsecert.datasets import make_synthetic
from sparsecert.estimators import (
    KSparseHingeClassifier,
    KSparseLinearRegression,
    KSparseLogisticRegression,
)
from sparsecert.path import certify_path


@pytest.fixture(scope="module")
def reg():
    X, y, _ = make_synthetic(40, 7, 2, seed=21)
    return X, y + 3.0  # a non-zero mean: the intercept matters


@pytest.fixture(scope="module")
def clf():
    X, y, _ = make_synthetic(50, 6, 2, loss="logistic", seed=22)
    return X, (y > 0).astype(float)  # {0, 1}


# ----------------------------------------------------------------------------------------------
# one set of defaults
# ----------------------------------------------------------------------------------------------
def test_every_entry_point_fits_an_intercept_by_default():
    assert inspect.signature(certify).parameters["fit_intercept"].default is True
    assert inspect.signature(certify_path).parameters["fit_intercept"].default is True
    for est in (KSparseLinearRegression(), KSparseLogisticRegression(),
                KSparseHingeClassifier()):
        assert est.get_params()["fit_intercept"] is True
    parser = build_parser()
    args = parser.parse_args(["certify", "--data", "d.npz", "--k", "2", "--lambda2", "1"])
    assert args.fit_intercept is True
    args = parser.parse_args(["certify", "--data", "d.npz", "--k", "2", "--lambda2", "1",
                              "--no-fit-intercept"])
    assert args.fit_intercept is False


def _cli_objective(tmp_path, X, y, k, lam, *extra):
    np.savez(tmp_path / "d.npz", X=X, y=y)
    out = tmp_path / "c.json"
    code = main(["certify", "--data", str(tmp_path / "d.npz"), "--k", str(k), "--lambda2",
                 str(lam), "--out", str(out), "--quiet", "--force", *extra])  # one scratch file
    assert code == 0
    return json.loads(out.read_text())["incumbent"]["objective"]


def test_same_objective_from_every_entry_point_regression(reg, tmp_path):
    X, y = reg
    k, lam = 2, 0.5
    a = certify(X, y, k, lam, verbose=0).objective
    b = KSparseLinearRegression(k=k, lambda2=lam).fit(X, y).objective_
    c = certify_path(X, y, [k], lam)[0].objective
    d = _cli_objective(tmp_path, X, y, k, lam)
    assert a == pytest.approx(b, rel=1e-9) and a == pytest.approx(c, rel=1e-9)
    assert a == pytest.approx(d, rel=1e-9)
    # and the default is the intercept: without it the objective is visibly worse here
    no = certify(X, y, k, lam, fit_intercept=False, verbose=0).objective
    assert no > a * 1.5
    assert _cli_objective(tmp_path, X, y, k, lam, "--no-fit-intercept") == pytest.approx(
        no, rel=1e-9)


@pytest.mark.parametrize("pair", [(0.0, 1.0), (-1.0, 1.0), (1.0, 2.0), (3.5, 7.0)])
def test_same_objective_from_every_entry_point_any_two_labels(clf, tmp_path, pair):
    """The smaller label is coded -1 everywhere, so any two labels give one objective."""
    X, y01 = clf
    k, lam = 2, 1.0
    y = np.where(y01 > 0, pair[1], pair[0])
    ref = certify(X, np.where(y01 > 0, 1.0, -1.0), k, lam, loss="logistic", verbose=0)
    res = certify(X, y, k, lam, loss="logistic", verbose=0)
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    # the label coding is the data's (the verifier derives it), never the certificate's
    assert "labels" not in res.certificate.problem and verify(res.certificate, X, y).ok
    if float(pair[0]).is_integer():
        est = KSparseLogisticRegression(k=k, lambda2=lam).fit(X, y)
        assert est.classes_.tolist() == [pair[0], pair[1]]
        assert est.objective_ == pytest.approx(ref.objective, rel=1e-9)
    else:  # scikit-learn's own rule: a non-integer float target is a regression target
        with pytest.raises(ValueError, match="continuous"):
            KSparseLogisticRegression(k=k, lambda2=lam).fit(X, y)
    assert certify_path(X, y, [k], lam, loss="logistic")[0].objective == pytest.approx(
        ref.objective, rel=1e-9)
    assert _cli_objective(tmp_path, X, y, k, lam, "--loss", "logistic") == pytest.approx(
        ref.objective, rel=1e-9)


def test_string_labels_follow_the_same_rule(clf):
    X, y01 = clf
    words = np.where(y01 > 0, "spam", "ham")  # "ham" < "spam": ham is coded -1
    est = KSparseHingeClassifier(k=2, lambda2=1.0).fit(X, words)
    ref = certify(X, y01, 2, 1.0, loss="squared_hinge", verbose=0)
    assert est.classes_.tolist() == ["ham", "spam"]
    assert est.objective_ == pytest.approx(ref.objective, rel=1e-9)


# ----------------------------------------------------------------------------------------------
# one exception policy
# ----------------------------------------------------------------------------------------------
BAD = [
    (dict(k=2.5), TypeError, "k must be an integer"),
    (dict(k=0), ValueError, "k"),
    (dict(lambda2="big"), TypeError, "lambda2"),
    (dict(lambda2=0.0), ValueError, "lambda2"),
    (dict(max_abs_coef=-1.0), ValueError, "max_abs_coef"),
    (dict(max_abs_coef="1"), TypeError, "max_abs_coef"),
    (dict(fit_intercept="yes"), TypeError, "fit_intercept"),
    (dict(rel_gap=1.5), ValueError, "rel_gap"),
    (dict(rel_gap="small"), TypeError, "rel_gap"),
    (dict(time_limit=0), ValueError, "time_limit"),
    (dict(time_limit="1s"), TypeError, "time_limit"),
    (dict(n_jobs=0), ValueError, "n_jobs"),
    (dict(n_jobs=1.5), TypeError, "n_jobs"),
]


def _call(entry, X, y, params):
    kw = dict(k=2, lambda2=1.0) | params
    k, lam = kw.pop("k"), kw.pop("lambda2")
    if entry == "certify":
        return certify(X, y, k, lam, verbose=0, **kw)
    if entry == "certify_path":
        return certify_path(X, y, [k], lam, **kw)
    return KSparseLinearRegression(k=k, lambda2=lam, **kw).fit(X, y)


@pytest.mark.parametrize("params, exc, match", BAD)
@pytest.mark.parametrize("entry", ["certify", "certify_path", "estimator"])
def test_one_exception_policy(reg, entry, params, exc, match):
    X, y = reg
    with pytest.raises(exc, match=match):
        _call(entry, X, y, params)


@pytest.mark.parametrize("entry", ["certify", "certify_path"])
@pytest.mark.parametrize("bad", [dict(k=99), dict(k=1.5), dict(rel_gap=-1.0),
                                 dict(node_limit=0), dict(eig_shift="big"),
                                 dict(node_selection="random")])
def test_cheap_checks_come_before_the_expensive_setup(reg, monkeypatch, entry, bad):
    """Bad arguments fail before the eigenvalue shift, the Lipschitz constant or the search."""
    import sparsecert.solvers.perspective.problem as problem_mod

    def expensive(*a, **kw):
        raise AssertionError("expensive setup ran before the arguments were checked")

    monkeypatch.setattr(problem_mod, "safe_eig_shift", expensive)
    monkeypatch.setattr(problem_mod.RelaxationProblem, "from_prepared", expensive)
    X, y = reg
    kw = dict(k=2) | bad
    k = kw.pop("k")
    with pytest.raises((TypeError, ValueError)):  # an AssertionError would escape
        if entry == "certify":
            certify(X, y, k, 1.0, verbose=0, **kw)
        else:
            certify_path(X, y, [k], 1.0, **kw)


@pytest.mark.parametrize("out, needle", [("d.json", "d.proof exists and is not"),
                                         ("d.npz", "must end in .json"),
                                         ("sub", "must end in .json")])
def test_cli_refuses_a_bad_out_before_solving(reg, tmp_path, monkeypatch, capsys, out, needle):
    """A refused --out is one line and exit 2 before any solving: the user does not wait for
    a solve whose certificate cannot be written, and their files are untouched."""
    import sparsecert.api

    def solve(*a, **kw):
        raise AssertionError("the solver ran before --out was checked")

    monkeypatch.setattr(sparsecert.api, "certify", solve)
    monkeypatch.setattr(sparsecert.api, "certify_prepared", solve)
    monkeypatch.chdir(tmp_path)
    X, y = reg
    np.savez("d.npz", X=X, y=y)
    (tmp_path / "sub").mkdir()
    (tmp_path / "d.proof").write_bytes(b"the user's own file")  # where d.json's proof goes
    data = (tmp_path / "d.npz").read_bytes()
    code = main(["certify", "--data", "d.npz", "--k", "2", "--lambda2", "1", "--out", out])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and needle in lines[0], captured.err
    assert captured.out == ""  # refused before the start line
    assert (tmp_path / "d.npz").read_bytes() == data
    assert (tmp_path / "d.proof").read_bytes() == b"the user's own file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npz", "d.proof", "sub"]
