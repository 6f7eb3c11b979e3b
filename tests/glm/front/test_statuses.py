"""The one module of statuses and gap definition: light to import, consistent everywhere."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from sparsecert import statuses as st

SRC = Path(__file__).resolve().parents[3] / "src"


def test_imports_nothing_heavy():
    code = ("import sys, sparsecert.statuses\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numba', 'scipy', 'sklearn') or m.startswith(('sparsecert.solvers.perspective', "
            "'sparsecert.solvers.heuristics', 'sparsecert.solvers.loss_kernels', "
            "'sparsecert.bnb'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}, check=True,
                         timeout=120)
    assert out.stdout.strip() == "[]", out.stdout


def test_gap_definition():
    assert st.relative_gap(10.0, 9.0) == pytest.approx(0.1)
    assert st.relative_gap(0.5, 0.25) == pytest.approx(0.25)  # max(1, |UB|) below 1
    assert st.relative_gap(-4.0, -5.0) == pytest.approx(0.25)
    assert st.relative_gap(3.0, 4.0) == 0.0  # a bound above the incumbent closes the gap
    assert st.relative_gap(math.inf, 0.0) == math.inf
    assert st.absolute_gap(3.0, 1.0) == 2.0 and st.absolute_gap(math.inf, 1.0) == math.inf
    assert st.gap_closed(100.0, 99.995, rel_gap=1e-4, abs_gap=0.0)
    assert not st.gap_closed(100.0, 99.9, rel_gap=1e-4, abs_gap=0.0)
    assert st.gap_closed(100.0, 99.9, rel_gap=0.0, abs_gap=0.2)


@pytest.mark.parametrize("ub", [1e4, 2.5, 0.3, -7.0])
@pytest.mark.parametrize("rel,abs_", [(1e-4, 1e-9), (0.0, 0.5), (1e-2, 0.0)])
def test_cutoff_is_where_the_gap_closes(ub, rel, abs_):
    """A node bound at the cutoff closes the gap (up to the rounding of the subtraction);
    anything visibly below does not: pruning never stops the search short of the tolerance."""
    c = st.cutoff(ub, rel, abs_)
    scale = max(1.0, abs(ub))
    assert c <= ub
    assert st.gap_closed(ub, c + 1e-12 * scale, rel, abs_)
    below = c - 1e-6 * scale
    assert not st.gap_closed(ub, below, rel, abs_)
    assert st.cutoff(math.inf, rel, abs_) == math.inf


def test_names_agree_with_the_writer_and_the_verifier():
    from sparsecert.certificate import schema, verify

    assert schema.STATUSES == st.STATUSES and schema.NODE_STATUSES == st.NODE_STATUSES
    # the standalone verifier keeps its own copy on purpose
    assert set(verify.STATUSES) == set(st.STATUSES)
    assert set(verify.NODE_STATUSES) == set(st.NODE_STATUSES)
    assert verify.RELATIVE_GAP_DEFINITION == st.RELATIVE_GAP_DEFINITION
    assert set(st.STATUS_HINTS) == set(st.STATUSES) - st.CERTIFIED


def test_statuses_are_the_format_strings():
    """str enums equal to the names of the certificate format: comparisons, JSON, ``str()``
    and ``repr()`` read as the plain strings did; the groups partition what a user acts on."""
    import json

    names = ["optimal", "time_limit", "node_limit", "interrupted", "tree_exhausted",
             "precision_limited"]
    assert list(st.STATUSES) == names and all(type(s) is st.SearchStatus for s in st.STATUSES)
    assert list(st.NODE_STATUSES) == ["branched", "pruned", "solved", "open"]
    assert json.loads(json.dumps({"status": st.TIME_LIMIT})) == {"status": "time_limit"}
    assert type(str(st.OPTIMAL)) is str and str(st.OPTIMAL) == "optimal"
    assert f"{st.PRUNED}" == "pruned" and repr([st.OPTIMAL]) == "['optimal']"
    assert st.SearchStatus("node_limit") is st.NODE_LIMIT and hash(st.OPEN) == hash("open")
    assert st.CERTIFIED == {"optimal"}
    assert st.LIMITED == {"time_limit", "node_limit", "interrupted"}
    assert st.OPTIMAL.certified and not st.OPTIMAL.limited
    assert st.INTERRUPTED.limited and not st.PRECISION_LIMITED.certified
    assert not (st.TREE_EXHAUSTED.limited or st.TREE_EXHAUSTED.certified)
