"""The parameter table is the one source of the entry points' parameters: their checks, their
defaults, their records, their docstrings and the command line's options all agree with it."""

from __future__ import annotations

import dataclasses
import inspect
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import sparsecert
from sparsecert._params import PARAMS, REQUIRED, defaults, fill_parameters
from sparsecert.api import certify
from sparsecert.bnb import BnBSettings
from sparsecert.cli.main import build_parser, main
from sparsecert.estimators import (
    KSparseHingeClassifier,
    KSparseHuberRegressor,
    KSparseLinearRegression,
    KSparseLogisticRegression,
    KSparsePoissonRegression,
)
from sparsecert.path import KSparseLinearRegressionCV, certify_path
from sparsecert.problem import EXECUTION_FIELDS, ProblemSpec, SearchOptions, build_records
from sparsecert.solvers.losses import LOSS_PARAMETERS

#: the source folder (the package is run from it, not installed)
SRC = Path(sparsecert.__file__).resolve().parents[1]

ESTIMATORS = [KSparseLinearRegression, KSparsePoissonRegression, KSparseLogisticRegression,
              KSparseHingeClassifier, KSparseHuberRegressor]


def _table_params(func) -> list[str]:
    return [n for n in inspect.signature(func).parameters if n in PARAMS]


# ----------------------------------------------------------------------------------------------
# the records
# ----------------------------------------------------------------------------------------------
def test_each_record_holds_exactly_its_rows_of_the_table():
    for record, cls in (("problem", ProblemSpec), ("search", SearchOptions)):
        table = [p.name for p in PARAMS.values() if p.record == record]
        fields = [f.name for f in dataclasses.fields(cls) if f.name in PARAMS]
        assert sorted(fields) == sorted(table), record
    # the record's defaults are the table's (the box's None becomes the one encoding, inf)
    spec, opts = ProblemSpec(None, 1.0), SearchOptions()
    for p in PARAMS.values():
        if p.record == "search":
            assert getattr(opts, p.name) == p.default, p.name
        elif p.record == "problem" and p.default is not REQUIRED:
            # (a loss's parameters: every one of the loss, here none)
            expected = {"max_abs_coef": math.inf, "loss_params": {}}.get(p.name, p.default)
            assert getattr(spec, p.name) == expected, p.name


def test_records_convert_at_the_edge_and_refuse_what_is_not_supported():
    spec = ProblemSpec(3, 2, max_abs_coef=None)
    assert spec.max_abs_coef == math.inf and not spec.has_box and type(spec.lambda2) is float
    assert ProblemSpec(3, 1.0, max_abs_coef=float("inf")) == spec.__class__(3, 1.0)
    assert ProblemSpec(3, 1.0, max_abs_coef=2).max_abs_coef == 2.0
    assert ProblemSpec(3, 1.0, loss="logistic").eig_shift is None  # "auto": no shift there
    assert spec.with_k(5).k == 5 and spec.with_k(5).lambda2 == 2.0
    opts = SearchOptions(batch_size=None, node_selection=None, branching=None, time_limit=3)
    assert (opts.batch_size, opts.node_selection, opts.branching) == (
        PARAMS["batch_size"].default, PARAMS["node_selection"].default,
        PARAMS["branching"].default)
    assert opts.time_limit == 3.0 and type(opts.time_limit) is float
    # per-sample and per-feature fields: converted, read-only, compared by value
    w = [1, 2, 0]
    spec = ProblemSpec(2, 1.0, sample_weight=w, offset=np.zeros(3), coef_bounds=(None, [1, 2, 3]),
                       positive=True, always_select=[2], exclude=np.array([0]))
    assert spec.sample_weight.dtype == np.float64 and not spec.sample_weight.flags.writeable
    assert spec.always_select == (2,) and spec.exclude == (0,)
    assert spec == ProblemSpec(2, 1.0, sample_weight=np.array(w, float), offset=[0, 0, 0],
                               coef_bounds=(-np.inf, np.array([1.0, 2, 3])), positive=True,
                               always_select=(2,), exclude=[0])
    assert spec != replace(spec, sample_weight=[1, 2, 1]) and spec != spec.with_k(3)
    lo, hi = replace(spec, max_abs_coef=1.5).coef_limits(3)
    assert lo.tolist() == [0, 0, 0] and hi.tolist() == [1, 1.5, 1.5]
    with pytest.raises(ValueError, match="always_select holds 3 features, more than k = 2"):
        ProblemSpec(2, 1.0, always_select=[0, 1, 2])
    with pytest.raises(ValueError, match="overlap on feature"):
        ProblemSpec(2, 1.0, always_select=[1], exclude=[1, 4])
    with pytest.raises(ValueError, match="eig_shift is only defined for the squared loss"):
        ProblemSpec(2, 1.0, loss="poisson", eig_shift=0.5)


