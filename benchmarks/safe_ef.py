"""Safe-EF benchmark.

For each problem (P1 Neyman-Pearson on breast cancer, P2 l1 regression d = 200, P3 the
worst-case control) and each method, the step size is tuned on a small grid, then the method
runs on 5 seeds; we report the median over seeds of the rounds and uplink bits per worker
needed to reach the target accuracy, plot gap f(x) - f* and violation max(g(x), 0) against
rounds and against uplink bits, sweep k for Safe-EF on P2 (rounds-to-accuracy versus k), and
run the P1 experiment once under ``mpiexec -n 4`` to check it gives the same iterates as
SimComm. All bits are those of the real encoded messages (see docs/safe_ef.md).

    python benchmarks/safe_ef.py --quick --json out/safe_ef.json

Targets: P1 gap <= 0.01 (absolute), P2 relative gap (f - f*)/(f(x0) - f*) <= 0.3, P3 relative
gap <= 0.01; all with violation <= 0.01. Seeds: P1's data are fixed, so the seed draws the start
point x0 ~ N(0, 0.1^2 I); P2 and P3 draw their data from the seed. The switching threshold is
c = 0 for every method.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from sparsecert.distributed.comm import SimComm, mpi_available  # noqa: E402
from sparsecert.distributed.safe_ef.mpi import build_problem, run_method  # noqa: E402
from sparsecert.distributed.safe_ef.problems import SafeEFProblem  # noqa: E402

LABELS = {
    "switching_subgradient": "uncompressed (dense float32)",
    "safe_ef": "Safe-EF",
    "topk_no_ef": "top-k, no EF",
    "ef21_switching": "EF21 + switching",
    "ef14_lagrangian": "EF14 + Lagrangian",
    "safe_ef_stochastic": "Safe-EF stochastic",
}

CONFIG = {
    "quick": {
        "P1": dict(k=1, rounds=2000, record=10, gap=0.01, rel=False,
                   methods={"switching_subgradient": [0.1, 0.2, 0.4],
                            "safe_ef": [0.05, 0.1, 0.2],
                            "topk_no_ef": [0.03, 0.1, 0.3],
                            "ef21_switching": [0.01, 0.03, 0.1]}),
        "P2": dict(k=10, rounds=800, record=5, gap=0.3, rel=True,
                   methods={"switching_subgradient": [0.007, 0.01, 0.015],
                            "safe_ef": [0.007, 0.01, 0.015],
                            "topk_no_ef": [0.01, 0.03, 0.1],
                            "ef21_switching": [0.001, 0.003, 0.01]}),
        "P3": dict(k=5, rounds=1600, record=2, gap=0.01, rel=True,
                   methods={"switching_subgradient": [2.5, 5.0, 12.5, 25.0, 50.0],
                            "safe_ef": [2.5, 5.0, 12.5, 25.0, 50.0]}),
        "ksweep": [1, 2, 5, 10, 20, 50, 200],
        "ksweep_rounds": 2400,
        "mpi_rounds": 200,
    },
    "full": {
        "P1": dict(k=1, rounds=3000, record=5, gap=0.01, rel=False,
                   methods={"switching_subgradient": [0.05, 0.1, 0.15, 0.2, 0.3, 0.4],
                            "safe_ef": [0.03, 0.05, 0.07, 0.1, 0.15, 0.2],
                            "topk_no_ef": [0.01, 0.03, 0.1, 0.3, 1.0],
                            "ef21_switching": [0.001, 0.003, 0.01, 0.03, 0.1],
                            "ef14_lagrangian": [0.03, 0.1, 0.3]}),
        "P2": dict(k=10, rounds=1500, record=5, gap=0.3, rel=True,
                   methods={"switching_subgradient": [0.005, 0.007, 0.01, 0.015, 0.02],
                            "safe_ef": [0.005, 0.007, 0.01, 0.015, 0.02],
                            "topk_no_ef": [0.003, 0.01, 0.03, 0.1],
                            "ef21_switching": [0.001, 0.003, 0.01, 0.03],
                            "ef14_lagrangian": [0.003, 0.01, 0.03]}),
        "P3": dict(k=5, rounds=3000, record=1, gap=0.01, rel=True,
                   methods={"switching_subgradient": [1.0, 2.5, 5.0, 12.5, 25.0, 50.0],
                            "safe_ef": [1.0, 2.5, 5.0, 12.5, 25.0, 50.0]}),
        "ksweep": [1, 2, 5, 10, 20, 50, 100, 200],
        "ksweep_rounds": 4000,
        "mpi_rounds": 500,
    },
}
VIOL_TOL = 0.01
SEEDS = [0, 1, 2, 3, 4]
SWITCH_C = {"c": 0.0}  # switching threshold, the same for every method (--c)


def _tols(prob: SafeEFProblem, cfg: dict) -> tuple[float, float]:
    return (cfg["gap"] * prob.scale if cfg["rel"] else cfg["gap"]), VIOL_TOL


def _stopper(prob: SafeEFProblem, gap_tol: float):
    return lambda r, f, v: (f - prob.f_star <= gap_tol) and (v <= VIOL_TOL)


def _run(prob, method, gamma, cfg, stop=None, k=None):
    return run_method(prob, method, gamma, cfg["rounds"], SimComm(prob.n_workers, seed=0),
                      c=SWITCH_C["c"], compressor="topk", k=cfg["k"] if k is None else k,
                      record_every=cfg["record"], stop=stop)


def _score(res, prob, gap_tol):
    """(bits to target, normalised best accuracy) for tuning: fewer bits first, then closeness."""
    _, bits = res.first_reaching(gap_tol, VIOL_TOL, prob.f_star)
    closeness = np.min(np.maximum((res.objective - prob.f_star) / gap_tol,
                                  res.violation / VIOL_TOL))
    return bits, float(closeness)


def tune(prob, method, grid, cfg, gap_tol):
    """Step size with the fewest bits to target on the tuning seed (early-stopped runs)."""
    scores = {}
    for g in grid:
        scores[g] = _score(_run(prob, method, g, cfg, stop=_stopper(prob, gap_tol)), prob,
                           gap_tol)
    best = min(grid, key=lambda g: scores[g])
    return best, {str(g): [float(s) for s in scores[g]] for g in grid}


def evaluate(problems, method, gamma, cfg, gap_tol_of):
    """Full-length runs on every seed; per-seed rounds/bits to target and median curves."""
    runs = [_run(p, method, gamma, cfg) for p in problems]
    reach = [r.first_reaching(gap_tol_of(p), VIOL_TOL, p.f_star) for r, p in
             zip(runs, problems, strict=True)]
    gaps = np.array([r.objective - p.f_star for r, p in zip(runs, problems, strict=True)])
    rel = np.array([(r.objective - p.f_star) / p.scale for r, p in
                    zip(runs, problems, strict=True)])
    viol = np.array([r.violation for r in runs])
    return {
        "gamma": gamma,
        "rounds_to_target": float(np.median([a for a, _ in reach])),
        "bits_to_target": float(np.median([b for _, b in reach])),
        "reached": int(sum(np.isfinite(a) for a, _ in reach)),
        "rounds": runs[0].rounds.tolist(),
        "bits_up": runs[0].bits_up.tolist(),
        "bits_down": runs[0].bits_down.tolist(),
        "median_gap": np.median(gaps, axis=0).tolist(),
        "median_rel_gap": np.median(rel, axis=0).tolist(),
        "median_violation": np.median(viol, axis=0).tolist(),
        "bits_per_round": float(runs[0].bits_up[-1] / runs[0].rounds[-1]),
    }


def best_gap_within(ev, bits_budget):
    """Smallest median gap at a record point within the bit budget with violation <= tol."""
    b = np.asarray(ev["bits_up"])
    g = np.asarray(ev["median_gap"])
    v = np.asarray(ev["median_violation"])
    ok = (b <= bits_budget) & (v <= VIOL_TOL)
    return float(np.min(g[ok])) if ok.any() else float("inf")


def plot_problem(name, evs, prob_scale, rel, gap_tol, outdir):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for method, ev in evs.items():
        y = np.asarray(ev["median_rel_gap"] if rel else ev["median_gap"])
        y = np.maximum(y, 1e-5)
        lab = f"{LABELS[method]} (gamma={ev['gamma']:g})"
        bits = np.asarray(ev["bits_up"])
        axes[0].semilogy(ev["rounds"], y, label=lab)
        axes[1].loglog(bits[1:], y[1:], label=lab)  # skip the start (0 bits)
        axes[2].semilogx(bits[1:], np.asarray(ev["median_violation"])[1:], label=lab)
    tgt = gap_tol / prob_scale if rel else gap_tol
    for ax in axes[:2]:
        ax.axhline(tgt, color="k", ls=":", lw=1)
        ax.set_ylabel("relative gap (f - f*)/(f(x0) - f*)" if rel else "gap f - f*")
    axes[2].axhline(VIOL_TOL, color="k", ls=":", lw=1)
    axes[0].set_xlabel("rounds")
    axes[1].set_xlabel("uplink bits per worker")
    axes[2].set_xlabel("uplink bits per worker")
    axes[2].set_ylabel("violation max(g, 0)")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{name}: median over {len(SEEDS)} seeds (output = average over productive steps)")
    fig.tight_layout()
    path = outdir / f"safe_ef_{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def plot_ksweep(rows, outdir, max_rounds):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [r["k"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].semilogx(ks, [r["rounds_to_target"] for r in rows], "o-")
    axes[0].set_xlabel("k (top-k)")
    axes[0].set_ylabel("rounds to 30% relative gap")
    axes[1].loglog(ks, [r["bits_to_target"] for r in rows], "o-")
    axes[1].set_xlabel("k (top-k)")
    axes[1].set_ylabel("uplink bits per worker to 30% relative gap")
    missed = [str(r["k"]) for r in rows if not np.isfinite(r["rounds_to_target"])]
    note = f"; not reached within {max_rounds} rounds: k = {', '.join(missed)}" if missed else ""
    fig.suptitle(f"P2, Safe-EF: accuracy versus k (seed 0, step tuned per k{note})")
    fig.tight_layout()
    path = outdir / "safe_ef_ksweep.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def _mpiexec():
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def mpi_check(gamma, k, rounds):
    """Run P1 Safe-EF under mpiexec -n 4 and in-process on SimComm; compare iterates."""
    ok, reason = mpi_available()
    exe = _mpiexec()
    if not ok or exe is None:
        return {"skipped": reason or "no mpiexec found"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "mpi.npz"
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("OMP_NUM_THREADS", "1")
        args = ["--problem", "P1", "--method", "safe_ef", "--k", str(k), "--gamma", str(gamma),
                "--rounds", str(rounds), "--seed", "0", "--comm-seed", "0",
                "--c", str(SWITCH_C["c"])]
        t0 = time.perf_counter()
        proc = subprocess.run([exe, "-n", "4", sys.executable, "-m",
                               "sparsecert.distributed.safe_ef.mpi", *args, "--out", str(out)],
                              capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"skipped": f"mpiexec failed: {proc.stderr[-500:]}"}
        a = np.load(out)
        prob = build_problem("P1", 0)
        sim = run_method(prob, "safe_ef", gamma, rounds, SimComm(prob.n_workers, seed=0),
                         c=SWITCH_C["c"], k=k, store_iterates=True)
        return {
            "n_procs": int(a["n_procs"]),
            "rounds": rounds,
            "max_abs_iterate_diff": float(np.max(np.abs(a["iterates"] - sim.iterates))),
            "identical": bool(np.array_equal(a["iterates"], sim.iterates)),
            "bits_equal": bool(np.array_equal(a["stats_up"], sim.stats.up)
                               and np.array_equal(a["stats_down"], sim.stats.down)),
            "final_gap_mpi": float(prob.monitor(a["x"])[0] - prob.f_star),
            "final_gap_sim": float(prob.monitor(sim.x)[0] - prob.f_star),
            "mpiexec_wall_s": wall,
        }


def _fmt(v, spec=".0f"):
    return "inf" if not np.isfinite(v) else format(v, spec)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="headline comparison in < 5 minutes")
    ap.add_argument("--json", default=None, help="write results (and PNGs next to it)")
    ap.add_argument("--no-mpi", action="store_true", help="skip the mpiexec -n 4 run")
    ap.add_argument("--c", type=float, default=0.0,
                    help="switching threshold c for every method (default 0)")
    args = ap.parse_args(argv)
    SWITCH_C["c"] = args.c
    mode = "quick" if args.quick else "full"
    conf = CONFIG[mode]
    outdir = Path(args.json).resolve().parent if args.json else None
    if outdir:
        outdir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    results: dict = {"mode": mode, "seeds": SEEDS, "viol_tol": VIOL_TOL, "c": args.c,
                     "problems": {}}
    plots = []
    evals: dict = {}
    for name in ("P1", "P2", "P3"):
        cfg = conf[name]
        t0 = time.perf_counter()
        problems = [build_problem(name, s) for s in SEEDS]
        t_build = time.perf_counter() - t0
        gap_tol, _ = _tols(problems[0], cfg)
        evs, tuning = {}, {}
        for method, grid in cfg["methods"].items():
            gamma, tuning[method] = tune(problems[0], method, grid, cfg, gap_tol)
            evs[method] = evaluate(problems, method, gamma, cfg, lambda p, c=cfg: _tols(p, c)[0])
            evs[method]["tuning"] = tuning[method]
        evals[name] = evs
        results["problems"][name] = {
            "d": problems[0].dim, "n_workers": problems[0].n_workers, "k": cfg["k"],
            "target_gap": cfg["gap"], "relative": cfg["rel"], "f_star_seed0": problems[0].f_star,
            "build_s": t_build, "wall_s": time.perf_counter() - t0, "methods": evs,
        }
        if outdir:
            plots.append(plot_problem(name, evs, problems[0].scale, cfg["rel"], gap_tol, outdir))

    # rounds-to-accuracy versus k (P2, seed 0; gamma tuned per k on a 3-point grid)
    cfg2 = dict(conf["P2"], rounds=conf["ksweep_rounds"])
    p2 = build_problem("P2", 0)
    g10 = evals["P2"]["safe_ef"]["gamma"]
    gap_tol2 = _tols(p2, cfg2)[0]
    krows = []
    for k in conf["ksweep"]:
        best = None
        for g in (0.7 * g10, g10, 1.4 * g10):
            res = _run(p2, "safe_ef", g, cfg2, stop=_stopper(p2, gap_tol2), k=k)
            r, b = res.first_reaching(gap_tol2, VIOL_TOL, p2.f_star)
            if best is None or (b, r) < (best["bits_to_target"], best["rounds_to_target"]):
                best = {"k": k, "gamma": g, "rounds_to_target": r, "bits_to_target": b,
                        "bits_per_round": float(res.bits_up[-1] / max(res.rounds[-1], 1))}
        krows.append(best)
    results["ksweep_P2"] = krows
    if outdir:
        plots.append(plot_ksweep(krows, outdir, conf["ksweep_rounds"]))

    mpi = {"skipped": "--no-mpi"} if args.no_mpi else mpi_check(
        evals["P1"]["safe_ef"]["gamma"], conf["P1"]["k"], conf["mpi_rounds"])
    results["mpi"] = mpi

    # ------------------------------------------------------------------ claims
    e1, e2, e3 = evals["P1"], evals["P2"], evals["P3"]
    b_safe1 = e1["safe_ef"]["bits_to_target"]
    ratio1 = e1["switching_subgradient"]["bits_to_target"] / b_safe1
    ratio2 = e2["switching_subgradient"]["bits_to_target"] / e2["safe_ef"]["bits_to_target"]
    rounds2 = e2["safe_ef"]["rounds_to_target"] / e2["switching_subgradient"]["rounds_to_target"]
    ratio3 = e3["switching_subgradient"]["bits_to_target"] / e3["safe_ef"]["bits_to_target"]
    claims = [
        {"name": "P1 top-1: uncompressed / Safe-EF uplink bits to gap<=0.01 & viol<=0.01",
         "measured": ratio1, "target": 5.0, "unit": "x", "better": "higher"},
        {"name": "P1 top-1: Safe-EF median best gap (violation <= 0.01)",
         "measured": best_gap_within(e1["safe_ef"], np.inf), "target": 0.01, "unit": "gap",
         "better": "lower"},
        {"name": "P1 top-1 no EF: best median gap within Safe-EF's bits (must stay > 0.01)",
         "measured": best_gap_within(e1["topk_no_ef"], b_safe1), "target": 0.01, "unit": "gap",
         "better": "higher"},
        {"name": "P1 top-1 EF21: best median gap within Safe-EF's bits (must stay > 0.01)",
         "measured": best_gap_within(e1["ef21_switching"], b_safe1), "target": 0.01,
         "unit": "gap", "better": "higher"},
        {"name": "P2 top-10: uncompressed / Safe-EF uplink bits to 30% relative gap",
         "measured": ratio2, "target": 10.0, "unit": "x", "better": "higher"},
        {"name": "P2 top-10: Safe-EF / uncompressed rounds to 30% relative gap",
         "measured": rounds2, "target": 1.5, "unit": "x", "better": "lower"},
        {"name": "P3 (worst case, no gain claimed): uncompressed / Safe-EF bits to 1% gap",
         "measured": ratio3, "target": None, "unit": "x", "better": "higher",
         "claimed": False},
    ]
    if "max_abs_iterate_diff" in mpi:
        claims.append({"name": "mpiexec -n 4 vs SimComm: max |iterate difference| (P1)",
                       "measured": mpi["max_abs_iterate_diff"], "target": 0.0, "unit": "abs",
                       "better": "lower"})
    results["claims"] = claims
    results["plots"] = plots
    results["wall_s"] = time.perf_counter() - t_start

    # ------------------------------------------------------------------ table
    print(f"\nSafe-EF benchmark ({mode}; median over {len(SEEDS)} seeds; c = {args.c:g}; "
          f"viol tol {VIOL_TOL})")
    hdr = (f"{'problem':7s} {'method':30s} {'gamma':>7s} {'bits/round':>10s} "
           f"{'rounds->tgt':>11s} {'bits->tgt':>11s} {'reached':>7s} {'final gap':>10s}")
    print(hdr)
    print("-" * len(hdr))
    for name, evs in evals.items():
        for method, ev in evs.items():
            print(f"{name:7s} {LABELS[method]:30s} {ev['gamma']:7.3g} {ev['bits_per_round']:10.0f} "
                  f"{_fmt(ev['rounds_to_target']):>11s} {_fmt(ev['bits_to_target']):>11s} "
                  f"{ev['reached']:>5d}/5 {ev['median_gap'][-1]:10.4f}")
    print("\nP2 Safe-EF, rounds / bits to 30% relative gap versus k (seed 0)")
    for r in krows:
        print(f"  k={r['k']:4d} gamma={r['gamma']:.4g} rounds={_fmt(r['rounds_to_target']):>6s} "
              f"bits={_fmt(r['bits_to_target']):>9s} bits/round={r['bits_per_round']:.0f}")
    print(f"\nMPI check: {mpi}")
    print("\nclaims")
    for c in claims:
        tgt = "reported only" if c["target"] is None else f"{c['better']} than {c['target']}"
        print(f"  {c['name']}: {c['measured']:.4g} {c['unit']} ({tgt})")
    print(f"\nwall time {results['wall_s']:.1f} s")
    if args.json:
        def clean(o):
            if isinstance(o, float) and not np.isfinite(o):
                return None
            if isinstance(o, dict):
                return {k: clean(v) for k, v in o.items()}
            if isinstance(o, list):
                return [clean(v) for v in o]
            return o

        Path(args.json).write_text(json.dumps(clean(results), indent=1, allow_nan=False))
        print(f"wrote {args.json} and {len(plots)} plots")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
