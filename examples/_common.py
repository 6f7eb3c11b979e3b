"""Shared command line and helpers of the examples (not part of the package)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # PNGs only, no display

EXAMPLES = Path(__file__).resolve().parent


def parse_args(description: str) -> argparse.Namespace:
    """``--out DIR`` (default examples/output/) and ``--quick`` (a smaller, faster setting)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", type=Path, default=EXAMPLES / "output",
                    help="folder for the PNGs (created if needed; default examples/output/)")
    ap.add_argument("--quick", action="store_true", help="a smaller, faster setting")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def standardize(X):
    """Centre and scale each column to unit variance (constant columns are only centred)."""
    import numpy as np

    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def savefig(fig, out: Path, name: str) -> Path:
    """Write ``fig`` to ``out/name`` and say where."""
    import matplotlib.pyplot as plt

    path = out / name
    # leave room for a footnote (note_missing) below the axes
    footer = any(t.get_gid() == "footnote" for t in fig.texts)
    fig.tight_layout(rect=(0, 0.07, 1, 1) if footer else None)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return path


def first_and_second_call(fn: Callable):
    """Call ``fn()`` twice and time both calls.

    The first call reaches every numba kernel the solve uses, at the data's own shapes, dtypes
    and code path, and compiles those that are not cached yet (all of them after a fresh
    install; numba then caches them on disk); the second is the solve itself, the time a user
    pays from then on. Returns ``(result of the second call, seconds of the first, seconds of
    the second)``; ``first - second`` is the compile time the first call paid.
    """
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = fn()
    return result, first, time.perf_counter() - t0


#: how to install each optional cvxpy solver of the comparisons (all: the [compare] extra)
INSTALL_HINT = {"CLARABEL": "pip install clarabel", "SCS": "pip install scs",
                "ECOS": "pip install ecos", "ECOS_BB": "pip install ecos",
                "SCIP": "pip install pyscipopt"}


def missing_solvers(wanted: Iterable[str]) -> list[str]:
    """The solvers of ``wanted`` that cvxpy cannot find here, each said once on stdout."""
    import cvxpy as cp

    installed = set(cp.installed_solvers())
    missing = [name for name in wanted if name not in installed]
    for name in missing:
        print(f"skipping {name}: cvxpy cannot find it ({INSTALL_HINT.get(name, 'not installed')}"
              f"; or python -m pip install \".[compare]\")")
    return missing


def note_missing(fig, missing: list[str]) -> None:
    """Say in the figure which solvers were not compared (not installed), and how to add them."""
    if missing:
        text = ("not compared (not installed): " + ", ".join(
            f"{m} ({INSTALL_HINT.get(m, 'not installed')})" for m in missing)
            + '; all of them: pip install ".[compare]"')
        fig.text(0.5, 0.01, text, ha="center", va="bottom", fontsize=7, color="tab:red",
                 gid="footnote", wrap=True)


def time_bars(ax, groups: list[str], names: list[str], solve: dict, compile_: dict) -> None:
    """Grouped bars of wall times (log scale): ``solve[name][g]`` per solver and group, with
    ``compile_[name][g]`` (a first call's compilation) stacked on top, hatched; the legend to
    the right of the axes."""
    import numpy as np

    w = 0.8 / len(names)
    x = np.arange(len(groups))
    lowest = np.inf
    for i, name in enumerate(names):
        ts = np.array([solve[name].get(g, np.nan) for g in groups], dtype=float)
        bars = ax.bar(x + i * w, ts, w, label=name)
        if np.isfinite(ts).any():
            lowest = min(lowest, float(np.nanmin(ts)))
        extra = np.array([compile_.get(name, {}).get(g, 0.0) for g in groups], dtype=float)
        if (extra > 0).any():
            ax.bar(x + i * w, extra, w, bottom=ts, fill=False, hatch="///",
                   edgecolor=bars.patches[0].get_facecolor(),
                   label=f"{name}, first call's extra:\nnumba compiling (after installing)\n"
                         "or loading its cache")
    ax.set_xticks(x + 0.4 - w / 2, groups)
    ax.set_yscale("log")
    if np.isfinite(lowest) and lowest > 0:
        ax.set_ylim(bottom=lowest / 3)  # every bar visible above the axis
    ax.set_ylabel("wall time (s)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
