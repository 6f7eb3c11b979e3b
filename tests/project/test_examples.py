"""Smoke test: every example runs in its --quick setting and writes its PNGs."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))

#: PNGs each example must write
EXPECTED = {
    "certify_regression.py": ["diabetes_coefficients.png", "riboflavin_coefficients.png"],
    "certify_breast_cancer.py": ["breast_cancer_logistic.png"],
    "dual_bound_convergence.py": ["dual_bound_convergence.png"],
    "bnb_progress.py": ["bnb_progress.png"],
    "certified_path.py": ["certified_path.png"],
    "certified_gap_heuristics.py": ["certified_gap_heuristics.png"],
    "compare_cvxpy_relaxation.py": ["compare_cvxpy_relaxation.png"],
    "compare_cvxpy_mip.py": ["compare_cvxpy_mip.png"],
    "compare_cvxpy_logistic.py": ["compare_cvxpy_logistic.png"],
    "federated_hyperparameter_tuning.py": ["federated_hyperparameter_tuning.png"],
    "qoda_wgan.py": ["qoda_wgan.png"],
    "fair_federated_logistic.py": ["fair_federated_logistic.png"],
    "standardization.py": ["standardization.png"],
    "federated_own_data.py": ["federated_own_data.png"],
}


def test_every_example_is_listed():
    assert {p.name for p in SCRIPTS} == set(EXPECTED)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_runs_quick(script, tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib", reason="the examples plot with matplotlib")
    if script.name.startswith("compare_cvxpy"):
        pytest.importorskip("cvxpy", reason="the cvxpy comparisons need cvxpy")
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path)  # anything written by mistake lands in the temp dir
    monkeypatch.setattr(sys, "argv", [str(script), "--quick", "--out", str(out)])
    monkeypatch.syspath_prepend(str(EXAMPLES))
    runpy.run_path(str(script), run_name="__main__")
    for name in EXPECTED[script.name]:
        png = out / name
        assert png.exists() and png.stat().st_size > 1000, f"{script.name} did not write {name}"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "wrote" in printed


def test_the_compare_extra_installs_every_solver_the_comparisons_use():
    import tomllib

    root = EXAMPLES.parent
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["compare"]
    packages = {req.split(">")[0].split("=")[0].strip().lower() for req in extra}
    monkey = runpy.run_path(str(EXAMPLES / "_common.py"))
    hinted = {hint.split()[-1].lower() for hint in monkey["INSTALL_HINT"].values()}
    assert hinted | {"cvxpy", "matplotlib"} <= packages


def test_a_comparison_names_its_missing_solvers_in_the_figure(tmp_path, monkeypatch, capsys):
    """With SCIP and ECOS_BB absent, the MIP comparison still runs, says so on stdout and
    writes the names (and how to install them) into its figure."""
    cp = pytest.importorskip("cvxpy")
    pytest.importorskip("matplotlib")
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import _common

    texts = []

    def savefig(fig, out, name):
        texts.extend(t.get_text() for t in fig.texts)
        return real(fig, out, name)

    real = _common.savefig
    monkeypatch.setattr(_common, "savefig", savefig)
    monkeypatch.setattr(cp, "installed_solvers", lambda: ["CLARABEL", "SCS"])
    script = EXAMPLES / "compare_cvxpy_mip.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--quick", "--out", str(tmp_path)])
    runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out
    assert "skipping SCIP" in printed and "skipping ECOS_BB" in printed
    note = " ".join(texts)
    assert "SCIP (pip install pyscipopt)" in note and "ECOS_BB (pip install ecos)" in note
    assert '.[compare]' in note


def test_every_example_is_in_the_examples_readme():
    readme = (EXAMPLES / "README.md").read_text()
    missing = [p.name for p in SCRIPTS if f"python examples/{p.name}" not in readme]
    assert not missing, f"examples/README.md does not show how to run {missing}"
