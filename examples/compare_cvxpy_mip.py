"""The exact k-sparse problem as a mixed-integer conic program through cvxpy, and sparsecert.

    minimize  ||y - X b||^2 + lambda2 * sum_j s_j
    s.t.      b_j^2 <= s_j z_j,  z_j in {0, 1},  sum_j z_j <= k

is exact (``z_j = 0`` forces ``b_j = 0``). On a small instance it is solved by SCIP (through
cvxpy; needs ``pyscipopt``: skipped with the reason when cvxpy cannot find it), by ECOS_BB
(cvxpy's branch and bound over ECOS; needs ``ecos``), by enumeration of all supports (the exact
reference), and by :func:`sparsecert.api.certify`. The table compares optimum, support and
time; our certificate is re-checked by the standalone verifier. sparsecert's time is that of
its second call on the same data (the first compiles the numba kernels once after installing;
that time is printed apart and hatched in the figure). A solver that is not installed is named
in the figure (``python -m pip install ".[compare]"`` installs them all).

Run: ``python examples/compare_cvxpy_mip.py [--quick] [--out DIR]``
"""

from __future__ import annotations

import itertools
import time

import cvxpy as cp
import numpy as np
from _common import (
    first_and_second_call,
    missing_solvers,
    note_missing,
    parse_args,
    savefig,
    time_bars,
)
from matplotlib import pyplot as plt

from sparsecert.api import certify, verify
from sparsecert.datasets import make_synthetic

#: the mixed-integer solvers cvxpy can hand the MI-SOCP to
MIP_SOLVERS = ("SCIP", "ECOS_BB")


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

    # the same call twice: the first compiles what the search needs (numba caches it), the
    # second is the solve compared with the others
    res, first, t_ours = first_and_second_call(
        lambda: certify(X, y, k, lam, fit_intercept=False, rel_gap=1e-9, verbose=0))
    compiled = max(0.0, first - t_ours)
    rep = verify(res.certificate, X, y)
    rows.append(("sparsecert", f"{res.status}/verified={rep.ok}", res.objective,
                 tuple(sorted(res.support)), t_ours))

    missing = missing_solvers(MIP_SOLVERS)
    for name in MIP_SOLVERS:
        if name in missing:
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

    print(f"(sparsecert's time is its second call on the same data; its first call took "
          f"{compiled:.3f} s more: numba compiling the kernels after installing, or loading them "
          "from its cache)")

    fig, ax = plt.subplots(figsize=(9, 3.8))
    names = [r[0] for r in rows]
    time_bars(ax, ["time to the optimum"], names, {r[0]: {"time to the optimum": r[4]}
                                                   for r in rows},
              {"sparsecert": {"time to the optimum": compiled}})
    ax.set_title(f"exact k-sparse ridge, n={n} p={p} k={k}: time to the optimum\n(mixed-integer "
                 "SOCP through cvxpy, enumeration of all supports, sparsecert)", fontsize=9)
    note_missing(fig, missing)
    savefig(fig, args.out, "compare_cvxpy_mip.png")


if __name__ == "__main__":
    main()
