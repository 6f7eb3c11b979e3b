r"""Kernels for the perspective regulariser ``g``, its conjugate ``g*`` and the Huber function.

``g(b) = min_z { 1/2 sum_j b_j^2 / z_j : sum z <= k, 0 <= z <= 1, |b_j| <= M z_j }`` is half the
squared k-support norm on its domain ``{||b||_inf <= M, ||b||_1 <= k M}``;
``g*(a) = sum of the k largest H_M(a_j)`` with the Huber function ``H_M``.

Node variant: every coordinate carries a state ``0`` (fixed out, ``z_j = 0``), ``1`` (fixed in,
``z_j = 1``) or ``2`` (free, shares the budget ``k - |S1|``)::

    g_node(b)  = sum_{S1} b_j^2 / 2 (|b_j| <= M)  +  g_budget(b_free)      (b_S0 = 0)
    g*_node(a) = sum_{S1} H_M(a_j)                +  TopSum_budget(H_M(a_free))

All kernels are plain ``@njit(cache=True, nogil=True)`` functions without fastmath (the bound
is computed from them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

OUT, IN, FREE = 0, 1, 2
#: relative tolerance on the boundary of dom g (||b||_inf <= M, ||b||_1 <= k M)
DOMAIN_RTOL = 1e-9


@njit(cache=True, nogil=True)
def huber(t, M):
    """``H_M(t) = t^2/2`` if ``|t| <= M`` else ``M |t| - M^2/2`` (``M = inf`` allowed)."""
    a = abs(t)
    if a <= M:
        return 0.5 * a * a
    return M * a - 0.5 * M * M


@njit(cache=True, nogil=True)
def topk_sum(h, k):
    """Sum of the ``k`` largest entries of ``h`` (all of them if ``k >= len(h)``)."""
    m = h.shape[0]
    if k <= 0 or m == 0:
        return 0.0
    if k >= m:
        return np.sum(h)
    part = np.partition(h, m - k)
    return np.sum(part[m - k:])


@njit(cache=True, nogil=True)
def gstar(a, k, M):
    """``g*(a)``: sum of the ``k`` largest ``H_M(a_j)``."""
    m = a.shape[0]
    h = np.empty(m)
    for j in range(m):
        h[j] = huber(a[j], M)
    return topk_sum(h, k)


@njit(cache=True, nogil=True)
def gstar_node(a, state, budget, M):
    """``g*_node(a) = sum_{S1} H_M(a_j) + TopSum_budget(H_M(a_free))`` (S0 entries ignored)."""
    m = a.shape[0]
    h = np.empty(m)
    nf = 0
    s_in = 0.0
    for j in range(m):
        st = state[j]
        if st == IN:
            s_in += huber(a[j], M)
        elif st == FREE:
            h[nf] = huber(a[j], M)
            nf += 1
    return s_in + topk_sum(h[:nf], budget)


@njit(cache=True, nogil=True)
def g_value(b, k, M):
    """``g(b)`` (half the squared k-support norm with the box); ``+inf`` outside the domain."""
    m = b.shape[0]
    a = np.abs(b)
    s1 = 0.0
    s2 = 0.0
    amax = 0.0
    nnz = 0
    for j in range(m):
        s1 += a[j]
        s2 += a[j] * a[j]
        if a[j] > amax:
            amax = a[j]
        if a[j] > 0.0:
            nnz += 1
    if k <= 0:
        return 0.0 if nnz == 0 else np.inf
    if M < np.inf:
        if amax > M * (1.0 + DOMAIN_RTOL) or s1 > k * M * (1.0 + DOMAIN_RTOL):
            return np.inf
    if nnz <= k:
        return 0.5 * s2
    # the k+1 largest magnitudes, in decreasing order
    kk = k + 1
    if kk < m:
        top = -np.partition(-a, kk - 1)[:kk]
    else:
        top = a.copy()
    top = -np.sort(-top)
    # g = min over feasible r of 1/2 (sum_{i<=r} a_i^2 + T_r^2 / (k - r)),
    # feasible: theta_r = T_r / (k - r) >= a_{r+1} (then z_i = a_i / theta_r <= 1 for i > r).
    best = np.inf
    pre = 0.0
    pre2 = 0.0
    for r in range(k):
        tail = s1 - pre
        if tail < 0.0:
            tail = 0.0
        theta = tail / (k - r)
        if theta >= top[r]:
            val = 0.5 * (pre2 + tail * tail / (k - r))
            if val < best:
                best = val
        pre += top[r]
        pre2 += top[r] * top[r]
    return best


@njit(cache=True, nogil=True)
def g_node(b, state, budget, M):
    """``g_node(b)``; ``+inf`` if ``b`` violates the node (S0 nonzero, box, budget domain)."""
    m = b.shape[0]
    bf = np.empty(m)
    nf = 0
    s_in = 0.0
    lim = M * (1.0 + DOMAIN_RTOL)
    for j in range(m):
        st = state[j]
        if st == OUT:
            if b[j] != 0.0:
                return np.inf
        elif st == IN:
            if abs(b[j]) > lim:
                return np.inf
            s_in += 0.5 * b[j] * b[j]
        else:
            bf[nf] = b[j]
            nf += 1
    return s_in + g_value(bf[:nf], budget, M)


@njit(cache=True, nogil=True)
def relaxed_z(b, state, budget):
    """The minimising ``z`` of ``g_node`` at ``b`` (1 on S1, 0 on S0)."""
    m = b.shape[0]
    z = np.zeros(m)
    idx = np.empty(m, dtype=np.int64)
    nf = 0
    for j in range(m):
        if state[j] == IN:
            z[j] = 1.0
        elif state[j] == FREE:
            idx[nf] = j
            nf += 1
    if nf == 0 or budget <= 0:
        return z
    a = np.empty(nf)
    nnz = 0
    for i in range(nf):
        a[i] = abs(b[idx[i]])
        if a[i] > 0.0:
            nnz += 1
    if nnz <= budget:
        for i in range(nf):
            z[idx[i]] = 1.0 if a[i] > 0.0 else 0.0
        return z
    order = np.argsort(-a)
    total = 0.0
    for i in range(nf):
        total += a[i]
    best_r = budget - 1
    best_val = np.inf
    pre = 0.0
    pre2 = 0.0
    for r in range(budget):
        top = a[order[r]]
        tail = total - pre
        if tail < 0.0:
            tail = 0.0
        if tail / (budget - r) >= top:
            val = pre2 + tail * tail / (budget - r)
            if val < best_val:
                best_val = val
                best_r = r
        pre += top
        pre2 += top * top
    tail = total
    for i in range(best_r):
        tail -= a[order[i]]
    if tail < 0.0:
        tail = 0.0
    theta = tail / (budget - best_r)
    for i in range(nf):
        j = idx[order[i]]
        if i < best_r:
            z[j] = 1.0
        elif theta > 0.0:
            z[j] = min(1.0, a[order[i]] / theta)
    return z
