r"""The perspective term with per-coefficient bounds ``lower_j <= b_j <= upper_j``: ``g``, ``g*``
and the relaxed indicators (the exact prox: :mod:`._coef_bounds_prox`; one call for the box or
the bounds: :mod:`._box_or_bounds`).

With ``lower_j <= 0 <= upper_j`` (``b_j = 0`` must stay feasible: a coefficient outside the
support is zero), the perspective of a node is

    g_node(b) = min_z { 1/2 sum_j b_j^2 / z_j : z_S1 = 1, z_S0 = 0, z_R in [0, 1],
                        sum_R z <= beta, lower_j z_j <= b_j <= upper_j z_j },

and its conjugate ``g*_node(a) = sum_{S1} H_j(a_j) + TopSum_beta(H_j(a_j), j in R)`` with

    H_j(t) = sup_{b in [lower_j, upper_j]} (t b - b^2/2)
           = t^2/2 on [lower_j, upper_j],  upper_j t - upper_j^2/2 above,
             lower_j t - lower_j^2/2 below                                   (H_j >= 0).

The symmetric box ``M`` is ``lower = -M``, ``upper = M``; a sign constraint is ``lower = 0``. On
either side of 0 a coordinate behaves like the symmetric box with the bound ``B_j`` of that side
(``upper_j`` for ``b_j >= 0``, ``-lower_j`` below), so the magnitudes ``|b_j|`` carry the
maths.

**g.** With ``a_j = |b_j|`` and ``B_j`` the bound of b_j's side, ``z_j >= a_j / B_j``; the minimum
over z of ``sum a_j^2 / (2 z_j)`` on ``sum z <= beta`` has ``z_j = clip(a_j / s, a_j / B_j, 1)``
for the ``s > 0`` with ``sum_j z_j(s) = beta`` (a Lagrange multiplier ``s^2 / 2``), a sum that
is piecewise of the form ``n_1 + A / s + L`` between the breakpoints ``s = a_j`` and ``s =
B_j``: one sort, one sweep.

The kernels take the bounds as a :class:`CoefBounds` record; the solver passes ``None`` instead
when the problem has the symmetric box only, so that this code is compiled only for the runs
that use it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from sparsecert.solvers.perspective._gfun import FREE, IN, OUT
from sparsecert.solvers.perspective._order import argsort_desc, topk_sum

__all__ = ["CoefBounds", "coef_bounds", "side_bound", "h_bounded", "gstar_node_b", "g_node_b",
           "relaxed_z_b"]

#: relative tolerance on the bounds of b in g (as ``_gfun.DOMAIN_RTOL``)
DOMAIN_RTOL = 1e-9


class CoefBounds(NamedTuple):
    """Every coefficient's bounds, ``lower <= 0 <= upper`` (``-inf`` / ``inf`` for none)."""

    lower: np.ndarray
    upper: np.ndarray


def coef_bounds(lower, upper) -> CoefBounds:
    """The kernels' record of the bounds (float64, C-contiguous copies)."""
    return CoefBounds(np.ascontiguousarray(lower, dtype=np.float64),
                      np.ascontiguousarray(upper, dtype=np.float64))


@njit(cache=True, nogil=True, inline="always")
def side_bound(x, lo, hi):
    """The bound of x's side: ``hi`` for ``x >= 0``, ``-lo`` below."""
    return hi if x >= 0.0 else -lo


@njit(cache=True, nogil=True, inline="always")
def h_bounded(t, lo, hi):
    """``H(t) = sup_{b in [lo, hi]} (t b - b^2/2)`` (``lo <= 0 <= hi``, infinite ends allowed)."""
    if t > hi:
        return hi * t - 0.5 * hi * hi
    if t < lo:
        return lo * t - 0.5 * lo * lo
    return 0.5 * t * t


@njit(cache=True, nogil=True, inline="always")
def push_event(key, kind, who, q, value, k, j):
    """Record the breakpoint ``value`` of kind ``k`` of coordinate ``j`` at position ``q`` of
    a sweep's event arrays; returns the next position."""
    key[q] = value
    kind[q] = k
    who[q] = j
    return q + 1


@njit(cache=True, nogil=True)
def gstar_node_b(a, state, budget, bounds):
    """``g*_node(a) = sum_{S1} H_j(a_j) + TopSum_budget(H_j(a_free))`` (S0 entries ignored)."""
    lo = bounds.lower
    hi = bounds.upper
    m = a.shape[0]
    h = np.empty(m)
    nf = np.int64(0)
    s_in = 0.0
    for j in range(m):
        st = state[j]
        if st == IN:
            s_in += h_bounded(a[j], lo[j], hi[j])
        elif st == FREE:
            h[nf] = h_bounded(a[j], lo[j], hi[j])
            nf += 1
    return s_in + topk_sum(h, budget, nf)


