"""What a certificate costs on a hard instance: its size, the producer's and the verifier's
memory and time, and the time the whole call takes against its limit.

The instance is riboflavin (71 x 4088, columns centred and scaled to unit norm, y centred, no
intercept; least squares), k = 5, lambda2 = 0.1: the search does not close the gap within the
limit, so the certificate is that of a large stopped tree. Each step runs in a process of its
own, so its peak resident memory (``ru_maxrss``) is its own:

1. *certify*: ``sparsecert.certify(..., time_limit=T)`` then ``CertifyResult.save``; the whole
   call (search, certificate, save) is timed from the call to the saved files, the first-run
   compilation reported apart (the time limit does not count it); the certificate's size (JSON
   and proof file), its bytes a node, the time spent on it after the search
   (``assembly_time``) and the process's peak memory;
2. *verify*: the standalone verifier on the saved files, serially and with two processes
   (``n_jobs=2``): time, peak memory (of the serial run's process) and the verdict, which must
   be the same.

Targets (the claims): the whole call <= 1.05 T + 10 s, certify peak memory <= 1 GB, <= 1 KB a
node, verification <= 10% of the limit with peak memory <= 1 GB. The cost of a tree of 10^6
nodes is printed as an estimate from the measured per-node costs (not a claim). ``--quick``:
T = 60 s (about 3 minutes in all); without it T = 300 s; ``--large`` adds a run at T = 900 s
(33,213 nodes on the loaded 2-core development host).

Usage::

    python benchmarks/proofs.py --quick --json benchmarks/results/proofs.json
    python benchmarks/proofs.py --large
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

K, LAMBDA2 = 5, 0.1
GB = 2 ** 30


def _peak_rss() -> int:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def _data():
    from sparsecert.datasets import load_riboflavin

    return load_riboflavin(standardize=True)


def _child_certify(limit: float, out: str) -> dict:
    import sparsecert

    X, y = _data()
    t0 = time.perf_counter()
    res = sparsecert.certify(X, y, K, LAMBDA2, fit_intercept=False, time_limit=limit,
                             verbose=0)
    t_cert = time.perf_counter()
    res.save(out)
    t1 = time.perf_counter()
    st = res.proof_stats
    compile_time = float(getattr(res.search, "compile_time", 0.0) or 0.0)
    return dict(limit=limit, status=res.status, gap=res.gap, n_nodes=st.n_nodes,
                whole_call=t1 - t0 - compile_time, compile_time=compile_time,
                search_time=res.search.time, assembly_time=res.assembly_time,
                save_time=t1 - t_cert, claim_seconds=st.claim_seconds,
                json_bytes=st.json_bytes, proof_bytes=st.proof_bytes,
                bytes_per_node=st.bytes_per_node, peak_memory=_peak_rss())


def _child_verify(path: str, jobs: int) -> dict:
    from sparsecert.certificate.verify import verify_certificate

    X, y = _data()
    t0 = time.perf_counter()
    rep = verify_certificate(path, X, y, k=K, lambda2=LAMBDA2, max_abs_coef=None,
                             fit_intercept=False, n_jobs=jobs)
    seconds = time.perf_counter() - t0
    return dict(jobs=jobs, seconds=seconds, ok=rep.ok, exit_code=rep.exit_code,
                failed=rep.failed_checks, lower_bound=rep.certified_lower_bound,
                n_nodes=rep.summary.get("n_nodes"), n_regions=rep.summary.get("n_regions"),
                peak_memory=_peak_rss())


def _run_child(*args: str) -> dict:
    """Run this file as a child process (its own peak memory) and return its JSON line."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _claim(name, measured, target, unit, better="lower") -> dict:
    return dict(name=name, measured=measured, target=target, unit=unit, better=better)


def measure(limit: float, tmp: str) -> dict:
    """The certify run at ``limit`` and the verifier's runs on its certificate."""
    path = os.path.join(tmp, f"riboflavin-{int(limit)}.json")
    cert = _run_child("certify", str(limit), path)
    serial = _run_child("verify", path, "1")
    parallel = _run_child("verify", path, "2")
    same = (serial["ok"], serial["exit_code"], serial["failed"], serial["lower_bound"]) == (
        parallel["ok"], parallel["exit_code"], parallel["failed"], parallel["lower_bound"])
    return dict(certify=cert, verify=serial, verify_parallel=parallel, same_verdict=same)


