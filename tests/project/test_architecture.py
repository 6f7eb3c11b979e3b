"""The two wings of the package do not import each other (checked on the source, statically)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "src" / "sparsecert"
SHARED = {"sparsecert._version"}


def _imports(path: Path) -> set[str]:
    """Every absolute ``sparsecert...`` module a file imports (at any depth of the file)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "sparsecert" or m.startswith("sparsecert.")}


def _files(sub: str) -> list[Path]:
    return sorted((PKG / sub).rglob("*.py"))


@pytest.mark.parametrize("path", _files("distributed"), ids=lambda p: p.name)
def test_distributed_wing_imports_only_itself(path):
    bad = {m for m in _imports(path)
           if not m.startswith("sparsecert.distributed") and m not in SHARED}
    assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


GLM_FILES = [p for p in PKG.rglob("*.py") if "distributed" not in p.relative_to(PKG).parts]


@pytest.mark.parametrize("path", GLM_FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_glm_wing_never_imports_the_distributed_wing(path):
    bad = {m for m in _imports(path) if m.startswith("sparsecert.distributed")}
    assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


# ----------------------------------------------------------------------------------------------
# the front composes with the engine and the estimators through public names only
# ----------------------------------------------------------------------------------------------
FRONT = ["path.py", "api.py", "cli/main.py"]  # estimators.py reads its own classes


def _private_uses(path: Path) -> list[str]:
    """Private names a module takes from another module of the package (``from m import _x``),
    private attributes it reads on anything but ``self`` / ``cls`` / ``super()`` (``obj._x``),
    and subclasses of the search engine."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sparsecert"):
            out += [f"from {node.module} import {a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_")
              and not node.attr.startswith("__")):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super":
                continue
            out.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ClassDef):
            out += [f"class {node.name}({ast.unparse(b)})" for b in node.bases
                    if ast.unparse(b).endswith("BranchAndBound")]
    return out


@pytest.mark.parametrize("name", FRONT)
def test_the_front_uses_public_names_only(name):
    """``certify_path`` composes with ``BranchAndBound`` through its extension points and the
    cross-validation uses the estimators' public helpers: no private imports, no private
    attributes of other objects, no subclass of the engine."""
    bad = _private_uses(PKG / name)
    assert not bad, f"{name}: {bad}"


def test_the_private_use_check_catches_what_it_looks_for(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("from sparsecert.api import _helper\n"
                   "class P(BranchAndBound):\n"
                   "    def f(self, eng):\n"
                   "        self._ok = super()._ok()\n"
                   "        return eng._process(1)\n")
    assert sorted(_private_uses(src)) == ["class P(BranchAndBound)",
                                          "from sparsecert.api import _helper",
                                          "line 5: eng._process"]


# ----------------------------------------------------------------------------------------------
# the proof producer and the verifier; the loss as a plug-in
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", _files("proof"), ids=lambda p: p.name)
def test_the_producer_never_imports_the_verifier(path):
    bad = {m for m in _imports(path) if m.startswith("sparsecert.certificate.verify")}
    assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_the_verifier_imports_nothing_of_the_package():
    assert _imports(PKG / "certificate" / "verify.py") == set()


#: where a loss may be told apart by its name: the registry, the compiled kernels, the
#: standalone verifier (its own copy of the maths) and the synthetic-data generator (whose
#: ``loss`` names the kind of response it draws)
LOSS_NAME_PLACES = {"solvers/losses.py", "solvers/loss_kernels.py", "certificate/verify.py",
                    "datasets.py"}


def _loss_name_tests(path: Path) -> list[str]:
    """Comparisons with a loss's name (``loss == "squared"``, ``loss in ("logistic", ...)``)."""
    from sparsecert.solvers.losses import LOSS_NAMES

    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                names = [c.value for c in ast.walk(side) if isinstance(c, ast.Constant)]
                if any(v in LOSS_NAMES for v in names if isinstance(v, str)):
                    out.append(f"line {node.lineno}: {ast.unparse(node)}")
                    break
    return out


@pytest.mark.parametrize("path", [p for p in GLM_FILES
                                  if p.relative_to(PKG).as_posix() not in LOSS_NAME_PLACES],
                         ids=lambda p: str(p.relative_to(PKG)))
def test_no_loss_is_told_apart_by_its_name(path):
    """The solver, the producer and the front read a loss's capabilities
    (:class:`sparsecert.solvers.losses.Loss`), never compare its name."""
    bad = _loss_name_tests(path)
    assert not bad, f"{path.relative_to(PKG)}: {bad}"


def test_the_loss_name_check_catches_what_it_looks_for(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f(loss, prob):\n"
                   "    if loss == 'squared' or prob.loss in ('logistic', 'poisson'):\n"
                   "        return loss != 'x'\n")
    assert len(_loss_name_tests(src)) == 2
