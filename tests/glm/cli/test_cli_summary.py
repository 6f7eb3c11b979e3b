"""The answer ``sparsecert certify`` prints: plain words first, the audit trail on request."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
from _certgen import make_data

from sparsecert._validation import prepare
from sparsecert.cli.main import main
from sparsecert.cli.summary import certify_summary, fit_measures, model_equation
from sparsecert.problem import ProblemSpec, SearchOptions
from sparsecert.statuses import what_it_means


# ------------------------------------------------------------------------------ fit measures
def test_squared_fit_measures_match_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    X, y = make_data("squared", n=30, p=4, seed=1)
    coef, c = np.array([0.5, 0.0, -1.0, 0.0]), 0.3
    u = X @ coef + c
    m = fit_measures("squared", X, y, coef, c)
    assert m["r2"] == pytest.approx(metrics.r2_score(y, u), rel=1e-12)
    assert m["rmse"] == pytest.approx(np.sqrt(metrics.mean_squared_error(y, u)), rel=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_logistic_fit_measures_match_scikit_learn(fit_intercept):
    metrics = pytest.importorskip("sklearn.metrics")
    X, y = make_data("logistic", n=40, p=3, seed=2)  # labels -1 / +1
    coef, c = np.array([1.0, -0.5, 0.0]), (0.2 if fit_intercept else 0.0)
    u = X @ coef + c
    m = fit_measures("logistic", X, y, coef, c, fit_intercept)
    prob = 1.0 / (1.0 + np.exp(-u))
    assert m["accuracy"] == pytest.approx(metrics.accuracy_score(y, np.where(u > 0, 1, -1)))
    assert m["deviance"] == pytest.approx(2 * metrics.log_loss(y, prob, normalize=False),
                                          rel=1e-10)
    # the null model: the share of +1 labels (with an intercept), else probability 1/2
    share = np.mean(y > 0) if fit_intercept else 0.5
    null = 2 * metrics.log_loss(y, np.full(len(y), share), normalize=False)
    assert m["null_deviance"] == pytest.approx(null, rel=1e-10)


def test_poisson_fit_measures_match_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3))
    y = rng.poisson(np.exp(0.3 * X[:, 0])).astype(float)  # zeros included
    coef, c = np.array([0.3, 0.0, 0.1]), 0.05
    m = fit_measures("poisson", X, y, coef, c)
    n = len(y)
    assert m["deviance"] == pytest.approx(
        n * metrics.mean_poisson_deviance(y, np.exp(X @ coef + c)), rel=1e-10)
    assert m["null_deviance"] == pytest.approx(
        n * metrics.mean_poisson_deviance(y, np.full(n, y.mean())), rel=1e-10)


def test_squared_hinge_reports_accuracy():
    X, y = make_data("squared_hinge", n=20, p=3, seed=4)
    coef = np.array([1.0, 0.0, 0.0])
    m = fit_measures("squared_hinge", X, y, coef, 0.0)
    assert set(m) == {"accuracy"}
    assert m["accuracy"] == np.mean(np.where(X[:, 0] > 0, 1.0, -1.0) == y)


def test_huber_reports_the_regression_measures_and_its_model_in_the_certify_summary(
        tmp_path, capsys):
    """A loss added to the registry is summarised from its capabilities (real responses: R^2
    and RMSE; its linear predictor is y), never by its name."""
    metrics = pytest.importorskip("sklearn.metrics")
    X, y = make_data("squared", n=30, p=4, seed=5)
    coef, c = np.array([0.5, 0.0, -1.0, 0.0]), 0.3
    u = X @ coef + c
    m = fit_measures("huber", X, y, coef, c)
    assert m["r2"] == pytest.approx(metrics.r2_score(y, u), rel=1e-12)
    assert m["rmse"] == pytest.approx(np.sqrt(metrics.mean_squared_error(y, u)), rel=1e-12)
    assert model_equation("huber", coef, c, True).startswith("y = 0.3 + 0.5 b[0]")
    np.savez(tmp_path / "d.npz", X=X, y=y)
    assert main(["certify", "--data", str(tmp_path / "d.npz"), "--k", "2", "--lambda2", "1",
                 "--loss", "huber", "--huber-delta", "0.5", "--out",
                 str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "sum of huber losses" in out and "R^2 = " in out and "VERIFIED" in out


# ------------------------------------------------------------------------------ plain words
def test_what_it_means_states_the_proven_gap():
    s = what_it_means(5, 1000.0, 999.9)
    assert s == ("no model with at most 5 features has an objective lower than this one's by "
                 "more than 0.01% of its objective (proven)")
    assert "(claimed, not checked)" in what_it_means(5, 1000.0, 999.9, proven=False)
    assert what_it_means(1, 2.0, 2.0).startswith("no model with at most 1 feature has a lower")
    # an objective of zero: the gap in absolute terms (no percentage of zero)
    assert what_it_means(3, 0.0, -0.25).endswith("by more than 0.25 (proven)")
    assert "no bound" in what_it_means(3, 1.0, float("-inf"))


def test_model_equation_names_signs_and_the_linear_predictor():
    coef = np.array([0.0, -2.5, 0.0, 1.25])
    names = ["a", "b", "c", "d"]
    assert model_equation("squared", coef, 3.0, True, names) == "y = 3 - 2.5 b + 1.25 d"
    assert model_equation("squared", coef, 0.0, False, None) == "y = -2.5 b[1] + 1.25 b[3]"
    assert model_equation("logistic", coef, -1.0, True, names, [0.0, 1.0]).startswith(
        "log-odds(y = 1) = -1 - 2.5 b")
    assert model_equation("poisson", np.zeros(4), 0.5, True).startswith("log E[y] = 0.5")


def _stand_in(status="optimal", compile_time=0.0, time=1.5):
    """A result and a report as certify and the verifier return them (the fields read)."""
    result = types.SimpleNamespace(
        status=status, objective=100.0, lower_bound=99.5, gap=0.005, coef=np.array([2.0, 0.0]),
        intercept=1.0, n_nodes=3, time=time,
        search=types.SimpleNamespace(compile_time=compile_time))
    report = types.SimpleNamespace(ok=True, failed_checks=[], checks=[("a", True, "")] * 18)
    return result, report


def _summary(result, report, **kw):
    X = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 5.0]])
    y = X[:, 0] * 2 + 1.0 + np.array([0.1, -0.1, 0.0])
    prepared = prepare(X, y, ProblemSpec(k=1, lambda2=0.5, fit_intercept=True, **kw))
    return "\n".join(certify_summary(result, report, prepared, SearchOptions(rel_gap=1e-4),
                                     names=["dose", "age"], out="c.json", sidecar="c.proof"))


def test_summary_separates_compiling_from_solving():
    text = _summary(*_stand_in(compile_time=4.0, time=4.5))
    line = next(ln for ln in text.splitlines() if ln.startswith("time"))
    assert "4.00 s compiling" in text and "0.50 s solving" in text, line
    text = _summary(*_stand_in(compile_time=0.0, time=1.5))
    assert "compiling" not in text and "1.50 s solving (3 nodes)" in text


def test_summary_of_a_stopped_search_says_why_and_what_was_asked():
    text = _summary(*_stand_in(status="time_limit"))
    assert "status      : time_limit (raise time_limit" in text and "asked was 0.0001" in text
    assert "by more than 0.5% of its objective (proven)" in text.replace("\n              ", " ")


# ------------------------------------------------------------------------------ the command
@pytest.fixture
def data_file(tmp_path):
    X, y = make_data("squared", n=24, p=5, seed=0)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    return tmp_path / "d.npz"


def test_certify_default_output_is_short_and_verbose_adds_the_audit(data_file, tmp_path,
                                                                     capsys):
    args = ["certify", "--data", str(data_file), "--k", "2", "--lambda2", "0.5"]
    assert main([*args, "--out", str(tmp_path / "a.json")]) == 0
    short = capsys.readouterr().out
    after = short[short.index("status      :"):].splitlines()
    labels = [ln.split(":")[0].strip() for ln in after if not ln.startswith(" ")]
    assert labels == ["status", "meaning", "model", "fit", "objective", "time", "certificate"]
    assert "[ok]" not in short and "R^2 = " in short and "(proven)" in short
    assert main([*args, "--out", str(tmp_path / "b.json"), "--verbose"]) == 0
    verbose = capsys.readouterr().out
    assert verbose.count("[ok] ") >= 15 and "[ok] leaf_bounds" in verbose
    assert "status      : optimal" in verbose


def test_classification_output_has_accuracy_and_deviance(tmp_path, capsys):
    X, y = make_data("logistic", n=30, p=4, seed=5)
    np.savez(tmp_path / "cls.npz", X=X, y=np.where(y > 0, 7.0, 3.0))  # labels 3 and 7
    assert main(["certify", "--data", str(tmp_path / "cls.npz"), "--k", "1", "--lambda2", "1",
                 "--loss", "logistic", "--out", str(tmp_path / "c.json")]) == 0
    text = capsys.readouterr().out
    assert "log-odds(y = 7) = " in text
    assert "accuracy = " in text and "deviance = " in text and "null deviance" in text


def test_show_audit_lists_every_node(data_file, tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["certify", "--data", str(data_file), "--k", "2", "--lambda2", "0.5",
                 "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    n_nodes = json.loads(out.read_text())["tree"]["n_nodes"]
    assert main(["show", str(out)]) == 0
    plain = capsys.readouterr().out
    assert "meaning   : no model with at most 2 features" in plain
    assert "(claimed, not checked)" in plain and "--audit" in plain
    assert main(["show", "--audit", str(out)]) == 0
    audit = capsys.readouterr().out
    listed = [ln.strip() for ln in audit.splitlines() if ln.startswith("    ")]
    assert n_nodes >= 1
    assert sorted(int(ln.split(":")[0]) for ln in listed) == list(range(n_nodes))
    assert listed[0].startswith("0: root")
