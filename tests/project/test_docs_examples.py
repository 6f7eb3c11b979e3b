"""Every Python example of the README and the docs runs as written (or is listed below as an
outline, with the reason it is not run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

# pages whose blocks run in order, in one namespace per page, in one scratch folder (the
# certificate-format page verifies the README's cert.json)
PAGES = ["README.md", "docs/user_guide.md", "docs/datasets.md", "docs/certificate-format.md",
         "docs/safe_ef.md", "docs/dtzo.md"]
NOT_RUN = {
    ("docs/safe_ef.md", 0): "an interface outline (method bodies are ...)",
    ("docs/dtzo.md", 1): "an interface outline (method bodies are ...)",
    ("docs/qoda.md", 0): "2000 rounds, about 30 s on two cores",
    ("docs/qoda.md", 1): "a fragment of the MPI run (comm comes from the MPI launcher)",
}


def _blocks(page: str) -> list[str]:
    return BLOCK.findall((ROOT / page).read_text(encoding="utf-8"))


def test_every_python_block_is_run_or_excused():
    pages = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
    for page in pages:
        for i, _ in enumerate(_blocks(page)):
            assert page in PAGES or (page, i) in NOT_RUN, f"{page}: block {i} is never run"
    for page, i in NOT_RUN:
        assert i < len(_blocks(page)), f"{page} has no block {i} any more"


def test_python_examples_run_as_written(tmp_path, monkeypatch):
    pytest.importorskip("sklearn")
    monkeypatch.chdir(tmp_path)
    for page in PAGES:
        namespace: dict = {"__name__": "__docs__"}
        for i, code in enumerate(_blocks(page)):
            if (page, i) in NOT_RUN:
                continue
            exec(compile(code, f"{page} (python block {i})", "exec"), namespace)
    # what the pages say they write
    for name in ("cert.json", "cert.proof", "diabetes.json", "model.json", "k3.json"):
        assert (tmp_path / name).is_file(), name


def test_user_guide_names_every_status_a_search_can_end_with():
    from sparsecert.statuses import STATUSES

    text = (ROOT / "docs" / "user_guide.md").read_text(encoding="utf-8")
    for status in STATUSES:
        assert f'`"{status}"`' in text, status
