"""Shared command line and helpers of the examples (not part of the package)."""

from __future__ import annotations

import argparse
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
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return path
