"""Benchmark: the root perspective relaxation, sparsecert's FISTA solver vs cvxpy interior point.

Synthetic family: rows of X ~ N(0, Sigma) with Sigma_ij = 0.5^|i-j|, beta* = k equally
spaced ones, y = X beta* + noise at SNR 5 (logistic: y = sign(X beta* + noise)), lambda2 = 1, at
(n, p, k) = (500, 100, 5), (1000, 1000, 10), (2000, 5000, 10); plus riboflavin (71 x 4088, k = 10,
bundled with the package: ``sparsecert.datasets.load_riboflavin``; logistic labels: y > median).

For each case and loss (squared, logistic) it reports: our wall time (problem set-up + solve; the
numba JIT compile is measured once beforehand and reported separately), FISTA iterations with
the default restart, with the other restart scheme and without restart, our certified gap, and
each cvxpy solver's time and objective beside ours (Clarabel, SCS, ECOS where installed), all
asked for a relative accuracy of 1e-6 or better.

A second table, node throughput for p >> n: the time per branch-and-bound node (the root and
children with features fixed in or out, warm-started from the root as the search does, and
cold) on riboflavin (standardised, with an intercept) and a (100, 5000) synthetic at k in
{5, 10}, lambda2 = 1, against the two-mat-vec floor (one ``X b`` and one ``X^T z`` with the
solver's kernels, dense vectors) measured in the same process.

Run:  PYTHONPATH=src python benchmarks/relaxation.py --quick --json out/relaxation.json
      PYTHONPATH=src python benchmarks/relaxation.py --nodes-only --quick  (node table alone;
      --quick leaves it out unless --nodes is given, a full run includes it)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from sparsecert.solvers.perspective import (  # noqa: E402
    DEFAULT_RESTART,
    RelaxationProblem,
    solve_node,
)

LAMBDA2 = 1.0
REL_TOL = 1e-6


# ----------------------------------------------------------------------------------------------
def synthetic(n: int, p: int, k: int, loss: str, seed: int = 0):
    """The synthetic family (AR(1) rows with rho = 0.5, SNR 5)."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((n, p))
    X = np.empty((n, p))
    X[:, 0] = E[:, 0]
    c = np.sqrt(1.0 - 0.25)
    for j in range(1, p):
        X[:, j] = 0.5 * X[:, j - 1] + c * E[:, j]
    beta = np.zeros(p)
    beta[np.linspace(0, p - 1, k).round().astype(int)] = 1.0
    signal = X @ beta
    sigma = np.sqrt(signal.var() / 5.0)
    y = signal + sigma * rng.standard_normal(n)
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    return X, y


def riboflavin(loss: str):
    from sparsecert.datasets import load_riboflavin

    X, y = load_riboflavin()
    if loss == "logistic":
        y = np.where(y > np.median(y), 1.0, -1.0)
    return (X, y), None


# ----------------------------------------------------------------------------------------------
def run_ours(X, y, k, loss, restart=DEFAULT_RESTART, max_iter=100000, time_limit=None):
    t0 = time.perf_counter()
    prob = RelaxationProblem.from_data(X, y, LAMBDA2, loss=loss)
    t1 = time.perf_counter()
    res = solve_node(prob, k, None, None, rel_tol=REL_TOL, max_iter=max_iter,
                     time_limit=time_limit, restart=restart)
    t2 = time.perf_counter()
    return {"time": t2 - t0, "setup": t1 - t0, "solve": t2 - t1, "objective": res.objective,
            "lower_bound": res.lower_bound, "gap": res.gap, "n_iter": res.n_iter,
            "n_restarts": res.n_restarts, "status": res.status}


def _cvxpy_solve(X, y, k, loss, solver, time_limit):
    """The perspective relaxation as a conic program (rotated second-order cones)."""
    import cvxpy as cp

    n, p = X.shape
    b, z, s = cp.Variable(p), cp.Variable(p), cp.Variable(p)
    u = X @ b
    if loss == "squared":
        F = cp.sum_squares(y - u)
    else:
        F = cp.sum(cp.logistic(-cp.multiply(y, u)))
    cons = [z >= 0, z <= 1, cp.sum(z) <= k,
            cp.SOC(s + z, cp.vstack([2 * b, s - z]), axis=0)]  # b_j^2 <= s_j z_j
    prob = cp.Problem(cp.Minimize(F + LAMBDA2 * cp.sum(s)), cons)
    opts = {
        "CLARABEL": {"tol_gap_rel": 1e-8, "tol_gap_abs": 1e-8, "tol_feas": 1e-8,
                     "time_limit": time_limit},
        "SCS": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 200000,
                "time_limit_secs": time_limit},
        "ECOS": {"abstol": 1e-8, "reltol": 1e-8, "feastol": 1e-8, "max_iters": 500},
    }[solver]
    t0 = time.perf_counter()
    try:
        prob.solve(solver=solver, **opts)
    except Exception as exc:  # a solver failure is reported, not hidden
        return {"time": time.perf_counter() - t0, "objective": None, "status": f"error: {exc}"}
    return {"time": time.perf_counter() - t0, "objective": prob.value, "status": prob.status}


