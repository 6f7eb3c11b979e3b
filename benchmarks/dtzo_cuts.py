"""Dimension sweep of the DTZO-style cut cost: full-frame cuts against the cheaper update cut.

One cut refinement with full-frame Jacobians costs ``K ((2 d + 1) 2 d3 + (2 d12 + 1) 2 d2)``
function values per worker (``d = d1 + d2 + d3``): it grows like ``d * d3``. The update cut
(``cut_jacobian="update"``) measures a full frame only for the first cut of each level and when
the previous Jacobian has gone stale; otherwise it corrects the previous Jacobian along the
secant between the cut points and re-measures it along ``cut_dirs`` fresh directions, so a
refinement costs ``K (2 cut_dirs + 1) 2 (d3 + d2)`` values. The sweep runs P3 (non-quadratic
levels, closed-form solution) with ``dims = (2, n, n)``, 3 workers and 300 iterations:

* ``full``: full frames, cuts refreshed every ``T = 10`` iterations up to the end (``T1 = 300``);
* ``update``: the update cut on the same schedule;
* ``full_T1=60``: full frames refreshed only until ``T1 = 60`` (the P1 benchmark's schedule);
* ``sketch``: a random ``q = cut_dirs``-direction sketch weighted by ``n / q`` instead of the
  full frame (cheap, unbiased, but a rank-``q`` Jacobian), same schedule as ``full``.

Columns: ``q/full_rf`` and ``q/upd_rf`` are the median function values (all workers) of a
refinement that measured full frames and of one that only updated; ``full_rf`` counts the
refinements that measured a full frame for at least one level, ``refines`` all of them;
``cut_q`` and ``queries`` are totals (cuts, and everything including the workers' level-1
estimates); ``it@tgt`` and ``q@tgt`` the first iteration and the queries spent when
``err_x1 <= 5%`` and both true residuals ``<= 1e-2``; errors and residuals are final values
computed by the problem's oracle. Medians over the seeds.

Usage (a PNG is written next to the JSON file)::

    python benchmarks/dtzo_cuts.py --quick --json docs/_static/dtzo/dtzo_cuts_quick.json
"""

from __future__ import annotations

import os

# BLAS on one thread (before numpy loads it): the small dense solves and products here are
# many times slower with threads fighting for two shared cores; an explicit setting wins
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from sparsecert.distributed.comm import SimComm  # noqa: E402
from sparsecert.distributed.dtzo.algorithm import _DTZO, DTZOConfig, DTZOWarning  # noqa: E402
from sparsecert.distributed.dtzo.nonquadratic import make_p3  # noqa: E402
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig  # noqa: E402

N_ITER = 300
CUT_DIRS = 4


def base_config() -> DTZOConfig:
    return DTZOConfig(n_iter=N_ITER, rho=1.0, beta=1e4, eps=1e-4, lr=0.2, K=3, eta3=0.2,
                      eta2=0.2, T=10, T1=N_ITER, max_cuts=3, vr_period=20, zo_f1=ZOConfig(q=2),
                      cut_dirs=CUT_DIRS)


MODES = {
    "full": {},
    "update": {"cut_jacobian": "update"},
    "full_T1=60": {"T1": 60},
    "sketch": {"zo_cut": ZOConfig(q=CUT_DIRS, mu=1e-3)},
}


def targets_met(h: dict[str, np.ndarray]) -> np.ndarray:
    return (h["err_x1"] <= 0.05) & (h["res3"] <= 1e-2) & (h["res2"] <= 1e-2)


def run_one(dims: tuple[int, int, int], mode: str, seed: int) -> dict[str, float]:
    P = make_p3(n_workers=3, dims=dims, seed=seed)
    cfg = replace(base_config(), seed=seed, **MODES[mode])
    t0 = time.perf_counter()
    solver = _DTZO(P, SimComm(3, seed=seed), cfg, P.metrics)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DTZOWarning)  # recorded in res.warnings
        res = solver.run()
    elapsed = time.perf_counter() - t0
    h = res.history
    refs = np.arange(0, min(cfg.T1, cfg.n_iter), cfg.T)  # refinement iterations
    n_ref = refs.size
    # history rows are iterations 0..n_iter; the refinement at t happens in iteration t
    cost = h["cut_queries"][refs + 1] - h["cut_queries"][refs]
    full = (h["full_frames"][refs + 1] - h["full_frames"][refs]) > 0
    ok = np.nonzero(targets_met(h))[0]
    return {
        "q_full_refinement": float(np.median(cost[full])) if full.any() else float("nan"),
        "q_updated_refinement": float(np.median(cost[~full])) if (~full).any() else float("nan"),
        "err_x1": float(h["err_x1"][-1]), "res3": float(h["res3"][-1]),
        "res2": float(h["res2"][-1]),
        "cut_queries": float(h["cut_queries"][-1]), "queries": float(h["queries"][-1]),
        "per_refinement": float(h["cut_queries"][-1]) / n_ref,
        "refinements": float(n_ref), "full_frames": float(solver.jac.stats.full),
        "full_refinements": float(full.sum()),
        "it_at_targets": float(h["iter"][ok[0]]) if ok.size else float("inf"),
        "queries_at_targets": float(h["queries"][ok[0]]) if ok.size else float("inf"),
        "time_s": elapsed, "warned": float(len(res.warnings) > 0),
    }


