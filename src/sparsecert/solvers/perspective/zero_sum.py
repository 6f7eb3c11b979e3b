"""An unpenalised intercept carried as a variable: its start value and its dual.

Applies when ``fit_intercept`` is set with a loss without a closed-form refit (a loss with one,
least squares, is centred exactly instead). The intercept ``c`` is an extra smooth variable of
full FISTA (no working set, no polishing). Minimising over ``c`` makes the Fenchel dual require
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
    """About the intercept-only optimum, a good starting value (the loss's own, with the
    weights and offsets)."""
    return prob.loss_fn.initial_intercept(prob.y, prob.sample_weight, prob.offset)


def icpt_bound(prob, state: np.ndarray, budget: int, ub: np.ndarray) -> tuple[float, np.ndarray]:
    """Fenchel dual at the zero-sum projection of ``f'(ub)`` (``ub = X b + c``): ``(D, zeta)``."""
    n, p = prob.n_samples, prob.n_features
    zeta = np.empty(n)
    loss_value_grad(prob.loss_spec, ub, prob.y, zeta)
    grad, zproj, gproj = np.empty(p), np.empty(n), np.empty(p)
    icpt_grad_dual(prob.design, prob.y, prob.loss_spec, zeta, prob.Xty, grad, zproj, gproj)
    lb = float(dual_value(prob.design, prob.y, prob.loss_spec, prob.lambda2, prob.M, state,
                          budget, zproj, prob.coef_bounds))
    return lb, zproj


def dyadic_zero_sum(zeta: np.ndarray, y: np.ndarray, loss,
                    weights: np.ndarray | None = None) -> np.ndarray:
    """Round ``zeta`` to multiples of ``2**-40`` inside the conjugate's domain (``loss``: a
    :class:`~sparsecert.solvers.losses.Loss`; with ``weights``, the weighted one's), with an
    exactly zero sum (``math.fsum(out) == 0.0``): the dual certificate of an unpenalised
    intercept."""
    scale = float(2 ** DYADIC_BITS)
    Z = np.rint(zeta * scale)
    big = 2.0 ** 52
    # in grid units, inside the domain
    lo, hi = loss.dual_domain(y) if weights is None else loss.weighted_dual_domain(y, weights)
    with np.errstate(invalid="ignore"):
        lo = np.clip(np.ceil(lo * scale), -big, big)
        hi = np.clip(np.floor(hi * scale), -big, big)
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