def claims_of(run: dict) -> list[dict]:
    c, v = run["certify"], run["verify"]
    T = c["limit"]
    tag = f"riboflavin k=5 lambda2=0.1 T={T:g}s ({c['n_nodes']:,} nodes)"
    return [
        _claim(f"{tag}: whole call (search + certificate + save)", round(c["whole_call"], 2),
               1.05 * T + 10.0, "s"),
        _claim(f"{tag}: certify peak memory", round(c["peak_memory"] / GB, 3), 1.0, "GB"),
        _claim(f"{tag}: certificate bytes a node (JSON + proof)", round(c["bytes_per_node"], 1),
               1024.0, "bytes"),
        _claim(f"{tag}: standalone verification time", round(v["seconds"], 2), 0.1 * T, "s"),
        _claim(f"{tag}: verifier peak memory", round(v["peak_memory"] / GB, 3), 1.0, "GB"),
        _claim(f"{tag}: serial and 2-process verification agree", int(run["same_verdict"]), 1,
               "bool", better="higher"),
    ]


def estimate(run: dict, nodes: float = 1e6) -> dict:
    """A tree of ``nodes`` nodes from the measured per-node costs (linear in the nodes)."""
    c, v = run["certify"], run["verify"]
    per = nodes / max(1, c["n_nodes"])
    return dict(nodes=nodes, certificate_mb=c["bytes_per_node"] * nodes / 1e6,
                verify_seconds=v["seconds"] * per,
                note="memory of the producer (the open frontier) and of the verifier (the "
                     "path to the current node) does not grow with the nodes")


def _print(run: dict) -> None:
    c, v, w = run["certify"], run["verify"], run["verify_parallel"]
    print(f"\nriboflavin k={K} lambda2={LAMBDA2} time_limit={c['limit']:g} s: {c['status']}, "
          f"gap {c['gap']:.3%}, {c['n_nodes']:,} nodes")
    rows = [
        ("whole call (search + certificate + save)", f"{c['whole_call']:.1f} s",
         f"<= {1.05 * c['limit'] + 10:.0f} s"),
        ("  of which after the search (assembly)", f"{c['assembly_time']:.2f} s", ""),
        ("  of which the save", f"{c['save_time']:.2f} s", ""),
        ("  claims computed during the search", f"{c['claim_seconds']:.1f} s", ""),
        ("  first-run compilation (not counted)", f"{c['compile_time']:.1f} s", ""),
        ("certificate (JSON + proof)",
         f"{(c['json_bytes'] + c['proof_bytes']) / 1e6:.2f} MB", ""),
        ("  bytes a node", f"{c['bytes_per_node']:.0f}", "<= 1024"),
        ("certify peak memory", f"{c['peak_memory'] / 2 ** 20:.0f} MB", "<= 1024 MB"),
        ("verify, 1 process", f"{v['seconds']:.1f} s, {v['peak_memory'] / 2 ** 20:.0f} MB",
         f"<= {0.1 * c['limit']:.0f} s, <= 1024 MB"),
        ("verify, 2 processes", f"{w['seconds']:.1f} s", ""),
        ("verdicts (1 and 2 processes)",
         f"exit {v['exit_code']} / {w['exit_code']}, "
         f"{'the same' if run['same_verdict'] else 'DIFFERENT'}", "the same"),
    ]
    for name, val, target in rows:
        print(f"  {name:<44} {val:>24}   {target}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="T = 60 s instead of 300 s")
    ap.add_argument("--large", action="store_true", help="also T = 900 s")
    ap.add_argument("--json", metavar="PATH", help="write the results and claims there")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        out = (_child_certify(float(rest[0]), rest[1]) if kind == "certify" else
               _child_verify(rest[0], int(rest[1])))
        print(json.dumps(out))
        return 0
    limits = [60.0 if args.quick else 300.0] + ([900.0] if args.large else [])
    print("benchmarks/proofs.py: the certificate of a stopped search on riboflavin "
          f"(limits {', '.join(f'{t:g} s' for t in limits)}; each step in its own process)")
    if not args.large:
        print("  (the largest tree, T = 900 s: --large; skipped)")
    runs, claims = [], []
    with tempfile.TemporaryDirectory(prefix="sparsecert-proofs-") as tmp:
        for T in limits:
            run = measure(T, tmp)
            _print(run)
            runs.append(run)
            claims += claims_of(run)
    est = estimate(max(runs, key=lambda r: r["certify"]["n_nodes"]))
    print(f"\n  estimate for 10^6 nodes (from the per-node costs): certificate "
          f"{est['certificate_mb']:.0f} MB, verification {est['verify_seconds']:.0f} s "
          "(one process); memory does not grow with the nodes")
    print("\nclaims:")
    for c in claims:
        ok = c["measured"] <= c["target"] if c["better"] == "lower" else \
            c["measured"] >= c["target"]
        print(f"  {'met ' if ok else 'MISS'} {c['name']}: {c['measured']} {c['unit']} "
              f"(target {c['target']:g})")
    if args.json:
        import platform

        result = dict(benchmark="proofs", quick=args.quick, runs=runs, estimate_1e6=est,
                      claims=claims, machine=dict(platform=platform.platform(),
                                                  cpus=os.cpu_count(),
                                                  load=os.getloadavg()))
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