def _cvxpy_child(conn, X, y, k, loss, solver, time_limit):  # pragma: no cover - subprocess
    conn.send(_cvxpy_solve(X, y, k, loss, solver, time_limit))
    conn.close()


def run_cvxpy(X, y, k, loss, solver, time_limit):
    """cvxpy in a child process killed at ``time_limit`` seconds of wall time (solver time
    limits do not cover cvxpy's canonicalisation or the first factorisation)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_cvxpy_child, args=(child, X, y, k, loss, solver, time_limit))
    proc.start()
    child.close()
    out = None
    if parent.poll(time_limit):
        try:
            out = parent.recv()
        except EOFError:
            out = None
    elapsed = time.perf_counter() - t0
    if proc.is_alive():
        proc.kill()
    proc.join()
    if out is None:
        return {"time": elapsed, "objective": None,
                "status": f"killed at the {time_limit:.0f} s wall-clock cap"}
    return out


def available_solvers():
    try:
        import cvxpy as cp
    except ImportError:
        return []
    inst = cp.installed_solvers()
    return [s for s in ("CLARABEL", "SCS", "ECOS") if s in inst]


def _standardised(X, y):
    sd = X.std(axis=0)
    sd[sd == 0.0] = 1.0
    return (X - X.mean(axis=0)) / sd, y - y.mean()


def node_instances(quick: bool):
    """``(name, X, y)`` of the node-throughput table."""
    from sparsecert.datasets import load_riboflavin

    out = [("riboflavin", *_standardised(*load_riboflavin()))]
    out.append(("synthetic", *_standardised(*synthetic(100, 5000, 10, "squared"))))
    return out


def two_matvec_floor(prob, reps: int = 30) -> float:
    """Seconds of one ``X b`` plus one ``X^T z`` with the solver's kernels (dense vectors),
    the median of ``reps`` repetitions."""
    from sparsecert.solvers.perspective._linalg import x_dot, xt_dot

    rng = np.random.default_rng(0)
    n, p = prob.n_samples, prob.n_features
    b, z = rng.standard_normal(p), rng.standard_normal(n)
    u, g = np.empty(n), np.empty(p)
    x_dot(prob.XT, b, u)
    xt_dot(prob.X, z, g)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        x_dot(prob.XT, b, u)
        xt_dot(prob.X, z, g)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def node_fixings(root, k: int, n_nodes: int):
    """The fixings of ``n_nodes - 1`` children and grandchildren of the root: the features
    with the largest relaxed ``z`` fixed out, or in, one or two at a time."""
    order = np.argsort(-root.z, kind="stable")
    out = []
    for depth in (1, 2):
        for j in range(k):
            for side in ("out", "in"):
                feats = list(order[j:j + depth])
                out.append((feats, []) if side == "in" else ([], feats))
    return out[:max(0, n_nodes - 1)]


def node_throughput(quick: bool):
    """Rows of the node-throughput table (see the module docstring)."""
    from sparsecert.bnb.search import BnBSettings
    from sparsecert.solvers.heuristics import SupportRefitter, beam_search, swap_search
    from sparsecert.solvers.perspective.api import strategy

    s = BnBSettings()
    n_nodes = 3 if quick else 12
    n_cold = 1 if quick else 4
    rows = []
    for name, X, y in node_instances(quick):
        prob = RelaxationProblem.from_data(X, y, LAMBDA2, eig_shift="auto", fit_intercept=True)
        floor = min(two_matvec_floor(prob), two_matvec_floor(prob))
        p = prob.n_features
        for k in (5, 10):
            refitter = SupportRefitter.for_problem(prob)
            cutoff = swap_search(refitter, beam_search(refitter, k), k).objective
            t0 = time.perf_counter()
            root = solve_node(prob, k, rel_tol=s.node_rel_tol, max_iter=s.node_max_iter,
                              cutoff=cutoff)
            t_root = time.perf_counter() - t0
            warm, cold, iters, statuses = [], [], [], []
            for i, (fin, fout) in enumerate(node_fixings(root, k, n_nodes + 1)):
                s1 = np.zeros(p, dtype=bool)
                s0 = np.zeros(p, dtype=bool)
                s1[fin] = True
                s0[fout] = True
                for start, times in ((root, warm), (None, cold)):
                    if start is None and i >= n_cold:
                        continue
                    t0 = time.perf_counter()
                    res = solve_node(prob, k, s1, s0, rel_tol=s.node_rel_tol,
                                     max_iter=s.node_max_iter, warm_start=start, cutoff=cutoff)
                    times.append(time.perf_counter() - t0)
                    if start is not None:
                        iters.append(res.n_iter)
                        statuses.append(res.status)
            per_node = float(np.median(warm))
            rows.append({"case": name, "n": prob.n_samples, "p": p, "k": k,
                         "strategy": strategy(prob, p, p), "root_s": t_root,
                         "root_iters": root.n_iter, "n_nodes": len(warm),
                         "node_s_warm": per_node, "node_s_cold": float(np.median(cold)),
                         "node_s_warm_all": warm, "node_s_cold_all": cold,
                         "iters_median": float(np.median(iters)),
                         "statuses": {st: statuses.count(st) for st in sorted(set(statuses))},
                         "two_matvec_s": floor, "node_over_floor": per_node / floor})
            print(f"  done nodes {name} k={k}: root {t_root:.2f} s, "
                  f"{1e3 * per_node:.1f} ms/node", flush=True)
    return rows


def _print_node_table(rows):
    print()
    print("node throughput (lambda2 = 1, squared loss, intercept; median over the nodes)")
    hdr = (f"{'case':<11}{'n x p':>10}{'k':>4} {'strategy':<8}{'root s':>7}{'it':>5}"
           f"{'nodes':>6}{'warm ms':>9}{'cold ms':>9}{'iters':>6}{'2 mat-vec ms':>13}"
           f"{'node/floor':>11}  statuses")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        st = ", ".join(f"{k} {v}" for k, v in r["statuses"].items())
        print(f"{r['case']:<11}{str(r['n']) + 'x' + str(r['p']):>10}{r['k']:>4} "
              f"{r['strategy']:<8}{r['root_s']:>7.2f}{r['root_iters']:>5}{r['n_nodes']:>6}"
              f"{1e3 * r['node_s_warm']:>9.2f}{1e3 * r['node_s_cold']:>9.2f}"
              f"{r['iters_median']:>6.0f}{1e3 * r['two_matvec_s']:>13.3f}"
              f"{r['node_over_floor']:>11.0f}  {st}")
    print("children of the root with its best features fixed out / in, cutoff = the start "
          "heuristics' incumbent (as in the search); warm: started from the root's solution; "
          "cold: from zero (first nodes only); node/floor: a warm node's time in units of one "
          "X b plus one X^T z")


def jit_compile_time():
    """Time of the first call on a tiny problem (numba compile or cache load)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 8))
    t0 = time.perf_counter()
    for loss, y in (("squared", rng.standard_normal(20)),
                    ("logistic", np.sign(rng.standard_normal(20)))):
        prob = RelaxationProblem.from_data(X, y, 1.0, loss=loss)
        for restart in ("function", "gap", "none"):
            solve_node(prob, 2, None, None, max_iter=50, restart=restart)
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="headline comparison in < 5 minutes (cvxpy capped / skipped at scale)")
    ap.add_argument("--json", type=Path, default=None, help="write results + claims here")
    ap.add_argument("--cases", default=None,
                    help="comma-separated subset, e.g. '1000x1000,riboflavin' (default: all)")
    ap.add_argument("--losses", default="squared,logistic", help="comma-separated losses")
    ap.add_argument("--solvers", default=None,
                    help="comma-separated cvxpy solvers (default: CLARABEL, SCS, ECOS if present)")
    ap.add_argument("--variant-cap", type=float, default=None,
                    help="wall-clock cap of the restart-variant runs (default 10x / 20x ours)")
    ap.add_argument("--cvxpy-cap", type=float, default=None,
                    help="wall-clock cap per cvxpy solve in seconds (default: 60 quick / 1800)")
    ap.add_argument("--nodes", action="store_true",
                    help="add the node-throughput table to --quick (always in a full run)")
    ap.add_argument("--nodes-only", action="store_true",
                    help="only the node-throughput table (p >> n)")
    args = ap.parse_args(argv)
    quick = args.quick
    if args.nodes_only:
        jit_compile_time()
        node_rows = node_throughput(quick)
        _print_node_table(node_rows)
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"benchmark": "relaxation", "quick": quick,
                                             "node_throughput": node_rows, "claims": []},
                                            indent=2, allow_nan=False,
                                            default=_json_default))
        return

    jit = jit_compile_time()
    installed = available_solvers()
    solvers = installed
    if args.solvers:
        solvers = [s for s in installed if s in args.solvers.upper().split(",")]
    notes = [f"numba JIT compile / cache load (not counted in the times): {jit:.2f} s",
             f"cvxpy solvers installed: {installed or 'none'}; run: {solvers or 'none'}"]
    if "ECOS" not in installed:
        notes.append("ECOS not installed: skipped")
    cases = [("synthetic", 500, 100, 5), ("synthetic", 1000, 1000, 10),
             ("synthetic", 2000, 5000, 10), ("riboflavin", 71, 4088, 10)]
    other = {"function": "gap", "gap": "function", "both": "function", "none": "function"}[
        DEFAULT_RESTART]
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if f"{c[1]}x{c[2]}" in wanted or c[0] in wanted]
    rows = []
    for name, n, p, k in cases:
        for loss in args.losses.split(","):
            big = name == "synthetic" and p >= 5000
            if quick and big and loss == "logistic":
                continue
            if name == "synthetic":
                X, y = synthetic(n, p, k, loss)
            else:
                data, why = riboflavin(loss)
                if data is None:
                    if why not in notes:
                        notes.append(why)
                    continue
                X, y = data
            row = {"case": name, "n": X.shape[0], "p": X.shape[1], "k": k, "loss": loss}
            ours = run_ours(X, y, k, loss, time_limit=60.0 if quick else 600.0)
            row["ours"] = ours
            row["iters_other_restart"] = None
            row["iters_no_restart"] = None
            row["no_restart_status"] = None
            if not (quick and big):
                cap = min(max(10 * ours["time"], 3.0), 30.0) if quick else 20 * ours["time"] + 5
                if args.variant_cap is not None:
                    cap = args.variant_cap
                row["iters_other_restart"] = run_ours(X, y, k, loss, restart=other,
                                                      time_limit=cap)["n_iter"]
                nr = run_ours(X, y, k, loss, restart="none", time_limit=cap)
                row["iters_no_restart"] = nr["n_iter"]
                row["no_restart_status"] = nr["status"]
            row["cvxpy"] = {}
            for solver in solvers:
                if quick and solver != "CLARABEL" and p > 100:
                    continue
                if quick and big:
                    continue
                limit = args.cvxpy_cap or (60.0 if quick else 1800.0)
                row["cvxpy"][solver] = run_cvxpy(X, y, k, loss, solver, limit)
            rows.append(row)
            _print_row(row)
    if quick:
        notes.append("--quick: SCS and ECOS only at p = 100; cvxpy killed at 60 s wall; at "
                     "p = 5000 only our solver on the squared loss (cvxpy + Clarabel needs far "
                     "more than the quick budget there: run without --quick, e.g. "
                     "--cases 2000x5000 --losses squared)")
    node_rows = node_throughput(quick) if (args.nodes or not quick) else []
    claims = _claims(rows)
    _print_table(rows, notes, claims)
    if node_rows:
        _print_node_table(node_rows)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        out = {"benchmark": "relaxation", "quick": quick, "default_restart": DEFAULT_RESTART,
               "other_restart": other, "lambda2": LAMBDA2, "rel_tol": REL_TOL,
               "jit_compile_seconds": jit, "notes": notes, "rows": rows,
               "node_throughput": node_rows, "claims": claims}
        args.json.write_text(json.dumps(out, indent=2, allow_nan=False, default=_json_default))
        _plot(rows, args.json.with_suffix(".png"))


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    raise TypeError(type(o))


