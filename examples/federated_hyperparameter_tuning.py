"""Federated hyperparameter tuning with the DTZO-style trilevel method (values only, data local).

Three sites each hold a private shard of the breast-cancer data (ten features). Together they
tune the ridge strength ``lambda = exp(theta)`` of a logistic model that is trained robustly
against an adversarial perturbation ``delta`` of its weights. Every level is a black box that a
site can only *evaluate* on its own rows::

    level 1 (tuning)     min_theta  sum_j val_loss_j(w)
    level 2 (training)   w     in argmin_w  sum_j train_loss_j(w + delta) + lambda/2 ||w||^2
    level 3 (adversary)  delta  = argmax_d  sum_j train_loss_j(w + d) - gamma/2 ||d||^2

(logistic losses; ``gamma`` above the curvature of the training loss makes the adversary
strongly concave). The levels are not quadratic, so the zeroth-order estimates are not exact.

Each site's rows are written to their own file (``shards/site_<j>.npz`` in ``--out``), and a
site object opens only its own file: under ``mpiexec -n 3`` rank ``j`` reads ``site_<j>.npz``
and nothing else (the script prints who opened what). A centralised reference, which reads all
shards and is used for checking only, solves the three levels with exact derivatives.

Run::

    python examples/federated_hyperparameter_tuning.py [--quick] [--out DIR]
    mpiexec -n 3 python examples/federated_hyperparameter_tuning.py --comm mpi [--quick]
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

from sparsecert.distributed.comm import Communicator, MPIComm, SimComm
from sparsecert.distributed.dtzo.algorithm import DTZOConfig, DTZOWarning, dtzo
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig

N_SITES = 3
N_FEATURES = 10
N_TRAIN = 60  # few training rows: regularisation matters, the best lambda is interior
THETA_SCALE = 3.0  # the solver's level-1 variable is theta / 3 (better conditioned steps)
THETA0 = 2.0  # starting log(lambda)
OPENED: list[str] = []  # shard files opened by this process


def logistic_loss(margins: np.ndarray) -> np.ndarray:
    """``log(1 + exp(-m))`` without overflow."""
    return np.logaddexp(0.0, -margins)


# ---------------------------------------------------------------------------------------------
# data preparation (a coordinator's job in this demo: split, standardise, write one file a site)
# ---------------------------------------------------------------------------------------------


def write_shards(folder: Path, seed: int = 0) -> None:
    """Split the data into training and validation rows, deal them to the sites and write
    ``site_<j>.npz`` plus ``meta.json`` (public: dimensions and ``gamma``)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:, :N_FEATURES], 2.0 * y - 1.0  # labels in {-1, +1}
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, va = perm[:N_TRAIN], perm[N_TRAIN:]
    X = (X - X[tr].mean(axis=0)) / X[tr].std(axis=0)
    folder.mkdir(parents=True, exist_ok=True)
    for j in range(N_SITES):
        np.savez(folder / f"site_{j}.npz", X_train=X[tr[j::N_SITES]], y_train=y[tr[j::N_SITES]],
                 X_val=X[va[j::N_SITES]], y_val=y[va[j::N_SITES]])
    # twice the largest curvature of the training loss: the adversary is strongly concave
    gamma = 2.0 * np.linalg.eigvalsh(X[tr].T @ X[tr])[-1] / 4.0
    (folder / "meta.json").write_text(json.dumps({"n_sites": N_SITES, "p": N_FEATURES,
                                                  "gamma": gamma}))


# ---------------------------------------------------------------------------------------------
# the problem, written against sparsecert.distributed.dtzo.trilevel.TrilevelProblem
# ---------------------------------------------------------------------------------------------


class Site:
    """One site's three level objectives on its own shard (a ``TrilevelWorker``)."""

    def __init__(self, path: Path, n_sites: int, gamma: float) -> None:
        OPENED.append(path.name)
        with np.load(path) as f:
            self.Xt, self.yt = f["X_train"], f["y_train"]
            self.Xv, self.yv = f["X_val"], f["y_val"]
        self.p, self.n_sites, self.gamma = self.Xt.shape[1], n_sites, gamma

    def value(self, level: int, Z: np.ndarray) -> np.ndarray:
        p = self.p
        theta, w, d = THETA_SCALE * Z[:, 0], Z[:, 1:1 + p], Z[:, 1 + p:]
        if level == 1:
            return logistic_loss(self.yv * (w @ self.Xv.T)).sum(axis=1)
        loss = logistic_loss(self.yt * ((w + d) @ self.Xt.T)).sum(axis=1)
        if level == 2:
            return loss + np.exp(theta) / (2 * self.n_sites) * np.einsum("mp,mp->m", w, w)
        return -loss + self.gamma / (2 * self.n_sites) * np.einsum("mp,mp->m", d, d)

    def has_gradient(self, level: int) -> bool:
        return False  # black boxes: values only

    def gradient(self, level: int, Z: np.ndarray) -> np.ndarray:
        raise NotImplementedError("the sites answer function values only")


