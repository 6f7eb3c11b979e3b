"""The intercept by centring: the reduction of a model with an unpenalised intercept to one on
centred data, forward (the data) and inverse (the intercept in the user's coordinates).

For every loss ``x^T b + c = (x - m)^T b + (c + m^T b)`` with ``m`` the column means, so the
columns are centred once and the intercept decouples from badly offset columns. For least
squares the response is centred too and the intercept is then exact (``c = 0`` on the centred
data): nothing is left to carry. For the other losses the intercept on the centred columns is
carried as a variable (``c``). Without an intercept both means are zero and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsecert.sparse import SparseDesign

__all__ = ["Centring"]


@dataclass(frozen=True, eq=False)
class Centring:
    """The means the reduction removed: ``x_mean`` from the columns (any loss with an
    intercept) and ``y_mean`` from the response (least squares with an intercept); zeros
    otherwise."""

    x_mean: np.ndarray
    y_mean: float = 0.0

    @classmethod
    def apply(cls, X: np.ndarray, y: np.ndarray, fit_intercept: bool, centre_y: bool,
              weights: np.ndarray | None = None) -> tuple[Centring, np.ndarray, np.ndarray]:
        """The forward reduction: ``(centring, X used, y used)``.

        ``centre_y``: the response is centred too (least squares, whose intercept is then
        exact; with ``weights``, by the weighted means, which makes the weighted least
        squares' intercept exact). ``X`` used is C-contiguous; a sparse ``X`` (a
        :class:`~sparsecert.sparse.SparseDesign`) is returned as it is (the column means are
        its implicit centre: the relaxation's kernels read ``X - 1 m^T`` without forming it;
        weighted least squares with an intercept is refused for it by the prepare step).
        """
        p = X.shape[1]
        if not fit_intercept:
            return cls(np.zeros(p)), X, y
        if isinstance(X, SparseDesign):  # never centred: the kernels centre it implicitly
            if weights is not None and centre_y:
                raise ValueError("a sparse X has no weighted centring (weighted least squares "
                                 "with an intercept)")
            x_mean = X.column_sums() / X.shape[0]
            if not centre_y:
                return cls(x_mean), X, y
            y_mean = float(y.mean())
            return cls(x_mean, y_mean), X, y - y_mean
        if weights is not None and centre_y:
            x_mean = (weights @ X) / weights.sum()
        else:
            x_mean = X.mean(axis=0)
        Xc = np.ascontiguousarray(X - x_mean)
        if not centre_y:
            return cls(x_mean), Xc, y
        y_mean = float(y.mean() if weights is None else (weights @ y) / weights.sum())
        return cls(x_mean, y_mean), Xc, y - y_mean

    def user_intercept(self, coef: np.ndarray, c: float = 0.0) -> float:
        """The inverse: the intercept in the user's coordinates of the model ``coef`` with the
        intercept ``c`` on the centred data (0 for least squares, whose intercept is exact)."""
        return float(self.y_mean + c - self.x_mean @ coef)

    def carried_intercept(self, coef: np.ndarray, intercept: float) -> float:
        """The intercept on the centred data of the model ``coef`` with the user's
        ``intercept`` (the start of a carried intercept)."""
        return float(intercept - self.y_mean + self.x_mean @ coef)
