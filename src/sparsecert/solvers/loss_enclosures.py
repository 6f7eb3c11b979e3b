"""Rigorous upper enclosures shared by the losses (the proof producer's side of a loss).

Directed-rounding bounds of the quadratic conjugate ``sum_i z_i^2 / (4 w_i) + y_i z_i``, of the
entropy ``t log t + (1 - t) log(1 - t)`` and of ``x log x - x`` at exact floats, and the inward
rounding of a weighted domain's ends; numpy and the producer's rounding helpers only
(:mod:`sparsecert.proof.rounding`). Each loss of :mod:`sparsecert.solvers.losses` builds its
``*_upper`` methods from these.
"""

from __future__ import annotations

import numpy as np

from sparsecert.proof.rounding import (
    ETA,
    Ball,
    elem_err,
    gamma,
    pos_sum_hi,
    sumsq_hi,
    two_product,
)
from sparsecert.proof.rounding import dn as _dn
from sparsecert.proof.rounding import up as _up

__all__ = ["quadratic_conjugate_upper", "quadratic_conjugate_upper_weighted", "inward",
           "entropy_hi", "xlogx_minus_x_hi"]


def quadratic_conjugate_upper(z: np.ndarray, y: Ball) -> tuple[float, float]:
    """``(computed, upper bound)`` of ``sum_i z_i^2 / 4 + y_i z_i`` (a sum that is not finite
    gives no bound)."""
    n = z.size
    zz = float(z @ z)
    quad_hi = float(_up(0.25 * float(sumsq_hi(zz, n))))
    lin = float(z @ y.mid)
    absdot = float(pos_sum_hi(_up(np.abs(z) * np.abs(y.mid))))
    lin_err = _up(_up(_up(gamma(n) * absdot) + n * ETA) + pos_sum_hi(_up(np.abs(z) * y.rad)))
    return 0.25 * zz + lin, float(_up(quad_hi + float(_up(lin + lin_err))))


def inward(w: np.ndarray, e: np.ndarray, up: bool) -> np.ndarray:
    """``w e`` (``w >= 0``, ``e`` a finite end of a domain), moved one float inward when the
    product is not exact (Dekker's error term), so that ``w e`` rounded this way is inside."""
    p, err = two_product(w, e)
    exact = (w == 0) | (e == 0) | ((err == 0) & (np.abs(p) >= 2.0 ** -968)
                                   & (np.abs(w) < 2.0 ** 995) & (np.abs(e) < 2.0 ** 995))
    return np.where(exact, p, _up(p) if up else _dn(p))


def quadratic_conjugate_upper_weighted(z: np.ndarray, y: Ball, w: np.ndarray
                                        ) -> tuple[float, float]:
    """``(computed, upper bound)`` of ``sum_i z_i^2 / (4 w_i) + y_i z_i`` (terms with ``w_i =
    0`` have ``z_i = 0``)."""
    n = z.size
    pos = w > 0
    ws = np.where(pos, w, 1.0)
    q_mid = np.where(pos, 0.25 * z * z / ws, 0.0)
    q_hi = np.where(pos, _up(_up(0.25 * _up(z * z)) / ws), 0.0)
    lin = float(z @ y.mid)
    absdot = float(pos_sum_hi(_up(np.abs(z) * np.abs(y.mid))))
    lin_err = _up(_up(_up(gamma(n) * absdot) + n * ETA) + pos_sum_hi(_up(np.abs(z) * y.rad)))
    return float(q_mid.sum()) + lin, float(_up(float(pos_sum_hi(q_hi))
                                              + float(_up(lin + lin_err))))


def entropy_hi(t: np.ndarray) -> np.ndarray:
    """Upper bound of ``t log t + (1 - t) log(1 - t)`` at exact floats ``t`` in [0, 1]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lt, l1 = np.log(t), np.log1p(-t)
    w = 1.0 - t
    l1_hi = _up(l1 + elem_err(l1))
    p1 = np.where(t > 0, _up(t * _up(lt + elem_err(lt))), 0.0)
    p2 = np.where(t < 1, np.maximum(_up(np.maximum(_dn(w), 0.0) * l1_hi), _up(_up(w) * l1_hi)),
                  0.0)
    return _up(p1 + p2)


def xlogx_minus_x_hi(x: np.ndarray) -> np.ndarray:
    """Upper bound of ``x log x - x`` at exact floats ``x >= 0`` (0 at 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lx = np.log(x)
        return np.where(x > 0, _up(_up(x * _up(lx + elem_err(lx))) - x), 0.0)
