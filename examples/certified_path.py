"""The certified path over k: objective, proven lower bound, gap and support for each k.

:func:`sparsecert.path.certify_path` solves the k-sparse problem for every k on a grid, each
with its own certificate, sharing the data preparation and the exact refits and starting each
search from the previous k's optimum. ``path.plot()`` draws the certified objective and lower
bound against k (they coincide up to the gap), the gap, and which features enter the support
(coloured by coefficient; the colour bar is the key).

Run: ``python examples/certified_path.py [--quick] [--out DIR]``
"""

from __future__ import annotations

from _common import parse_args, savefig

from sparsecert.api import verify
from sparsecert.datasets import make_synthetic, true_support
from sparsecert.path import certify_path


def main():
    args = parse_args(__doc__.splitlines()[0])
    n, p, k_true = (60, 20, 3) if args.quick else (80, 40, 5)
    ks = range(1, 5) if args.quick else range(1, 9)
    X, y, _ = make_synthetic(n, p, k_true, rho=0.6, snr=3.0, seed=1)
    path = certify_path(X, y, ks, lambda2=1.0, time_limit=20)
    print(path.summary())
    print(f"path time {path.time:.2f} s; true support {true_support(p, k_true).tolist()}")
    ok = all(verify(r.certificate, X, y).ok for r in path)
    print(f"every point's certificate verifies: {ok}")

    # objective and bound, the gap, and the support map with its colour bar (PathResult.plot)
    fig = path.plot(title=f"certified path over k (synthetic n = {n}, p = {p}, true support "
                          f"{true_support(p, k_true).tolist()})")
    savefig(fig, args.out, "certified_path.png")


if __name__ == "__main__":
    main()
