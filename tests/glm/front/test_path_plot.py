"""``PathResult.plot()``: the certified path drawn as it was certified, matplotlib on demand."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from _certgen import make_data

from sparsecert.path import certify_path

NAMES = ["dose", "age", "weight", "height", "score", "bmi"]


@pytest.fixture(scope="module")
def path():
    X, y = make_data("squared", n=30, p=6, seed=3)
    return certify_path(X, y, [1, 2, 3], 0.5)


@pytest.fixture(autouse=True)
def agg():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_plot_draws_bounds_gap_and_a_support_map_with_its_key(path):
    fig = path.plot(feature_names=NAMES)
    ax_obj, ax_gap, ax_map, ax_bar = fig.axes  # the last is the colour bar
    assert fig._suptitle is not None and "certified path" in fig._suptitle.get_text()
    for ax in (ax_obj, ax_gap, ax_map):
        assert ax.get_title() and ax.get_xlabel() == ax.get_xlabel().strip() != ""
    # the objective panel: the certified objectives and the proven lower bounds, per k
    lines = ax_obj.get_lines()
    assert np.array_equal(lines[0].get_xdata(), path.ks)
    assert np.allclose(lines[0].get_ydata(), path.objectives)
    assert np.allclose(lines[1].get_ydata(), path.lower_bounds)
    assert len(ax_obj.get_legend().get_texts()) == 2
    # the gap panel: one bar per k, the tolerance line in the legend
    heights = [b.get_height() for b in ax_gap.patches]
    assert np.allclose(heights, path.gaps)
    assert any("tolerance 0.0001" in t.get_text() for t in ax_gap.get_legend().get_texts())
    # the support map: rows = the features ever selected, named; values = the coefficients
    B = np.vstack([r.coef for r in path])
    used = np.flatnonzero((B != 0).any(axis=0))
    assert [t.get_text() for t in ax_map.get_yticklabels()] == [NAMES[j] for j in used]
    shown = np.asarray(ax_map.get_images()[0].get_array().filled(np.nan))
    assert np.allclose(np.nan_to_num(shown), B[:, used].T)
    assert np.isnan(shown[B[:, used].T == 0]).all()  # not selected: no colour
    assert ax_bar.get_ylabel() == "coefficient"


def test_plot_limits_the_map_and_labels_unnamed_features(path):
    fig = path.plot(max_features=2)
    ax_map = fig.axes[2]
    labels = [t.get_text() for t in ax_map.get_yticklabels()]
    assert len(labels) == 2 and all(s.startswith("x") for s in labels)
    assert "more not shown" in ax_map.get_title()
    with pytest.raises(ValueError, match="2 feature names for 6 features"):
        path.plot(feature_names=["a", "b"])


def test_plot_without_matplotlib_says_how_to_install_it(path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # as if not installed
    with pytest.raises(ImportError, match="pip install matplotlib"):
        path.plot()


def test_matplotlib_is_imported_only_when_a_figure_is_drawn():
    """No module-level import of matplotlib (or of the plotting module) in path.py and
    plotting.py: importing them stays cheap and works without matplotlib."""
    import ast

    import sparsecert.path
    import sparsecert.plotting

    for mod in (sparsecert.path, sparsecert.plotting):
        tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
        assert not [m for m in names if m.startswith(("matplotlib", "sparsecert.plotting"))]
