"""The logistic perspective relaxation through exponential cones (cvxpy) and by sparsecert.

    minimize  sum_i log(1 + exp(-y_i x_i^T b)) + lambda2 * sum_j s_j
    s.t.      b_j^2 <= s_j z_j,  sum_j z_j <= k,  0 <= z <= 1

cvxpy writes each ``log(1 + exp(.))`` with exponential cones, which Clarabel, ECOS and SCS
accept. sparsecert solves the same relaxation by FISTA with its exact perspective prox and a
lower bound from the logistic conjugate. The table compares the optima and the times.

Run: ``python examples/compare_cvxpy_logistic.py [--quick] [--out DIR]``
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
from _common import parse_args, savefig
from matplotlib import pyplot as plt

from sparsecert.datasets import make_synthetic
from sparsecert.solvers.perspective import perspective_relaxation

SOLVERS = ("CLARABEL", "ECOS", "SCS")


def cvxpy_logistic_relaxation(X, y, k, lam):
    n, p = X.shape
    b, s, z = cp.Variable(p), cp.Variable(p), cp.Variable(p)
    cone = cp.SOC(s + z, cp.vstack([2 * b, s - z]), axis=0)
    loss = cp.sum(cp.logistic(-cp.multiply(y, X @ b)))
    return cp.Problem(cp.Minimize(loss + lam * cp.sum(s)),
                      [cone, cp.sum(z) <= k, z >= 0, z <= 1])


def main():
    args = parse_args(__doc__.splitlines()[0])
    sizes = [(100, 30, 3)] if args.quick else [(100, 30, 3), (300, 100, 5), (500, 300, 10)]
    lam = 1.0
    installed = set(cp.installed_solvers())
    perspective_relaxation(*make_synthetic(20, 10, 2, loss="logistic")[:2], 2, 1.0,
                           loss="logistic")  # load the numba kernels once
    rows = []
    for n, p, k in sizes:
        X, y, _ = make_synthetic(n, p, k, rho=0.5, snr=3.0, loss="logistic", seed=0)
        t0 = time.perf_counter()
        ours = perspective_relaxation(X, y, k, lam, loss="logistic", rel_tol=1e-9,
                                      max_iter=200000)
        rows.append((n, p, k, "sparsecert", ours.status, ours.objective, ours.lower_bound,
                     time.perf_counter() - t0))
        for name in SOLVERS:
            if name not in installed:
                print(f"skipping {name}: not installed in cvxpy")
                continue
            prob = cvxpy_logistic_relaxation(X, y, k, lam)
            t0 = time.perf_counter()
            try:
                kw = dict(eps=1e-9, max_iters=100000) if name == "SCS" else {}
                prob.solve(solver=name, **kw)
            except cp.SolverError as exc:
                print(f"{name} failed at n={n} p={p}: {exc}")
                continue
            rows.append((n, p, k, name, prob.status, float(prob.value), float("nan"),
                         time.perf_counter() - t0))

    print(f"\n{'n':>5} {'p':>5} {'k':>3} {'solver':>11} {'status':>16} {'objective':>18} "
          f"{'our lower bound':>18} {'rel. diff':>10} {'time (s)':>9}")
    for n, p, k, name, status, obj, lb, t in rows:
        ref = next(r[5] for r in rows if r[:3] == (n, p, k) and r[3] == "sparsecert")
        diff = (obj - ref) / max(1.0, abs(ref))
        lb_s = f"{lb:18.10g}" if np.isfinite(lb) else f"{'':18}"
        print(f"{n:>5} {p:>5} {k:>3} {name:>11} {status:>16} {obj:18.10g} {lb_s} {diff:10.1e} "
              f"{t:9.3f}")
    print("(time = wall time, including cvxpy's compilation for the cvxpy solvers)")

    fig, ax = plt.subplots(figsize=(6, 3.6))
    names = ["sparsecert", *[s for s in SOLVERS if s in installed]]
    w = 0.8 / len(names)
    for i, name in enumerate(names):
        ts = [next((r[7] for r in rows if r[:2] == (n, p) and r[3] == name), np.nan)
              for n, p, _ in sizes]
        ax.bar(np.arange(len(sizes)) + i * w, ts, w, label=name)
    ax.set_xticks(np.arange(len(sizes)) + 0.4 - w / 2, [f"{n}x{p}" for n, p, _ in sizes])
    ax.set_yscale("log")
    ax.set_ylabel("wall time (s)")
    ax.set_title("logistic perspective relaxation (exponential cones)", fontsize=9)
    ax.legend(fontsize=8)
    savefig(fig, args.out, "compare_cvxpy_logistic.png")


if __name__ == "__main__":
    main()