class RobustTuning:
    """The trilevel problem: dimensions, a starting point and a factory of sites."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        meta = json.loads((folder / "meta.json").read_text())
        self.n_workers, self.p, self.gamma = meta["n_sites"], meta["p"], meta["gamma"]
        self.dims = (1, self.p, self.p)  # (theta / 3, w, delta)

    def initial_point(self) -> np.ndarray:
        z = np.zeros(1 + 2 * self.p)
        z[0] = THETA0 / THETA_SCALE
        return z

    def worker(self, j: int) -> Site:
        return Site(self.folder / f"site_{j}.npz", self.n_workers, self.gamma)


# ---------------------------------------------------------------------------------------------
# a centralised reference with exact derivatives (reads every shard: for checking only)
# ---------------------------------------------------------------------------------------------


def _sigmoid(m: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * m))


def centralised_reference(folder: Path, n_grid: int) -> dict[str, object]:
    """theta* by a grid and a bounded Brent search of ``V(theta) = val_loss(w*(theta))``;
    ``w*`` by L-BFGS on the level-2 objective with its exact total gradient (implicit
    derivative of ``delta*``), ``delta*`` by Newton's method."""
    from scipy.optimize import minimize, minimize_scalar

    problem = RobustTuning(folder)
    sites = [np.load(folder / f"site_{j}.npz") for j in range(problem.n_workers)]
    Xt = np.vstack([s["X_train"] for s in sites])
    yt = np.concatenate([s["y_train"] for s in sites])
    Xv = np.vstack([s["X_val"] for s in sites])
    yv = np.concatenate([s["y_val"] for s in sites])
    p, gamma = problem.p, problem.gamma

    def grad_hess(v):
        m = yt * (Xt @ v)
        s = _sigmoid(m)
        return -Xt.T @ (yt * (1 - s)), Xt.T @ ((s * (1 - s))[:, None] * Xt)

    def delta_star(w):
        d = np.zeros(p)
        for _ in range(100):  # Newton on the strongly convex -loss(w + d) + gamma/2 ||d||^2
            g, H = grad_hess(w + d)
            step = np.linalg.solve(gamma * np.eye(p) - H, gamma * d - g)
            d -= step
            if np.linalg.norm(step) < 1e-14:
                break
        return d

    def phi2(w, lam):
        d = delta_star(w)
        g, H = grad_hess(w + d)
        dd_dw = np.linalg.solve(gamma * np.eye(p) - H, H)  # implicit derivative of delta*(w)
        val = logistic_loss(yt * (Xt @ (w + d))).sum() + 0.5 * lam * w @ w
        return val, (np.eye(p) + dd_dw).T @ g + lam * w

    def w_star(theta):
        return minimize(phi2, np.zeros(p), args=(np.exp(theta),), jac=True, method="L-BFGS-B",
                        options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 5000}).x

    def V(theta):
        return float(logistic_loss(yv * (Xv @ w_star(theta))).sum())

    grid = np.linspace(-6.0, 6.0, n_grid)
    vals = np.array([V(t) for t in grid])
    k = int(np.argmin(vals))
    best = minimize_scalar(V, bounds=(grid[max(k - 1, 0)], grid[min(k + 1, n_grid - 1)]),
                           method="bounded", options={"xatol": 1e-8})
    w = w_star(best.x)
    return {"theta": float(best.x), "V": float(best.fun), "w": w, "delta": delta_star(w),
            "grid": grid, "V_grid": vals}


# ---------------------------------------------------------------------------------------------


