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
   be the same;
3. *growth*: during the certify run a thread samples the process's resident memory; the
   search's history gives the nodes at each sample, and the slope of memory over nodes in the
   run's second half (the bounded caches are full by then) is the producer's memory per node
   of the tree (its open frontier grows with the tree), from which the peak at 10^5 and 10^6
   nodes is projected.

Targets (the claims): the whole call <= 1.05 T + 10 s, certify peak memory <= 1 GB, <= 1 KB a
node, verification <= 10% of the limit with peak memory <= 1 GB. The cost of a tree of 10^6
nodes is printed as an estimate from the measured per-node costs (not a claim). ``--quick``:
T = 60 s (about 3 minutes in all); without it T = 300 s; ``--large`` adds a run at T = 900 s
(33,213 nodes on the loaded 2-core development host).

``--many N`` adds a tree of N evaluated nodes (a node limit, no time limit; about 2N nodes)
on an instance whose nodes are cheap: a square least-squares design (n = p = 60, k = 10,
lambda2 = 0.001, Toeplitz rho = 0.5, SNR 3, columns centred and unit-norm, no intercept) that
the search does not close in 10^5 nodes; its certificate is checked the same way, with the same
memory and size claims.

Usage::

    python benchmarks/proofs.py --quick --json benchmarks/results/proofs.json
    python benchmarks/proofs.py --large
    python benchmarks/proofs.py --quick --many 100000
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


#: the cheap-node instance of ``--many``: (n = p, k, lambda2, rho, snr)
MANY = dict(n=60, k=10, lambda2=0.001, rho=0.5, snr=3.0)


def _instance(name: str):
    """``(X, y, k, lambda2)`` of the named instance (``"riboflavin"`` or ``"square"``)."""
    from sparsecert.datasets import load_riboflavin, make_synthetic, standardize

    if name == "riboflavin":
        return (*load_riboflavin(standardize=True), K, LAMBDA2)
    m = MANY
    X, y, _ = make_synthetic(m["n"], m["n"], m["k"], rho=m["rho"], snr=m["snr"], seed=0)
    return (*standardize(X, y), m["k"], m["lambda2"])


def _rss() -> int | None:
    """The process's resident memory now (Linux; None elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _sample_rss(samples: list, stop, period: float = 0.25) -> None:
    while not stop.wait(period):
        r = _rss()
        if r is not None:
            samples.append((time.perf_counter(), r))


def growth_slope(samples: list[tuple[float, int]], history: list[tuple[float, int]]
                 ) -> float | None:
    """Bytes of resident memory per node of the tree: the least-squares slope of the memory
    samples ``(time, bytes)`` against the nodes the search had then (``history``: ``(time,
    nodes)``, the same clock), over the second half of the nodes; None with too few samples."""
    import numpy as np

    if len(samples) < 8 or len(history) < 2:
        return None
    ht = np.array([h[0] for h in history])
    hn = np.array([h[1] for h in history], dtype=float)
    t = np.array([s[0] for s in samples])
    m = np.array([s[1] for s in samples], dtype=float)
    inside = (t >= ht[0]) & (t <= ht[-1])
    nodes = np.interp(t[inside], ht, hn)
    m = m[inside]
    late = nodes >= 0.5 * hn[-1]
    if late.sum() < 4 or np.ptp(nodes[late]) < 100:
        return None
    return float(max(0.0, np.polyfit(nodes[late], m[late], 1)[0]))


def _child_certify(name: str, limit: float, nodes: int | None, out: str) -> dict:
    import threading

    import sparsecert

    X, y, k, lambda2 = _instance(name)
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_rss, args=(samples, stop), daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    res = sparsecert.certify(X, y, k, lambda2, fit_intercept=False,
                             time_limit=limit if limit > 0 else None, node_limit=nodes,
                             verbose=0)
    t_cert = time.perf_counter()
    stop.set()
    sampler.join()
    # the search's history is in seconds since its start: its end is at t0 + the call's time
    # less the assembly after it, so shift the samples onto that clock
    t_search0 = t_cert - res.assembly_time - res.search.time
    slope = growth_slope([(ts - t_search0, r) for ts, r in samples],
                         [(h.time, h.n_nodes) for h in res.search.history])
    res.save(out)
    t1 = time.perf_counter()
    st = res.proof_stats
    compile_time = float(getattr(res.search, "compile_time", 0.0) or 0.0)
    return dict(instance=name, limit=limit, node_limit=nodes, status=res.status, gap=res.gap,
                n_nodes=st.n_nodes,
                whole_call=t1 - t0 - compile_time, compile_time=compile_time,
                search_time=res.search.time, assembly_time=res.assembly_time,
                save_time=t1 - t_cert, claim_seconds=st.claim_seconds,
                json_bytes=st.json_bytes, proof_bytes=st.proof_bytes,
                bytes_per_node=st.bytes_per_node, peak_memory=_peak_rss(),
                growth_bytes_per_node=slope)


def _child_verify(name: str, path: str, jobs: int) -> dict:
    from sparsecert.certificate.verify import verify_certificate

    X, y, k, lambda2 = _instance(name)
    t0 = time.perf_counter()
    rep = verify_certificate(path, X, y, k=k, lambda2=lambda2, max_abs_coef=None,
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


def measure(limit: float, tmp: str, name: str = "riboflavin", nodes: int = 0) -> dict:
    """The certify run at ``limit`` (0: none) and ``nodes`` (0: no node limit) and the
    verifier's runs on its certificate."""
    path = os.path.join(tmp, f"{name}-{int(limit)}-{nodes}.json")
    cert = _run_child("certify", name, str(limit), str(nodes), path)
    serial = _run_child("verify", name, path, "1")
    parallel = _run_child("verify", name, path, "2")
    same = (serial["ok"], serial["exit_code"], serial["failed"], serial["lower_bound"]) == (
        parallel["ok"], parallel["exit_code"], parallel["failed"], parallel["lower_bound"])
    return dict(certify=cert, verify=serial, verify_parallel=parallel, same_verdict=same)


