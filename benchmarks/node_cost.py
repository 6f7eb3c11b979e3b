"""The cost of the node strategies: the measurements behind ``solvers/perspective/cost.py``.

For a family of least-squares problems (square synthetic designs, wide synthetic designs,
riboflavin), all without an eigen shift so that z-space applies, it runs a short search, keeps a
sample of its nodes as the search posed them (fixings, warm start, cutoff, tolerance), and
solves each node with z-space and with FISTA (on a working set or on all active columns, as
the search would), each the fastest of three runs, recording the iterations, the active
columns, the positive indicators of the solution and the working sets.

Then it

1. fits the weights of the cost model (least squares on the relative error, the terms of
   ``cost.zspace_cost``, ``cost.fista_cost`` and ``cost.working_set_cost`` with the measured
   iterations) and prints them beside the weights in ``cost.py`` (which were chosen from such
   fits and from the replay below: a fit that explains the times a little better can still
   choose worse, so a new set of weights is to be checked by the replay before it is kept);
2. replays the choice ``solve_node(solver="auto")`` makes at every sampled node with the
   weights in ``cost.py`` and the iterations the search gave the node (the race's, measured
   on the first node below the root; before it, the prior), and compares the time of the
   chosen strategy with the faster of the two.

Times are measured in one process, the strategies alternating node by node; on a shared
machine they move with its load, so the claims are sums over many nodes.

Usage::

    python benchmarks/node_cost.py --quick --json out/node_cost.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import sparsecert.bnb.evaluate as bnb_evaluate  # noqa: E402
from sparsecert.bnb import BnBSettings, BranchAndBound  # noqa: E402
from sparsecert.datasets import load_riboflavin, make_synthetic  # noqa: E402
from sparsecert.solvers.perspective import (  # noqa: E402
    RelaxationProblem,
    cost,
    solve_node,
    strategies,
)
from sparsecert.solvers.perspective import working_set as ws_module  # noqa: E402
from sparsecert.solvers.perspective.full import RESTRICT_FRACTION  # noqa: E402
from sparsecert.solvers.perspective.node import NodeProblem, Start  # noqa: E402


def _standardise(X, y):
    X = X - X.mean(axis=0)
    X = X / np.linalg.norm(X, axis=0)
    return X, y - y.mean()


def families(quick: bool) -> list[tuple]:
    """(name, X, y, k, lambda2): synthetic Toeplitz designs (rho = 0.5, SNR 3, columns
    centred and unit-norm) and riboflavin (standardised), no intercept."""
    grid = [(100, 100, 0.01), (60, 400, 0.1), (50, 50, 0.1), (200, 200, 0.01)]
    if not quick:
        grid = [(n, n, lam) for n in (50, 100, 200) for lam in (0.01, 0.1, 1.0)]
        grid += [(n, p, lam) for n, p in ((100, 250), (60, 400), (100, 1000))
                 for lam in (0.01, 0.1, 1.0)]
    out = []
    for n, p, lam in grid:
        X, y, _ = make_synthetic(n, p, 10, rho=0.5, snr=3.0, seed=1)
        out.append((f"synthetic {n}x{p} l2={lam:g}", *_standardise(X, y), 10, lam))
    X, y = _standardise(*load_riboflavin())
    for lam in ((1.0,) if quick else (1.0, 0.1)):
        out.append((f"riboflavin l2={lam:g}", X, y, 5, lam))
    return out


def capture(prob, k: int, node_limit: int, keep: int) -> tuple[list, dict | None]:
    """A sample of about ``keep`` node tasks (the root first, and the task that raced the
    strategies) of a search of ``node_limit`` nodes, and the search's race."""
    tasks = []
    real = bnb_evaluate.evaluate_task
    bnb_evaluate.evaluate_task = lambda task: tasks.append(task) or real(task)
    try:
        res = BranchAndBound(prob, k, BnBSettings(node_limit=node_limit, verbose=0)).run()
    finally:
        bnb_evaluate.evaluate_task = real
    tasks = [t for t in tasks if not t.leaf]
    if len(tasks) > keep:
        kept = set(np.linspace(0, len(tasks) - 1, keep).round().astype(int).tolist())
        kept |= {i for i, t in enumerate(tasks) if t.race}
        tasks = [tasks[i] for i in sorted(kept)]
    return tasks, res.strategy_race