def config(n_iter: int) -> DTZOConfig:
    """Step sizes from the curvatures: training loss about 80 (level 2), adversary about
    gamma = 160 (level 3), a site's validation loss at most 330 (level 1); cuts refreshed
    every 10 iterations until the end (the levels are not quadratic)."""
    return DTZOConfig(
        n_iter=n_iter, rho=10.0, beta=1e4, eps=1e-3, lr=0.5 / 340, local_steps=5, K=3,
        eta3=1 / 170, eta2=1 / 90, T=10, T1=n_iter, max_cuts=1, vr_period=20,
        zo_f1=ZOConfig(q=None),
    )


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "output",
                    help="folder for the shards, the PNG and the result (default "
                         "examples/output/)")
    ap.add_argument("--quick", action="store_true", help="150 iterations instead of 300")
    ap.add_argument("--comm", choices=("sim", "mpi"), default="sim",
                    help="SimComm in this process (default) or MPIComm under mpiexec")
    ap.add_argument("--n-iter", type=int, default=None,
                    help="iterations (default 300, 150 with --quick)")
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the centralised reference and the plot")
    args = ap.parse_args()
    if args.n_iter is None:
        args.n_iter = 150 if args.quick else 300
    if args.n_iter < 1:
        ap.error("--n-iter must be a positive integer")
    return args


def main() -> None:
    args = parse_args()
    comm: Communicator = (MPIComm(n_workers=N_SITES, seed=0) if args.comm == "mpi"
                          else SimComm(N_SITES, seed=0))
    folder = args.out / "shards"
    if comm.is_root:
        write_shards(folder)
    if args.comm == "mpi":
        comm.barrier()  # the shards exist before any site opens one
    problem = RobustTuning(folder)
    cfg = config(args.n_iter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DTZOWarning)
        res = dtzo(problem, comm, cfg, monitor=lambda z: {"log_lambda": THETA_SCALE * z[0]})
    print(f"[rank {comm.rank}] sites {list(comm.local_workers)} opened {OPENED}", flush=True)
    opened = comm.allreduce({j: np.eye(N_SITES)[j] for j in comm.local_workers})
    if not comm.is_root:
        return
    print(f"shards opened per site (all processes): {opened.astype(int).tolist()}")
    for w in caught:
        print(f"warning: {w.message}")
    theta_hat = THETA_SCALE * res.x1[0]
    tr = res.traffic.per_worker()
    print(f"DTZO-style: log(lambda) = {theta_hat:.4f}, validation loss "
          f"{float(res.history['f1'][-1]):.4f}")
    print(f"function values {res.n_queries:.3g} (cuts {res.history['cut_queries'][-1]:.3g}), "
          f"rounds {res.rounds}, traffic per site: {tr['up'] / 8e6:.3f} MB up, "
          f"{tr['down'] / 8e6:.3f} MB down")
    np.savez(args.out / "federated_hyperparameter_tuning.npz", z=res.z,
             up=res.traffic.up_sent, down=res.traffic.down_received, queries=res.n_queries,
             f1=res.history["f1"], opened=opened)
    if args.no_reference:
        return
    ref = centralised_reference(folder, n_grid=25 if args.quick else 49)
    w_hat = res.z[1:1 + problem.p]
    rel_w = np.linalg.norm(w_hat - ref["w"]) / np.linalg.norm(ref["w"])
    print(f"centralised reference: log(lambda) = {ref['theta']:.4f} (|difference| "
          f"{abs(theta_hat - ref['theta']):.3g}), validation loss {ref['V']:.4f}; relative "
          f"error of the weights {rel_w:.3g}")
    _plot(res, ref, args.out)


def _plot(res, ref, out: Path) -> None:
    from _common import savefig
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ax[0].plot(ref["grid"], ref["V_grid"], "-", color="0.5", label="V(log lambda), reference")
    ax[0].axvline(ref["theta"], color="0.5", ls=":", label="reference optimum")
    ax[0].axvline(THETA_SCALE * res.x1[0], color="tab:red", label="DTZO-style")
    ax[0].set(xlabel="log lambda", ylabel="validation loss", yscale="log")
    ax[0].legend(fontsize=8)
    ax[1].plot(res.history["iter"], res.history["log_lambda"], color="tab:red",
               label="DTZO-style (consensus point)")
    ax[1].axhline(ref["theta"], color="0.5", ls=":", label="reference optimum")
    ax[1].set(xlabel="iteration", ylabel="log lambda")
    ax[1].legend(fontsize=8)
    fig.suptitle("federated robust hyperparameter tuning (DTZO-style, values only)",
                 fontsize=10)
    savefig(fig, out, "federated_hyperparameter_tuning.png")


if __name__ == "__main__":
    main()