@pytest.mark.parametrize("name, bad, exc", [
    ("k", 0, ValueError), ("k", 2.5, TypeError), ("lambda2", -1.0, ValueError),
    ("loss", "hinge", ValueError), ("fit_intercept", "yes", TypeError),
    ("max_abs_coef", 0.0, ValueError), ("eig_shift", "big", ValueError),
    ("rel_gap", 1.0, ValueError), ("abs_gap", -1.0, ValueError), ("time_limit", 0, ValueError),
    ("node_limit", 0, ValueError), ("n_jobs", 0, ValueError), ("batch_size", 0, ValueError),
    ("batch_overlap", -1, ValueError), ("batch_overlap", 1.5, TypeError),
    ("backend", "gpu", ValueError), ("executor", "pool", TypeError),
    ("node_selection", "random", ValueError), ("branching", "nope", ValueError),
    ("verbose", -1, ValueError), ("log", "stdout", TypeError), ("warm_start", 1, TypeError),
])
def test_every_check_names_its_parameter(name, bad, exc):
    with pytest.raises(exc, match=name) as info:
        PARAMS[name].validate(bad)
    assert info.value.param == name  # the command line names the option from it
    if PARAMS[name].record is not None:
        with pytest.raises(exc, match=name):
            build_records({"k": 2, "lambda2": 1.0, name: bad})


def test_every_default_passes_its_own_check():
    from sparsecert.bnb import BRANCHING_RULES, QUEUE_STRATEGIES

    for p in PARAMS.values():
        for entry in ("certify", "certify_path", "estimator"):
            default = p.default_for(entry)
            if default is not REQUIRED:
                p.check(default)
        if p.choices is not None:
            assert p.default in tuple(p.choices()), p.name
    assert PARAMS["node_selection"].default in QUEUE_STRATEGIES
    assert PARAMS["branching"].default in BRANCHING_RULES


def test_building_the_records_imports_nothing_heavy():
    """The command line builds the records (and refuses a bad option) before the solver is
    imported: the table, its checks and the records load numpy and the loss registry only."""
    code = ("import sys\nfrom sparsecert.problem import build_records\n"
            "build_records(dict(k=2, lambda2=1.0, rel_gap=0.01, n_jobs=2))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'scipy', "
            "'sklearn') or m.startswith(('sparsecert.bnb', 'sparsecert.solvers.perspective'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True,
                         timeout=120)
    assert out.stdout.strip() == "[]", out.stdout


def test_engine_settings_extend_the_search_options_and_record_the_tree_settings_only():
    s = BnBSettings.from_options(SearchOptions(rel_gap=0.01, n_jobs=2, verbose=0))
    assert isinstance(s, SearchOptions) and s.rel_gap == 0.01 and s.n_jobs == 2
    assert BnBSettings.from_options(s) is s
    assert BnBSettings.from_options(s, fixing=False).fixing is False
    # the certificate's producer settings: the search options but the execution ones (no
    # executor, no log), then the engine's tuning
    assert list(s.record()) == [
        "rel_gap", "abs_gap", "time_limit", "node_limit", "node_selection", "branching",
        "batch_size", "batch_overlap", "node_rel_tol", "node_open_rel_tol", "node_max_iter",
        "leaf_rel_tol", "leaf_max_iter", "beam_width", "n_candidates", "heuristic_every",
        "fixing", "subtree_nodes", "node_strategy", "log_interval"]
    assert s.record()["batch_overlap"] == s.batch_size // 4  # the default, resolved
    assert s.record()["node_open_rel_tol"] == 0.01  # the default (rel_gap), resolved
    assert not set(s.record()) & set(EXECUTION_FIELDS)
    with pytest.raises(ValueError, match="node_selection"):
        BnBSettings(node_selection="random")