class _Rounds:
    """Counts the working set's rounds and keeps its last size (its norm estimate is called
    once per round with the round's columns, a ``Design``)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.real = ws_module.design_norm_sq

    def __call__(self, DW, *args, **kwargs):
        self.sizes.append(int(DW.p))
        return self.real(DW, *args, **kwargs)


def replay(prob, k: int, task, solver: str, reps: int) -> dict:
    """Solve the task's node with ``solver``; the fastest of ``reps`` runs."""
    best = math.inf
    rounds = _Rounds()
    ws_module.design_norm_sq = rounds
    try:
        for _ in range(reps):
            rounds.sizes.clear()
            t0 = time.perf_counter()
            res = solve_node(prob, k, task.fixed_in, task.fixed_out, rel_tol=task.rel_tol,
                             max_iter=task.max_iter, cutoff=task.cutoff,
                             warm_start=task.warm_start, solver=solver)
            best = min(best, time.perf_counter() - t0)
    finally:
        ws_module.design_norm_sq = rounds.real
    return dict(time=best, iters=int(res.n_iter), status=res.status, strategy=res.strategy,
                s=int(np.count_nonzero(res.z > 0)),
                w=rounds.sizes[-1] if rounds.sizes else 0, rounds=len(rounds.sizes))


def node_features(prob, k: int, task) -> dict:
    node = NodeProblem.build(prob, k, task.fixed_in, task.fixed_out)
    start = Start.of(node, task.warm_start)
    s = cost.positive_indicators(node, start)
    return dict(n=prob.n_samples, p=prob.n_features, m=node.n_active, s_est=s,
                w_est=cost.working_set_columns(node, s), node=node, start=start)


def collect(quick: bool, reps: int) -> list[dict]:
    rows = []
    node_limit, keep = (40, 12) if quick else (80, 25)
    for name, X, y, k, lam in families(quick):
        prob = RelaxationProblem.from_data(X, y, lam, eig_shift="auto")
        tasks, race = capture(prob, k, node_limit, keep)
        t0 = time.perf_counter()
        for task in tasks:
            row = dict(family=name, race=race, raced=bool(task.race),
                       iterations=task.iterations, **node_features(prob, k, task))
            for solver in ("zspace", "fista"):  # alternating node by node
                row[solver] = replay(prob, k, task, solver, reps)
            rows.append(row)
        z = sum(r["zspace"]["time"] for r in rows if r["family"] == name)
        f = sum(r["fista"]["time"] for r in rows if r["family"] == name)
        print(f"   {name:28s} {len(tasks):3d} nodes: z-space {1e3 * z:9.1f} ms, FISTA "
              f"{1e3 * f:9.1f} ms ({time.perf_counter() - t0:.1f} s)", flush=True)
    return rows


