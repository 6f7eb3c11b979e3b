"""Fail if the built HTML documentation loads anything from the network.

Usage: ``python docs/check_offline.py BUILD_DIR`` (exit 0: every script, stylesheet, font,
image and frame the pages load is a local file that exists; exit 1: the offending references are
listed, one per line). Run by CI after the Sphinx build; readers must see the same pages
without network access (math included: MathJax is served from ``_static``).
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: (tag, attribute) pairs whose URL the browser fetches by itself when the page loads
LOADED = {("script", "src"), ("img", "src"), ("iframe", "src"), ("embed", "src"),
          ("source", "src"), ("audio", "src"), ("video", "src"), ("object", "data")}
#: <link rel=...> kinds that are fetched on load (not plain navigation links)
FETCHED_LINKS = {"stylesheet", "preload", "modulepreload", "icon", "shortcut", "manifest",
                 "prefetch", "apple-touch-icon"}
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)""")
CSS_IMPORT = re.compile(r"""@import\s+['"]([^'"]+)['"]""")


def is_remote(url: str) -> bool:
    """True for ``http(s)://``, protocol-relative ``//host`` and other non-file schemes."""
    url = url.strip()
    if url.startswith("//"):
        return True
    scheme = urlsplit(url).scheme.lower()
    return scheme not in ("", "file", "data")


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []  # (what, url)
        self._style = False

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        for t, attr in LOADED:
            if tag == t and a.get(attr):
                self.refs.append((f"<{tag} {attr}>", a[attr]))
        if tag == "link" and a.get("href"):
            rel = set(a.get("rel", "").lower().split())
            if rel & FETCHED_LINKS:
                self.refs.append((f"<link rel={a.get('rel')}>", a["href"]))
        if a.get("style"):
            self.refs += [("style url()", u) for u in CSS_URL.findall(a["style"])]
        self._style = tag == "style"

    def handle_data(self, data):
        if self._style:
            self.refs += [("<style> url()", u) for u in CSS_URL.findall(data)]
            self.refs += [("<style> @import", u) for u in CSS_IMPORT.findall(data)]

    def handle_endtag(self, tag):
        if tag == "style":
            self._style = False


def _local_target(base: Path, url: str) -> Path | None:
    parts = urlsplit(url)
    if parts.scheme in ("data",) or not parts.path:
        return None
    return (base / unquote(parts.path)).resolve()


def _pages(root: Path) -> list[Path]:
    """The built pages (theme templates copied into ``_static`` are not pages)."""
    return sorted(p for p in root.rglob("*.html") if "_static" not in p.relative_to(root).parts)


def problems(build_dir: str | Path) -> list[str]:
    """Every remote or missing resource the built pages (and their CSS files) load."""
    root = Path(build_dir)
    out: list[str] = []
    for page in _pages(root):
        parser = _Refs()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        for what, url in parser.refs:
            where = page.relative_to(root)
            if is_remote(url):
                out.append(f"{where}: {what} loads {url} from the network")
            else:
                target = _local_target(page.parent, url)
                if target is not None and not target.exists():
                    out.append(f"{where}: {what} {url} does not exist in the build")
    for css in sorted(root.rglob("*.css")):
        text = css.read_text(encoding="utf-8", errors="replace")
        for url in CSS_URL.findall(text) + CSS_IMPORT.findall(text):
            if is_remote(url):
                out.append(f"{css.relative_to(root)}: url({url}) loads from the network")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python docs/check_offline.py BUILD_DIR", file=sys.stderr)
        return 2
    found = problems(args[0])
    for line in found:
        print(line)
    n_pages = len(_pages(Path(args[0])))
    print(f"{n_pages} pages checked: " + (f"{len(found)} network or missing resources"
                                          if found else "everything loads from local files"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
