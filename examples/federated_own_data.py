"""Your own federated problem with Safe-EF: each site's data in its own file.

Five hospitals each keep a CSV file of their own patients (eight measurements and whether the
condition was confirmed). Together they want one linear screening score that misses as few
confirmed cases as possible (hinge loss on the positives, plus an l1 penalty that keeps the
score sparse) while its false alarms stay within a budget (hinge loss on the negatives
<= 0.3): a Neyman-Pearson problem. No site sends a patient: only compressed subgradients and
one number per round (its constraint value) leave a site.

What a user writes is the worker class below: it loads ONE site's file and gives the local
loss and a subgradient (``f``, ``f_subgrad``) and the local constraint (``g``, ``g_subgrad``;
leave both out and pass ``constraint="none"`` for a problem without one). Safe-EF calls
``SiteWorker(i)`` only for the sites a process hosts, so under MPI a site's file is opened by
one process only.

The run writes a log (one row per record point: rounds, seconds, bits per site up / down /
total, objective, violation) and a checkpoint every 100 rounds; ``--resume`` continues an
interrupted run from its checkpoint (the same result as the run that never stopped), or
takes a finished one further.

    python examples/federated_own_data.py                    # all sites in one process
    mpiexec -n 3 python examples/federated_own_data.py --mpi # the sites over 3 processes
    python examples/federated_own_data.py --rounds 6000 --resume  # continue, to 6000 rounds

``--data DIR`` reads ``DIR/site_<i>.csv`` (written with made-up patients when the folder has
none). Writes ``federated_own_data.png`` (objective and false-alarm excess against the bits a
site paid and against wall time, Safe-EF beside the uncompressed method) into ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import EXAMPLES, savefig  # noqa: E402

from sparsecert.distributed.comm import MPIComm, SimComm  # noqa: E402
from sparsecert.distributed.compress import Identity, TopK  # noqa: E402
from sparsecert.distributed.options import RunOptions  # noqa: E402
from sparsecert.distributed.safe_ef import safe_ef, switching_subgradient  # noqa: E402

N_SITES, N_FEATURES, BUDGET, L1 = 5, 8, 0.3, 0.01


class SiteWorker:
    """One site: its patients, read from its own file only.

    Parameters
    ----------
    i : int
        The site's id (the file ``site_<i>.csv`` of :data:`DATA`).
    """

    DATA = Path(".")

    def __init__(self, i: int) -> None:
        table = np.loadtxt(self.DATA / f"site_{i}.csv", delimiter=",", skiprows=1, ndmin=2)
        a = np.hstack([table[:, :-1], np.ones((len(table), 1))])  # features and an intercept
        label = table[:, -1] == 1
        self.pos, self.neg = a[label], a[~label]

    @staticmethod
    def _hinge(margins: np.ndarray, rows: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean of max(0, 1 - margin) and a subgradient with respect to the weights."""
        active = margins < 1
        value = float(np.maximum(0.0, 1.0 - margins).mean())
        return value, -(rows[active].sum(axis=0)) / len(rows)

    def f(self, x: np.ndarray) -> float:  # missed confirmed cases, plus the l1 penalty
        return self._hinge(self.pos @ x, self.pos)[0] + L1 * np.abs(x[:-1]).sum()

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        sub = self._hinge(self.pos @ x, self.pos)[1]
        sub[:-1] += L1 * np.sign(x[:-1])
        return sub

    def g(self, x: np.ndarray) -> float:  # false alarms above the budget
        return self._hinge(-(self.neg @ x), self.neg)[0] - BUDGET

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        return -self._hinge(-(self.neg @ x), self.neg)[1]


