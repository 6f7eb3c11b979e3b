"""Sphinx configuration of the sparsecert documentation (Markdown pages through myst-parser).

Build (warnings are errors, as in CI), then check that the pages load nothing from the network:

    python -m sphinx -W -b html docs docs/_build/html
    python docs/check_offline.py docs/_build/html

Theme: pydata-sphinx-theme (as numpy, scipy and scikit-learn). Math: MathJax 3 served from the
built site's ``_static`` folder (the ``sphinx-mathjax-offline`` package ships it), so formulas
render without network access.
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
    "sphinx-mathjax-offline",  # MathJax copied into _static: no CDN at view time
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

html_theme = "pydata_sphinx_theme"
html_title = f"sparsecert {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 5,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# the section pages list their own pages on the left; single pages use the width for text
html_sidebars = {"**": ["sidebar-nav-bs"], "index": [], "user_guide": [], "datasets": [],
                 "api": []}
html_css_files = ["sparsecert.css"]
html_static_path = ["_static"]