# ----------------------------------------------------------------------------------------------
# the fit
# ----------------------------------------------------------------------------------------------
def _nnls_relative(A: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.optimize import nnls

    coef, _ = nnls(A / t[:, None], np.ones(t.size))
    return coef, (A @ coef) / t


def fit(rows: list[dict]) -> dict:
    """Weights (nanoseconds per operation) of the cost model's terms from the measured nodes
    (nodes that took at least 3 iterations)."""
    out = {}
    A, t = [], []
    for r in rows:
        z = r["zspace"]
        if z["iters"] < 3:
            continue
        n, m, p, s = r["n"], r["m"], r["p"], z["s"]
        q = min(s, n)
        evals = cost.ZSPACE_START + cost.ZSPACE_EVALS * z["iters"]  # (their weights fixed)
        A.append([1.0, n * m * (m < p), evals, evals * n * m, evals * n * q,
                  evals * (max(s, n) * q * q / 2.0 + q ** 3 / 6.0)])
        t.append(z["time"] * 1e9)
    if A:
        c, err = _nnls_relative(np.array(A), np.array(t))
        names = ("ZSPACE_NODE", "ZSPACE_COPY", "ZSPACE_EVAL", "ZSPACE_MATVEC", "ZSPACE_VECTOR",
                 "ZSPACE_GRAM")
        out["zspace"] = dict(zip(names, c.tolist(), strict=True),
                             error=np.quantile(err, [0.1, 0.5, 0.9]).tolist(), n_nodes=len(t))
    A, t = [], []
    for r in rows:
        f = r["fista"]
        if f["iters"] < 3 or f["strategy"] != "full":
            continue
        n, m, it = r["n"], r["m"], f["iters"]
        restricted = float(m <= RESTRICT_FRACTION * r["p"])
        A.append([1.0, restricted * n * m, restricted, it, it * 2.0 * n * m,
                  it * m * math.log2(m + 2.0)])
        t.append(f["time"] * 1e9)
    if A:
        c, err = _nnls_relative(np.array(A), np.array(t))
        names = ("FISTA_NODE", "FISTA_RESTRICT", "FISTA_RESTRICT_FIXED", "FISTA_STEP",
                 "FISTA_MATVEC", "FISTA_SORT")
        out["fista"] = dict(zip(names, c.tolist(), strict=True),
                            error=np.quantile(err, [0.1, 0.5, 0.9]).tolist(), n_nodes=len(t))
    A, t = [], []
    for r in rows:  # the working set: its extra terms, beside its iterations' (cost.py's)
        f = r["fista"]
        if f["iters"] < 3 or f["strategy"] != "working_set":
            continue
        n, p, w, it = r["n"], r["p"], max(f["w"], 1), f["iters"]
        iterations = cost.fista_cost(n, w, False, it) - cost.fista_cost(n, w, False, 0)
        A.append([1.0, n * p])
        t.append(max(f["time"] * 1e9 - iterations, 1e3))
    if A:
        c, err = _nnls_relative(np.array(A), np.array(t))
        out["working_set"] = dict(zip(("WS_FIXED", "WS_BOUNDS"), c.tolist(), strict=True),
                                  error=np.quantile(err, [0.1, 0.5, 0.9]).tolist(),
                                  n_nodes=len(t))
    return out


# ----------------------------------------------------------------------------------------------
# the choices
# ----------------------------------------------------------------------------------------------
def choices(rows: list[dict]) -> list[dict]:
    """``solve_node(solver="auto")``'s choice at every node, with cost.py's weights and the
    iterations the search gave the node's task (the prior before the race, then the race's;
    the node that raced: the race's winner), against the faster strategy measured there."""
    out = []
    for r in rows:
        race = r["race"]
        if r["raced"] and race is not None:
            pick = "zspace" if race["winner"] == "zspace" else "fista"
        else:
            how = strategies.choose(r["node"], r["start"], "auto", None, r["iterations"])
            pick = "zspace" if how.name == "zspace" else "fista"
        times = {s: r[s]["time"] for s in ("zspace", "fista")}
        out.append(dict(family=r["family"], pick=pick, time=times[pick],
                        best=min(times.values()), zspace=times["zspace"],
                        fista=times["fista"]))
    return out


def _clean(v):
    if isinstance(v, cost.Iterations):
        return _clean(dict(zspace=v.zspace, fista=v.fista))
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {a: _clean(b) for a, b in v.items() if a not in ("node", "start")}
    if isinstance(v, list):
        return [_clean(b) for b in v]
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="four synthetic families and "
                    "riboflavin lambda2 = 1, 12 nodes each")
    ap.add_argument("--reps", type=int, default=3, help="runs per node and strategy (fastest)")
    ap.add_argument("--json", metavar="PATH", help="write results and claims here")
    args = ap.parse_args(argv)

    # compile every kernel first (not counted)
    X, y, _ = make_synthetic(30, 30, 3, seed=0)
    prob = RelaxationProblem.from_data(*_standardise(X, y), 0.1)
    for solver in ("zspace", "fista"):
        solve_node(prob, 3, solver=solver)
    BranchAndBound(prob, 3, BnBSettings(verbose=0)).run()

    print("== the sampled nodes of each family, solved by each strategy")
    rows = collect(args.quick, args.reps)

    print("\n== fitted weights (nanoseconds per operation; cost.py's in brackets)")
    weights = fit(rows)
    for group, vals in weights.items():
        err = vals.pop("error")
        n_nodes = vals.pop("n_nodes")
        print(f"   {group} ({n_nodes} nodes; fitted / measured time: 10% {err[0]:.2f}, "
              f"median {err[1]:.2f}, 90% {err[2]:.2f})")
        for name, v in vals.items():
            print(f"      {name:22s} {v:12.4g}  [{getattr(cost, name):.4g}]")
        vals.update(error=err, n_nodes=n_nodes)

    print("\n== solve_node(solver='auto') with cost.py: the chosen strategy's time against "
          "the faster one's")
    picks = choices(rows)
    fams = sorted({p["family"] for p in picks}, key=[p["family"] for p in picks].index)
    print(f"   {'family':28s} {'nodes':>5s} {'z-space':>6s} {'chosen':>10s} {'faster':>10s} "
          f"{'ratio':>6s}")
    per_family = {}
    for fam in fams:
        ps = [p for p in picks if p["family"] == fam]
        chosen, best = sum(p["time"] for p in ps), sum(p["best"] for p in ps)
        per_family[fam] = chosen / best
        print(f"   {fam:28s} {len(ps):5d} {sum(p['pick'] == 'zspace' for p in ps):6d} "
              f"{1e3 * chosen:8.1f}ms {1e3 * best:8.1f}ms {chosen / best:6.2f}")
    total = sum(p["time"] for p in picks) / sum(p["best"] for p in picks)
    claims = [
        dict(name="time of auto's node strategies / time of the faster strategy at each "
                  "node, summed over the sampled nodes of every family", measured=total,
             target=1.10, unit="x", better="lower"),
        dict(name="the same, the worst family", measured=max(per_family.values()),
             target=1.25, unit="x", better="lower"),
    ]
    print("\nclaims:")
    for c in claims:
        print(f"  {c['name']}: measured {c['measured']:.3f} (target {c['target']} {c['unit']}, "
              f"{c['better']} is better)")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        meta = dict(python=sys.version.split()[0], platform=platform.platform(),
                    quick=args.quick, reps=args.reps)
        out.write_text(json.dumps(_clean(dict(meta=meta, nodes=rows, weights=weights,
                                              choices=picks, per_family=per_family,
                                              claims=claims)), indent=2))
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
