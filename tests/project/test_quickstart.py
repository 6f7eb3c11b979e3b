"""The README's Quickstart, its two commands in order, from the directory a user runs them in.

The first command (``sparsecert certify``) writes ``sparsecert-certificate.json`` (+ ``.proof``)
into the working directory, the root of the clone; the second runs the test suite from that
same directory. The tests must neither see nor touch that certificate: the command line's tests
run here as the second command runs them, from a directory holding the first command's files.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: the test files that run the ``sparsecert`` command in-process (some without ``--out``)
CLI_TESTS = ("glm/cli/test_cli.py", "glm/cli/test_cli_output.py",
             "glm/certificate/test_certificate_save.py")


def quickstart_commands() -> list[str]:
    """The command lines of the README's Quickstart block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quickstart\s+```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no Quickstart code block"
    return [ln.strip() for ln in block.group(1).splitlines() if ln.strip()]


def test_the_readme_quickstart_is_the_sequence_tested_here():
    first, second = quickstart_commands()
    assert first == "python -m pip install . && sparsecert certify"
    assert second.startswith('python -m pip install ".[test') and second.endswith(
        "&& python -m pytest -q tests")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_quickstart_commands_in_order(tmp_path):
    clone = tmp_path / "clone"  # stands for the clone's root, where a user runs both commands
    clone.mkdir()
    env = dict(os.environ)
    # first command (the install aside): the default job, as a user runs it
    first = subprocess.run([sys.executable, "-m", "sparsecert", "certify"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    written = {name: (clone / name).read_bytes()
               for name in ("sparsecert-certificate.json", "sparsecert-certificate.proof")}
    # second command: the tests, from the same directory (those that run the command line)
    second = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "basetemp"), *(str(TESTS / name) for name in CLI_TESTS)],
        cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-2000:]
    # the user's files are untouched, and nothing was added next to them
    assert {p.name for p in clone.iterdir()} == set(written)
    for name, content in written.items():
        assert (clone / name).read_bytes() == content, name
