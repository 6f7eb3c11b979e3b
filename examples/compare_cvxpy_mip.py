"""The exact k-sparse problem as a mixed-integer conic program through cvxpy, and sparsecert.

    minimize  ||y - X b||^2 + lambda2 * sum_j s_j
    s.t.      b_j^2 <= s_j z_j,  z_j in {0, 1},  sum_j z_j <= k

is exact (``z_j = 0`` forces ``b_j = 0``). On a small instance it is solved by SCIP (through
cvxpy; needs ``pyscipopt``: skipped with the reason when cvxpy cannot find it), by ECOS_BB
(cvxpy's bundled branch and bound over ECOS), by enumeration of all supports (the exact
reference), and by :func:`sparsecert.api.certify`. The table compares optimum, support and
time; our certificate is re-checked by the standalone verifier.

Run: ``python examples/compare_cvxpy_mip.py [--quick] [--out DIR]``
"""

from __future__ import annotations

import itertools
import time

import cvxpy as cp
import numpy as np
from _common import parse_args, savefig
from matplotlib import pyplot as plt

from sparsecert.api import certify, verify
from sparsecert.datasets import make_synthetic


def mip(X, y, k, lam):
    n, p = X.shape
    b, s = cp.Variable(p), cp.Variable(p)
    z = cp.Variable(p, boolean=True)
    cone = cp.SOC(s + z, cp.vstack([2 * b, s - z]), axis=0)  # b_j^2 <= s_j z_j
    return cp.Problem(cp.Minimize(cp.sum_squares(y - X @ b) + lam * cp.sum(s)),
                      [cone, cp.sum(z) <= k]), b


def enumerate_supports(X, y, k, lam):
    best = (np.inf, ())
    for S in itertools.combinations(range(X.shape[1]), k):
        XS = X[:, S]
        bS = np.linalg.solve(XS.T @ XS + lam * np.eye(k), XS.T @ y)
        r = y - XS @ bS
        val = float(r @ r + lam * bS @ bS)
        if val < best[0]:
            best = (val, S)
    return best


def main():
    args = parse_args(__doc__.splitlines()[0])
    n, p, k = (40, 12, 3) if args.quick else (60, 20, 4)
    lam = 1.0
    X, y, _ = make_synthetic(n, p, k, rho=0.6, snr=2.0, seed=3)
    rows = []

    t0 = time.perf_counter()
    val, supp = enumerate_supports(X, y, k, lam)
    rows.append(("enumeration", "exact", val, supp, time.perf_counter() - t0))

    certify(X[:, :3], y, 1, 1.0, fit_intercept=False, verbose=0)  # load the numba kernels once
    t0 = time.perf_counter()
    res = certify(X, y, k, lam, fit_intercept=False, rel_gap=1e-9, verbose=0)
    t_ours = time.perf_counter() - t0
    rep = verify(res.certificate, X, y)
    rows.append(("sparsecert", f"{res.status}/verified={rep.ok}", res.objective,
                 tuple(sorted(res.support)), t_ours))

    installed = set(cp.installed_solvers())
    for name in ("SCIP", "ECOS_BB"):
        if name not in installed:
            why = ("pyscipopt is not installed (pip install pyscipopt)" if name == "SCIP"
                   else "not installed")
            print(f"skipping {name}: cvxpy cannot find it: {why}")
            continue
        prob, b = mip(X, y, k, lam)
        t0 = time.perf_counter()
        try:
            kw = dict(max_iters=1000) if name == "ECOS_BB" else {}
            prob.solve(solver=name, **kw)
        except cp.SolverError as exc:
            print(f"{name} failed: {exc}")
            continue
        sup = tuple(int(j) for j in np.flatnonzero(np.abs(b.value) > 1e-6))
        rows.append((name, prob.status, float(prob.value), sup, time.perf_counter() - t0))

    n_sup = sum(1 for _ in itertools.combinations(range(p), k))
    print(f"\nn={n} p={p} k={k} lambda2={lam} ({n_sup} supports)")
    print(f"{'method':>12} {'status':>24} {'objective':>18} {'rel. diff':>10} {'time (s)':>9}  "
          f"support")
    for name, status, obj, sup, t in rows:
        diff = (obj - val) / max(1.0, abs(val))
        same = "(same)" if sup == supp else "(DIFFERENT)"
        print(f"{name:>12} {status:>24} {obj:18.10g} {diff:10.1e} {t:9.3f}  {list(sup)} {same}")

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.bar([r[0] for r in rows], [r[4] for r in rows], color="tab:green")
    ax.set_yscale("log")
    ax.set_ylabel("wall time (s)")
    ax.set_title(f"exact k-sparse ridge, n={n} p={p} k={k}: time to the optimum", fontsize=9)
    savefig(fig, args.out, "compare_cvxpy_mip.png")


if __name__ == "__main__":
    main()