def test_the_default_overlap_follows_the_batch_size_through_replace():
    # None means a quarter of batch_size: a copy with another batch size gets its own quarter,
    # not the quarter of the batch size it was copied from; a value given stays as given
    s = BnBSettings()
    assert s.batch_overlap is None and s.overlap == s.batch_size // 4
    for copy in (replace(s, batch_size=32), BnBSettings.from_options(s, batch_size=32)):
        assert copy.overlap == 8 and copy.record()["batch_overlap"] == 8
    given = BnBSettings(batch_overlap=3)
    assert replace(given, batch_size=40).overlap == 3
    assert BnBSettings(batch_overlap=0).record()["batch_overlap"] == 0


# ----------------------------------------------------------------------------------------------
# the entry points
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("func, entry, problem_args", [
    (certify, "certify", ["X", "y", "k", "lambda2"]),
    (certify_path, "certify_path", ["X", "y", "ks", "lambda2"]),
])
def test_public_functions_take_the_table_keyword_only_with_its_defaults(func, entry,
                                                                        problem_args):
    params = inspect.signature(func).parameters
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == problem_args
    for name in [n for n in params if n in PARAMS and n not in problem_args]:
        assert params[name].kind is params[name].KEYWORD_ONLY, name
        assert params[name].default == PARAMS[name].default_for(entry), name
    # every search option and problem field is a parameter of both (the path has ks for k)
    for p in PARAMS.values():
        if p.record is not None:
            assert p.name in params or (p.name, "ks") == ("k", problem_args[2]), p.name


@pytest.mark.parametrize("cls", [*ESTIMATORS, KSparseLinearRegressionCV])
def test_estimator_defaults_are_the_tables(cls):
    params = inspect.signature(cls.__init__).parameters
    names = [n for n in params if n in PARAMS]
    assert {"lambda2", "max_abs_coef", "fit_intercept", "rel_gap", "time_limit", "n_jobs",
            "verbose"} <= set(names)
    for name in names:
        assert params[name].default == PARAMS[name].default_for("estimator"), name
    assert defaults("estimator").k == 5 and defaults("estimator").verbose == 0


@pytest.mark.parametrize("obj, entry", [
    (certify, "certify"), (certify_path, "certify_path"),
    *[(cls, "estimator") for cls in ESTIMATORS], (KSparseLinearRegressionCV, "estimator")])
def test_docstrings_document_every_parameter_from_the_table(obj, entry):
    doc = inspect.getdoc(obj)
    func = obj.__init__ if inspect.isclass(obj) else obj
    for name in _table_params(func):
        p = PARAMS[name]
        default = p.default_for(entry)
        head = f"{name} : {p.type_doc}"
        lines = [ln for ln in doc.splitlines() if ln.startswith(head)]
        assert len(lines) == 1, (obj, name)
        assert (default is REQUIRED) == ("default=" not in lines[0]), (obj, name)
        body = " ".join(doc.split(lines[0], 1)[1].split())
        assert body.startswith(" ".join(p.doc.split())), (obj, name)
        assert f"\n{name}\n" not in doc  # no bare line left


def test_fill_parameters_replaces_bare_lines_and_keeps_remarks():
    doc = """Title.

    Parameters
    ----------
    X : array
        Data.
    rel_gap
    time_limit
        Per point.
    other
    k, verbose

    Returns
    -------
    rel_gap
    """
    out = fill_parameters(doc, "estimator")
    assert "    X : array\n        Data.\n" in out
    assert "    rel_gap : float, default=1e-4\n        Stop when" in out
    entry = out.split("    time_limit : float or None, default=None\n")[1].split("    other")[0]
    assert " ".join(entry.split()) == " ".join(PARAMS["time_limit"].doc.split()) + " Per point."
    assert "    other\n" in out  # not a parameter of the table: kept as written
    assert "    k : int, default=5\n" in out and "    verbose : int, default=0\n" in out
    assert out.index("    k : int") < out.index("    verbose : int")
    with pytest.raises(ValueError, match="below one name"):
        fill_parameters("Parameters\n----------\nk, verbose\n    Remark.\n")
    assert out.endswith("    Returns\n    -------\n    rel_gap\n    ")  # other sections kept


