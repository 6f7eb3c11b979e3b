"""The samples a relaxation works on, and the map of its dual points back to the user's.

Sample weights and offsets change what the relaxation's data are (``RelaxationProblem``):

* a sample of weight 0 is dropped (its loss term is 0; its dual entry is 0 in the user's
  problem: the conjugate of ``0 f`` is the indicator of 0);
* least squares folds its weights and offsets into the data: ``w_i (y_i - o_i - u_i)^2 =
  (sqrt(w_i) (y_i - o_i) - sqrt(w_i) u_i)^2``, an unweighted least-squares problem on the scaled
  rows (and, with an intercept, the weighted means removed first); its dual point ``zeta`` is
  then ``sqrt(w) zeta`` on the user's samples;
* the other losses keep their weights and offsets in the kernels' ``LossSpec``
  (:mod:`sparsecert.solvers.loss_kernels`), and their dual points are the user's.

:meth:`Samples.raw_dual` is the map back (the proof producer bounds the user's problem on the
user's data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Samples"]


@dataclass(frozen=True, eq=False)
class Samples:
    """How the relaxation's samples relate to the user's ``n_raw`` ones.

    ``rows``: the user's samples kept (those of positive weight; None: all), ``weights``: their
    weights (None: unweighted), ``scale``: ``sqrt(weights)`` when least squares folded the
    weights into its rows (None otherwise).
    """

    n_raw: int
    rows: np.ndarray | None = None
    weights: np.ndarray | None = None
    scale: np.ndarray | None = None

    @classmethod
    def reduce(cls, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, o: np.ndarray | None,
               fold: bool) -> tuple[Samples, np.ndarray, np.ndarray, np.ndarray | None,
                                    np.ndarray | None]:
        """``(samples, X, y, w, o)`` of the relaxation: the samples of positive weight; with
        ``fold`` (least squares) the offsets subtracted from ``y`` and the weights to be folded
        into the rows after the centring (``samples.scale``), the kernels' ``w`` and ``o`` None.
        """
        n = X.shape[0]
        rows = None
        if w is not None and not (w > 0).all():
            rows = np.flatnonzero(w > 0)
            X = X.take_rows(rows) if hasattr(X, "take_rows") else np.ascontiguousarray(X[rows])
            y, w = y[rows], w[rows]
            o = None if o is None else o[rows]
        if fold:
            if o is not None:
                y = y - o
            scale = None if w is None else np.sqrt(w)
            return cls(n, rows, w, scale), X, y, None, None
        return cls(n, rows, w, None), X, y, w, o

    def raw_dual(self, zeta: np.ndarray) -> np.ndarray:
        """The relaxation's dual point on the user's samples (zeros on the dropped ones)."""
        z = np.asarray(zeta, dtype=np.float64)
        if self.scale is not None:
            z = self.scale * z
        if self.rows is None:
            return z.copy()
        out = np.zeros(self.n_raw)
        out[self.rows] = z
        return out
