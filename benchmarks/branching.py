"""Do pseudo-costs or strong branching shrink the trees? Deterministic work, rule by rule.

Runs :func:`sparsecert.certify` with the default branching rule (``largest_coef``) and the
informed rules (``pseudo_cost``, ``strong``, ``reliability``; :mod:`sparsecert.bnb.informed`)
on the same instances, each with a node budget and no time limit, so every number is
deterministic work (the same on any machine, however loaded): nodes evaluated, relaxation
iterations (strong branching's included, and apart), the final relative gap, and the status.
Wall time is printed for information only (the machine may be shared). Every certificate is
re-checked by the standalone verifier.

Instances: riboflavin (columns centred and scaled to unit norm, no intercept; least squares)
at k = 5 with lambda2 = 1 and 0.1; the quick certify benchmark's synthetic instances and
leukemia (logistic, k = 5, lambda2 = 0.1); synthetic Toeplitz (rho = 0.5) least squares and
logistic, n in {100, 500}, p in {100, 500, 1000}, k in {5, 10}, lambda2 = 0.1 (``--quick``: a
subset, and a smaller node budget).

The claims, per informed rule: the tree-size ratio (evaluated nodes, rule / largest_coef)
on the hard instances (those both certify with at least 50 evaluated nodes under
largest_coef), geometric mean, and the relaxation-iteration ratio on the same instances (target
1, lower is better: below 1 the rule shrinks the trees); the worst iteration loss on an
instance both certify (target 5%: a rule becomes the default only if it wins on most instances,
in iterations, or on an instance neither certifies in its lower bound at the node budget, and
loses by at most 5% on any). And the certificates the verifier rejects (target 0).

Usage::

    python benchmarks/branching.py --quick --json benchmarks/results/branching.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import sparsecert
from sparsecert.datasets import load_leukemia, load_riboflavin, make_synthetic

RULES = ("largest_coef", "pseudo_cost", "strong", "reliability")
BASELINE = "largest_coef"
HARD_NODES = 50  # a hard instance: both certify, the baseline with at least this many nodes


def _standardise(X, y, loss):
    X = X - X.mean(axis=0)
    norms = np.linalg.norm(X, axis=0)
    norms[norms == 0] = 1.0
    X = X / norms
    if loss == "squared":
        y = y - y.mean()
    return X, y


def instances(quick: bool, budget: int):
    """(name, loss, X, y, k, lambda2, node budget)."""
    Xr, yr = _standardise(*load_riboflavin(), "squared")
    # certified in about 650 evaluated nodes by the default rule: never cut short
    yield "riboflavin squared k=5 l2=1", "squared", Xr, yr, 5, 1.0, max(budget, 1000)
    yield "riboflavin squared k=5 l2=0.1", "squared", Xr, yr, 5, 0.1, budget
    synth = [("squared", 500, 100, 5, 1.0), ("logistic", 1000, 100, 5, 1.0)]
    if not quick:
        synth += [("squared", 3000, 1000, 10, 1.0), ("squared", 6000, 3000, 10, 1.0)]
    for loss, n, p, k, lam in synth:
        X, y, _ = make_synthetic(n, p, k, loss=loss, seed=0)
        yield f"certify-bench {loss} ({n},{p},{k}) l2={lam:g}", loss, X, y, k, lam, budget
    Xl, yl = _standardise(*load_leukemia(), "logistic")
    yield "leukemia logistic k=5 l2=0.1", "logistic", Xl, yl, 5, 0.1, budget
    grid = ([("squared", 100, 100, 5), ("squared", 100, 500, 5), ("logistic", 100, 100, 5)]
            if quick else
            [(loss, n, p, k) for loss in ("squared", "logistic") for n in (100, 500)
             for p in (100, 500, 1000) for k in (5, 10)])
    for loss, n, p, k in grid:
        X, y, _ = make_synthetic(n, p, k, loss=loss, rho=0.5, seed=0)
        yield f"toeplitz {loss} ({n},{p},{k}) l2=0.1", loss, X, y, k, 0.1, budget


def run_one(X, y, k, lam, loss, rule, budget):
    t0 = time.perf_counter()
    res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=False, branching=rule,
                             node_limit=budget, time_limit=None, verbose=0)
    seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cert.json")
        res.save(path)
        ok = bool(sparsecert.verify(path, X, y).ok)
    s = res.search
    return dict(rule=rule, status=res.status, evaluated=int(s.n_evaluated),
                nodes=int(s.n_nodes), iters=int(s.n_relaxation_iters),
                strong_iters=int(s.n_strong_iters), gap=float(res.gap),
                lower_bound=float(s.lower_bound), upper_bound=float(s.upper_bound), verified=ok,
                seconds=seconds)


def _geomean(xs):
    return float(math.exp(sum(math.log(x) for x in xs) / len(xs))) if xs else float("nan")


def run_grid(quick: bool, budget: int, rules: list[str], only: str | None, run):
    """Each row of ``run(X, y, k, lambda2, loss, rule, budget)`` over the instances (those
    whose name contains a comma-separated part of ``only``) and the rules, with its
    ``"instance"``, after a JIT warm-up; shared with ``benchmarks/node_tolerance.py``."""
    Xw, yw, _ = make_synthetic(40, 6, 2, seed=1)
    sparsecert.certify(Xw, yw, 2, 1.0, fit_intercept=False, verbose=0)  # JIT warm-up
    for name, loss, X, y, k, lam, bud in instances(quick, budget):
        if only and not any(part in name for part in only.split(",")):
            continue
        for rule in rules:
            r = run(X, y, k, lam, loss, rule, bud)
            r["instance"] = name
            yield r


def finish(args, budget: int, rows: list[dict], summary: dict, claims: list[dict]) -> int:
    """The claim that every certificate verified, the JSON (``--json``) and the exit code (1
    when a certificate failed); shared with ``benchmarks/node_tolerance.py``."""
    bad = [r for r in rows if not r["verified"]]
    claims.append(dict(name="certificates that fail the verifier", measured=len(bad),
                       target=0, unit="count", better="lower"))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(dict(budget=budget, quick=args.quick, rows=rows, summary=summary,
                           claims=claims), fh, indent=1)
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--budget", type=int, default=None,
                    help="evaluated nodes per run (default 300 quick, 3000 full; riboflavin "
                    "at lambda2 = 1 at least 1000)")
    ap.add_argument("--rules", default=",".join(RULES), help="comma-separated rules")
    ap.add_argument("--only", default=None,
                    help="run the instances whose name contains one of these (comma-separated)")
    args = ap.parse_args(argv)
    budget = args.budget or (300 if args.quick else 3000)
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    if BASELINE not in rules:
        rules.insert(0, BASELINE)
    if args.json and os.path.exists(args.json):
        print(f"branching.py: error: {args.json} exists (not overwritten)", file=sys.stderr)
        return 2
    rows = []
    print(f"{'instance':42s} {'rule':13s} {'status':11s} {'evaluated':>9s} {'iters':>9s} "
          f"{'strong it':>9s} {'gap':>9s} {'lower bound':>13s} {'ok':>3s} {'s':>7s}")
    for r in run_grid(args.quick, budget, rules, args.only, run_one):
        rows.append(r)
        print(f"{r['instance']:42s} {r['rule']:13s} {r['status']:11s} {r['evaluated']:9d} "
              f"{r['iters']:9d} {r['strong_iters']:9d} {r['gap']:9.2e} "
              f"{r['lower_bound']:13.6g} {'yes' if r['verified'] else 'NO':>3s} "
              f"{r['seconds']:7.1f}", flush=True)

    by = {(r["instance"], r["rule"]): r for r in rows}
    names = list(dict.fromkeys(r["instance"] for r in rows))
    claims, summary = [], {}
    print("\nper rule against largest_coef (ratio rule / largest_coef; hard = both certify, "
          f"baseline >= {HARD_NODES} evaluated nodes):")
    for rule in rules:
        if rule == BASELINE:
            continue
        node_r, iter_r, wins, worst = [], [], 0, 0.0
        for nm in names:
            a, b = by.get((nm, BASELINE)), by.get((nm, rule))
            if a is None or b is None:
                continue
            # the win criterion: total iterations (nodes on a tie); on an uncertified pair, the
            # final gap at the node budget
            if a["status"] == "optimal" and b["status"] == "optimal":
                ka, kb = (a["iters"], a["evaluated"]), (b["iters"], b["evaluated"])
                wins += kb < ka
                worst = max(worst, b["iters"] / max(1, a["iters"]) - 1.0)
                if a["evaluated"] >= HARD_NODES:
                    node_r.append(b["evaluated"] / a["evaluated"])
                    iter_r.append(b["iters"] / max(1, a["iters"]))
            else:  # the tree's part of the gap: the lower bounds at the same node budget
                wins += (b["status"] == "optimal") or (a["status"] != "optimal"
                                                      and b["lower_bound"] > a["lower_bound"])
        summary[rule] = dict(wins=wins, of=len(names), worst_iter_loss=worst,
                             node_ratio=_geomean(node_r), iter_ratio=_geomean(iter_r),
                             hard=len(node_r))
        print(f"  {rule:13s} wins {wins}/{len(names)}; worst iteration loss {worst:+.1%}; "
              f"hard instances {len(node_r)}: nodes x{_geomean(node_r):.3f}, "
              f"iterations x{_geomean(iter_r):.3f}")
        if node_r:  # (a run restricted by --only may hold no hard instance)
            claims.append(dict(name=f"{rule}: evaluated-node ratio against largest_coef on "
                               "the hard instances (geometric mean)",
                               measured=_geomean(node_r), target=1.0, unit="ratio",
                               better="lower"))
            claims.append(dict(name=f"{rule}: relaxation-iteration ratio (strong branching "
                               "included) against largest_coef on the hard instances",
                               measured=_geomean(iter_r), target=1.0, unit="ratio",
                               better="lower"))
        claims.append(dict(name=f"{rule}: worst relaxation-iteration loss against "
                           "largest_coef on an instance both certify (the default's rule: at "
                           "most 5%)", measured=worst, target=0.05, unit="fraction",
                           better="lower"))
    return finish(args, budget, rows, summary, claims)


if __name__ == "__main__":
    sys.exit(main())
