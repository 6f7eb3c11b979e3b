"""The two wings of the package do not import each other (checked on the source, statically)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "sparsecert"
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
