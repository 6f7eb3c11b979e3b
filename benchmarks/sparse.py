"""Benchmark: certify with a sparse design matrix, peak memory against the matrix's own size.

A scipy.sparse CSR matrix (uniform random positions, values from a few levels, as a one-hot or
TF-IDF design has), a planted ``k``-sparse least-squares model with noise and an intercept, and
``sparsecert.certify`` with a time limit (certified, or an honest gap at the limit). The matrix's
own size is the bytes of its three arrays (``data``, ``indices``, ``indptr``) as the user holds
it. Peak memory is measured two ways, each over the ``certify`` call alone (the user's matrix
exists before and is not counted twice):

* **tracemalloc**: the peak of the Python and numpy allocations made during the call (numpy
  reports its buffers to tracemalloc; the compiled kernels' own temporaries, which numba
  allocates outside it, are ``O(n + p)`` vectors and are not seen);
* **RSS**: the peak resident set size sampled every 2 ms by a thread, minus the RSS before the
  call (numba's allocations included, compilation not: a small warm-up run loads the kernels
  first). It undercounts whenever the allocator reuses memory this process freed earlier (the
  problem's generation frees more than the matrix), so it is shown for reference only.

The claim is ``(matrix + peak during certify) / matrix`` by tracemalloc (the stricter RSS
ratio is printed and kept in the JSON too): the memory a user needs, relative to the matrix,
with the matrix itself counted once. The standalone verifier's peak (same two measures) is
reported without a target. Timings are wall-clock seconds on whatever machine runs it (often
a loaded, shared one: say so when quoting them).

Run:  python benchmarks/sparse.py --quick --json out/sparse.json
      python benchmarks/sparse.py                 # the full size with a longer time limit
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

#: the target: peak memory of certify (the matrix counted once) over the matrix's own size
TARGET_RATIO = 4.0


def make_problem(n: int, p: int, density: float, k: int, seed: int = 0):
    """A CSR design of the given density, and a response from a planted k-sparse model."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    nnz = int(round(n * p * density))
    # positions: distinct (row, column) pairs; values: a few levels (one-hot, counts, weights)
    flat = np.unique(rng.integers(0, n * p, size=int(nnz * 1.001) + 16, dtype=np.int64))[:nnz]
    rows, cols = np.divmod(flat, p)
    vals = rng.choice(np.array([0.5, 1.0, 1.0, 2.0, 3.0]), size=flat.size)
    X = sp.csr_matrix((vals, (rows.astype(np.int32), cols.astype(np.int32))), shape=(n, p))
    X.sort_indices()
    b = np.zeros(p)
    support = rng.choice(p, size=k, replace=False)
    b[support] = rng.choice([-1.0, 1.0], size=k) * rng.uniform(2.0, 4.0, size=k)
    y = X @ b + 1.5 + 0.5 * rng.standard_normal(n)
    return X, y, np.sort(support)


def matrix_bytes(X) -> int:
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakMemory:
    """tracemalloc's peak and the sampled peak RSS over a block (bytes above the start)."""

    def __enter__(self):
        gc.collect()
        self._stop = threading.Event()
        self.rss0 = _rss()
        self.rss_peak = self.rss0
        self._thread = threading.Thread(target=self._sample, daemon=True)
        tracemalloc.start()
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.rss_peak = max(self.rss_peak, _rss())
            time.sleep(0.002)

    def __exit__(self, *exc):
        _, self.traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        self._stop.set()
        self._thread.join()
        self.rss_peak = max(self.rss_peak, _rss())
        self.rss_extra = self.rss_peak - self.rss0
        return False


