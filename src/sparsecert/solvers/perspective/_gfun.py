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

from sparsecert.solvers.perspective._order import argsort_desc, heap_sort_desc, top_heap, topk_sum

OUT, IN, FREE = 0, 1, 2
#: relative tolerance on the boundary of dom g (||b||_inf <= M, ||b||_1 <= k M)
DOMAIN_RTOL = 1e-9


@njit(cache=True, nogil=True, inline="always")
def huber(t, M):
    """``H_M(t) = t^2/2`` if ``|t| <= M`` else ``M |t| - M^2/2`` (``M = inf`` allowed)."""
    a = abs(t)
    if a <= M:
        return 0.5 * a * a
    return M * a - 0.5 * M * M


@njit(cache=True, nogil=True)
def gstar(a, k, M):
    """``g*(a)``: sum of the ``k`` largest ``H_M(a_j)``."""
    m = a.shape[0]
    h = np.empty(m)
    for j in range(m):
        h[j] = huber(a[j], M)
    return topk_sum(h, k, m)


@njit(cache=True, nogil=True)
def gstar_node(a, state, budget, M):
    """``g*_node(a) = sum_{S1} H_M(a_j) + TopSum_budget(H_M(a_free))`` (S0 entries ignored)."""
    m = a.shape[0]
    h = np.empty(m)
    nf = np.int64(0)  # not the literal 0 (see _order)
    s_in = 0.0
    for j in range(m):
        st = state[j]
        if st == IN:
            s_in += huber(a[j], M)
        elif st == FREE:
            h[nf] = huber(a[j], M)
            nf += 1
    return s_in + topk_sum(h, budget, nf)


@njit(cache=True, nogil=True)
def g_node(b, state, budget, M):
    """``g_node(b)``; ``+inf`` if ``b`` violates the node (S0 nonzero, box, budget domain).

    The free part is ``g`` with budget ``k' = budget``: with ``a = |b_free|`` sorted
    decreasingly and ``T_r = sum_{i>r} a_i``, ``g = min`` over the feasible
    ``r in {0..k'-1}`` (``T_r / (k'-r) >= a_{r+1}``) of ``1/2 (sum_{i<=r} a_i^2 +
    T_r^2 / (k'-r))``; only the ``k'+1`` largest magnitudes are sorted (a heap).
    """
    m = b.shape[0]
    a = np.empty(m)
    nf = np.int64(0)  # not the literal 0 (see _order)
    s_in = 0.0
    lim = M * (1.0 + DOMAIN_RTOL)
    s1 = 0.0
    s2 = 0.0
    amax = 0.0
    nnz = 0
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
            aj = abs(b[j])
            a[nf] = aj
            nf += 1
            s1 += aj
            s2 += aj * aj
            if aj > amax:
                amax = aj
            if aj > 0.0:
                nnz += 1
    k = budget
    if k <= 0:
        return s_in if nnz == 0 else np.inf
    if M < np.inf:
        if amax > M * (1.0 + DOMAIN_RTOL) or s1 > k * M * (1.0 + DOMAIN_RTOL):
            return np.inf
    if nnz <= k:
        return s_in + 0.5 * s2
    if s1 != s1:
        return np.nan
    # the k+1 largest magnitudes, in decreasing order (nnz > k, so nf >= k + 1)
    top = top_heap(a, k + 1, nf)
    heap_sort_desc(top)
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
    return s_in + best


@njit(cache=True, nogil=True)
def g_value(b, k, M):
    """``g(b)`` (half the squared k-support norm with the box); ``+inf`` outside the domain."""
    state = np.full(b.shape[0], FREE, dtype=np.int8)
    return g_node(b, state, k, M)


@njit(cache=True, nogil=True)
def relaxed_z(b, state, budget):
    """The minimising ``z`` of ``g_node`` at ``b`` (1 on S1, 0 on S0)."""
    z = np.empty(b.shape[0])
    relaxed_z_into(b, state, budget, z)
    return z


@njit(cache=True, nogil=True)
def best_split(a, order, total, budget):
    """How many of the largest free entries sit at 1 in the minimiser of the node's ``g``: the
    ``r < budget`` (``a[order[:r]]`` kept whole, the rest of ``budget`` shared by the tail)
    that minimises ``sum of the r largest squared + tail^2 / (budget - r)`` among those whose
    share ``tail / (budget - r)`` is at least the next entry (``order``: ``a``'s indices by
    decreasing value; ``total``: the sum of the entries; ``budget - 1`` when none qualifies).
    """
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
    return best_r


@njit(cache=True, nogil=True)
def relaxed_z_into(b, state, budget, z):
    """Writes the minimising ``z`` of ``g_node`` at ``b`` into ``z``."""
    m = b.shape[0]
    for j in range(m):
        z[j] = 0.0
    idx = np.empty(m, dtype=np.int64)
    nf = np.int64(0)  # not the literal 0 (see _order)
    for j in range(m):
        if state[j] == IN:
            z[j] = 1.0
        elif state[j] == FREE:
            idx[nf] = j
            nf += 1
    if nf == 0 or budget <= 0:
        return
    a = np.empty(nf)
    nnz = 0
    for i in range(nf):
        a[i] = abs(b[idx[i]])
        if a[i] > 0.0:
            nnz += 1
    if nnz <= budget:
        for i in range(nf):
            z[idx[i]] = 1.0 if a[i] > 0.0 else 0.0
        return
    order = argsort_desc(a)
    total = 0.0
    for i in range(nf):
        total += a[i]
    best_r = best_split(a, order, total, budget)
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