def claims_of(run: dict) -> list[dict]:
    c, v = run["certify"], run["verify"]
    T = c["limit"]
    if c["instance"] == "riboflavin":
        tag = f"riboflavin k=5 lambda2=0.1 T={T:g}s ({c['n_nodes']:,} nodes)"
        first = [_claim(f"{tag}: whole call (search + certificate + save)",
                        round(c["whole_call"], 2), 1.05 * T + 10.0, "s")]
        verify_target = 0.1 * T
    else:
        tag = (f"square n=p={MANY['n']} k={MANY['k']} lambda2={MANY['lambda2']:g}, "
               f"{c['n_nodes']:,} nodes")
        first, verify_target = [], 0.1 * c["search_time"]
    return first + [
        _claim(f"{tag}: certify peak memory", round(c["peak_memory"] / GB, 3), 1.0, "GB"),
        _claim(f"{tag}: certificate bytes a node (JSON + proof)", round(c["bytes_per_node"], 1),
               1024.0, "bytes"),
        _claim(f"{tag}: standalone verification time", round(v["seconds"], 2), verify_target,
               "s"),
        _claim(f"{tag}: verifier peak memory", round(v["peak_memory"] / GB, 3), 1.0, "GB"),
        _claim(f"{tag}: serial and 2-process verification agree", int(run["same_verdict"]), 1,
               "bool", better="higher"),
    ]


def estimate(run: dict, nodes: float = 1e6) -> dict:
    """A tree of ``nodes`` nodes from the measured per-node costs (linear in the nodes): the
    certificate's size, the verification's time and the producer's peak memory (the verifier's
    memory is the path to the current node and a bounded cache: it does not grow)."""
    c, v = run["certify"], run["verify"]
    per = nodes / max(1, c["n_nodes"])
    slope = c["growth_bytes_per_node"] or 0.0
    extra = slope * max(0.0, nodes - c["n_nodes"])
    return dict(nodes=nodes, certificate_mb=c["bytes_per_node"] * nodes / 1e6,
                verify_seconds=v["seconds"] * per,
                certify_peak_mb=(c["peak_memory"] + extra) / 2 ** 20,
                peak_growth_bytes_per_node=slope,
                growth_measured=c["growth_bytes_per_node"] is not None)