def test_k_is_checked_once_on_each_call_path(monkeypatch, tmp_path, capsys):
    """The parameter table's check of ``k`` runs once per call (the data's bound on it is the
    prepare step's), on the API, the estimators and the command line."""
    calls = []
    row = PARAMS["k"]
    monkeypatch.setitem(PARAMS, "k", dataclasses.replace(
        row, check=lambda v: calls.append(v) or row.check(v)))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 5))
    y = X[:, 0] + 0.1 * rng.standard_normal(20)
    certify(X, y, 2, 1.0, verbose=0)
    assert calls == [2]
    calls.clear()
    KSparseLinearRegression(k=2, lambda2=1.0).fit(X, y)
    assert calls == [2]
    calls.clear()
    np.savez(tmp_path / "d.npz", X=X, y=y)
    assert main(["certify", "--data", str(tmp_path / "d.npz"), "--k", "2", "--lambda2", "1",
                 "--out", str(tmp_path / "c.json"), "--quiet"]) == 0
    assert calls == [2]


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------
def _certify_parser():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sub.choices["certify"]


def test_certify_options_are_the_tables_rows_with_a_flag():
    parser = _certify_parser()
    by_flag = {flag: a for a in parser._actions for flag in a.option_strings}
    rows = [p for p in PARAMS.values() if p.cli is not None]
    own = {"-h", "--help", "--data", "--y", "--target", "--sample-weight", "--offset", "--out",
           "--force", "--quiet", "--verbose"}  # the command's own: data, output, what it prints
    own |= {"--" + name.replace("_", "-") for name in LOSS_PARAMETERS}  # the loss registry's
    table_flags = {p.cli.flag for p in rows}
    switches = {f"--no-{p.cli.flag[2:]}" for p in rows if isinstance(p.default, bool)}
    assert set(by_flag) == own | table_flags | switches
    # in the table's order, as --help lists them
    order = [a.option_strings[0] for a in parser._actions if a.option_strings]
    assert [f for f in order if f in table_flags] == [p.cli.flag for p in rows]
    for p in rows:
        action = by_flag[p.cli.flag]
        assert action.dest == p.name and action.help == p.cli.help
        # the job without --data has its own k and lambda2: those options have no default
        assert action.default == (None if p.name in ("k", "lambda2") else p.default)
        assert action.metavar == p.cli.metavar
        if p.choices is not None and p.cli.convert is None:
            assert tuple(action.choices) == tuple(p.choices())
    # the options the command has always had
    assert [p.cli.flag for p in rows] == ["--k", "--lambda2", "--loss", "--fit-intercept",
                                          "--max-abs-coef", "--coef-bounds", "--positive",
                                          "--always-select", "--exclude", "--rel-gap",
                                          "--time-limit", "--node-limit", "--jobs",
                                          "--batch-size", "--batch-overlap"]


