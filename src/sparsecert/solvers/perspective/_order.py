"""Small ordering kernels: a stable argsort and the heap of the k largest entries.

Hand-written instead of numba's ``np.sort`` / ``np.argsort`` / ``np.partition``: those compile
to large generic implementations (introsort, quickselect with argument checks, error message
formatting, ``np.unique`` for the ``kth`` argument) that cost seconds of JIT time in every kernel
that links them, while these loops compile in a fraction of that and run as fast on the sizes
the solver sees (``tests/glm/solvers/test_perspective_order.py`` checks them against numpy).

Counters passed to these kernels start as ``np.int64(0)``, not ``0``: numba types a call while
the counter's type is still the literal 0 and would compile a second, useless signature.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["argsort_desc", "top_heap", "heap_sort_desc", "topk_sum"]


@njit(cache=True, nogil=True)
def argsort_desc(key):
    """Indices that sort ``key`` (1-D float64) decreasingly; stable (ties keep index order).

    Insertion-sorted runs of 16, then bottom-up merges of (key, index) pairs (the keys travel
    with the indices, so the merges read memory sequentially).
    """
    m = key.shape[0]
    ka = np.empty(m)
    ia = np.empty(m, dtype=np.int64)
    for i in range(m):
        ka[i] = -key[i]  # sort -key increasingly: stable, and ties keep index order
        ia[i] = i
    run = 16
    for lo in range(0, m, run):
        hi = min(lo + run, m)
        for i in range(lo + 1, hi):
            v = ka[i]
            vi = ia[i]
            j = i
            while j > lo and ka[j - 1] > v:
                ka[j] = ka[j - 1]
                ia[j] = ia[j - 1]
                j -= 1
            ka[j] = v
            ia[j] = vi
    if m <= run:
        return ia
    kb = np.empty(m)
    ib = np.empty(m, dtype=np.int64)
    width = run
    while width < m:
        lo = 0
        while lo < m:
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i = lo
            j = mid
            o = lo
            while i < mid and j < hi:
                if ka[j] < ka[i]:
                    kb[o] = ka[j]
                    ib[o] = ia[j]
                    j += 1
                else:
                    kb[o] = ka[i]
                    ib[o] = ia[i]
                    i += 1
                o += 1
            while i < mid:
                kb[o] = ka[i]
                ib[o] = ia[i]
                i += 1
                o += 1
            while j < hi:
                kb[o] = ka[j]
                ib[o] = ia[j]
                j += 1
                o += 1
            lo = hi
        ka, kb = kb, ka
        ia, ib = ib, ia
        width *= 2
    return ia


@njit(cache=True, nogil=True, inline="always")
def _sift_down(heap, i, size):
    """Restore the min-heap property below ``i``."""
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        c = left
        if left + 1 < size and heap[left + 1] < heap[left]:
            c = left + 1
        if heap[c] < heap[i]:
            t = heap[c]
            heap[c] = heap[i]
            heap[i] = t
            i = c
        else:
            return


@njit(cache=True, nogil=True)
def top_heap(h, k, m):
    """The ``k`` largest of the first ``m`` entries of ``h`` (``1 <= k <= m``) as a min-heap
    (its root is the k-th largest; :func:`heap_sort_desc` orders it).

    Entries that are NaN are never taken in after the first ``k`` (callers check for NaN).
    """
    heap = np.empty(k)
    for i in range(k):
        heap[i] = h[i]
    for i in range(k // 2 - 1, -1, -1):
        _sift_down(heap, i, k)
    for i in range(k, m):
        if h[i] > heap[0]:
            heap[0] = h[i]
            _sift_down(heap, 0, k)
    return heap


@njit(cache=True, nogil=True)
def heap_sort_desc(heap):
    """Sort a min-heap (from :func:`top_heap`) decreasingly, in place."""
    size = heap.shape[0]
    while size > 1:
        t = heap[0]
        heap[0] = heap[size - 1]
        heap[size - 1] = t
        size -= 1
        _sift_down(heap, 0, size)


@njit(cache=True, nogil=True)
def topk_sum(h, k, m):
    """Sum of the ``k`` largest of the first ``m`` entries of ``h`` (all of them if ``k >= m``;
    0 if ``k <= 0``; NaN if one of them is NaN)."""
    if k <= 0 or m <= 0:
        return 0.0
    s = 0.0
    for i in range(m):
        if h[i] != h[i]:
            return np.nan  # a NaN term makes the sum NaN (never a bound)
    if k >= m:
        for i in range(m):
            s += h[i]
        return s
    heap = top_heap(h, k, m)
    for i in range(k):
        s += heap[i]
    return s
