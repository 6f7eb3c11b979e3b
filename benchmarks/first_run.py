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
this tree's ``src``. ``--install`` does the whole first command of the Quickstart: for each
repetition a fresh venv (``python -m venv``), ``python -m pip install .`` of a copy of this
repository timed (building the wheel and installing numpy, scipy, numba, scikit-learn from
wherever pip finds them: a package index over the network, or a local cache or mirror, which
is much faster), then the two runs with that venv's interpreter; it reports the install, the
first run, and their sum (what the Quickstart's first command costs).

Run:  python benchmarks/first_run.py --quick --json out/first_run.json
      python benchmarks/first_run.py --install --repeats 3   # with pip install, fresh venvs
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
    else:  # an installed package: nothing on PYTHONPATH may stand in for it
        env.pop("PYTHONPATH", None)
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


def fresh_install(work: Path) -> tuple[str, float, float]:
    """A fresh venv in ``work`` with this repository pip-installed into it, as the Quickstart's
    first command does; returns ``(its python, seconds to create the venv, seconds of pip)``."""
    import shutil

    copy = work / "clone"  # pip builds in the source tree: build it in a copy, not here
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", "_build", "output", "results",
        ".pytest_cache", ".ruff_cache", "sparsecert-certificate.*"))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
    venv_s = time.perf_counter() - t0
    python = str(work / "venv" / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-m", "pip", "install", "-q", "."], cwd=copy, env=env,
                          capture_output=True, text=True)
    pip_s = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{proc.stdout}\n{proc.stderr}")
    return python, venv_s, pip_s


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repetition (default: three)")
    ap.add_argument("--json", type=Path, default=None, help="write results + claims here")
    ap.add_argument("--repeats", type=int, default=None, help="repetitions (median reported)")
    ap.add_argument("--python", default=None,
                    help="interpreter with sparsecert installed (default: this one, on src/)")
    ap.add_argument("--baseline", default=None,
                    help="a second source tree's src directory, timed alternately")
    ap.add_argument("--install", action="store_true",
                    help="each repetition: pip install this repository into a fresh venv "
                         "(timed), then time the runs with it")
    args = ap.parse_args(argv)
    if args.install and (args.python or args.baseline):
        ap.error("--install times its own fresh venv: not with --python or --baseline")
    repeats = args.repeats or (1 if args.quick else 3)
    python = args.python or sys.executable
    trees = {"this tree": None if (args.python or args.install) else str(ROOT / "src")}
    if args.baseline:
        trees["baseline"] = str(Path(args.baseline).resolve())
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(repeats):
        for name, src in trees.items():
            if args.install:
                with tempfile.TemporaryDirectory(prefix="sparsecert-install-") as work:
                    py, venv_s, pip_s = fresh_install(Path(work))
                    row = measure(py, None)
                row.update(venv_s=venv_s, install_s=pip_s)
                runs[name].append(row)
            else:
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
        if args.install:
            rows[-1].update(
                install_s=float(np.median([r["install_s"] for r in rs])),
                install_all_s=[r["install_s"] for r in rs],
                venv_all_s=[r["venv_s"] for r in rs],
                install_and_first_run_s=float(np.median([r["install_s"] + r["first_s"]
                                                         for r in rs])))
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
    if args.install:
        r = rows[0]
        print(f"pip install . into a fresh venv: {r['install_s']:.2f} s (runs "
              f"{', '.join(f'{t:.1f}' for t in r['install_all_s'])} s; the venv itself "
              f"{np.median(r['venv_all_s']):.1f} s); the Quickstart's first command, install "
              f"and first run: {r['install_and_first_run_s']:.2f} s")
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