def run(n: int, p: int, density: float, k: int, lambda2: float, time_limit: float) -> dict:
    import sparsecert
    from sparsecert.certificate.verify import verify_certificate

    # warm-up: load (or compile) the sparse kernels on a small problem, not measured
    Xw, yw, _ = make_problem(400, 200, 0.02, 3, seed=1)
    sparsecert.certify(Xw, yw, k=3, lambda2=lambda2, verbose=False, time_limit=30)
    X, y, planted = make_problem(n, p, density, k)
    size = matrix_bytes(X)
    t0 = time.perf_counter()
    with PeakMemory() as mem:
        res = sparsecert.certify(X, y, k=k, lambda2=lambda2, time_limit=time_limit,
                                 verbose=False)
    seconds = time.perf_counter() - t0
    cert = res.certificate
    t1 = time.perf_counter()
    with PeakMemory() as vmem:
        rep = verify_certificate(cert, X, y)
    verify_s = time.perf_counter() - t1
    return {
        "n": n, "p": p, "density": density, "nnz": int(X.nnz), "k": k, "lambda2": lambda2,
        "time_limit_s": time_limit, "matrix_bytes": size,
        "status": res.status, "objective": float(res.objective),
        "lower_bound": float(res.lower_bound), "rel_gap": float(res.gap),
        "support": np.flatnonzero(res.coef).tolist(), "planted_support": planted.tolist(),
        "certify_s": seconds, "nodes": int(getattr(res, "n_nodes", -1)),
        "certify_traced_peak_bytes": int(mem.traced_peak),
        "certify_rss_extra_bytes": int(mem.rss_extra),
        "ratio_traced": (size + mem.traced_peak) / size,
        "ratio_rss": (size + mem.rss_extra) / size,
        "verified": bool(rep.ok), "verify_s": verify_s,
        "verify_traced_peak_bytes": int(vmem.traced_peak),
        "verify_rss_extra_bytes": int(vmem.rss_extra),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="the target size with a 60 s time limit (default: 600 s)")
    ap.add_argument("--json", type=Path, default=None, help="write results + claims here")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--p", type=int, default=10_000)
    ap.add_argument("--density", type=float, default=0.001)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--lambda2", type=float, default=1.0)
    ap.add_argument("--time-limit", type=float, default=None)
    args = ap.parse_args(argv)
    limit = args.time_limit if args.time_limit is not None else (60.0 if args.quick else 600.0)
    row = run(args.n, args.p, args.density, args.k, args.lambda2, limit)
    mb = 2.0 ** 20
    print(f"sparse certify: n={row['n']} p={row['p']} density={row['density']:g} "
          f"nnz={row['nnz']} k={row['k']} lambda2={row['lambda2']:g}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'matrix':>10} {'status':>10} {'gap':>9} {'certify':>9} {'peak (traced)':>14} "
          f"{'peak (RSS)':>11} {'ratio traced':>13} {'ratio RSS':>10} {'verified':>9} "
          f"{'verify':>8} {'verify peak':>12}")
    print(f"{row['matrix_bytes'] / mb:8.1f}MB {row['status']:>10} {row['rel_gap']:9.2e} "
          f"{row['certify_s']:8.1f}s {row['certify_traced_peak_bytes'] / mb:12.1f}MB "
          f"{row['certify_rss_extra_bytes'] / mb:9.1f}MB {row['ratio_traced']:13.2f} "
          f"{row['ratio_rss']:10.2f} {str(row['verified']):>9} {row['verify_s']:7.1f}s "
          f"{row['verify_traced_peak_bytes'] / mb:10.1f}MB")
    print(f"support found {row['support']}, planted {row['planted_support']}")
    claims = [{"name": f"peak memory of certify / matrix size ({row['n']} x {row['p']}, "
                       f"density {row['density']:g}, k = {row['k']}; tracemalloc, the matrix "
                       "counted once)",
               "measured": row["ratio_traced"], "target": TARGET_RATIO, "unit": "x",
               "better": "lower"}]
    print("claims:")
    for c in claims:
        ok = c["measured"] <= c["target"]
        print(f"  {c['name']}: {c['measured']:.2f} {c['unit']} (target <= {c['target']:g}) "
              f"{'met' if ok else 'MISSED'}; status {row['status']}, gap {row['rel_gap']:.2e}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"benchmark": "sparse", "quick": args.quick,
                                         "cpu_count": os.cpu_count(),
                                         "load_average": os.getloadavg()[0], "rows": [row],
                                         "claims": claims}, indent=2))


if __name__ == "__main__":
    main()