def _print(run: dict) -> None:
    c, v, w = run["certify"], run["verify"], run["verify_parallel"]
    what = (f"riboflavin k={K} lambda2={LAMBDA2} time_limit={c['limit']:g} s"
            if c["instance"] == "riboflavin" else
            f"square n=p={MANY['n']} k={MANY['k']} lambda2={MANY['lambda2']:g} "
            f"node_limit={c['node_limit']:,} (search {c['search_time']:.0f} s)")
    print(f"\n{what}: {c['status']}, gap {c['gap']:.3%}, {c['n_nodes']:,} nodes")
    rows = [
        ("whole call (search + certificate + save)", f"{c['whole_call']:.1f} s",
         f"<= {1.05 * c['limit'] + 10:.0f} s" if c["limit"] > 0 else ""),
        ("  of which after the search (assembly)", f"{c['assembly_time']:.2f} s", ""),
        ("  of which the save", f"{c['save_time']:.2f} s", ""),
        ("  claims computed during the search", f"{c['claim_seconds']:.1f} s", ""),
        ("  first-run compilation (not counted)", f"{c['compile_time']:.1f} s", ""),
        ("certificate (JSON + proof)",
         f"{(c['json_bytes'] + c['proof_bytes']) / 1e6:.2f} MB", ""),
        ("  bytes a node", f"{c['bytes_per_node']:.0f}", "<= 1024"),
        ("certify peak memory", f"{c['peak_memory'] / 2 ** 20:.0f} MB", "<= 1024 MB"),
        ("verify, 1 process", f"{v['seconds']:.1f} s, {v['peak_memory'] / 2 ** 20:.0f} MB",
         f"<= {0.1 * (c['limit'] or c['search_time']):.0f} s, <= 1024 MB"),
        ("verify, 2 processes", f"{w['seconds']:.1f} s", ""),
        ("verdicts (1 and 2 processes)",
         f"exit {v['exit_code']} / {w['exit_code']}, "
         f"{'the same' if run['same_verdict'] else 'DIFFERENT'}", "the same"),
    ]
    g = c["growth_bytes_per_node"]
    rows.insert(8, ("  its growth with the tree (2nd half)",
                    "not measured" if g is None else f"{g / 1024:.1f} KB a node", ""))
    for name, val, target in rows:
        print(f"  {name:<44} {val:>24}   {target}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="T = 60 s instead of 300 s")
    ap.add_argument("--large", action="store_true", help="also T = 900 s")
    ap.add_argument("--many", type=int, default=0, metavar="N",
                    help="also a tree of N nodes on a cheap-node square instance")
    ap.add_argument("--json", metavar="PATH", help="write the results and claims there")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, name, *rest = args.child
        out = (_child_certify(name, float(rest[0]), int(rest[1]) or None, rest[2])
               if kind == "certify" else _child_verify(name, rest[0], int(rest[1])))
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
        if args.many > 0:
            run = measure(0.0, tmp, "square", args.many)
            _print(run)
            runs.append(run)
            claims += claims_of(run)
    big = max((r for r in runs if r["certify"]["instance"] == "riboflavin"),
              key=lambda r: r["certify"]["n_nodes"])
    est = {f"{n:.0e}": estimate(big, n) for n in (1e5, 1e6)}
    for n, e in est.items():
        print(f"\n  estimate for {n} nodes (from the measured per-node costs): certificate "
              f"{e['certificate_mb']:.0f} MB, verification {e['verify_seconds']:.0f} s (one "
              f"process), certify peak {e['certify_peak_mb']:.0f} MB"
              + ("" if e["growth_measured"] else " (its growth not measured)"))
    print("\nclaims:")
    for c in claims:
        ok = c["measured"] <= c["target"] if c["better"] == "lower" else \
            c["measured"] >= c["target"]
        print(f"  {'met ' if ok else 'MISS'} {c['name']}: {c['measured']} {c['unit']} "
              f"(target {c['target']:g})")
    if args.json:
        import platform

        result = dict(benchmark="proofs", quick=args.quick, runs=runs, estimates=est,
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
