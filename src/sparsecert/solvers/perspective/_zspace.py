"""Kernels of the z-space strategy (see ``zspace``): the exact capped-simplex projection."""

from __future__ import annotations

import numpy as np
from numba import njit

from sparsecert.solvers.perspective._order import argsort_desc

__all__ = ["project_capped"]


@njit(cache=True, nogil=True)
def project_capped(v: np.ndarray, k: float) -> np.ndarray:
    """Euclidean projection onto ``{0 <= z <= 1, sum z <= k}`` (exact, O(p log p)).

    If ``clip(v, 0, 1)`` already sums to at most ``k`` it is the projection; otherwise the
    projection is ``clip(v - tau, 0, 1)`` with the ``tau > 0`` at which the sum equals ``k``.
    ``s(tau) = sum_i clip(v_i - tau, 0, 1)`` is piecewise linear and non-increasing with
    breakpoints ``v_i - 1`` (coordinate i leaves the cap) and ``v_i`` (it reaches 0): a sweep over
    the sorted breakpoints finds ``tau`` exactly.
    """
    p = v.shape[0]
    z = np.empty(p)
    total = 0.0
    for i in range(p):
        zi = min(max(v[i], 0.0), 1.0)
        z[i] = zi
        total += zi
    if total <= k:
        return z
    bp = np.empty(2 * p)
    neg = np.empty(2 * p)
    for i in range(p):
        bp[i] = v[i] - 1.0
        bp[p + i] = v[i]
    for i in range(2 * p):
        neg[i] = -bp[i]
    order = argsort_desc(neg)  # the breakpoints in increasing order (stable)
    # slope magnitude at tau = 0+: coordinates strictly inside (0, 1) after the shift
    m = 0
    for i in range(p):
        if v[i] - 1.0 <= 0.0 < v[i]:
            m += 1
    prev, val = 0.0, total
    tau = 0.0
    for r in range(2 * p):
        j = order[r]
        t = bp[j]
        if t <= 0.0:
            continue
        nxt = val - m * (t - prev)
        if nxt <= k:
            tau = prev + (val - k) / m
            break
        val, prev = nxt, t
        if j < p:
            m += 1  # v_i - 1 passed: the coordinate leaves the cap and starts decreasing
        else:
            m -= 1  # v_i passed: the coordinate reached 0
    else:
        tau = prev + ((val - k) / m if m > 0 else 0.0)
    for i in range(p):
        z[i] = min(max(v[i] - tau, 0.0), 1.0)
    return z
