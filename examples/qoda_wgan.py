"""A small WGAN-like game trained by QODA, with the data on the workers.

Each worker holds its own samples (built by a factory from the worker's own seed, so under MPI
a process never sees another's data); the generator learns the first two moments of the pooled
data through the critic. QODA with layer-wise adaptive 2-bit quantization (the four parameter
blocks are the layers) is compared with FP32 ODA: accuracy against the bits each worker sent.

    python examples/qoda_wgan.py                      # 4 simulated workers (SimComm)
    mpiexec -n 3 python examples/qoda_wgan.py --mpi   # one worker per MPI process
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sparsecert.distributed.comm import MPIComm, SimComm
from sparsecert.distributed.options import RunOptions
from sparsecert.distributed.qoda.algorithm import StepSchedule, make_quantizer, oda, qoda
from sparsecert.distributed.qoda.wgan import WassersteinGame

OUT = Path(__file__).resolve().parent / "output"


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="folder for the PNG")
    ap.add_argument("--quick", action="store_true", help="a smaller, faster setting")
    ap.add_argument("--mpi", action="store_true", help="one worker per MPI process")
    ap.add_argument("--n-workers", type=int, default=4, help="simulated workers (SimComm)")
    ap.add_argument("--save", type=Path, default=None, help="write the final iterates (.npz)")
    return ap.parse_args(argv)


def make_comm(args: argparse.Namespace, seed: int):
    return MPIComm(seed=seed) if args.mpi else SimComm(args.n_workers, seed=seed)


def train(args: argparse.Namespace) -> dict:
    n_iter = 300 if args.quick else 2000
    probe = make_comm(args, seed=1)
    game = WassersteinGame(n_features=8 if args.quick else 64, n_workers=probe.n_workers,
                           seed=0)
    common = dict(eta=StepSchedule(3.0),
                  options=RunOptions(monitor=game.reduced_monitor(),
                                     record_every=max(1, n_iter // 30)))
    runs = {
        "QODA layer-wise adaptive, 2-bit": qoda(
            game.worker, game.x0, probe, n_iter,
            quantizer=make_quantizer("layerwise_adaptive", game.layers, 2), **common),
        "ODA fp32": oda(game.worker, game.x0, make_comm(args, seed=1), n_iter, **common),
    }
    return {"game": game, "runs": runs, "root": probe.is_root}


def report(out: dict, args: argparse.Namespace) -> None:
    runs = out["runs"]
    print(f"{'method':32s} {'iters':>6s} {'||F||':>8s} {'mean err':>9s} {'sd err':>8s} "
          f"{'critic':>7s} {'sent/worker':>12s} {'received':>10s}")
    for name, res in runs.items():
        h = res.history
        print(f"{name:32s} {res.n_iter:6d} {h['residual'][-1]:8.3f} {h['mean_err'][-1]:9.3f} "
              f"{h['sd_err'][-1]:8.3f} {h['critic'][-1]:7.3f} {h['bits_up'][-1]:12.3g} "
              f"{h['bits_received'][-1]:10.3g}")
    q, o = runs["QODA layer-wise adaptive, 2-bit"], runs["ODA fp32"]
    print(f"QODA sent {o.history['bits_up'][-1] / q.history['bits_up'][-1]:.1f}x fewer bits "
          f"per worker for the same number of iterations")
    budget = q.history["bits_up"][-1]  # QODA's whole budget: where was ODA with as many bits?
    k = int(np.searchsorted(o.history["bits_up"], budget))
    if k < o.history["bits_up"].size:
        print(f"with the {budget:.3g} bits per worker QODA used, ODA had reached ||F|| = "
              f"{o.history['residual'][k]:.3f} (iteration {int(o.history['iteration'][k])}); "
              f"QODA {q.history['residual'][-1]:.3f}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, res in runs.items():
        h = res.history
        axes[0].loglog(h["bits_up"], h["residual"], label=name)
        axes[1].loglog(h["iteration"], h["mean_err"] + h["sd_err"], label=name)
    axes[0].set_xlabel("bits sent per worker")
    axes[0].set_ylabel("||F(x_bar)|| of the expected game")
    axes[1].set_xlabel("iteration")
    axes[1].set_ylabel("generator moment error")
    axes[0].set_title("Residual of the game against the bits a worker sent")
    axes[1].set_title("Generator's moment error against iterations")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle("WGAN-like game on 4 workers: QODA (2-bit layer-wise adaptive) vs FP32 ODA")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "qoda_wgan.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def main(argv=None) -> None:
    args = parse_args(argv)
    out = train(args)
    if out["root"]:
        report(out, args)
        if args.save is not None:
            arrays = {}
            for key, res in zip(("qoda", "oda"), out["runs"].values(), strict=True):
                arrays[f"{key}_x_bar"] = res.x_bar
                for k, v in res.history.items():
                    if k != "compute_s":
                        arrays[f"{key}_{k}"] = v
            np.savez(args.save, **arrays)


if __name__ == "__main__":
    main()
