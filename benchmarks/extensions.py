"""The extended problem: what each optional part costs, and the certified gap of a model.

One row per feature, each on the same synthetic instance as the plain problem it extends
(least squares n = 500, p = 100, k = 5, lambda2 = 1; logistic n = 1000, p = 100, k = 5,
lambda2 = 1; Poisson n = 1000, p = 100, k = 5, lambda2 = 1 for the offset; no intercept, the
columns standardised): sample weights (uniform in [0.5, 2], a tenth of them zero), offsets (a
Poisson exposure as log(exposure)), per-coefficient bounds (asymmetric, tight enough to bind),
positive, forced-in and excluded features. Each row: the time to certify (the median of three
runs, alternating with the plain problem's, in this process), nodes, status, gap, and the
standalone verifier's verdict on the certificate (with the weights and offsets given as data).

Two equivalences, at the certificate level: a zero weight against the row removed, integer
weights against repeated rows (the same support and lower bound; the weighted problem is the
smaller one, so it should be the faster). And :func:`sparsecert.certified_gap` of a Lasso
refit on riboflavin (bundled, standardised; k = 5, lambda2 = 1) within a 10 s budget (``--quick``:
5 s): the gap proven, the time it took against the budget.

Run:  python benchmarks/extensions.py --quick --json benchmarks/results/extensions.json
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import sparsecert
from sparsecert.datasets import load_riboflavin, make_synthetic

REPEATS = 3


def _time(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _instance(loss: str, n: int, p: int, k: int, seed: int = 0):
    X, y, _ = make_synthetic(n, p, k, loss=loss, seed=seed)
    return X, y


def feature_rows(quick: bool) -> list[dict]:
    """Each feature against its plain problem, timed alternately (median of REPEATS)."""
    rng = np.random.default_rng(0)
    Xs, ys = _instance("squared", 500, 100, 5)
    Xl, yl = _instance("logistic", 1000, 100, 5)
    n = Xs.shape[0]
    w = rng.uniform(0.5, 2.0, n)
    w[rng.choice(n, n // 10, replace=False)] = 0.0
    wl = rng.uniform(0.5, 2.0, Xl.shape[0])
    # Poisson counts with an exposure: log(exposure) is the offset
    Xp = rng.standard_normal((1000, 100))
    expo = rng.uniform(0.5, 3.0, 1000)
    yp = rng.poisson(expo * np.exp(0.3 * Xp[:, :5] @ np.array([1.0, -1, 1, -1, 1]))).astype(float)
    ref = sparsecert.certify(Xs, ys, 5, 1.0, fit_intercept=False, verbose=0)
    top = int(np.argmax(np.abs(ref.coef)))
    cap = 0.5 * float(np.abs(ref.coef[top]))
    upper = np.full(100, np.inf)
    lower = np.full(100, -np.inf)
    upper[top], lower[top] = cap, -cap  # binds: the best coefficient is halved
    cases = [
        ("sample_weight (squared)", "squared", Xs, ys, dict(sample_weight=w)),
        ("sample_weight (logistic)", "logistic", Xl, yl, dict(sample_weight=wl)),
        ("offset (poisson, log exposure)", "poisson", Xp, yp, dict(offset=np.log(expo))),
        ("coef_bounds (squared)", "squared", Xs, ys, dict(coef_bounds=(lower, upper))),
        ("positive (squared)", "squared", Xs, ys, dict(positive=True)),
        ("positive (logistic)", "logistic", Xl, yl, dict(positive=True)),
        ("always_select + exclude (squared)", "squared", Xs, ys,
         dict(always_select=[int(np.argsort(np.abs(ref.coef))[-10])], exclude=[top])),
    ]
    rows = []
    for name, loss, X, y, kw in cases:
        # the plain problem: the same data without the feature (the offset's: the same counts
        # without the exposure)
        run = functools.partial(sparsecert.certify, X, y, 5, 1.0, loss=loss,
                                fit_intercept=False, verbose=0)
        ext_t, plain_t = [], []
        for _ in range(REPEATS):
            res, t = _time(functools.partial(run, **kw))
            ext_t.append(t)
            pl, t = _time(run)
            plain_t.append(t)
        data = {key: kw[key] for key in ("sample_weight", "offset") if key in kw}
        rep = sparsecert.verify(res, X, y, **data)
        row = dict(feature=name, loss=loss, n=X.shape[0], p=X.shape[1], k=5, lambda2=1.0,
                   time=float(np.median(ext_t)), plain_time=float(np.median(plain_t)),
                   nodes=res.n_nodes, plain_nodes=pl.n_nodes, status=res.status,
                   gap=res.gap, verified=bool(rep.ok), support=list(res.support))
        row["time_ratio"] = row["time"] / row["plain_time"]
        rows.append(row)
        print(f"{name:36s} {row['time']:7.3f} s (plain {row['plain_time']:7.3f} s, ratio "
              f"{row['time_ratio']:5.2f})  nodes {row['nodes']:5d} (plain {row['plain_nodes']:5d})"
              f"  {row['status']:>9s} gap {row['gap']:.1e}  "
              f"{'verified' if row['verified'] else 'NOT VERIFIED'}", flush=True)
    return rows


def equivalence_rows() -> list[dict]:
    """Zero weights against removed rows, integer weights against repeated rows."""
    rng = np.random.default_rng(1)
    X, y = _instance("logistic", 600, 60, 5, seed=2)
    w0 = np.ones(len(y))
    w0[rng.choice(len(y), 150, replace=False)] = 0.0
    keep = w0 > 0
    wi = rng.integers(1, 4, len(y)).astype(float)
    rep_idx = np.repeat(np.arange(len(y)), wi.astype(int))
    kw = dict(loss="logistic", fit_intercept=True, verbose=0)
    out = []
    for name, a_args, b_args in (
            ("zero weights vs the rows removed", (X, y, dict(sample_weight=w0)),
             (X[keep], y[keep], {})),
            ("integer weights vs repeated rows", (X, y, dict(sample_weight=wi)),
             (X[rep_idx], y[rep_idx], {}))):
        ta, tb = [], []
        for _ in range(REPEATS):
            a, t = _time(lambda a_args=a_args: sparsecert.certify(
                a_args[0], a_args[1], 5, 1.0, **kw, **a_args[2]))
            ta.append(t)
            b, t = _time(lambda b_args=b_args: sparsecert.certify(
                b_args[0], b_args[1], 5, 1.0, **kw))
            tb.append(t)
        ok = (sparsecert.verify(a, X, y, sample_weight=a_args[2]["sample_weight"]).ok
              and sparsecert.verify(b, b_args[0], b_args[1]).ok)
        row = dict(check=name, same_support=a.support == b.support,
                   lower_bound_rel_diff=abs(a.lower_bound - b.lower_bound)
                   / max(1.0, abs(b.lower_bound)),
                   objective_rel_diff=abs(a.objective - b.objective) / max(1.0, abs(b.objective)),
                   weighted_time=float(np.median(ta)), expanded_time=float(np.median(tb)),
                   verified=bool(ok))
        out.append(row)
        print(f"{name:36s} same support {row['same_support']}, lower bounds differ by "
              f"{row['lower_bound_rel_diff']:.1e} (relative), weighted {row['weighted_time']:.3f}"
              f" s vs {row['expanded_time']:.3f} s, {'verified' if ok else 'NOT VERIFIED'}",
              flush=True)
    return out


def gap_row(quick: bool) -> dict:
    """certified_gap of a Lasso refit on riboflavin within a budget."""
    from sklearn.linear_model import lasso_path

    X, y = load_riboflavin(standardize=True)
    k, lam, budget = 5, 1.0, (5.0 if quick else 10.0)
    Xc, yc = X - X.mean(0), y - y.mean()
    top = np.abs(Xc.T @ yc).max() / len(y)
    _, coefs, _ = lasso_path(Xc, yc, alphas=np.geomspace(top, 1e-4 * top, 200))
    S = np.flatnonzero(coefs[:, np.flatnonzero((coefs != 0).sum(0) <= k).max()])
    A = Xc[:, S]
    coef = np.zeros(X.shape[1])
    coef[S] = np.linalg.solve(A.T @ A + lam * np.eye(len(S)), A.T @ yc)
    c = float(y.mean() - X.mean(0) @ coef)
    g, t = _time(lambda: sparsecert.certified_gap(X, y, coef, c, k=k, lambda2=lam,
                                                  time_limit=budget))
    ok = sparsecert.verify(g.certificate, X, y).ok
    row = dict(instance=f"riboflavin k={k} lambda2={lam:g}, Lasso refit", budget=budget,
               time=t, gap=g.gap, status=g.status, objective=g.objective,
               lower_bound=g.lower_bound, best_objective=g.best_objective, nodes=g.n_nodes,
               verified=bool(ok))
    print(f"certified_gap, {row['instance']}: gap {100 * g.gap:.2f}% ({g.status}) in {t:.1f} s"
          f" (budget {budget:g} s), lower bound {g.lower_bound:.6g}, model {g.objective:.6g}, "
          f"best found {g.best_objective:.6g}, {'verified' if ok else 'NOT VERIFIED'}",
          flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the same rows, a shorter gap budget")
    ap.add_argument("--json", metavar="PATH", help="write results and claims here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    Xw, yw, _ = make_synthetic(50, 8, 2, seed=1)  # load the kernels once (not counted)
    for loss, kw in (("squared", dict(sample_weight=np.ones(50) * 2)),
                     ("logistic", dict(positive=True)), ("poisson", dict(offset=np.zeros(50)))):
        yy = (yw if loss == "squared" else np.where(yw > 0, 1.0, -1.0) if loss == "logistic"
              else np.abs(np.round(yw)))
        sparsecert.certify(Xw, yy, 2, 1.0, loss=loss, fit_intercept=False, verbose=0, **kw)
    print(f"kernels loaded (not counted): {time.perf_counter() - t0:.1f} s\n")
    print("feature                              time to certify (median of 3, alternating with "
          "the plain problem)")
    rows = feature_rows(args.quick)
    print()
    eq = equivalence_rows()
    print()
    gap = gap_row(args.quick)

    claims = [
        dict(name="certificates of the extended problems the standalone verifier rejects",
             measured=sum(not r["verified"] for r in rows + eq) + (not gap["verified"]),
             target=0, unit="certificates", better="lower"),
        dict(name="largest time ratio, extended / plain problem, over the feature rows",
             measured=float(max(r["time_ratio"] for r in rows)), target=2.0, unit="x",
             better="lower"),
        dict(name="zero weights vs rows removed, integer weights vs repeated rows: largest "
                  "relative difference of the proven lower bounds",
             measured=float(max(r["lower_bound_rel_diff"] for r in eq)), target=1e-6,
             unit="relative", better="lower"),
        dict(name="integer weights vs repeated rows: time of the repeated rows / weighted",
             measured=eq[1]["expanded_time"] / eq[1]["weighted_time"], target=1.0, unit="x",
             better="higher"),
        dict(name="certified_gap of a Lasso refit on riboflavin: time / budget",
             measured=gap["time"] / gap["budget"], target=1.5, unit="x", better="lower"),
    ]
    reported = [dict(name="certified_gap of a Lasso refit on riboflavin: the proven gap",
                     measured=gap["gap"], unit="relative gap",
                     note="the model's distance from optimal, not a target")]
    print("\nclaims:")
    for c in claims:
        print(f"  {c['name']}: measured {c['measured']:.4g} (target {c['target']} {c['unit']},"
              f" {c['better']} is better)")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        meta = dict(python=sys.version.split()[0], platform=platform.platform(),
                    cpus=os.cpu_count(), quick=args.quick, sparsecert=sparsecert.__version__,
                    load=os.getloadavg()[0])

        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {a: clean(b) for a, b in v.items()}
            if isinstance(v, list):
                return [clean(b) for b in v]
            return v

        out.write_text(json.dumps(clean(dict(meta=meta, features=rows, equivalences=eq,
                                             certified_gap=gap, reported=reported,
                                             claims=claims)), indent=2))
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