def write_sites(folder: Path, n_per_site: int, seed: int = 0) -> None:
    """Made-up patients, one CSV per site (the sites differ in their mix and their devices)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    w_true = np.array([1.5, -1.0, 0.0, 0.8, 0.0, 0.0, -0.6, 0.0])
    for i in range(N_SITES):
        shift = rng.normal(0, 0.5, N_FEATURES)  # each site's devices read a little off
        a = rng.normal(0, 1, (n_per_site, N_FEATURES)) + shift
        prevalence = 0.2 + 0.1 * i
        score = a @ w_true + np.log(prevalence / (1 - prevalence))
        label = (rng.random(n_per_site) < 1 / (1 + np.exp(-score))).astype(int)
        header = ",".join([f"m{j}" for j in range(N_FEATURES)] + ["confirmed"])
        np.savetxt(folder / f"site_{i}.csv", np.column_stack([a, label]), delimiter=",",
                   header=header, comments="", fmt=["%.6f"] * N_FEATURES + ["%d"])


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=EXAMPLES / "output",
                    help="folder for the PNG, the logs and the checkpoint")
    ap.add_argument("--data", type=Path, default=None,
                    help="folder of site_<i>.csv files (default: <out>/sites, made up)")
    ap.add_argument("--quick", action="store_true", help="fewer patients and rounds")
    ap.add_argument("--mpi", action="store_true", help="spread the sites over MPI processes")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds in all (default 3000, 300 with --quick)")
    ap.add_argument("--resume", action="store_true",
                    help="continue from the checkpoint up to --rounds")
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    comm = MPIComm(N_SITES, seed=0) if args.mpi else SimComm(N_SITES, seed=0)
    out = args.out
    data = args.data if args.data is not None else out / "sites"
    if comm.is_root:
        out.mkdir(parents=True, exist_ok=True)
        if not sorted(data.glob("site_*.csv")):
            write_sites(data, 60 if args.quick else 400)
    if args.mpi:
        comm.barrier()  # the files exist before any process reads its own
    SiteWorker.DATA = data
    rounds = args.rounds or (300 if args.quick else 3000)
    d = N_FEATURES + 1
    x0 = np.zeros(d)
    logs = {"Safe-EF": out / "federated_own_data_safe_ef.csv",
            "uncompressed": out / "federated_own_data_dense.csv"}
    ckpt = out / "federated_own_data.ckpt"
    if comm.is_root and not args.resume:  # this example's own files of an earlier run
        for p in [*logs.values(), *out.glob("federated_own_data.ckpt.*.npz")]:
            p.unlink(missing_ok=True)
    if args.mpi:
        comm.barrier()
    every = 5 if args.quick else 50
    res = {
        "Safe-EF": safe_ef(
            SiteWorker, x0, TopK(d, 2, value_dtype="float16"), 0.05, rounds,
            downlink=TopK(d, 2, value_dtype="float16"),
            options=RunOptions(comm=comm, record_every=every, log=logs["Safe-EF"],
                               checkpoint=ckpt, checkpoint_every=100,
                               resume=ckpt if args.resume else None)),
    }
    if not args.resume:
        res["uncompressed"] = switching_subgradient(
            SiteWorker, x0, 0.05, rounds, downlink=Identity(d, "float16"),
            options=RunOptions(comm=comm, record_every=every, log=logs["uncompressed"],
                               scalar_dtype="float16"))
    if not comm.is_root:
        return
    for name, r in res.items():
        print(f"{name}: objective {r.objective[-1]:.4f}, false-alarm excess "
              f"{r.violation[-1]:.4f}, {r.bits_total[-1]:,.0f} bits per site, "
              f"{r.seconds[-1]:.2f} s")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, r in res.items():
        axes[0].loglog(np.maximum(r.bits_total, 1), r.objective, label=f"{name}: objective")
        axes[0].loglog(np.maximum(r.bits_total, 1), np.maximum(r.violation, 1e-6), "--",
                       label=f"{name}: false-alarm excess")
        axes[1].semilogy(r.seconds, r.objective, label=f"{name}: objective")
    axes[0].set(title="Against the bits a site sent and received",
                xlabel="bits per site (up + down)", ylabel="value of the output")
    axes[1].set(title="Against wall time", xlabel="seconds", ylabel="objective")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle("Safe-EF on five sites' own files (top-2 float16 both ways) "
                 "vs uncompressed float16")
    savefig(fig, out, "federated_own_data.png")


if __name__ == "__main__":
    main()