def growth_exponent(sizes: list[float], costs: list[float]) -> float:
    """Least-squares slope of log(cost) against log(size)."""
    return float(np.polyfit(np.log(sizes), np.log(costs), 1)[0])


def plot(rows: dict[str, dict[str, dict[str, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [rows[k]["full"]["d_times_d3"] for k in rows]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    ax[0].loglog(sizes, [rows[k]["full"]["q_full_refinement"] for k in rows], "o-",
                 label="full-frame refinement")
    ax[0].loglog(sizes, [rows[k]["update"]["q_updated_refinement"] for k in rows], "s-",
                 label="updated refinement")
    ax[0].set(xlabel="d * d3", ylabel="function values per refinement (all workers)")
    ax[0].legend(fontsize=8)
    for mode, mk in (("full", "o-"), ("update", "s-"), ("full_T1=60", "^--")):
        ax[1].loglog(sizes, [rows[k][mode]["cut_queries"] for k in rows], mk, label=mode)
    ax[1].set(xlabel="d * d3", ylabel="function values spent on cuts (300 iterations)")
    ax[1].legend(fontsize=8)
    for a in ax:
        a.minorticks_off()
        a.set_xticks(sizes, [f"{v:.0f}" for v in sizes])
    fig.suptitle("P3, dims (2, n, n): cost of the zeroth-order cuts", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n in (5, 10, 20), one seed (< 5 min)")
    ap.add_argument("--json", type=Path, default=None, help="write results + claims here")
    args = ap.parse_args(argv)
    ns = (5, 10, 20) if args.quick else (5, 10, 20, 40)
    seeds = (0,) if args.quick else (0, 1, 2)
    t_start = time.perf_counter()

    rows: dict[str, dict[str, dict[str, float]]] = {}
    for n in ns:
        dims = (2, n, n)
        key = f"(2,{n},{n})"
        rows[key] = {}
        for mode in MODES:
            runs = [run_one(dims, mode, s) for s in seeds]
            rows[key][mode] = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
            rows[key][mode]["d_times_d3"] = float((4 + 2 * n) * n)

    cols = [("q_full_refinement", "q/full_rf"), ("q_updated_refinement", "q/upd_rf"),
            ("full_refinements", "full_rf"), ("refinements", "refines"),
            ("cut_queries", "cut_q"), ("queries", "queries"), ("time_s", "time_s"),
            ("err_x1", "err_x1"), ("res3", "res3"), ("res2", "res2"),
            ("it_at_targets", "it@tgt"), ("queries_at_targets", "q@tgt")]
    lines = [f"{'dims':<11}{'d*d3':>7} {'cut':<11}" + "".join(f"{lab:>10}" for _, lab in cols)]
    for key, modes in rows.items():
        for mode, r in modes.items():
            lines.append(f"{key:<11}{r['d_times_d3']:>7.0f} {mode:<11}"
                         + "".join(f"{r[k]:>10.3g}" for k, _ in cols))
    table = "\n".join(lines)
    print(table)

    sizes = [rows[k]["full"]["d_times_d3"] for k in rows]
    exp_full = growth_exponent(sizes, [rows[k]["full"]["q_full_refinement"] for k in rows])
    exp_upd = growth_exponent(sizes, [rows[k]["update"]["q_updated_refinement"] for k in rows])
    largest = list(rows)[-1]
    ratio = rows[largest]["update"]["cut_queries"] / rows[largest]["full"]["cut_queries"]
    worst_err = max(rows[k]["update"]["err_x1"] for k in rows)
    worst_res = max(max(rows[k]["update"]["res3"], rows[k]["update"]["res2"]) for k in rows)
    claims = [
        {"name": "growth exponent in d*d3 of the queries of a full-frame refinement",
         "measured": exp_full, "target": 0.9, "unit": "log-log slope", "better": "higher"},
        {"name": "growth exponent in d*d3 of the queries of an updated refinement",
         "measured": exp_upd, "target": 0.75, "unit": "log-log slope", "better": "lower"},
        {"name": f"cut queries of the update cut / full-frame cuts at dims {largest}",
         "measured": ratio, "target": 0.5, "unit": "ratio", "better": "lower"},
        {"name": "update cut: worst relative error of x1 over the sweep",
         "measured": worst_err, "target": 0.05, "unit": "relative", "better": "lower"},
        {"name": "update cut: worst true lower-level residual over the sweep",
         "measured": worst_res, "target": 1e-2, "unit": "gradient norm", "better": "lower"},
    ]
    print("claims:")
    for c in claims:
        ok = c["measured"] <= c["target"] if c["better"] == "lower" else c["measured"] > c["target"]
        print(f"  [{'met' if ok else 'NOT met'}] {c['name']}: {c['measured']:.4g} "
              f"(target {c['target']:g}, {c['better']} is better)")
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"quick": args.quick, "seeds": list(seeds), "n_iter": N_ITER,
                   "cut_dirs": CUT_DIRS, "rows": rows, "claims": claims, "table_text": table}
        args.json.write_text(json.dumps(payload, indent=2, default=float))
        print(f"wrote {args.json}")
        png = args.json.parent / "dtzo_cuts_sweep.png"
        plot(rows, png)
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
