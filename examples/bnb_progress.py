"""Branch-and-bound progress: the incumbent (upper bound) and the proven lower bound over time.

Reads ``result.search.history`` -- :class:`sparsecert.bnb.HistoryRecord` samples ``(time,
n_nodes, upper_bound, lower_bound)`` recorded by the engine -- from one certified solve of a
correlated synthetic least-squares instance, and plots both bounds and the relative gap
against time.

Run: ``python examples/bnb_progress.py [--quick] [--out DIR]``
"""

from __future__ import annotations

import numpy as np
from _common import parse_args, savefig
from matplotlib import pyplot as plt

from sparsecert.api import certify, verify
from sparsecert.datasets import make_synthetic


def main():
    args = parse_args(__doc__.splitlines()[0])
    n, p, k = (100, 40, 5) if args.quick else (100, 60, 6)
    X, y, _ = make_synthetic(n, p, k, rho=0.7, snr=2.0, seed=0)
    res = certify(X, y, k, 0.5, time_limit=40, verbose=1)
    print(res.summary())
    print(f"verifier: ok={verify(res.certificate, X, y).ok}")
    hist = res.search.history
    t, nodes = np.array([r.time for r in hist]), np.array([r.n_nodes for r in hist])
    ub = np.array([r.upper_bound for r in hist])
    lb = np.array([r.lower_bound for r in hist])
    ok = np.isfinite(lb)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    ax = axes[0]
    ax.step(t, ub, where="post", label="incumbent (upper bound)")
    ax.step(t[ok], lb[ok], where="post", label="proven lower bound")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("objective")
    lo = lb[ok].min() if ok.any() else ub.min()
    ax.set_ylim(lo - 0.05 * (ub.max() - lo + 1e-12), ub.max() + 0.05 * (ub.max() - lo + 1e-12))
    ax.legend()
    ax.set_title(f"branch and bound, n={n} p={p} k={k}: {res.status}, {res.n_nodes} nodes",
                 fontsize=9)
    ax = axes[1]
    gap = (ub - lb) / np.maximum(1.0, np.abs(ub))
    ax.semilogy(t[ok], np.maximum(gap[ok], 1e-12), label="relative gap")
    ax.axhline(1e-4, color="k", ls=":", lw=1, label="target 1e-4")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("(UB - LB) / max(1, |UB|)")
    ax3 = ax.twinx()
    ax3.plot(t, nodes, color="tab:gray", lw=1, label="nodes (right axis)")
    ax3.set_ylabel("nodes", color="tab:gray")
    lines = ax.get_lines() + ax3.get_lines()  # one legend for both axes
    ax.legend(lines, [ln.get_label() for ln in lines], loc="lower left", fontsize=8)
    ax.set_title("proven relative gap and nodes over time", fontsize=9)
    savefig(fig, args.out, "bnb_progress.png")


if __name__ == "__main__":
    main()