def _speed_ratio(row):
    """Clarabel time / our time; when Clarabel stopped at its time cap without an optimal
    solution, the ratio at the cap (a lower bound on the true ratio) is returned."""
    c = row["cvxpy"].get("CLARABEL")
    if not c:
        return None
    return c["time"] / row["ours"]["time"]


def _ratio_is_lower_bound(row):
    c = row["cvxpy"].get("CLARABEL")
    return bool(c) and (str(c["status"]).startswith("killed") or "limit" in str(c["status"]))


def _claims(rows):
    def ratio_at(p):
        vals = [_speed_ratio(r) for r in rows if r["case"] == "synthetic" and r["p"] == p]
        vals = [v for v in vals if v is not None]
        return min(vals) if vals else None

    def lower_bound_note(p):
        rs = [r for r in rows if r["case"] == "synthetic" and r["p"] == p]
        if any(_ratio_is_lower_bound(r) for r in rs):
            return ("Clarabel did not finish within its time cap: the measured ratio is a lower "
                    "bound (cap / our time)")
        return ""

    diffs = []
    for r in rows:
        for res in r["cvxpy"].values():
            if res["objective"] is not None and str(res["status"]) == "optimal":
                ref = res["objective"]
                if r["cvxpy"].get("CLARABEL") is res:
                    diffs.append(abs(r["ours"]["objective"] - ref) / max(1.0, abs(ref)))
    return [
        {"name": "speed-up vs cvxpy+Clarabel at (n,p,k)=(1000,1000,10), min over losses",
         "measured": ratio_at(1000), "target": 10.0, "unit": "x", "better": "higher",
         "note": lower_bound_note(1000)},
        {"name": "speed-up vs cvxpy+Clarabel at (n,p,k)=(2000,5000,10), min over losses run",
         "measured": ratio_at(5000), "target": 30.0, "unit": "x", "better": "higher",
         "note": lower_bound_note(5000)},
        {"name": "max relative objective difference to Clarabel (all cases run)",
         "measured": max(diffs) if diffs else None, "target": 1e-6, "unit": "relative",
         "better": "lower"},
        {"name": "max certified relative gap of our solver (all cases)",
         "measured": max(r["ours"]["gap"] for r in rows) if rows else None, "target": REL_TOL,
         "unit": "relative", "better": "lower"},
    ]


