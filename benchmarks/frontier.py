"""The frontier table: for each class of hard instance, the root gap and the time to certify
(or the gap left at the time limit), and the same for another version of the code.

The classes (least squares without an intercept, ``rel_gap = 1e-4``; riboflavin standardised
to centred columns of unit norm and a centred response, the synthetic designs as drawn, with
columns of unit variance, so of squared norm about n, as in ``benchmarks/certify.py``):

* p >> n: riboflavin (71 x 4088, bundled), k = 5, lambda2 = 1;
* p >> n with a small ridge weight: riboflavin, k = 5, lambda2 = 0.1;
* n = p: ``make_synthetic(1000, 1000, 10, rho=0.5, snr=5)``, lambda2 = 1;
* strong correlation: ``make_synthetic(1000, 200, 10, rho=0.9, snr=5)``, lambda2 = 1;
* a small ridge weight with n > p: ``make_synthetic(3000, 1000, 10)``, lambda2 = 0.1.

For each: the root (``node_limit=1``: the root's heuristics and its bound) gives the root
gap, ``(UB - LB_root) / max(1, |UB|)`` with UB the best model either run found; then a run
with the time limit (30 s with ``--quick``, 600 s without, ``--time-limit`` to choose) gives
its status, time, nodes and final gap, and its certificate is re-checked by the standalone
verifier (``sparsecert.verify`` on the saved files). ``--compare BASE.json`` puts the rows of a
run of this script on other code (``PYTHONPATH=/path/to/old/src python benchmarks/frontier.py
--quick --json BASE.json``; the script uses only the public API) beside this run's.

Usage::

    python benchmarks/frontier.py --quick --json /tmp/frontier.json [--compare BASE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import sparsecert
from sparsecert.datasets import load_riboflavin, make_synthetic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from certify import _standardise  # noqa: E402

REL_GAP = 1e-4
#: the n = p instance (its root gap was about 70% when the frontier table began)
N_EQ_P = "n = p: synthetic (1000,1000,10) rho=0.5 l2=1"


def instances():
    """(name, X, y, k, lambda2) of each class."""
    Xr, yr = _standardise(*load_riboflavin(), "squared")  # as benchmarks/certify.py does
    out = [("p >> n: riboflavin k=5 l2=1", Xr, yr, 5, 1.0),
           ("p >> n, small l2: riboflavin k=5 l2=0.1", Xr, yr, 5, 0.1)]
    for name, (n, p, k, rho), lam in ((N_EQ_P, (1000, 1000, 10, 0.5), 1.0),
                                      ("strong correlation: synthetic (1000,200,10) rho=0.9 "
                                       "l2=1", (1000, 200, 10, 0.9), 1.0),
                                      ("small l2, n > p: synthetic (3000,1000,10) l2=0.1",
                                       (3000, 1000, 10, 0.5), 0.1)):
        X, y, _ = make_synthetic(n, p, k, rho=rho, snr=5.0, seed=0)
        out.append((name, X, y, k, lam))  # as drawn: columns of unit variance
    return out


def measure(X, y, k, lam, time_limit: float) -> dict:
    """The root, then the limited run and its verification."""
    kw = dict(fit_intercept=False, rel_gap=REL_GAP, verbose=0)
    sparsecert.certify(X[:20, :30], y[:20], 2, lam, **kw)  # compiled before the clock starts
    t0 = time.perf_counter()
    root = sparsecert.certify(X, y, k, lam, node_limit=1, **kw)
    root_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = sparsecert.certify(X, y, k, lam, time_limit=time_limit, **kw)
    run_time = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cert.json"
        res.save(path)
        verified = bool(sparsecert.verify(path, X, y).ok)
    ub = min(root.objective, res.objective)
    return dict(root_lb=float(root.lower_bound), root_ub=float(root.objective),
                root_time=root_time,
                root_gap=max(0.0, ub - root.lower_bound) / max(1.0, abs(ub)),
                status=res.status, time=run_time, nodes=int(res.n_nodes),
                ub=float(res.objective), lb=float(res.lower_bound), gap=float(res.gap),
                verified=verified)


def _cell(r: dict | None) -> str:
    if r is None:
        return "-"
    done = r["status"] == "optimal"
    end = f"{r['time']:.1f} s" if done else f"{100 * r['gap']:.2f}% at {r['time']:.0f} s"
    return f"{100 * r['root_gap']:.2f}% | {end}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="30 s per instance instead of 600 s")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per instance")
    ap.add_argument("--json", type=Path, default=None, help="write the rows and claims here")
    ap.add_argument("--compare", type=Path, default=None,
                    help="a JSON of this script run on other code (the 'before' columns)")
    args = ap.parse_args(argv)
    tl = args.time_limit if args.time_limit is not None else (30.0 if args.quick else 600.0)
    base = {}
    if args.compare is not None:
        try:
            base = {r["instance"]: r for r in json.loads(args.compare.read_text())["rows"]}
        except (OSError, ValueError, KeyError) as exc:
            print(f"frontier: error: cannot read --compare {args.compare}: {exc}",
                  file=sys.stderr)
            return 2
    rows = []
    print(f"time limit {tl:g} s per instance; cells: root gap | time to certify "
          f"(or the gap left at the limit)")
    print(f"{'instance':48s} {'before':>26s} {'now':>26s}  verified")
    for name, X, y, k, lam in instances():
        r = dict(instance=name, **measure(X, y, k, lam, tl))
        rows.append(r)
        print(f"{name:48s} {_cell(base.get(name)):>26s} {_cell(r):>26s}  {r['verified']}",
              flush=True)
    n_eq_p = next(r for r in rows if r["instance"] == N_EQ_P)
    claims = [dict(name="n = p (1000, 1000, 10), lambda2 = 1, Toeplitz rho = 0.5, SNR 5: root "
                        "gap (half of the ~70% the frontier started from)",
                   measured=n_eq_p["root_gap"], target=0.35, unit="relative gap",
                   better="lower"),
              dict(name="frontier certificates the standalone verifier rejected",
                   measured=sum(not r["verified"] for r in rows), target=0, unit="count",
                   better="lower")]
    for c in claims:
        met = c["measured"] <= c["target"]
        print(f"  [{'met' if met else 'MISSED'}] {c['name']}: {c['measured']:.4g} "
              f"(target {c['target']:g})")
    if args.json is not None:
        def clean(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v
        doc = dict(meta=dict(python=sys.version.split()[0], platform=platform.platform(),
                             time_limit=tl, rel_gap=REL_GAP,
                             before=str(args.compare) if args.compare else None),
                   rows=[{k: clean(v) for k, v in r.items()} for r in rows],
                   before=list(base.values()), claims=claims)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
