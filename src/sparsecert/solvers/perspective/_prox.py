r"""The exact proximal operator of ``tau * g`` (Moreau identity + pool-adjacent-violators).

``prox_{tau g}(v) = v - tau * prox_{g*/tau}(v / tau)``. For ``prox_{rho g*}(mu)`` the signs follow
``mu`` and the order follows ``|mu|``; with ``w = |mu|`` sorted decreasingly it solves

    min_{a_1 >= ... >= a_p}  sum_j 1/2 (a_j - w_j)^2 + rho * sum_{j <= k} H_M(a_j)

by pool-adjacent-violators: a block with sum ``S``, size ``m`` and ``c`` members among the first
``k`` takes the value ``phi(S/m, rho c / m)``, ``phi(w, l) = w / (1 + l)`` if ``w <= M (1 + l)``
else ``w - l M`` (the prox of ``l H_M``); adjacent blocks are merged while the chain order is
violated. Sort ``O(p log p)`` + PAVA ``O(p)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from sparsecert.solvers.perspective._gfun import FREE, IN
from sparsecert.solvers.perspective._order import argsort_desc


@njit(cache=True, nogil=True, inline="always")
def _phi(w, lam, M):
    """Prox of ``lam * H_M`` at ``w >= 0``."""
    if w <= M * (1.0 + lam):
        return w / (1.0 + lam)
    return w - lam * M


@njit(cache=True, nogil=True)
def prox_gstar_sorted(w, k, rho, M, out):
    """PAVA for ``prox_{rho g*}`` at a non-negative, decreasingly sorted ``w``; writes ``out``."""
    m = w.shape[0]
    bs = np.empty(m)  # block sums
    bm = np.empty(m)  # block sizes
    bc = np.empty(m)  # members among the first k
    bv = np.empty(m)  # block values
    nb = 0
    for i in range(m):
        bs[nb] = w[i]
        bm[nb] = 1.0
        bc[nb] = 1.0 if i < k else 0.0
        bv[nb] = _phi(w[i], rho * bc[nb], M)
        nb += 1
        while nb > 1 and bv[nb - 2] < bv[nb - 1]:
            bs[nb - 2] += bs[nb - 1]
            bm[nb - 2] += bm[nb - 1]
            bc[nb - 2] += bc[nb - 1]
            nb -= 1
            bv[nb - 1] = _phi(bs[nb - 1] / bm[nb - 1], rho * bc[nb - 1] / bm[nb - 1], M)
    i = 0
    for b in range(nb):
        cnt = int(bm[b] + 0.5)
        for _ in range(cnt):
            out[i] = bv[b]
            i += 1


@njit(cache=True, nogil=True, inline="always")
def prox_gstar_by_order(w, k, rho, M):
    """``prox_{rho g*}`` of magnitudes ``w >= 0`` in decreasing order: returns ``(order,
    a_sorted)``, ``a_sorted[i]`` the value of coordinate ``order[i]`` (``order`` sorts ``w``
    decreasingly)."""
    order = argsort_desc(w)
    m = w.shape[0]
    ws = np.empty(m)
    for i in range(m):
        ws[i] = w[order[i]]
    a_sorted = np.empty(m)
    prox_gstar_sorted(ws, k, rho, M, a_sorted)
    return order, a_sorted


def _at(bound, j):
    """``bound[j]`` for one bound per coordinate, ``bound`` for one number for all (the
    compiled form is the overload below)."""
    return bound[j] if isinstance(bound, np.ndarray) else bound


@overload(_at, inline="always")
def _ol_at(bound, j):
    if isinstance(bound, types.Array):
        return lambda bound, j: bound[j]
    return lambda bound, j: bound


@njit(cache=True, nogil=True, inline="always")
def clip_in_collect_free(v, state, tau, lo, hi):
    """The part of a node's prox that needs no sorting: returns ``(out, idx, nf)`` with ``out``
    0 on S0 and free coordinates, ``clip(v_j / (1 + tau), lo_j, hi_j)`` on S1, and the ``nf``
    free coordinates' indices in ``idx[:nf]``. ``lo``, ``hi``: one number each (a box) or one
    per coordinate."""
    m = v.shape[0]
    out = np.empty(m)  # zeroed in the loop: np.zeros costs more to compile than it saves
    idx = np.empty(m, dtype=np.int64)
    nf = np.int64(0)  # not the literal 0 (see _order)
    for j in range(m):
        out[j] = 0.0
        st = state[j]
        if st == IN:
            val = v[j] / (1.0 + tau)
            if val > _at(hi, j):
                val = _at(hi, j)
            elif val < _at(lo, j):
                val = _at(lo, j)
            out[j] = val
        elif st == FREE:
            idx[nf] = j
            nf += 1
    return out, idx, nf


@njit(cache=True, nogil=True)
def prox_gstar(mu, k, rho, M):
    """``prox_{rho g*}(mu)`` for ``g*(a) = TopSum_k H_M(a)``."""
    m = mu.shape[0]
    w = np.empty(m)
    for i in range(m):
        w[i] = abs(mu[i])
    order, a_sorted = prox_gstar_by_order(w, k, rho, M)
    out = np.empty(m)
    for i in range(m):
        j = order[i]
        out[j] = a_sorted[i] if mu[j] >= 0.0 else -a_sorted[i]
    return out


@njit(cache=True, nogil=True)
def prox_node(v, state, budget, tau, M):
    """``prox_{tau g_node}(v)``: S0 -> 0, S1 -> clip(v/(1+tau), -M, M), free -> prox of
    ``tau g`` with the budget (by Moreau: ``|v_j| - tau a_j`` with ``a = prox_{g*/tau}``,
    clipped to ``[0, M]``, signs of ``v``)."""
    out, idx, nf = clip_in_collect_free(v, state, tau, -M, M)
    if nf == 0 or budget <= 0:
        return out
    w = np.empty(nf)
    for i in range(nf):
        w[i] = abs(v[idx[i]]) / tau
    order, a_sorted = prox_gstar_by_order(w, budget, 1.0 / tau, M)
    for i in range(nf):
        j = idx[order[i]]
        mag = abs(v[j]) - tau * a_sorted[i]
        if mag < 0.0:
            mag = 0.0
        if mag > M:
            mag = M
        out[j] = mag if v[j] >= 0.0 else -mag
    return out


@njit(cache=True, nogil=True)
def prox_g(v, k, tau, M):
    """``prox_{tau g}(v)`` with budget ``k`` (``k = 0``: the zero vector)."""
    state = np.full(v.shape[0], FREE, dtype=np.int8)
    return prox_node(v, state, k, tau, M)
