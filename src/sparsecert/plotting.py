"""Figures of certified results (matplotlib, imported only when a figure is drawn).

:func:`plot_path` draws a certified path over ``k`` (:meth:`sparsecert.path.PathResult.plot`):
the certified objective and the proven lower bound against ``k``, the proven gap against the
tolerance, and a support map (which features each ``k`` selects, coloured by coefficient, with
its colour bar as the key).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["plot_path", "require_matplotlib"]


def require_matplotlib():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib, which is not installed: "
                          "python -m pip install matplotlib") from exc
    return plt


def _support_matrix(path, p: int) -> np.ndarray:
    """Coefficients, one row per ``k`` (zeros off the support)."""
    return np.vstack([np.asarray(r.coef, dtype=float).reshape(p) for r in path.results])


def plot_path(path, feature_names: Sequence[str] | None = None, rel_gap: float | None = None,
              max_features: int = 40, title: str | None = None):
    """Draw a certified path: objective and bound, gap, and the support map.

    Parameters
    ----------
    path : sparsecert.path.PathResult
    feature_names : sequence of str, optional
        Labels of the features (default: the path's own names, else ``x0, x1, ...``).
    rel_gap : float, optional
        The tolerance line of the gap panel (default: the tolerance the path was certified
        to, when all points share one).
    max_features : int
        At most this many features in the support map: those selected at the most ``k``
        (ties: the larger coefficient), the others counted in the panel's title.
    title : str, optional
        The figure's title (default: what was certified).

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = require_matplotlib()
    from matplotlib.colors import TwoSlopeNorm

    if len(path) == 0:
        raise ValueError("the path is empty: nothing to plot")
    ks = np.asarray(path.ks)
    p = int(np.asarray(path.results[0].coef).size)
    own = getattr(path.results[0], "feature_names", None)
    names = list(feature_names) if feature_names is not None else (list(own) if own else None)
    if names is not None and len(names) != p:
        raise ValueError(f"{len(names)} feature names for {p} features")
    if rel_gap is None:
        tols = {r.certificate.bounds.get("rel_gap_tolerance")
                for r in path.results if getattr(r, "certificate", None) is not None}
        rel_gap = tols.pop() if len(tols) == 1 else None

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2),
                             gridspec_kw={"width_ratios": [1.0, 0.8, 1.2]})
    ax = axes[0]
    ax.plot(ks, path.objectives, "o-", label="certified objective (the model's)")
    ax.plot(ks, path.lower_bounds, "x--", label="proven lower bound")
    ax.set_xlabel("k (at most k features)")
    ax.set_ylabel("objective (sum of losses + lambda2 ||b||^2)")
    ax.set_title("objective and proven lower bound", fontsize=10)
    ax.set_xticks(ks)
    ax.legend(fontsize=8)

    ax = axes[1]
    gaps = np.asarray(path.gaps, dtype=float)
    shown = np.where(gaps > 0, gaps, np.nan)
    ax.bar(ks, np.nan_to_num(shown, nan=0.0), color="tab:blue", label="proven relative gap")
    zero = ks[gaps <= 0]
    if zero.size:  # a zero gap has no bar on a log scale: a marker below the others
        floor = 0.1 * min([*gaps[gaps > 0], *([rel_gap] if rel_gap else []), 1.0])
        ax.plot(zero, np.full(zero.size, floor), "v", color="tab:green",
                label="gap 0 (closed exactly)")
    if rel_gap is not None and rel_gap > 0:
        ax.axhline(rel_gap, color="k", ls=":", lw=1, label=f"tolerance {rel_gap:g}")
    ax.set_yscale("log")
    ax.set_xlabel("k")
    ax.set_ylabel("(UB - LB) / max(1, |UB|)")
    ax.set_xticks(ks)
    ax.set_title("proven gap per k", fontsize=10)
    ax.legend(fontsize=8)

    ax = axes[2]
    B = _support_matrix(path, p)
    used = np.flatnonzero((B != 0).any(axis=0))
    hidden = 0
    if used.size > max_features:
        count = (B[:, used] != 0).sum(axis=0)
        size = np.abs(B[:, used]).max(axis=0)
        keep = np.lexsort((-size, -count))[:max_features]
        hidden = used.size - max_features
        used = np.sort(used[keep])
    M = B[:, used].T  # features x k
    vmax = float(np.abs(M).max()) if M.size and np.abs(M).max() > 0 else 1.0
    im = ax.imshow(np.where(M == 0, np.nan, M), aspect="auto", cmap="RdBu_r",
                   norm=TwoSlopeNorm(vcenter=0.0, vmin=-vmax, vmax=vmax),
                   interpolation="nearest",
                   extent=(ks[0] - 0.5, ks[-1] + 0.5, len(used) - 0.5, -0.5))
    ax.set_facecolor("0.88")  # not selected: grey, apart from any coefficient colour
    labels = [names[j] if names else f"x{j}" for j in used]
    ax.set_yticks(range(len(used)), labels, fontsize=7 if len(used) > 20 else 8)
    ax.set_xticks(ks)
    ax.set_xlabel("k")
    more = f"; {hidden} more not shown" if hidden else ""
    ax.set_title(f"selected features (grey: not selected{more})", fontsize=10)
    bar = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label("coefficient")

    fig.suptitle(title or f"certified path over k = {ks[0]}..{ks[-1]} "
                          f"({len(ks)} certified points)", fontsize=11)
    fig.tight_layout()
    return fig
