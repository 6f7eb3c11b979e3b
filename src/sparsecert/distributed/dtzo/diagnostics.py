"""Run diagnostics of the DTZO-style method: a warning, with advice, when the level residuals
did not decrease or the workers did not reach consensus.

The method only ever sees its own residual estimates (the K-step displacements of
:mod:`sparsecert.distributed.dtzo.algorithm`), computed at every cut point and, with
``check_residuals=True``, once more at the returned point. Wrong step sizes, a refinement
horizon that stops the cuts too early or too weak a penalty show up there as residuals that
stay large; without a warning the user gets a wrong answer and no sign of it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DTZOWarning", "RunTrace", "diagnose", "warn_if_failed"]


class DTZOWarning(UserWarning):
    """The DTZO-style run probably did not solve the problem (see the message's advice)."""


@dataclass
class RunTrace:
    """What the method saw of its own progress.

    Attributes
    ----------
    iters : list of int
        Iteration of each residual measurement (cut points, then the final check).
    res3, res2 : list of float
        Norms of the level-3 and level-2 residual estimates there.
    final : bool
        Whether the last entry is the check at the returned point.
    diverged : dict of int to bool
        Level -> whether its K inner steps ever increased the gradient norm of the unperturbed
        trajectory (the sign of a step size above ``2 / L``).
    """

    iters: list[int] = field(default_factory=list)
    res3: list[float] = field(default_factory=list)
    res2: list[float] = field(default_factory=list)
    final: bool = False
    diverged: dict[int, bool] = field(default_factory=lambda: {2: False, 3: False})

    def add(self, it: int, r3: float, r2: float) -> None:
        self.iters.append(int(it))
        self.res3.append(float(r3))
        self.res2.append(float(r2))

    def as_arrays(self) -> dict[str, np.ndarray]:
        return {"iter": np.asarray(self.iters, dtype=float), "res3": np.asarray(self.res3),
                "res2": np.asarray(self.res2)}


def diagnose(trace: RunTrace, eps: float, T1: int, n_iter: int, consensus: float,
             z_norm: float, decrease: float = 0.1, slack: float = 100.0) -> list[str]:
    """Messages describing what went wrong (empty when nothing did).

    A level's residual *did not decrease* when its last estimate exceeds both ``decrease``
    times its first estimate and ``slack * eps``. Workers *did not reach consensus* when the
    largest ``||z_j - z||`` exceeds ``1e-2 (1 + ||z||)``.
    """
    out: list[str] = []
    if np.isfinite(consensus) and consensus > 1e-2 * (1.0 + z_norm):
        out.append(
            f"the workers did not reach consensus (max_j ||z_j - z|| = {consensus:.3g}, "
            f"||z|| = {z_norm:.3g}). Advice: the worker step lr should be about "
            "1 / (L1 + rho), L1 the curvature of a worker's level-1 objective; raise n_iter."
        )
    if len(trace.iters) >= 2:
        for level, vals in ((3, trace.res3), (2, trace.res2)):
            first, last = vals[0], vals[-1]
            failed = not np.isfinite(last) or (last > decrease * first and last > slack * eps)
            if not failed:
                continue
            where = ("at the returned point" if trace.final
                     else f"at the last cut (t={trace.iters[-1]})")
            advice = []
            if trace.diverged.get(level):
                advice.append(f"its K inner steps diverged: reduce eta{level} "
                              f"(eta{level} * L{level} must stay below 2, L{level} the curvature "
                              "of that level)")
            if T1 < n_iter:
                advice.append(f"cuts were refreshed only until T1={T1} of n_iter={n_iter}: "
                              "raise T1 (cuts are local models when the levels are not "
                              "quadratic)")
            advice.append("check eta3/eta2 against the levels' curvature, raise beta (penalty on "
                          "cut violation) or n_iter")
            out.append(
                f"the level-{level} residual estimate did not decrease: {first:.3g} at the first "
                f"cut, {last:.3g} {where} (eps={eps:g}); the answer is probably not a trilevel "
                "solution. Advice: " + "; ".join(advice) + "."
            )
    return out


def warn_if_failed(messages: list[str]) -> None:
    """Issue one :class:`DTZOWarning` per message."""
    for msg in messages:
        warnings.warn("DTZO-style: " + msg, DTZOWarning, stacklevel=4)
