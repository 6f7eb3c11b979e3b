"""Research: can the root bound be strengthened where the perspective relaxation is weak?

Two weak regimes with a small ridge weight: p >> n (riboflavin, 71 x 4088, k in {5, 10},
lambda2 = 0.1) and nearly collinear n > p (the degree-3 polynomial features of scikit-learn's
diabetes data, 442 x 285, k = 10, lambda2 = 0.01). For each instance this script measures:

* the incumbent of the root heuristics (beam search + swaps) and the perspective root bound
  (sparsecert's node solver), the root gap, the time of one root bound;
* how much of the quadratic ``||Xb||^2`` a convexification could claim. Every strengthening of
  the perspective type (a scalar or diagonal eigenvalue shift, pairwise or rank-one terms as in
  Atamturk and Gomez, "Rank-one convexification for sparse regression", 2019) splits off a PSD
  term ``Q <= X^T X`` supported on a set T of columns and gives it the perspective. If the
  other columns span the column space of X (``rank X_{T^c} = rank X``), every such Q is zero
  (docs/stronger-bounds.md). The script checks this for T = the columns the relaxed root
  solution uses, and, for n > p, computes the largest diagonal shift on the columns outside
  the exact null space of ``X^T X`` and (without ``--quick``, with cvxpy) the root bound it gives;
* the variables reduced-cost fixing removes at the root with the perspective witness.

Usage::

    python benchmarks/stronger_bounds.py --quick --json benchmarks/results/stronger_bounds.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import sparsecert
from sparsecert.bnb.fixing import root_fixing_counts
from sparsecert.datasets import load_riboflavin
from sparsecert.solvers.heuristics import SupportRefitter, beam_search, swap_search
from sparsecert.solvers.perspective import RelaxationProblem, solve_node


def _standardise(X, y):
    X = X - X.mean(axis=0)
    norms = np.linalg.norm(X, axis=0)
    norms[norms == 0] = 1.0
    return X / norms, y - y.mean()


def _diabetes_poly3():
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import PolynomialFeatures

    X, y = load_diabetes(return_X_y=True)
    return PolynomialFeatures(3, include_bias=False).fit_transform(X), y


def instances(quick: bool):
    """(name, X, y, k, lambda2)."""
    Xr, yr = _standardise(*load_riboflavin())
    out = [(f"riboflavin k={k} l2={lam:g}", Xr, yr, k, lam)
           for k in (5, 10) for lam in ((0.1,) if quick else (0.1, 1.0))]
    try:
        Xd, yd = _standardise(*_diabetes_poly3())
        out.append(("diabetes poly3 k=10 l2=0.01", Xd, yd, 10, 0.01))
    except ImportError as exc:  # scikit-learn is a runtime dependency; keep the message anyway
        print(f"[skip] diabetes: {exc}")
    return out


# ----------------------------------------------------------------------------------------------
def _rank(A: np.ndarray) -> int:
    if A.shape[1] == 0:
        return 0
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > s[0] * max(A.shape) * np.finfo(float).eps))


def diagonal_shift_outside_null_space(X: np.ndarray) -> tuple[np.ndarray, int]:
    """A diagonal D >= 0 with X^T X - D PSD, supported on the columns outside the exact null
    space of X^T X (columns in an exact linear dependency admit no shift).

    On those columns J it is ``d_j = c / (S^{-1})_jj`` with S the Schur complement of the
    other columns (``S = X_J^T (I - P_K) X_J``) and ``c = 1 / lambda_max`` of the correlation
    matrix of ``S^{-1}``: then ``S - D_J`` is PSD, hence so is ``X^T X - D``. Returns D and |J|.
    """
    G = X.T @ X
    w, V = np.linalg.eigh(G)
    # eigenvalues below the rounding error of forming X^T X (gamma_n ||X||_F^2, the term any
    # floating-point positive-definiteness proof must cover) count as exact dependencies
    n = X.shape[0]
    u = 2.0 ** -53
    tol = 4.0 * n * u / (1.0 - n * u) * float(np.sum(X * X))
    null = V[:, w < tol]
    J = np.flatnonzero(np.linalg.norm(null, axis=1) <= 1e-6)
    d = np.zeros(X.shape[1])
    if J.size == 0:
        return d, 0
    K = np.setdiff1d(np.arange(X.shape[1]), J)
    R = X[:, J]
    if K.size:
        U, s, _ = np.linalg.svd(X[:, K], full_matrices=False)
        U = U[:, s > 1e-10 * s[0]]
        R = R - U @ (U.T @ R)
    S = R.T @ R
    Si = np.linalg.inv(S)
    dd = 1.0 / np.diag(Si)
    C = Si * np.sqrt(np.outer(dd, dd))
    d[J] = 0.999 * dd / np.linalg.eigvalsh(C)[-1]
    return d, int(J.size)


def cvxpy_root_bound(X, y, k, lam, d) -> float | None:
    """Root bound of the perspective relaxation with a diagonal shift D (cvxpy, Clarabel)."""
    try:
        import cvxpy as cp
    except ImportError:
        return None
    p = X.shape[1]
    Q = X.T @ X - np.diag(d)
    w, V = np.linalg.eigh((Q + Q.T) / 2)
    F = (V * np.sqrt(np.maximum(w, 0.0))).T
    b, z, s = cp.Variable(p), cp.Variable(p), cp.Variable(p)
    obj = cp.sum_squares(F @ b) - 2 * (X.T @ y) @ b + float(y @ y) + (lam + d) @ s
    cons = [z >= 0, z <= 1, cp.sum(z) <= k] + [cp.quad_over_lin(b[j], z[j]) <= s[j]
                                               for j in range(p)]
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    return float(prob.value)


# ----------------------------------------------------------------------------------------------
def study(name, X, y, k, lam, quick: bool) -> dict:
    n, p = X.shape
    row = dict(instance=name, n=n, p=p, k=k, lambda2=lam)
    t0 = time.perf_counter()
    ref = SupportRefitter(X, y, "squared", lam)
    model = swap_search(ref, beam_search(ref, k), k)
    row["upper_bound"], row["heuristic_time"] = model.objective, time.perf_counter() - t0
    prob = RelaxationProblem.from_data(X, y, lam, eig_shift="auto")
    t0 = time.perf_counter()
    res = solve_node(prob, k, rel_tol=1e-8, max_iter=100000)
    row["root_time"] = time.perf_counter() - t0
    row["root_status"] = res.status
    row["root_bound"] = float(res.lower_bound)
    row["root_gap"] = (model.objective - res.lower_bound) / max(1.0, abs(model.objective))
    row["eig_shift"] = float(prob.mu)
    used = np.flatnonzero(np.abs(res.coef) > 1e-9 * max(1.0, np.abs(res.coef).max()))
    row["relaxed_support"] = int(used.size)
    others = np.setdiff1d(np.arange(p), used)
    row["rank_X"], row["rank_X_without_relaxed_support"] = _rank(X), _rank(X[:, others])
    # every PSD term supported on the relaxed support is zero when the rest spans col(X)
    row["convexification_possible_on_relaxed_support"] = (
        row["rank_X_without_relaxed_support"] < row["rank_X"])
    fixed_out, fixed_in = root_fixing_counts(prob, k, res, model.objective)
    row["root_fixed_out"], row["root_fixed_in"] = fixed_out, fixed_in
    if n > p:
        t0 = time.perf_counter()
        d, n_cols = diagonal_shift_outside_null_space(X)
        row["diag_shift_time"] = time.perf_counter() - t0
        row["diag_shift_columns"], row["diag_shift_max"] = n_cols, float(d.max())
        if not quick:
            t0 = time.perf_counter()
            lb0 = cvxpy_root_bound(X, y, k, lam, np.zeros(p))
            lb1 = cvxpy_root_bound(X, y, k, lam, d)
            row["cvxpy_time"] = time.perf_counter() - t0
            if lb0 is not None:
                row["root_bound_cvxpy"], row["root_bound_diag_shift"] = lb0, lb1
                row["root_gap_diag_shift"] = (model.objective - lb1) / max(1.0,
                                                                           abs(model.objective))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="riboflavin at lambda2 = 0.1 and the "
                    "diabetes instance without the cvxpy bounds")
    ap.add_argument("--json", metavar="PATH", help="write results and claims here")
    args = ap.parse_args(argv)
    sparsecert.certify(np.eye(6)[:, :4] + 0.1, np.arange(6.0), 2, 1.0, verbose=0)  # JIT warm-up
    rows = []
    for name, X, y, k, lam in instances(args.quick):
        print(f"== {name}", flush=True)
        rows.append(study(name, X, y, k, lam, args.quick))
        print("   " + ", ".join(f"{a}={b:.6g}" if isinstance(b, float) else f"{a}={b}"
                                for a, b in rows[-1].items() if a != "instance"), flush=True)

    print(f"\n{'instance':30s} {'UB':>11s} {'root LB':>11s} {'gap':>7s} {'t(root)':>8s} "
          f"{'|supp z|':>8s} {'rank X':>6s} {'w/o supp':>8s} {'fixed 0/1':>10s} "
          f"{'diag shift':>14s}")
    for r in rows:
        shift = "-"
        if "diag_shift_max" in r:
            shift = f"{r['diag_shift_columns']} cols <= {r['diag_shift_max']:.2g}"
        print(f"{r['instance']:30s} {r['upper_bound']:11.6g} {r['root_bound']:11.6g} "
              f"{r['root_gap']:7.2%} {r['root_time']:7.2f}s {r['relaxed_support']:8d} "
              f"{r['rank_X']:6d} {r['rank_X_without_relaxed_support']:8d} "
              f"{str(r['root_fixed_out']) + '/' + str(r['root_fixed_in']):>10s} {shift:>14s}")
        if "root_gap_diag_shift" in r:
            plain = (r["upper_bound"] - r["root_bound_cvxpy"]) / r["upper_bound"]
            print(f"{'':30s} with the diagonal shift (cvxpy): root gap "
                  f"{r['root_gap_diag_shift']:.3%} (perspective by cvxpy: {plain:.3%})")

    claims = []
    for r in rows:
        if r["instance"].startswith("riboflavin k=5 l2=0.1"):
            claims.append(dict(name="riboflavin k=5 lambda2=0.1: root gap of the perspective bound",
                               measured=r["root_gap"], target=0.05, unit="relative gap",
                               better="lower"))
            claims.append(dict(
                name="riboflavin k=5 lambda2=0.1: a PSD term supported on the relaxed support "
                     "can be split off (1 = yes)",
                measured=int(r["convexification_possible_on_relaxed_support"]), target=1,
                unit="bool", better="higher"))
        if "root_gap_diag_shift" in r:
            claims.append(dict(name=f"{r['instance']}: root gap with the diagonal shift",
                               measured=r["root_gap_diag_shift"],
                               target=(r["upper_bound"] - r["root_bound_cvxpy"])
                               / r["upper_bound"],
                               unit="relative gap", better="lower"))
    print("\nclaims:")
    for c in claims:
        print(f"  {c['name']}: measured {c['measured']} (target {c['target']} {c['unit']}, "
              f"{c['better']} is better)")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)

        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, (np.bool_, bool)):
                return bool(v)
            if isinstance(v, np.integer):
                return int(v)
            return v

        meta = dict(python=sys.version.split()[0], platform=platform.platform(),
                    cpus=os.cpu_count(), quick=args.quick, sparsecert=sparsecert.__version__)
        out.write_text(json.dumps(dict(meta=meta, rows=[{a: clean(b) for a, b in r.items()}
                                                        for r in rows], claims=claims), indent=2))
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
