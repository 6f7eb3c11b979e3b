"""The documentation as a reader gets it: nothing loaded from the network."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _checker():
    spec = importlib.util.spec_from_file_location("check_offline", ROOT / "docs" /
                                                  "check_offline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _site(tmp_path: Path, body: str, css: str = "") -> Path:
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "local.js").write_text("//")
    (tmp_path / "_static" / "theme.css").write_text(css or "body { color: black; }")
    (tmp_path / "index.html").write_text(
        "<html><head><script src='_static/local.js'></script>"
        "<link rel='stylesheet' href='_static/theme.css'>"
        f"<a href='https://example.org/'>a link is not a load</a></head><body>{body}</body></html>")
    return tmp_path


def test_offline_check_passes_a_local_site(tmp_path):
    chk = _checker()
    site = _site(tmp_path, "<img src='data:image/png;base64,AAAA'>")
    assert chk.problems(site) == []
    assert chk.main([str(site)]) == 0


@pytest.mark.parametrize("body, css, what", [
    ("<script src='https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js'></script>", "",
     "script src"),
    ("<script src='//cdn.example.org/x.js'></script>", "", "script src"),
    ("<link rel='stylesheet' href='http://fonts.example.org/f.css'>", "", "link rel"),
    ("<style>@font-face { src: url(https://fonts.example.org/f.woff2); }</style>", "", "style"),
    ("", "@font-face { src: url('https://fonts.example.org/f.woff2'); }", "theme.css"),
    ("<script src='_static/missing.js'></script>", "", "does not exist"),
])
def test_offline_check_catches_network_and_missing_resources(tmp_path, body, css, what):
    chk = _checker()
    site = _site(tmp_path, body, css)
    found = chk.problems(site)
    assert len(found) == 1 and what in found[0], found
    assert chk.main([str(site)]) == 1


def test_docs_configuration_serves_math_and_theme_locally():
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert 'html_theme = "pydata_sphinx_theme"' in conf
    assert '"sphinx-mathjax-offline"' in conf  # MathJax copied into _static by the extension
    assert "mathjax_path" not in conf  # no override pointing back at a CDN


def test_project_files_cite_only_what_the_repository_holds():
    """Docs and code speak of the project only: no design notes, issues or folders outside it."""
    import re

    pattern = re.compile(r"DESIGN\.md|\bissue \d|\bthe issue\b|\.\./shared|\bBRIEFING|\bTASK_",
                         re.IGNORECASE)  # \b: a test named test_task_... is not a citation
    files = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / ".ci" / "run"]
    for sub, exts in (("docs", ("*.md", "*.rst", "*.py")), ("src", ("*.py", "*.md")),
                      ("tests", ("*.py",)), ("benchmarks", ("*.py",)),
                      ("examples", ("*.py", "*.md"))):
        for ext in exts:
            files += [p for p in (ROOT / sub).rglob(ext) if "_build" not in p.parts]
    hits = []
    for path in files:
        if path == Path(__file__).resolve() or not path.is_file():
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)


#: the longest code line that fits the text column of the rendered pages at 1280 px
CODE_LINE_LIMIT = 80


def _markdown_code_lines(path: Path):
    """(line number, text) of every line of every code block of a MyST/Markdown page."""
    from markdown_it import MarkdownIt

    for tok in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")):
        if tok.type not in ("fence", "code_block"):
            continue
        info = tok.info.strip()
        if info.startswith("{") and not info.startswith(("{code", "{literal")):
            continue  # a MyST directive (toctree, math, ...), not code shown to the reader
        first = tok.map[0] + (1 if tok.type == "fence" else 0)
        for i, line in enumerate(tok.content.splitlines()):
            yield first + i + 1, line


def _docstring_code_lines(path: Path):
    """(docstring, text) of the code lines of a module's docstrings: ``>>>`` examples and
    ``::`` literal blocks (what Sphinx shows as code blocks in the API pages)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                          | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node, clean=True)
        if not doc:
            continue
        where = getattr(node, "name", "module")
        lines = doc.splitlines()
        literal_indent = None
        for i, line in enumerate(lines):
            indent = len(line) - len(line.lstrip())
            if literal_indent is not None:
                if line.strip() and indent <= literal_indent:
                    literal_indent = None
                elif line.strip():
                    yield where, line[literal_indent + 4 if indent >= literal_indent + 4
                                      else indent:]
                    continue
            if line.lstrip().startswith((">>>", "... ")):
                yield where, line.lstrip()
            if line.rstrip().endswith("::") and i + 1 < len(lines):
                literal_indent = indent


def _api_modules() -> list[Path]:
    """Source files of the objects whose docstrings the API reference renders."""
    import importlib
    import inspect
    import re

    names = set(re.findall(r"^\.\. auto(?:module|function|class):: ([\w.]+)",
                           (ROOT / "docs" / "api.rst").read_text(), re.MULTILINE))
    files = set()
    for name in names:
        try:
            obj = importlib.import_module(name)
        except ImportError:
            module, _, attr = name.rpartition(".")
            obj = getattr(importlib.import_module(module), attr)
        files.add(Path(inspect.getsourcefile(obj)).resolve())
    return sorted(files)


def test_code_blocks_fit_the_page():
    """No code line of the documentation is wider than the rendered text column."""
    pytest.importorskip("markdown_it", reason="markdown-it-py parses the pages")
    long = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        long += [f"docs/{page.name}:{n}: {len(t)} chars: {t.strip()[:50]}"
                 for n, t in _markdown_code_lines(page) if len(t) > CODE_LINE_LIMIT]
    for path in _api_modules():
        long += [f"{path.relative_to(ROOT)} ({where}): {len(t)} chars: {t.strip()[:50]}"
                 for where, t in _docstring_code_lines(path) if len(t) > CODE_LINE_LIMIT]
    assert not long, (f"{len(long)} code lines longer than {CODE_LINE_LIMIT} characters "
                      "(wrap them in the source):\n" + "\n".join(long))
