"""Numba kernels of the losses: every per-loss branch of the compiled solver, in one place.

One compiled solver serves every loss: the relaxation's kernels take the loss as a
:class:`~sparsecert.solvers.losses.LossSpec` (its integer id, its one parameter, and the problem's
per-sample weights ``w`` and offsets ``o``, empty when there are none, see
:attr:`sparsecert.solvers.losses.Loss.spec`) and call these, which dispatch on the id. They are
the compiled form of the maths of :mod:`sparsecert.solvers.losses`
(``tests/glm/solvers/test_losses.py`` checks that the two agree): the sum of the losses, its
per-sample derivatives, the conjugate sum (``+inf`` outside the domain), the second derivatives
of the Newton polish, and the split of a dual point that makes it zero-sum inside the
conjugate's domain (an unpenalised intercept).

With weights and offsets the loss is ``sum_i w_i f(u_i + o_i; y_i)``: its derivative in ``u_i``
is ``w_i f'(u_i + o_i)`` and its conjugate ``sum_i w_i f*(z_i / w_i; y_i) - z_i o_i`` (``z_i = 0``
where ``w_i = 0``). Without them (empty arrays) every kernel computes exactly what it computed
before they existed (no multiplication by 1, no addition of 0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from sparsecert.solvers.losses import HUBER, LOGISTIC, POISSON, SQUARED, SQUARED_HINGE

__all__ = ["loss_value", "loss_value_grad", "conjugate_sum", "loss_hessian", "newton_exact",
           "zero_sum_parts"]


@njit(cache=True, nogil=True)
def _log1pexp(m):
    """log(1 + exp(m)) without overflow."""
    if m > 0.0:
        return m + math.log1p(math.exp(-m))
    return math.log1p(math.exp(m))


@njit(cache=True, nogil=True)
def _sigmoid(m):
    """1 / (1 + exp(-m)), computed stably."""
    if m >= 0.0:
        return 1.0 / (1.0 + math.exp(-m))
    e = math.exp(m)
    return e / (1.0 + e)


@njit(cache=True, nogil=True)
def _huber(r, d):
    """r^2 for |r| <= d, 2 d |r| - d^2 beyond."""
    a = abs(r)
    if a <= d:
        return r * r
    return 2.0 * d * a - d * d


@njit(cache=True, nogil=True)
def _xlogx(t):
    if t <= 0.0:
        return 0.0
    return t * math.log(t)


@njit(cache=True, nogil=True, inline="always")
def _term(lid, d, u, y):
    """f(u; y)."""
    if lid == SQUARED:
        r = y - u
        return r * r
    if lid == LOGISTIC:
        return _log1pexp(-y * u)
    if lid == SQUARED_HINGE:
        r = 1.0 - y * u
        return r * r if r > 0.0 else 0.0
    if lid == HUBER:
        return _huber(y - u, d)
    return math.exp(u) - y * u


@njit(cache=True, nogil=True, inline="always")
def _term_grad(lid, d, u, y):
    """(f(u; y), f'(u; y))."""
    if lid == SQUARED:
        r = u - y
        return r * r, 2.0 * r
    if lid == LOGISTIC:
        m = -y * u
        return _log1pexp(m), -y * _sigmoid(m)
    if lid == SQUARED_HINGE:
        r = 1.0 - y * u
        if r > 0.0:
            return r * r, -2.0 * y * r
        return 0.0, 0.0
    if lid == HUBER:
        r = y - u
        return _huber(r, d), -2.0 * min(max(r, -d), d)
    e = math.exp(u)
    return e - y * u, e - y


@njit(cache=True, nogil=True, inline="always")
def _conj_term(lid, d, z, y):
    """f*(z; y) (``+inf`` outside the domain)."""
    if lid == SQUARED:
        return 0.25 * z * z + y * z
    if lid == LOGISTIC:
        t = -y * z
        if t < 0.0 or t > 1.0:
            return np.inf
        return _xlogx(t) + _xlogx(1.0 - t)
    if lid == SQUARED_HINGE:
        w = y * z
        if w > 0.0:
            return np.inf
        return w + 0.25 * z * z
    if lid == HUBER:
        if abs(z) > 2.0 * d:
            return np.inf
        return 0.25 * z * z + y * z
    e = z + y
    if e < 0.0:
        return np.inf
    return _xlogx(e) - e


@njit(cache=True, nogil=True)
def _loss_value_weighted(loss, u, y):
    """``sum_i w_i f(u_i + o_i; y_i)`` (weights and/or offsets given)."""
    w = loss.w
    o = loss.o
    nw = w.shape[0]
    no = o.shape[0]
    s = 0.0
    for i in range(u.shape[0]):
        if nw > 0 and w[i] == 0.0:
            continue
        ui = u[i] + o[i] if no > 0 else u[i]
        v = _term(loss.id, loss.param, ui, y[i])
        s += w[i] * v if nw > 0 else v
    return s


@njit(cache=True, nogil=True)
def loss_value(loss, u, y):
    """Sum of the per-sample losses at ``u`` (float)."""
    if loss.w.shape[0] > 0 or loss.o.shape[0] > 0:
        return _loss_value_weighted(loss, u, y)
    s = 0.0
    for i in range(u.shape[0]):
        s += _term(loss.id, loss.param, u[i], y[i])
    return s


@njit(cache=True, nogil=True)
def _loss_value_grad_weighted(loss, u, y, grad):
    w = loss.w
    o = loss.o
    nw = w.shape[0]
    no = o.shape[0]
    s = 0.0
    for i in range(u.shape[0]):
        if nw > 0 and w[i] == 0.0:
            grad[i] = 0.0
            continue
        ui = u[i] + o[i] if no > 0 else u[i]
        v, g = _term_grad(loss.id, loss.param, ui, y[i])
        if nw > 0:
            s += w[i] * v
            grad[i] = w[i] * g
        else:
            s += v
            grad[i] = g
    return s


@njit(cache=True, nogil=True)
def loss_value_grad(loss, u, y, grad):
    """Sum of the losses at ``u``; writes the per-sample derivatives ``f'(u_i)`` into ``grad``."""
    if loss.w.shape[0] > 0 or loss.o.shape[0] > 0:
        return _loss_value_grad_weighted(loss, u, y, grad)
    s = 0.0
    for i in range(u.shape[0]):
        v, grad[i] = _term_grad(loss.id, loss.param, u[i], y[i])
        s += v
    return s


@njit(cache=True, nogil=True)
def _conjugate_sum_weighted(loss, z, y):
    """``sum_i w_i f*(z_i / w_i; y_i) - z_i o_i``."""
    w = loss.w
    o = loss.o
    nw = w.shape[0]
    no = o.shape[0]
    s = 0.0
    for i in range(z.shape[0]):
        if nw > 0:
            if w[i] == 0.0:
                if z[i] != 0.0:
                    return np.inf
                continue
            v = w[i] * _conj_term(loss.id, loss.param, z[i] / w[i], y[i])
        else:
            v = _conj_term(loss.id, loss.param, z[i], y[i])
        if not v < np.inf:
            return np.inf
        s += v
        if no > 0:
            s -= z[i] * o[i]
    return s


@njit(cache=True, nogil=True)
def conjugate_sum(loss, z, y):
    """``sum_i f*(z_i; y_i)``; ``+inf`` if some ``z_i`` is outside the conjugate's domain."""
    if loss.w.shape[0] > 0 or loss.o.shape[0] > 0:
        return _conjugate_sum_weighted(loss, z, y)
    n = z.shape[0]
    s = 0.0
    lid = loss.id
    if lid == SQUARED:
        for i in range(n):
            s += 0.25 * z[i] * z[i] + y[i] * z[i]
    elif lid == LOGISTIC:
        for i in range(n):
            t = -y[i] * z[i]
            if t < 0.0 or t > 1.0:
                return np.inf
            s += _xlogx(t) + _xlogx(1.0 - t)
    elif lid == SQUARED_HINGE:
        for i in range(n):
            w = y[i] * z[i]
            if w > 0.0:
                return np.inf
            s += w + 0.25 * z[i] * z[i]
    elif lid == HUBER:
        bound = 2.0 * loss.param
        for i in range(n):
            if abs(z[i]) > bound:
                return np.inf
            s += 0.25 * z[i] * z[i] + y[i] * z[i]
    else:
        for i in range(n):
            e = z[i] + y[i]
            if e < 0.0:
                return np.inf
            s += _xlogx(e) - e
    return s


@njit(cache=True, nogil=True)
def loss_hessian(loss, u, y, h):
    """Per-sample (generalised) second derivatives ``f''(u_i; y_i)`` into ``h`` (times the
    weights, at ``u + o``)."""
    lid = loss.id
    nw = loss.w.shape[0]
    no = loss.o.shape[0]
    for i in range(u.shape[0]):
        ui = u[i] + loss.o[i] if no > 0 else u[i]
        if lid == SQUARED:
            h[i] = 2.0
        elif lid == LOGISTIC:
            s = _sigmoid(-y[i] * ui)
            h[i] = s * (1.0 - s)
        elif lid == SQUARED_HINGE:
            h[i] = 2.0 if 1.0 - y[i] * ui > 0.0 else 0.0
        elif lid == HUBER:
            h[i] = 2.0 if abs(y[i] - ui) <= loss.param else 0.0
        else:
            h[i] = math.exp(min(ui, 700.0))
        if nw > 0:
            h[i] *= loss.w[i]


@njit(cache=True, nogil=True)
def newton_exact(loss):
    """Whether one Newton step minimises a ridge-penalised sum of these losses exactly (the
    loss is quadratic)."""
    return loss.id == SQUARED


@njit(cache=True, nogil=True)
def zero_sum_parts(loss, y, zeta, v1, v2):
    """Split a dual point so that scaling its parts makes it zero-sum inside the domain.

    Writes ``v1``, ``v2`` (length n, zero-initialised by the caller) and returns ``(a1, a2,
    shifted)``. ``shifted`` False (every domain is an interval containing 0): ``zeta = v1 + v2``
    with ``v1 <= 0 <= v2``, and ``a1 v1 + a2 v2`` sums to zero and stays in the domain (the
    larger part is scaled down). ``shifted`` True (the domain is ``zeta >= -w y``): ``zeta = v1 -
    v2`` with ``v1 >= 0`` and ``v2 = w y`` (``y`` without weights), and ``a1 v1 - v2`` sums to
    zero (``a1 = sum(v2) / sum(v1)``).
    """
    n = zeta.shape[0]
    if loss.id == POISSON:
        nw = loss.w.shape[0]
        se = 0.0
        sy = 0.0
        for i in range(n):
            wy = loss.w[i] * y[i] if nw > 0 else y[i]
            v2[i] = wy
            v1[i] = zeta[i] + wy
            se += v1[i]
            sy += wy
        return (sy / se if se > 0.0 else 0.0), 0.0, True
    s1 = 0.0
    s2 = 0.0
    for i in range(n):
        if zeta[i] <= 0.0:
            v1[i] = zeta[i]
            s1 += zeta[i]
        else:
            v2[i] = zeta[i]
            s2 += zeta[i]
    a1 = 1.0
    a2 = 1.0
    if -s1 > s2:
        a1 = s2 / (-s1)
    elif s2 > 0.0:
        a2 = (-s1) / s2
    return a1, a2, False
