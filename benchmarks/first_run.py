"""Benchmark: the first ``sparsecert certify`` after installing (numba compiles) and a second one.

The Quickstart's default command (diabetes, k = 5, lambda2 = 0.1, with an intercept, then the
standalone verification) is run as a user runs it: a new process in an empty directory. The
first run starts from an empty numba cache (``NUMBA_CACHE_DIR`` set to a fresh directory, which
numba then uses instead of the package's ``__pycache__``: the state of a fresh install), the
second run reuses the cache the first one wrote. Wall-clock times of the whole command
(interpreter start, imports, compilation, search, certificate, verification), and the CPU
seconds it used (all its processes: the first run compiles in two), which vary less than the
wall clock when the machine is shared.

``--baseline SRC`` times another source tree (for example an older checkout's ``src``) the
same way, alternating with this one, so that both see the same machine load; ``--python``
runs an installed package with another interpreter (a fresh venv's ``bin/python``) instead of
this tree's ``src``.

Run:  python benchmarks/first_run.py --quick --json out/first_run.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: the first-run target, seconds on 2 cores
TARGET_FIRST_RUN = 10.0


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_certify(python: str, src: str | None, cache_dir: str) -> tuple[float, float, str]:
    """Time ``sparsecert certify`` (no arguments) in an empty directory; ``(seconds, CPU
    seconds of all its processes, output)``."""
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = cache_dir
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory(prefix="sparsecert-first-run-") as work:
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run([python, "-m", "sparsecert", "certify"], cwd=work, env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        cpu = _children_cpu() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"sparsecert certify exited {proc.returncode}:\n{proc.stdout}\n"
                           f"{proc.stderr}")
    return seconds, cpu, proc.stdout


def measure(python: str, src: str | None) -> dict:
    """First run on an empty cache, then a second run on the cache it wrote."""
    with tempfile.TemporaryDirectory(prefix="sparsecert-numba-cache-") as cache:
        load = os.getloadavg()[0]
        first, first_cpu, out1 = run_certify(python, src, cache)
        second, second_cpu, _ = run_certify(python, src, cache)
    compiled = [s for s in out1.splitlines() if s.startswith("kernels compiled in")]
    return {"first_s": first, "second_s": second, "first_cpu_s": first_cpu,
            "second_cpu_s": second_cpu, "load_before": load,
            "compile_line": compiled[0] if compiled else None}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repetition (default: three)")
    ap.add_argument("--json", type=Path, default=None, help="write results + claims here")
    ap.add_argument("--repeats", type=int, default=None, help="repetitions (median reported)")
    ap.add_argument("--python", default=None,
                    help="interpreter with sparsecert installed (default: this one, on src/)")
    ap.add_argument("--baseline", default=None,
                    help="a second source tree's src directory, timed alternately")
    args = ap.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    python = args.python or sys.executable
    trees = {"this tree": None if args.python else str(ROOT / "src")}
    if args.baseline:
        trees["baseline"] = str(Path(args.baseline).resolve())
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(repeats):
        for name, src in trees.items():
            runs[name].append(measure(python, src))
    rows = []
    for name, rs in runs.items():
        rows.append({"tree": name, "src": trees[name], "repeats": len(rs),
                     "first_run_s": float(np.median([r["first_s"] for r in rs])),
                     "second_run_s": float(np.median([r["second_s"] for r in rs])),
                     "first_run_cpu_s": float(np.median([r["first_cpu_s"] for r in rs])),
                     "first_run_all_s": [r["first_s"] for r in rs],
                     "second_run_all_s": [r["second_s"] for r in rs],
                     "first_run_cpu_all_s": [r["first_cpu_s"] for r in rs],
                     "load_all": [r["load_before"] for r in rs],
                     "compile_line": rs[-1]["compile_line"]})
    ours = rows[0]
    claims = [{"name": "first sparsecert certify (empty numba cache)",
               "measured": ours["first_run_s"], "target": TARGET_FIRST_RUN, "unit": "s",
               "better": "lower"}]
    print(f"sparsecert certify (diabetes, k=5, lambda2=0.1, intercept), {os.cpu_count()} "
          f"cores, load average {os.getloadavg()[0]:.2f}, median of {repeats}")
    print(f"{'tree':>10} {'first run':>10} {'(CPU)':>7} {'second run':>11}  "
          f"first runs (min-max)  first-run log line")
    for r in rows:
        spread = f"{min(r['first_run_all_s']):.2f}-{max(r['first_run_all_s']):.2f}s"
        print(f"{r['tree']:>10} {r['first_run_s']:9.2f}s {r['first_run_cpu_s']:6.2f}s "
              f"{r['second_run_s']:10.2f}s  {spread:>20}  {r['compile_line'] or '-'}")
    if len(rows) == 2:
        ratio = rows[1]["first_run_s"] / rows[0]["first_run_s"]
        print(f"first run: baseline / this tree = {ratio:.2f}x")
    print("claims:")
    for c in claims:
        ok = c["measured"] <= c["target"]
        print(f"  {c['name']}: {c['measured']:.2f} {c['unit']} (target <= {c['target']:g}) "
              f"{'met' if ok else 'MISSED'}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"benchmark": "first_run", "quick": args.quick,
                                         "cpu_count": os.cpu_count(),
                                         "load_average": os.getloadavg()[0], "rows": rows,
                                         "claims": claims}, indent=2))


if __name__ == "__main__":
    main()
