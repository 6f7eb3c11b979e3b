"""The unpenalised intercept of the non-squared losses: its start value and its dual.

Applies when ``fit_intercept`` is set with the logistic, squared-hinge or Poisson loss (the
squared loss is centred exactly instead). The intercept ``c`` is an extra smooth variable of full
FISTA (no working set, no polishing). Minimising over ``c`` makes the Fenchel dual require
``sum(zeta) = 0``, so every bound is the dual at a zero-sum projection of ``zeta = f'(X b + c)``
that stays in the conjugate's domain (``_bound.icpt_grad_dual``); the certifying vector returned
at the end is rounded to a dyadic grid with an exactly zero sum (:func:`dyadic_zero_sum`).
"""

from __future__ import annotations

import math

import numpy as np

from sparsecert.solvers.loss_kernels import loss_value_grad
from sparsecert.solvers.perspective._bound import dual_value, icpt_grad_dual

__all__ = ["DYADIC_BITS", "initial_intercept", "icpt_bound", "dyadic_zero_sum"]

#: dual entries are rounded to multiples of 2**-DYADIC_BITS
DYADIC_BITS = 40


def initial_intercept(prob) -> float:
    """The intercept-only optimum (logistic, Poisson), a good starting value."""
    if prob.loss == "logistic":
        n_pos = int(np.sum(prob.y > 0))
        n_neg = prob.n_samples - n_pos
        return float(np.log(n_pos / n_neg)) if n_pos and n_neg else 0.0
    if prob.loss == "poisson":
        return float(np.log(max(prob.y.mean(), 1e-3)))
    return 0.0


def icpt_bound(prob, state: np.ndarray, budget: int, ub: np.ndarray) -> tuple[float, np.ndarray]:
    """Fenchel dual at the zero-sum projection of ``f'(ub)`` (``ub = X b + c``): ``(D, zeta)``."""
    n, p = prob.n_samples, prob.n_features
    zeta = np.empty(n)
    loss_value_grad(prob.loss_id, ub, prob.y, zeta)
    grad, zproj, gproj = np.empty(p), np.empty(n), np.empty(p)
    icpt_grad_dual(prob.X, prob.y, prob.loss_id, zeta, prob.cls, prob.Xty, grad, zproj, gproj)
    lb = float(dual_value(prob.X, prob.y, prob.loss_id, prob.lambda2, prob.M, state, budget,
                          zproj))
    return lb, zproj


def dyadic_zero_sum(zeta: np.ndarray, y: np.ndarray, loss: str) -> np.ndarray:
    """Round ``zeta`` to multiples of ``2**-40`` inside the conjugate's domain, with an exactly
    zero sum (``math.fsum(out) == 0.0``): the dual certificate of an unpenalised intercept."""
    scale = float(2 ** DYADIC_BITS)
    Z = np.rint(zeta * scale)
    big = 2.0 ** 52
    if loss == "logistic":  # t = -y zeta in [0, 1]
        lo = np.where(y > 0, -scale, 0.0)
        hi = np.where(y > 0, 0.0, scale)
    elif loss == "squared_hinge":  # y zeta <= 0
        lo = np.where(y > 0, -big, 0.0)
        hi = np.where(y > 0, 0.0, big)
    elif loss == "poisson":  # zeta + y >= 0
        lo = np.ceil(-y * scale)
        hi = np.full(y.shape, big)
    else:
        raise ValueError(f"no zero-sum dual rounding for loss {loss!r}")
    Z = np.clip(Z, lo, hi)
    if np.any(np.abs(Z) >= big):
        raise ValueError("dual entries too large for the dyadic grid")
    Zi = Z.astype(np.int64)
    R = int(Zi.sum())
    if R != 0:
        slack = (Zi - lo.astype(np.int64)) if R > 0 else (hi.astype(np.int64) - Zi)
        order = np.argsort(-slack)
        need = abs(R)
        for j in order:
            if need == 0:
                break
            d = int(min(slack[j], need))
            Zi[j] += -d if R > 0 else d
            need -= d
        if need:
            raise ValueError("could not make the dual sum exactly zero inside its domain")
    out = Zi.astype(np.float64) / scale
    assert math.fsum(out) == 0.0
    return out
