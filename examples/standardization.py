"""Standardised or raw columns: the same data, two problems, very different search times.

The package's published numbers (benchmarks and docs) use the bundled data standardised: every
column of ``X`` centred and scaled to unit Euclidean norm, the regression target centred
(``load_riboflavin(standardize=True)``). A user who loads the raw data and keeps the defaults
(an intercept) poses another problem: ``lambda2 ||b||^2`` then weighs coefficients of columns
whose norms differ by orders of magnitude, and the search is much harder. This script certifies
both, on riboflavin (least squares) and leukemia (logistic): the published setting (standardised;
riboflavin with the intercept, leukemia without, as the benchmarks ran them), standardised with
the default intercept, and the raw data with the defaults, each run stopped at the time limit.
It prints status, gap, time and the support (with the genes' names); the figure shows the proven
gap over time. Each certificate is about the arrays it was given (and verifies on them).

Run: ``python examples/standardization.py [--quick] [--time-limit S] [--out DIR]``
(default limit 60 s per run: about two and a half minutes in all; ``--quick``: 1.5 s)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import EXAMPLES, savefig
from matplotlib import pyplot as plt
from matplotlib.ticker import NullFormatter, ScalarFormatter

import sparsecert
from sparsecert.datasets import feature_names, load_leukemia, load_riboflavin

#: (name, loader, loss, k, lambda2)
CASES = [("riboflavin", load_riboflavin, "squared", 5, 1.0),
         ("leukemia", load_leukemia, "logistic", 5, 0.1)]
#: (label, standardize, fit_intercept): the published setting (benchmarks/certify.py: the
#: riboflavin frontier keeps the intercept, the leukemia comparison turns it off), standardised
#: columns with the default intercept, and the raw data with the defaults
SETTINGS = [("standardised, as published", True, None), ("standardised, intercept", True, True),
            ("raw, intercept (defaults)", False, True)]
#: the intercept of the published runs
PUBLISHED_INTERCEPT = {"riboflavin": True, "leukemia": False}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=EXAMPLES / "output",
                    help="folder for the PNGs (default examples/output/)")
    ap.add_argument("--quick", action="store_true",
                    help="a 1.5 s limit per run, the published setting and the raw data only")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds per run (default 60; 1.5 with --quick)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.time_limit is None:
        args.time_limit = 1.5 if args.quick else 60.0
    return args


def main():
    args = parse_args()
    if not args.quick:  # compile (or load) the kernels first, so that no run pays for them
        sparsecert.certify(*load_riboflavin(standardize=True), 1, 1.0, verbose=0, time_limit=5)
    rows, curves = [], {}
    for name, loader, loss, k, lam in CASES:
        names = feature_names(name)
        for how, standardize, intercept in SETTINGS:
            if intercept is None:
                intercept = PUBLISHED_INTERCEPT[name]
            elif standardize and (args.quick or intercept == PUBLISHED_INTERCEPT[name]):
                continue  # the published setting already (--quick: published and raw only)
            X, y = loader(standardize=standardize)
            t0 = time.perf_counter()
            res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=intercept,
                                     time_limit=args.time_limit, verbose=0,
                                     feature_names=names)
            seconds = time.perf_counter() - t0
            ok = sparsecert.verify(res.certificate, X, y).ok  # on the arrays it was given
            rows.append((name, loss, k, lam, how, intercept, res.status, res.gap, seconds,
                         res.n_nodes, ok, [names[j] if names else j for j in res.support]))
            # the proven gap over the search (the records with a bound), and where it ended
            pts = [(h.time, h.gap) for h in res.search.history if np.isfinite(h.gap)]
            pts.append((res.search.time, res.gap))
            curves[(name, how)] = tuple(zip(*pts, strict=True))

    print(f"\n{'data':>10} {'loss':>8} {'k':>2} {'lambda2':>7} {'columns':>27} "
          f"{'intercept':>9} {'status':>11} {'gap':>9} {'time (s)':>8} {'nodes':>6} "
          f"{'verified':>8}  support")
    for name, loss, k, lam, how, icpt, status, gap, t, nodes, ok, genes in rows:
        print(f"{name:>10} {loss:>8} {k:>2} {lam:>7g} {how:>27} {str(icpt):>9} {status:>11} "
              f"{gap:>9.2%} {t:>8.2f} {nodes:>6} {str(ok):>8}  {genes}")
    print(f"('standardised': centred unit-norm columns and, for least squares, a centred y; "
          f"time limit {args.time_limit:g} s per run; leukemia's probes have no names in the "
          "bundled file)")

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, (name, _, loss, k, lam) in zip(axes, CASES, strict=True):
        for (how, _, _), style, color in zip(SETTINGS, ("-", "-.", "--"),
                                             ("tab:blue", "tab:orange", "tab:green"),
                                             strict=True):
            if (name, how) not in curves:
                continue
            t, g = curves[(name, how)]
            g = np.maximum(np.asarray(g, dtype=float), 1e-6)
            ax.step(np.maximum(t, 1e-2), g, style, color=color, where="post", label=how)
        ax.axhline(1e-4, color="k", lw=0.8, ls=":", label="tolerance 1e-4")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_yscale("log")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("proven relative gap")
        ax.set_title(f"{name} ({loss}), k = {k}, lambda2 = {lam:g}", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle("the same data standardised or raw: the proven gap over time", fontsize=10)
    savefig(fig, args.out, "standardization.png")


if __name__ == "__main__":
    main()
