"""Which branching rule and node selection certify fastest? (Chooses the engine's defaults.)

Runs :func:`sparsecert.certify` with every branching rule x node selection on a few instances
whose trees are not trivial, and reports nodes and seconds to the default relative gap 1e-4.
The claim checks that the default pair is the best (fewest total nodes, ties to time).

Usage::

    python benchmarks/bnb_rules.py --quick --json benchmarks/results/bnb_rules.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import sparsecert
from sparsecert.bnb import BnBSettings
from sparsecert.bnb.branching import BRANCHING_RULES
from sparsecert.bnb.informed import INFORMED_RULES
from sparsecert.datasets import make_synthetic

SELECTIONS = ["best_bound_dive", "best_bound", "depth_first"]


def instances(quick: bool):
    specs = [("logistic", 300, 60, 5, 0.1), ("squared", 200, 100, 8, 0.01),
             ("logistic", 500, 100, 8, 0.05)]
    if not quick:
        specs += [("squared", 400, 200, 10, 0.01), ("logistic", 1000, 200, 8, 0.05)]
    for loss, n, p, k, lam in specs:
        X, y, _ = make_synthetic(n, p, k, loss=loss, seed=0, snr=2.0)
        yield f"{loss} ({n},{p},{k}) l2={lam:g}", loss, X, y, k, lam


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds per run (default 20 quick, 60 full)")
    args = ap.parse_args(argv)
    args.time_limit = args.time_limit or (20.0 if args.quick else 60.0)
    Xw, yw, _ = make_synthetic(40, 6, 2, seed=1)
    sparsecert.certify(Xw, yw, 2, 1.0, fit_intercept=False, verbose=0)  # JIT warm-up

    # the informed rules (pseudo-costs, strong branching) are compared by benchmarks/branching.py
    combos = [(r, s) for r in BRANCHING_RULES if r not in INFORMED_RULES for s in SELECTIONS]
    rows = []
    for name, loss, X, y, k, lam in instances(args.quick):
        for rule, sel in combos:
            t0 = time.perf_counter()
            res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=False, branching=rule,
                                     node_selection=sel, time_limit=args.time_limit, verbose=0)
            rows.append(dict(instance=name, rule=rule, selection=sel, status=res.status,
                             nodes=res.n_nodes, time=time.perf_counter() - t0, gap=res.gap))
            print(f"{name:32s} {rule:20s} {sel:16s} {res.status:10s} nodes={res.n_nodes:6d} "
                  f"time={rows[-1]['time']:7.2f}s gap={res.gap:.1e}", flush=True)

    # nodes and time are compared on the instances every pair certified; on the others (time
    # limit) the final gap is what counts
    names = sorted({r["instance"] for r in rows})
    solved_by_all = [nm for nm in names
                     if all(r["status"] == "optimal" for r in rows if r["instance"] == nm)]
    print(f"\ninstances certified by every pair: {solved_by_all}")
    print(f"{'branching rule':20s} {'node selection':16s} {'nodes (all-certified)':>22s} "
          f"{'time (s)':>9s} {'certified':>10s} {'sum gap (others)':>17s}")
    totals = {}
    for rule, sel in combos:
        sub = [r for r in rows if r["rule"] == rule and r["selection"] == sel]
        both = [r for r in sub if r["instance"] in solved_by_all]
        rest = [r for r in sub if r["instance"] not in solved_by_all]
        totals[(rule, sel)] = (sum(r["status"] == "optimal" for r in sub),
                               sum(r["gap"] for r in rest), sum(r["nodes"] for r in both),
                               sum(r["time"] for r in both))
        c, g, nodes, t = totals[(rule, sel)]
        print(f"{rule:20s} {sel:16s} {nodes:22d} {t:9.2f} {c:7d}/{len(sub)} {g:17.3e}")
    default = (BnBSettings().branching, BnBSettings().node_selection)
    best = min(totals, key=lambda c: (-totals[c][0], totals[c][2], totals[c][1], totals[c][3]))
    print(f"\ndefault {default}; best by (certified, nodes, time): {best}")
    claims = [dict(name="nodes of the default (branching, selection) / best pair's, on the "
                        "instances every pair certified",
                   measured=totals[default][2] / max(1, totals[best][2]), target=1.0,
                   unit="ratio", better="lower")]
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(dict(rows=rows, default=list(default), best=list(best),
                                       claims=claims), indent=2))
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
