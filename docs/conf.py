"""Sphinx configuration of the sparsecert documentation (Markdown pages through myst-parser).

Build (warnings are errors, as in CI):

    python -m sphinx -W -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))  # document the source tree, no install needed

project = "sparsecert"
author = "the sparsecert developers"
copyright = "2026, the sparsecert developers"
try:
    from sparsecert._version import __version__ as release
except ImportError:  # pragma: no cover - the source tree is always there
    release = "unknown"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["dollarmath", "amsmath", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_title = f"sparsecert {release}"
# other pages may ship figures in _static; the folder is optional
html_static_path = ["_static"] if (HERE / "_static").is_dir() else []
