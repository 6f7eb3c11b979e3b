"""The hand-written ordering kernels against numpy."""

import numpy as np

from sparsecert.solvers.perspective._order import argsort_desc, heap_sort_desc, top_heap, topk_sum


def _sorted_top(h, k, m):
    heap = top_heap(h, k, m)
    heap_sort_desc(heap)
    return heap


def test_against_numpy_with_ties():
    rng = np.random.default_rng(1)
    for trial in range(400):
        m = int(rng.integers(0, 120))
        h = rng.integers(0, 4, m).astype(float) if trial % 2 else rng.standard_normal(m)
        np.testing.assert_array_equal(argsort_desc(h), np.argsort(-h, kind="stable"))
        for k in (-1, 0, 1, 3, m - 1, m, m + 2):
            ref = float(np.sort(h)[::-1][:max(k, 0)].sum()) if k > 0 else 0.0
            assert abs(topk_sum(h, k, m) - ref) <= 1e-12 * (1.0 + np.abs(h).sum())
            if 1 <= k <= m:
                np.testing.assert_array_equal(_sorted_top(h, k, m), np.sort(h)[::-1][:k])
                assert top_heap(h, k, m).min() == np.sort(h)[::-1][k - 1]
        # only the first m entries count
        if m > 2:
            assert topk_sum(h, 1, m - 1) == h[: m - 1].max()


def test_nan_makes_the_sum_nan():
    h = np.arange(10.0)
    h[7] = np.nan
    for k in (1, 3, 10):
        assert np.isnan(topk_sum(h, k, 10))