@pytest.mark.parametrize("flag, value, needle", [
    ("--k", "0", "k must be >= 1, got k = 0"),
    ("--rel-gap", "2", "rel_gap must be in [0, 1), got 2.0"),
    ("--batch-overlap", "-1", "batch_overlap must be >= 0, got -1"),
    ("--time-limit", "-1", "time_limit must be > 0"),
    ("--node-limit", "0", "node_limit must be >= 1, got 0"),
    ("--jobs", "-2", "n_jobs must be a positive integer or -1, got -2"),
    ("--batch-size", "0", "batch_size must be >= 1, got 0"),
    ("--lambda2", "0", "lambda2 must be > 0"),
    ("--max-abs-coef", "-1", "max_abs_coef must be > 0"),
    ("--coef-bounds", "1,2", "coef_bounds: lower = 1.0 excludes b = 0"),
    ("--coef-bounds", "-1", "expected LOWER,UPPER"),
    ("--coef-bounds", "0,-1", "coef_bounds: lower = 0.0 > upper = -1.0"),
    ("--always-select", "1,x", "expected comma-separated column indices"),
    ("--exclude", "-1", "exclude holds the negative index -1"),
])
def test_a_bad_option_is_its_usage_error(capsys, flag, value, needle):
    assert main(["certify", flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"sparsecert: error: argument {flag}: {needle}")
    assert err[0].endswith("(see 'sparsecert certify --help')")


#: the entries of the constraint table that are not rows of the parameter table: the support
#: sizes of a path, the loss name (completed by the registry), the losses' targets, the fields
#: of a certificate's record and the synthetic generator's parameters
_NOT_ROWS = {"ks", "labels", "counts", "problem['loss']", "problem['k']", "problem['lambda2']",
             "problem['max_abs_coef']", "rho", "snr", "synthetic loss"}


def test_every_scalar_constraint_is_a_row_of_the_table_and_its_errors_name_it():
    """The scalar checks come from one declarative table (``_checks.CONSTRAINTS``) through one
    checker: each parameter entry is the check of the parameter table's row of that name, and a
    value of a wrong type or out of range is refused naming the parameter."""
    from sparsecert._checks import CONSTRAINTS

    out_of_range = {"k": 0, "lambda2": -1.0, "max_abs_coef": -1.0, "eig_shift": -1.0,
                    "rel_gap": 1.0, "abs_gap": -1.0, "time_limit": 0.0, "node_limit": 0,
                    "n_jobs": 0, "verbose": -1, "batch_overlap": -1}
    for name in set(CONSTRAINTS) - _NOT_ROWS:
        assert name in PARAMS, name
        with pytest.raises(TypeError, match=rf"^{name} must be"):
            PARAMS[name].validate(object())
        if name in out_of_range:
            with pytest.raises(ValueError, match=rf"^{name} must .*, got "):
                PARAMS[name].validate(out_of_range[name])
    assert set(out_of_range) | {"executor", "log", "loss"} | _NOT_ROWS == set(CONSTRAINTS)


def test_the_checks_outside_the_front_run_through_the_table():
    """The loss names, the support sizes, the losses' targets, the certificate record's fields
    and the synthetic generator's parameters are checked by the table's entries (one checker,
    :mod:`sparsecert._constraints`, which the solver layer imports below the front): each entry
    refuses a bad value with the message its caller gives."""
    from sparsecert import _constraints
    from sparsecert._constraints import CONSTRAINTS, check
    from sparsecert.certificate.problem import problem_section
    from sparsecert.datasets import make_synthetic
    from sparsecert.solvers.losses import binary_codes, check_loss, get_loss

    # the bottom layer imports nothing of the package
    assert not [n for n in vars(_constraints) if getattr(vars(_constraints)[n], "__module__",
                                                          "").startswith("sparsecert.")
                and vars(_constraints)[n].__module__ != "sparsecert._constraints"]
    with pytest.raises(TypeError, match=r"^loss must be a string, one of \('squared', "):
        check_loss(3)
    with pytest.raises(ValueError, match=r"^unknown loss 'hinge'; expected one of \("):
        check_loss("hinge")
    with pytest.raises(TypeError, match=r"^ks must hold integers: k must be an integer, got "
                                        r"float 1.5$"):
        check("ks", [1, 1.5], CONSTRAINTS["ks"])
    with pytest.raises(ValueError, match=r"^ks holds repeated values: \[1, 2, 2\]$"):
        check("ks", [2, 1, 2], CONSTRAINTS["ks"])
    with pytest.raises(ValueError, match=r"^ks is empty: give at least one support size$"):
        check("ks", [], CONSTRAINTS["ks"])
    assert check("ks", [3, 1], CONSTRAINTS["ks"]).tolist() == [1, 3]
    with pytest.raises(ValueError, match=r"^y must hold binary labels \(exactly two distinct "
                                         r"values\), got 3: 1, 2, 3$"):
        binary_codes([1, 2, 3])
    with pytest.raises(ValueError, match=r"^the logistic loss: y must hold binary labels "):
        get_loss("logistic").encode_target([1, 1])
    with pytest.raises(ValueError, match=r"^the poisson loss needs non-negative counts; y has 1 "
                                         r"negative value\(s\) \(min -2\)$"):
        get_loss("poisson").encode_target([1.0, -2.0])
    with pytest.raises(ValueError, match=r"^rho must satisfy \|rho\| < 1, got 1$"):
        make_synthetic(10, 4, 2, rho=1)
    with pytest.raises(ValueError, match=r"^loss must be a loss whose target is a real response "
                                         r"or two labels \(not counts\), got 'poisson'$"):
        make_synthetic(10, 4, 2, loss="poisson")
    X, y = np.eye(3), np.array([0.0, 1.0, 2.0])
    problem = {"loss": "squared", "k": 1, "lambda2": 1.0, "max_abs_coef": None}
    with pytest.raises(ValueError, match=r"^problem\['k'\] = 4 must be in \[0, p = 3\]$"):
        problem_section(X, y, {**problem, "k": 4})
    with pytest.raises(TypeError, match=r"^problem\['lambda2'\] must be a number, got a bool$"):
        problem_section(X, y, {**problem, "lambda2": True})
    with pytest.raises(ValueError, match=r"^problem\['max_abs_coef'\] = -2.0 must be > 0$"):
        problem_section(X, y, {**problem, "max_abs_coef": -2})
