"""Fairness-constrained federated logistic regression with Safe-EF.

Six clients (workers) each hold their own customers: features, a repaid / defaulted label and
a protected group. The bank wants a logistic scoring model whose mean score is about the same
for both groups over ALL clients (demographic parity, |gap| <= tau), without any client
sending its data: only compressed subgradients and four numbers per round leave a client
(the client's group score sums and counts, from which the server forms the global gap).

Three runs on the same clients:

* Safe-EF with the parity constraint (top-2 up with error feedback, top-2 EF21-P down);
* the same without the constraint (how unfair the plain model is);
* the uncompressed switching method with the constraint (float32 both ways), for the bits.

Single process (default; every client simulated in-process, plus a centralised reference
solve)::

    python examples/fair_federated_logistic.py

Three MPI processes (each builds only its own clients' data; the server runs on rank 0)::

    mpiexec -n 3 python examples/fair_federated_logistic.py --mpi

Writes ``fair_federated_logistic.png`` (objective and parity gap against the bits each client
paid) into ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import EXAMPLES, savefig  # noqa: E402

from sparsecert.distributed.comm import MPIComm, SimComm, build_local  # noqa: E402
from sparsecert.distributed.compress import Identity, TopK  # noqa: E402
from sparsecert.distributed.safe_ef import RunOptions, safe_ef, switching_subgradient  # noqa: E402
from sparsecert.distributed.safe_ef.fairness import (  # noqa: E402
    fair_logistic_reference,
    fair_worker,
    parity_constraint,
)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=EXAMPLES / "output",
                    help="folder for the PNG (default examples/output/)")
    ap.add_argument("--quick", action="store_true", help="fewer clients, samples and rounds")
    ap.add_argument("--mpi", action="store_true",
                    help="spread the clients over the MPI processes (run under mpiexec)")
    ap.add_argument("--tau", type=float, default=0.05, help="parity tolerance")
    return ap.parse_args()


def decisions(comm, local, x) -> np.ndarray:
    """Global accuracy and positive-decision rate per group, from local counts (a reduction:
    no client's predictions leave it, only six counts)."""
    counts = {}
    for i, w in local.items():
        s = w.scores(x)
        pos = s > 0
        counts[i] = [np.sum(pos == (w.y > 0)), len(w.y), np.sum(pos & w.z), np.sum(w.z),
                     np.sum(pos & ~w.z), np.sum(~w.z)]
    c = comm.allreduce(counts)
    return np.array([c[0] / c[1], c[2] / c[3], c[4] / c[5]])


def main() -> None:
    args = parse_args()
    n_clients, n_per, p = (4, 60, 4) if args.quick else (6, 200, 8)
    rounds = 400 if args.quick else 3000
    seed = 0

    def new_comm():
        return MPIComm(n_clients, seed=1) if args.mpi else SimComm(n_clients, seed=1)

    def client(i: int):  # each process calls this only for its own clients
        return fair_worker(i, n_clients, seed=seed, n_per_worker=n_per, p=p)

    comm = new_comm()
    root = comm.is_root
    if root:
        where = f"{comm.size} MPI processes" if args.mpi else "one process (SimComm)"
        print(f"{n_clients} clients x {n_per} customers, {p} features, on {where}; "
              f"parity tolerance tau = {args.tau}")
    d = p + 1
    x0 = np.zeros(d)
    fair = parity_constraint(args.tau)
    free = parity_constraint(1e9)  # never active: the plain model
    every = 20 if args.quick else 50

    def options(comm):
        """Monitor = a reduction of each process's local sums: objective and |gap| - tau (for
        every run, also the unconstrained one)."""
        loc = build_local(comm, client)

        def monitor(x):
            tot = comm.allreduce({i: np.concatenate([[w.f(x)], w.q(x)]) for i, w in loc.items()})
            q = tot[1:]
            return tot[0] / n_clients, abs(q[0] / q[1] - q[2] / q[3]) - args.tau

        return RunOptions(comm=comm, monitor=monitor, record_every=every)

    runs = {}
    runs["Safe-EF, parity constraint"] = safe_ef(
        client, x0, TopK(d, 2, value_dtype="float16"), 0.03, rounds, 0.0,
        downlink=TopK(d, 2, value_dtype="float16"), constraint=fair,
        options=options(comm))
    runs["Safe-EF, no constraint"] = safe_ef(
        client, x0, TopK(d, 2, value_dtype="float16"), 0.03, rounds, 0.0,
        downlink=TopK(d, 2, value_dtype="float16"), constraint=free,
        options=options(new_comm()))
    runs["uncompressed, parity constraint"] = switching_subgradient(
        client, x0, 0.03, rounds, 0.0, downlink=Identity(d), constraint=fair,
        options=options(new_comm()))

    local = build_local(comm, client)
    ref = None
    if not args.mpi:  # a centralised reference needs every client's data: one process only
        ref = fair_logistic_reference([client(i) for i in range(n_clients)], args.tau)
    if root:
        print(f"\n{'run':32s} {'objective':>9s} {'|gap|':>7s} {'accuracy':>8s} "
              f"{'pos. rate g1/g0':>15s} {'bits/client':>11s}")
    for name, res in runs.items():
        acc, r1, r0 = decisions(comm, local, res.x)
        tot = comm.allreduce({i: w.q(res.x) for i, w in local.items()})  # group sums, counts
        gap = abs(tot[0] / tot[1] - tot[2] / tot[3])
        if root:
            print(f"{name:32s} {res.objective[-1]:9.4f} {gap:7.4f} {acc:8.3f} "
                  f"{r1:7.2f}/{r0:<7.2f} {res.bits_total[-1]:11.0f}")
    if root and ref is not None:
        print(f"centralised reference (all data in one place): objective {ref[0]:.4f}; "
              f"Safe-EF is {runs['Safe-EF, parity constraint'].objective[-1] - ref[0]:.2e} "
              "above it")
    if root:
        import matplotlib.pyplot as plt

        args.out.mkdir(parents=True, exist_ok=True)
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for name, res in runs.items():
            axes[0].semilogx(res.bits_total[1:], res.objective[1:], label=name)
            axes[1].semilogx(res.bits_total[1:], res.violation[1:], label=name)
        if ref is not None:
            axes[0].axhline(ref[0], color="k", ls=":", lw=1, label="centralised optimum")
        axes[0].set_ylabel("objective (mean logistic loss + ridge)")
        axes[1].set_ylabel(f"parity violation max(|gap| - {args.tau:g}, 0)")
        axes[0].set_title("Objective against the bits a client paid")
        axes[1].set_title("Parity violation against the bits a client paid")
        for ax in axes:
            ax.set_xlabel("bits per client (up + down)")
            ax.legend(fontsize=8)
        fig.suptitle("Fair federated logistic regression: Safe-EF with and without the "
                     "parity constraint, and uncompressed")
        savefig(fig, args.out, "fair_federated_logistic.png")


if __name__ == "__main__":
    main()
