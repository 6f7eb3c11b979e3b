"""How much of a node evaluation holds the GIL? (The Python around the compiled kernels.)

Runs one serial search of the parallel figure's tree (``benchmarks/certify.py``: synthetic
n = p = 300, k = 10, lambda2 = 0.1, batch size 8) cut at a number of evaluated nodes, with BLAS
pinned to one thread, and splits the search thread's CPU time between the compiled (numba)
kernels, which release the GIL, and everything else: the Python of the node task (the node
solver's set-up and record, the reduced-cost fixing screen, rounding, swap search) and of the
engine. Every numba dispatcher that sparsecert's modules call from Python is wrapped by a timer
for the run (a few hundred nanoseconds per call land on the Python side).

Two threads cannot beat ``(K + G) / (K / 2 + G)`` when a node costs K inside the kernels and G
holding the GIL (the GIL's share runs one thread at a time); the claim is that cap against the
2-core target of 1.7x. Repeats run in fresh processes; medians and spreads are reported.

Usage::

    python benchmarks/node_python.py --quick --json benchmarks/results/node_python.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: the parallel figure's tree (as in benchmarks/certify.py)
TREE = dict(n=300, p=300, k=10, lambda2=0.1, snr=0.5, batch_size=8, rel_gap=1e-4)
#: the phases timed apart: (module, function, label)
PHASES = [("sparsecert.bnb.evaluate", "solve_node", "node solver"),
          ("sparsecert.bnb.evaluate", "fixing_plan", "fixing screen"),
          ("sparsecert.bnb.evaluate", "round_relaxation", "rounding"),
          ("sparsecert.bnb.evaluate", "swap_search", "swap search"),
          ("sparsecert.bnb.evaluate", "evaluate_task", "node task")]


def _one_run(n_eval: int) -> dict:
    """One serial search in this process: per evaluated node, ms of thread CPU time."""
    import numba.core.registry as registry
    from threadpoolctl import threadpool_limits

    import sparsecert
    import sparsecert.bnb as bnb
    from sparsecert.datasets import make_synthetic

    c = TREE
    X, y, _ = make_synthetic(c["n"], c["p"], c["k"], snr=c["snr"], seed=0)
    X = X - X.mean(axis=0)
    norms = np.linalg.norm(X, axis=0)
    norms[norms == 0] = 1.0
    X, y = X / norms, y - y.mean()
    kw = dict(verbose=0, rel_gap=c["rel_gap"], batch_size=c["batch_size"])
    threadpool_limits(1)
    sparsecert.certify(X, y, c["k"], c["lambda2"], node_limit=30, **kw)  # load the kernels

    clock = time.thread_time_ns
    in_kernels = [0]

    def timed_kernel(d):
        def call(*a, **k):
            t = clock()
            try:
                return d(*a, **k)
            finally:
                in_kernels[0] += clock() - t
        return call

    for name, mod in list(sys.modules.items()):
        if name.startswith("sparsecert") and mod is not None:
            for attr, val in list(vars(mod).items()):
                if isinstance(val, registry.CPUDispatcher):
                    setattr(mod, attr, timed_kernel(val))
    phases = {}

    def timed_phase(mod, fname, label):
        f = getattr(mod, fname)
        acc = phases.setdefault(label, [0, 0])

        def call(*a, **k):
            t, k0 = clock(), in_kernels[0]
            try:
                return f(*a, **k)
            finally:
                acc[0] += clock() - t
                acc[1] += in_kernels[0] - k0
        setattr(mod, fname, call)

    for modname, fname, label in PHASES:
        timed_phase(sys.modules[modname], fname, label)
    run, search = bnb.BranchAndBound.run, {}

    def timed_run(self, *a, **k):
        t, k0 = clock(), in_kernels[0]
        out = run(self, *a, **k)
        search["cpu"], search["kernels"] = clock() - t, in_kernels[0] - k0
        return out

    bnb.BranchAndBound.run = timed_run
    res = sparsecert.certify(X, y, c["k"], c["lambda2"], node_limit=n_eval, **kw)
    ms = 1e-6 / n_eval
    row = dict(nodes=res.n_nodes, evaluated=n_eval, cpu=search["cpu"] * ms,
               kernels=search["kernels"] * ms, gil=(search["cpu"] - search["kernels"]) * ms,
               lower_bound=res.lower_bound, objective=res.objective,
               load_1min=os.getloadavg()[0])
    for label, (t, k) in phases.items():
        row[label] = (t - k) * ms
    row["engine"] = row["gil"] - row["node task"]
    return row


def cap(kernels: float, gil: float) -> float:
    """The speedup two threads cannot beat when K runs without the GIL and G holds it."""
    return (kernels + gil) / (kernels / 2 + gil)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2,000 evaluated nodes, 3 runs")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--nodes", type=int, default=None, help="evaluated nodes per run")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(_one_run(args.one)))
        return 0
    n_eval = args.nodes or (2000 if args.quick else 5000)
    repeats = args.repeats or (3 if args.quick else 5)
    rows = []
    for rep in range(repeats):
        out = subprocess.run([sys.executable, __file__, "--one", str(n_eval)], check=True,
                             capture_output=True, text=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"run {rep + 1}: {r['nodes']} nodes, per evaluated node {r['cpu']:.2f} ms CPU, "
              f"{r['kernels']:.2f} ms in the kernels, {r['gil']:.2f} ms holding the GIL "
              f"(load {r['load_1min']:.1f})", flush=True)
    keys = ["cpu", "kernels", "gil", "node task"] + [lab for _, _, lab in PHASES[:-1]] + ["engine"]
    names = {"cpu": "CPU time", "kernels": "inside the kernels (GIL free)",
             "gil": "outside them (GIL held)", "node task": "  the node task's Python",
             "engine": "  the engine's Python"}
    med = {k: statistics.median(r[k] for r in rows) for k in keys}
    spread = {k: [min(r[k] for r in rows), max(r[k] for r in rows)] for k in keys}
    caps = [cap(r["kernels"], r["gil"]) for r in rows]
    print(f"\nper evaluated node (ms, median of {repeats} runs [min, max]), "
          f"{rows[0]['nodes']} nodes:")
    print(f"{'':32s} {'median':>8s}   spread")
    for k in keys:
        print(f"{names.get(k, '    ' + k):32s} {med[k]:8.3f}   "
              f"[{spread[k][0]:.3f}, {spread[k][1]:.3f}]")
    print(f"two threads' cap from the GIL: {statistics.median(caps):.2f}x "
          f"[{min(caps):.2f}, {max(caps):.2f}] (target 1.7x)")
    claims = [dict(name="the GIL's cap on two threads, (K + G) / (K / 2 + G), on the parallel "
                        "figure's tree (serial run, per evaluated node)",
                   measured=statistics.median(caps), target=1.7, unit="x", better="higher")]
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(dict(tree=TREE, evaluated=n_eval, rows=rows, median=med,
                                       spread=spread, caps=caps, claims=claims), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
