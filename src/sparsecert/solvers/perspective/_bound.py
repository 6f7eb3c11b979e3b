r"""Kernels for the valid lower bound, the Fenchel dual and the relaxation objective.

For any point ``b~`` (zeros on S0) convexity of ``F(b) = sum_i f(x_i^T b) - mu ||b||^2`` gives

    LB(b~) = F(b~) - grad^T b~ - 2 lam' g*_node(-grad / (2 lam')),   grad = grad F(b~),

a lower bound on ``min_b P(b) = F(b) + 2 lam' g_node(b)`` (``lam' = lambda2 + mu``). With
``mu = 0`` it equals the Fenchel dual ``D(zeta)`` at ``zeta = f'(X b~)``. ``LB`` is a bound on the
problem the kernel sees: on a working set of columns the caller re-evaluates it over all columns.

With an unpenalised intercept the dual needs ``sum(zeta) = 0``: :func:`icpt_grad_dual` builds a
zero-sum projection of ``zeta`` that stays in the conjugate's domain.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sparsecert.solvers.loss_kernels import conjugate_sum, loss_value_grad, zero_sum_parts
from sparsecert.solvers.perspective._box_or_bounds import g_node_any, gstar_node_any
from sparsecert.solvers.perspective._linalg import rmatvec

__all__ = ["sq_norm", "point_values", "icpt_grad_dual", "dual_value"]


@njit(cache=True, nogil=True, inline="always")
def sq_norm(v):
    """``||v||^2`` (fixed-order sum)."""
    s = 0.0
    for j in range(v.shape[0]):
        s += v[j] * v[j]
    return s


@njit(cache=True, nogil=True)
def point_values(data, state, budget, b, ub, zeta, bound):
    """``(P(b), LB(b))`` for ``data`` (a ``FistaData``) with ``ub = X b`` given.

    Writes ``zeta = f'(X b)``; ``LB`` is the valid bound at ``b`` when ``bound`` (one mat-vec
    ``X^T zeta``), ``-inf`` otherwise. (No intercept: see ``icpt_grad_dual``.) The relaxed
    indicators at ``b`` are a separate call (``relaxed_z_into``): numba re-optimises every
    callee's code inside each caller's module, so a callee linked here for one caller's sake
    would cost compile time in every first run.
    """
    mu = data.mu
    lam = data.lam
    F = loss_value_grad(data.loss, ub, data.y, zeta)
    if mu != 0.0:
        F -= mu * sq_norm(b)
    P = F + 2.0 * lam * g_node_any(b, state, budget, data.M, data.bounds)
    lb = -np.inf
    if bound:
        grad = np.empty(data.D.p)
        rmatvec(data.D, zeta, grad)
        twolam = 2.0 * lam
        m = b.shape[0]
        a = np.empty(m)
        gb = 0.0
        for j in range(m):
            gj = grad[j] - 2.0 * mu * b[j]
            if state[j] != 0:
                a[j] = -gj / twolam
                gb += gj * b[j]
            else:
                a[j] = 0.0
        lb = F - gb - twolam * gstar_node_any(a, state, budget, data.M, data.bounds)
    return P, lb


@njit(cache=True, nogil=True)
def icpt_grad_dual(D, y, loss, zeta, Xty, grad, zproj, gproj):
    """Gradient ``X^T zeta`` and a zero-sum dual ``zproj`` (with ``gproj = X^T zproj``), ``D``
    the design (a ``_linalg.Design``).

    With an unpenalised intercept the Fenchel dual needs ``sum(zeta) = 0``. The loss splits
    ``zeta`` into parts whose scaling gives a zero sum inside the conjugate's domain
    (``loss_kernels.zero_sum_parts``): the negative and the positive part, the larger scaled
    down (a domain that is an interval containing 0: logistic, squared hinge), or ``zeta = e -
    y`` with ``e >= 0`` scaled to ``sum(e) = sum(y)`` (Poisson; ``Xty = X^T y``). The parts are
    multiplied separately, so the cost is one mat-vec. Returns ``sum(zeta)``.
    """
    n = D.n
    p = D.p
    sz = 0.0
    for i in range(n):
        sz += zeta[i]
    v1 = np.zeros(n)
    v2 = np.zeros(n)
    a1, a2, shifted = zero_sum_parts(loss, y, zeta, v1, v2)
    g1 = np.empty(p)
    rmatvec(D, v1, g1)
    if shifted:  # zeta = v1 - v2 (v2 = y, times the weights)
        for i in range(n):
            zproj[i] = a1 * v1[i] - v2[i]
        for j in range(p):
            grad[j] = g1[j] - Xty[j]
            gproj[j] = a1 * g1[j] - Xty[j]
        return sz
    g2 = np.empty(p)
    rmatvec(D, v2, g2)
    for i in range(n):
        zproj[i] = a1 * v1[i] + a2 * v2[i]
    for j in range(p):
        grad[j] = g1[j] + g2[j]
        gproj[j] = a1 * g1[j] + a2 * g2[j]
    return sz


@njit(cache=True, nogil=True)
def dual_value(D, y, loss, lam, M, state, budget, zeta, bounds):
    """Fenchel dual ``D(zeta) = -sum f*(zeta_i) - 2 lam g*_node(-X^T zeta / (2 lam))`` (``D``
    the design, a ``_linalg.Design``; the box ``M``, or the per-coefficient ``bounds`` when
    not None)."""
    p = D.p
    g = np.empty(p)
    rmatvec(D, zeta, g)
    a = np.empty(p)
    for j in range(p):
        a[j] = -g[j] / (2.0 * lam) if state[j] != 0 else 0.0
    return -conjugate_sum(loss, zeta, y) - 2.0 * lam * gstar_node_any(a, state, budget, M,
                                                                       bounds)
