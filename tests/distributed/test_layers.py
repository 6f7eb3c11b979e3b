"""The distributed wing's layers, checked on the source: the bit layer below the network layer,
no import circle, small modules, and the quantizer's three entry points."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "src" / "sparsecert" / "distributed"

# the bit layer: messages, codecs, encoders; none of it may know the network layer
BIT_LAYER = ["message.py", "bitstream.py", "entropy.py", "encoder.py", "compress.py",
             "quantize.py", "quantize_codes.py", "quantize_kernels.py",
             "dequantize_kernels.py", "round_decoder.py", "levels.py"]


def _module(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every ``sparsecert.distributed`` module a file imports, at any depth (lazy imports
    inside functions count: they are circles all the same)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("sparsecert.distributed")}


FILES = sorted(PKG.rglob("*.py"))
MODULES = {_module(p): p for p in FILES}


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        deps = {m for m in _imports(path) if m in MODULES and m != name}
        # importing a package's submodule runs the package first: not an edge of the file's own
        graph[name] = {m for m in deps if not name.startswith(m + ".")}
    return graph


@pytest.mark.parametrize("name", BIT_LAYER)
def test_the_bit_layer_does_not_import_the_network_layer(name):
    bad = {m for m in _imports(PKG / name) if m.startswith("sparsecert.distributed.comm")}
    assert not bad, f"{name} imports {sorted(bad)}"


def test_no_import_circle_in_the_distributed_wing():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_over_600_lines(path):
    n = len(path.read_text().splitlines())
    assert n <= 600, f"{path.relative_to(PKG)} has {n} lines"


def test_the_quantizer_has_three_entry_points():
    from sparsecert.distributed.quantize import Quantizer

    own = {k for k in vars(Quantizer) if not k.startswith("_")}
    coding = own & {"encode", "decode", "decode_add", "quantize", "dequantize", "pack", "read",
                    "read_add", "histogram_of", "histogram", "bits", "bits_from_histogram",
                    "roundtrip"}
    assert coding == {"encode", "decode", "decode_add"}
    assert "__call__" not in vars(Quantizer)
