"""Pseudo-costs: what branching on a variable has gained so far, per unit of fractionality.

Branching a node on ``j`` makes the children ``z_j = 0`` ("down") and ``z_j = 1`` ("up").
When a child has been evaluated (or strong branching bounded it), its *gain* is its bound minus
its parent's bound at the branching (clipped at 0), and the parent's relaxed ``z_j`` says how
far the child moved ``z_j``: ``f_down = z_j``, ``f_up = 1 - z_j``. The pseudo-cost of ``j`` in
a direction is the average of ``gain / f`` over the observations of ``j`` in that direction
(observations with ``f`` below :data:`MIN_FRACTION` are not recorded: they say nothing per
unit). A variable never observed in a direction gets the average over the variables observed
in it (the usual initialisation; ``None`` when nothing has been observed in that direction).

The estimated gains of branching on ``j`` at a node with relaxed ``z`` are
``pc_down[j] * z_j`` and ``pc_up[j] * (1 - z_j)``; the *product score*
``max(down, eps) * max(up, eps)`` ranks the candidates (both children must move the bound).

The book (:class:`PseudoCosts`) lives in the engine; a node's task gets a read-only
:class:`PseudoCostTable` taken when the task was made, so the choice is a pure function of the
task's inputs (the same tree on every executor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PseudoCosts", "PseudoCostTable", "product_score", "MIN_FRACTION", "SCORE_EPS"]

#: observations whose fractionality (``z_j`` down, ``1 - z_j`` up) is below this are skipped
MIN_FRACTION = 1e-6
#: the floor of each estimated gain in the product score (relative to ``max(1, |bound|)``)
SCORE_EPS = 1e-9


@dataclass(frozen=True)
class PseudoCostTable:
    """The pseudo-costs at one moment: per-unit gains and observation counts per direction.

    ``down`` / ``up`` hold the averages (NaN where unobserved); ``n_down`` / ``n_up`` the
    numbers of observations.
    """

    down: np.ndarray
    up: np.ndarray
    n_down: np.ndarray
    n_up: np.ndarray

    @property
    def observed(self) -> bool:
        """True when both directions have at least one observation (of any variable)."""
        return bool(self.n_down.any() and self.n_up.any())

    def estimates(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-unit gains ``(down, up)`` with the unobserved entries set to their direction's
        average over the observed variables (each observed variable counted once)."""
        out = []
        for pc, n in ((self.down, self.n_down), (self.up, self.n_up)):
            seen = n > 0
            if not seen.any():
                raise ValueError("no observation in this direction")
            out.append(np.where(seen, pc, float(np.mean(pc[seen]))))
        return out[0], out[1]

    def reliable(self, threshold: int) -> np.ndarray:
        """Variables observed at least ``threshold`` times in both directions."""
        return (self.n_down >= threshold) & (self.n_up >= threshold)


def product_score(down_gain: np.ndarray, up_gain: np.ndarray, scale: float) -> np.ndarray:
    """``max(down, eps) * max(up, eps)`` with ``eps = SCORE_EPS * max(1, |scale|)``."""
    eps = SCORE_EPS * max(1.0, abs(float(scale)))
    return np.maximum(down_gain, eps) * np.maximum(up_gain, eps)


class PseudoCosts:
    """The engine's book of pseudo-costs over ``p`` variables (see the module docstring)."""

    def __init__(self, p: int) -> None:
        self.sums = np.zeros((2, p))
        self.counts = np.zeros((2, p), dtype=np.int64)
        self._table: PseudoCostTable | None = None
        self._pending: dict[int, tuple[int, int, float, float]] = {}

    def record(self, var: int, direction: int, gain: float, frac: float) -> bool:
        """Record that the child ``z_var = direction`` gained ``gain`` over its parent, whose
        relaxation had ``z_var`` at distance ``frac`` from ``direction``; False (nothing
        recorded) when ``frac < MIN_FRACTION`` or the gain is not finite."""
        if not (frac >= MIN_FRACTION) or not np.isfinite(gain):
            return False
        self.sums[direction, var] += max(0.0, float(gain)) / float(frac)
        self.counts[direction, var] += 1
        self._table = None
        return True

    def table(self) -> PseudoCostTable:
        """The current averages (one object until the next record: tasks made together share
        it)."""
        if self._table is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                avg = np.where(self.counts > 0, self.sums / np.maximum(self.counts, 1), np.nan)
            self._table = PseudoCostTable(avg[0], avg[1], self.counts[0].copy(),
                                          self.counts[1].copy())
        return self._table

    # -- the children awaiting their gain ------------------------------------------------------
    def expect(self, child_id: int, var: int, direction: int, parent_bound: float,
               frac: float) -> None:
        """Remember a child made by branching, to record its gain once it is bounded."""
        self._pending[child_id] = (var, direction, float(parent_bound), float(frac))

    def observe(self, child_id: int, bound: float) -> bool:
        """Record the gain of an expected child whose bound is now ``bound`` (once per child);
        False when the child was not expected (the root, or already observed)."""
        entry = self._pending.pop(child_id, None)
        if entry is None:
            return False
        var, direction, parent_bound, frac = entry
        if not np.isfinite(parent_bound):
            return False
        return self.record(var, direction, bound - parent_bound, frac)

    def forget(self, child_id: int) -> None:
        """Drop an expected child that closed unevaluated."""
        self._pending.pop(child_id, None)
