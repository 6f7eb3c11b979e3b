"""Numba kernels of the losses: sums over samples, dispatched on the integer loss id.

One compiled solver serves every loss: the relaxation's kernels take the id of
:data:`sparsecert.solvers.losses.LOSS_IDS` and call these. They are the compiled form of the
maths of :mod:`sparsecert.solvers.losses` (``tests/glm/solvers/test_losses.py`` checks that the
two agree).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from sparsecert.solvers.losses import LOGISTIC, SQUARED, SQUARED_HINGE

__all__ = ["loss_value", "loss_value_grad", "conjugate_sum"]


@njit(cache=True, nogil=True)
def _log1pexp(m):
    """log(1 + exp(m)) without overflow."""
    if m > 0.0:
        return m + math.log1p(math.exp(-m))
    return math.log1p(math.exp(m))


@njit(cache=True, nogil=True)
def loss_value(loss_id, u, y):
    """Sum of the per-sample losses at ``u`` (float)."""
    n = u.shape[0]
    s = 0.0
    if loss_id == SQUARED:
        for i in range(n):
            r = y[i] - u[i]
            s += r * r
    elif loss_id == LOGISTIC:
        for i in range(n):
            s += _log1pexp(-y[i] * u[i])
    elif loss_id == SQUARED_HINGE:
        for i in range(n):
            r = 1.0 - y[i] * u[i]
            if r > 0.0:
                s += r * r
    else:
        for i in range(n):
            s += math.exp(u[i]) - y[i] * u[i]
    return s


@njit(cache=True, nogil=True)
def loss_value_grad(loss_id, u, y, grad):
    """Sum of the losses at ``u``; writes the per-sample derivatives ``f'(u_i)`` into ``grad``."""
    n = u.shape[0]
    s = 0.0
    if loss_id == SQUARED:
        for i in range(n):
            r = u[i] - y[i]
            s += r * r
            grad[i] = 2.0 * r
    elif loss_id == LOGISTIC:
        for i in range(n):
            m = -y[i] * u[i]
            s += _log1pexp(m)
            # sigmoid(m), computed stably
            if m >= 0.0:
                sg = 1.0 / (1.0 + math.exp(-m))
            else:
                e = math.exp(m)
                sg = e / (1.0 + e)
            grad[i] = -y[i] * sg
    elif loss_id == SQUARED_HINGE:
        for i in range(n):
            r = 1.0 - y[i] * u[i]
            if r > 0.0:
                s += r * r
                grad[i] = -2.0 * y[i] * r
            else:
                grad[i] = 0.0
    else:
        for i in range(n):
            e = math.exp(u[i])
            s += e - y[i] * u[i]
            grad[i] = e - y[i]
    return s


@njit(cache=True, nogil=True)
def _xlogx(t):
    if t <= 0.0:
        return 0.0
    return t * math.log(t)


@njit(cache=True, nogil=True)
def conjugate_sum(loss_id, z, y):
    """``sum_i f*(z_i; y_i)``; ``+inf`` if some ``z_i`` is outside the conjugate's domain."""
    n = z.shape[0]
    s = 0.0
    if loss_id == SQUARED:
        for i in range(n):
            s += 0.25 * z[i] * z[i] + y[i] * z[i]
    elif loss_id == LOGISTIC:
        for i in range(n):
            t = -y[i] * z[i]
            if t < 0.0 or t > 1.0:
                return np.inf
            s += _xlogx(t) + _xlogx(1.0 - t)
    elif loss_id == SQUARED_HINGE:
        for i in range(n):
            w = y[i] * z[i]
            if w > 0.0:
                return np.inf
            s += w + 0.25 * z[i] * z[i]
    else:
        for i in range(n):
            e = z[i] + y[i]
            if e < 0.0:
                return np.inf
            s += _xlogx(e) - e
    return s