@njit(cache=True, nogil=True)
def _g_free(a, B, budget, z_out):
    """``min sum a_j^2 / (2 z_j)`` over ``a_j / B_j <= z_j <= 1``, ``sum z <= budget`` (``a >= 0``
    with a nonzero entry, ``a_j <= B_j``); writes the minimising z into ``z_out`` and returns
    the value (``+inf`` when the lower bounds of z exceed the budget)."""
    m = a.shape[0]
    low = 0.0
    nnz = 0
    for j in range(m):
        if a[j] > 0.0:
            nnz += 1
            low += a[j] / B[j]
    if low > budget * (1.0 + DOMAIN_RTOL):
        return np.inf
    if nnz <= budget:
        val = 0.0
        for j in range(m):
            if a[j] > 0.0:
                z_out[j] = 1.0
                val += 0.5 * a[j] * a[j]
            else:
                z_out[j] = 0.0
        return val
    # breakpoints of s: a_j (z_j leaves 1) and B_j (z_j reaches its lower bound a_j / B_j);
    # sum z(s) = n1 + amid / s + lsum, nonincreasing in s
    key = np.empty(2 * nnz)
    kind = np.empty(2 * nnz, dtype=np.int64)
    who = np.empty(2 * nnz, dtype=np.int64)
    q = 0
    for j in range(m):
        if a[j] > 0.0:
            q = push_event(key, kind, who, q, a[j], 0, j)
            q = push_event(key, kind, who, q, B[j], 1, j)
    order = argsort_desc(key)  # decreasing; sweep from the end (increasing s)
    n1 = float(nnz)
    amid = 0.0
    lsum = 0.0
    s_root = -1.0
    prev = 0.0
    for r in range(2 * nnz - 1, -1, -1):
        e = order[r]
        s_e = key[e]
        # on (prev, s_e] the regimes are fixed and the sum is n1 + amid / s + lsum: when it is
        # at most the budget at s_e, the root is in this interval
        tot = n1 + lsum + (amid / s_e if s_e < np.inf else 0.0)
        if tot <= budget:
            rest = budget - n1 - lsum
            s_root = amid / rest if (amid > 0.0 and rest > 0.0) else prev
            if s_root < prev:
                s_root = prev
            if s_root > s_e:
                s_root = s_e
            break
        j = who[e]
        if kind[e] == 0:  # z_j = 1 -> a_j / s
            n1 -= 1.0
            amid += a[j]
        else:  # a_j / s -> a_j / B_j
            amid -= a[j]
            lsum += a[j] / B[j]
        prev = s_e
    degenerate = s_root < 0.0
    if degenerate:  # the lower bounds fill the budget (up to the tolerance): z at them
        s_root = np.inf
    amax = 0.0
    for j in range(m):
        if a[j] > amax:
            amax = a[j]
    val = 0.0
    for j in range(m):
        if a[j] > 0.0:
            zj = a[j] / s_root if s_root > 0.0 else 1.0
            lb = a[j] / B[j]
            if zj < lb:
                zj = lb
            if zj > 1.0:
                zj = 1.0
            z_out[j] = zj
            if not zj > 0.0:
                # no room left for a coordinate of an unbounded side: rounding noise (the
                # prox's exact zeros off by an ulp) counts as 0 within the tolerance
                if degenerate and a[j] <= DOMAIN_RTOL * amax:
                    continue
                return np.inf
            val += 0.5 * a[j] * a[j] / zj
        else:
            z_out[j] = 0.0
    return val


@njit(cache=True, nogil=True)
def _node_parts(b, state, bounds):
    """The free magnitudes and their side bounds, the S1 part of g (``-1`` flags a
    violation)."""
    lo = bounds.lower
    hi = bounds.upper
    m = b.shape[0]
    a = np.empty(m)
    B = np.empty(m)
    nf = 0
    s_in = 0.0
    for j in range(m):
        st = state[j]
        x = b[j]
        if st == OUT:
            if x != 0.0:
                return a[:0], B[:0], -1.0
        else:
            bj = side_bound(x, lo[j], hi[j])
            if abs(x) > bj * (1.0 + DOMAIN_RTOL) and abs(x) > 0.0:
                return a[:0], B[:0], -1.0
            if st == IN:
                s_in += 0.5 * x * x
            else:
                a[nf] = abs(x)
                B[nf] = bj if bj > 0.0 else 1.0  # (a_j = 0 there: no constraint)
                if bj < abs(x):
                    B[nf] = abs(x)  # (within the tolerance)
                nf += 1
    return a[:nf], B[:nf], s_in


@njit(cache=True, nogil=True)
def g_node_b(b, state, budget, bounds):
    """``g_node(b)`` with the bounds; ``+inf`` if ``b`` violates the node (S0 nonzero, a bound,
    the budget's domain)."""
    a, B, s_in = _node_parts(b, state, bounds)
    if s_in < 0.0:
        return np.inf
    nnz = 0
    for j in range(a.shape[0]):
        if a[j] > 0.0:
            nnz += 1
    if nnz == 0:
        return s_in
    if budget <= 0:
        return np.inf
    z = np.empty(a.shape[0])
    return s_in + _g_free(a, B, budget, z)


@njit(cache=True, nogil=True)
def relaxed_z_b(b, state, budget, bounds):
    """The minimising ``z`` of ``g_node`` at ``b`` (1 on S1, 0 on S0)."""
    m = b.shape[0]
    z = np.zeros(m)
    lo = bounds.lower
    hi = bounds.upper
    idx = np.empty(m, dtype=np.int64)
    a = np.empty(m)
    B = np.empty(m)
    nf = 0
    for j in range(m):
        if state[j] == IN:
            z[j] = 1.0
        elif state[j] == FREE:
            idx[nf] = j
            a[nf] = abs(b[j])
            bj = side_bound(b[j], lo[j], hi[j])
            B[nf] = bj if bj >= a[nf] and bj > 0.0 else (a[nf] if a[nf] > 0.0 else 1.0)
            nf += 1
    if nf == 0 or budget <= 0:
        return z
    zf = np.empty(nf)
    val = _g_free(a[:nf], B[:nf], budget, zf)
    if val < np.inf:
        for i in range(nf):
            z[idx[i]] = zf[i]
    return z