def _fmt(v, f="{:.3g}"):
    return "-" if v is None else f.format(v)


def _print_row(r):
    o = r["ours"]
    print(f"  done {r['case']} {r['n']}x{r['p']} k={r['k']} {r['loss']}: ours {o['time']:.2f} s "
          f"({o['n_iter']} it, gap {o['gap']:.1e}, {o['status']})", flush=True)


def _print_table(rows, notes, claims):
    solvers = sorted({s for r in rows for s in r["cvxpy"]})
    hdr = (f"{'case':<11}{'n x p':>11}{'k':>4} {'loss':<9}{'ours s':>8}{'setup':>7}{'iters':>7}"
           f"{'it/oth':>7}{'it/none':>8}{'gap':>9}{'objective':>16}")
    for s in solvers:
        hdr += f"{s[:8] + ' s':>11}{s[:8] + ' obj':>17}"
    hdr += f"{'ratio':>8}"
    print()
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        o = r["ours"]
        nr = "-"
        if r["iters_no_restart"] is not None:
            nr = str(r["iters_no_restart"]) + ("" if r["no_restart_status"] == "converged"
                                               else "+")
        line = (f"{r['case']:<11}{str(r['n']) + 'x' + str(r['p']):>11}{r['k']:>4} "
                f"{r['loss']:<9}{o['time']:>8.2f}{o['setup']:>7.2f}{o['n_iter']:>7}"
                f"{_fmt(r['iters_other_restart'], '{}'):>7}"
                f"{nr:>8}"
                f"{o['gap']:>9.1e}{o['objective']:>16.9g}")
        for s in solvers:
            c = r["cvxpy"].get(s)
            if c is None:
                line += f"{'skipped':>11}{'-':>17}"
            else:
                st = "" if str(c["status"]) == "optimal" else "*"
                line += f"{c['time']:>10.2f}{st:1}{_fmt(c['objective'], '{:.9g}'):>17}"
        ratio = _fmt(_speed_ratio(r), "{:.1f}x")
        line += f"{('>' if _ratio_is_lower_bound(r) else '') + ratio:>8}"
        print(line)
    print()
    print("iters: default restart; it/oth: the other restart scheme; it/none: no restart "
          "('+' = not converged within the cap); * = solver status not 'optimal'; ratio = "
          "Clarabel time / our time ('>': Clarabel hit its cap, a lower bound)")
    for r in rows:
        if r["ours"]["status"] != "converged":
            print(f"note: ours did not reach the gap on {r['case']} {r['n']}x{r['p']} "
                  f"{r['loss']}: status {r['ours']['status']}, gap {r['ours']['gap']:.1e}")
    for nline in notes:
        print("note:", nline)
    print()
    print("claims:")
    for c in claims:
        print(f"  {c['name']}: measured {_fmt(c['measured'])} {c['unit']} "
              f"(target {c['target']}, {c['better']} is better) {c.get('note', '')}")


def _plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['case'][:5]} {r['p']}\n{r['loss'][:5]}" for r in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["ours"]["time"] for r in rows], 0.4, label="sparsecert FISTA")
    cl = [r["cvxpy"].get("CLARABEL", {}).get("time", np.nan) for r in rows]
    ax.bar(x + 0.2, cl, 0.4, label="cvxpy + Clarabel")
    ax.set_yscale("log")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("wall time (s)")
    ax.set_title("root perspective relaxation, rel. gap 1e-6")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
