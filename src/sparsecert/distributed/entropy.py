"""The entropy codes of the distributed wing: Elias gamma and canonical Huffman.

Code construction only (lengths, canonical codewords, decoding tables); the streams are
written and read by :mod:`~sparsecert.distributed.bitstream`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["gamma_lengths", "huffman_lengths", "canonical_codes", "canonical_tables"]


@njit(cache=True, nogil=True)
def _huffman_lengths_kernel(freq):  # pragma: no cover - compiled
    """Huffman code lengths by repeated merging of the two lightest subtrees (ties: the
    subtree holding the smallest symbol first); absent symbols get 0."""
    n = freq.size
    lengths = np.zeros(n, dtype=np.int64)
    weight = np.empty(n, dtype=np.int64)
    key = np.empty(n, dtype=np.int64)  # smallest symbol in the subtree
    group = np.arange(n)  # subtree id of each symbol
    alive = np.zeros(n, dtype=np.bool_)
    m = 0
    for i in range(n):
        weight[i] = freq[i]
        key[i] = i
        if freq[i] > 0:
            alive[i] = True
            m += 1
    if m == 1:
        for i in range(n):
            if alive[i]:
                lengths[i] = 1
        return lengths
    while m > 1:
        a = -1
        b = -1
        for i in range(n):
            if not alive[i]:
                continue
            if a < 0 or (weight[i], key[i]) < (weight[a], key[a]):
                b = a
                a = i
            elif b < 0 or (weight[i], key[i]) < (weight[b], key[b]):
                b = i
        for j in range(n):  # every symbol of both subtrees goes one level deeper
            if freq[j] > 0 and (group[j] == a or group[j] == b):
                lengths[j] += 1
                group[j] = a
        weight[a] += weight[b]
        key[a] = min(key[a], key[b])
        alive[b] = False
        m -= 1
    return lengths

def gamma_lengths(n: np.ndarray) -> np.ndarray:
    """Elias-gamma code length ``2 floor(log2 n) + 1`` of positive integers."""
    n = np.asarray(n, dtype=np.int64)
    if np.any(n < 1):
        raise ValueError("Elias-gamma codes positive integers only")
    bl = np.zeros(n.shape, dtype=np.int64)
    m = n.copy()
    while np.any(m > 0):  # bit length, exactly (no floating-point log2)
        bl += m > 0
        m >>= 1
    return 2 * (bl - 1) + 1


def huffman_lengths(freq: np.ndarray) -> np.ndarray:
    """Huffman code lengths for symbol frequencies (0 for absent symbols; 1 if only one
    symbol occurs)."""
    freq = np.ascontiguousarray(freq, dtype=np.int64)
    if freq.ndim != 1 or np.any(freq < 0):
        raise ValueError("frequencies must be a 1-D array of non-negative integers")
    return _huffman_lengths_kernel(freq)


def canonical_codes(lengths: np.ndarray) -> np.ndarray:
    """Canonical Huffman codewords (uint64) for the given code lengths (0 = absent)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    codes = np.zeros(lengths.size, dtype=np.uint64)
    order = sorted((int(lengths[i]), i) for i in range(lengths.size) if lengths[i] > 0)
    code, prev = 0, 0
    for ln, sym in order:
        code <<= ln - prev
        codes[sym] = code
        code += 1
        prev = ln
    return codes


def canonical_tables(lengths: np.ndarray):
    """Decoding tables of a canonical code: first code, count and symbol offset per length."""
    maxlen = int(lengths.max()) if lengths.size else 0
    first = np.zeros(maxlen + 1, dtype=np.int64)
    cnt = np.zeros(maxlen + 1, dtype=np.int64)
    offs = np.zeros(maxlen + 1, dtype=np.int64)
    order = sorted((int(lengths[i]), i) for i in range(lengths.size) if lengths[i] > 0)
    syms = np.array([s for _, s in order], dtype=np.int64)
    per_len = np.bincount([ln for ln, _ in order], minlength=maxlen + 1)
    code, idx = 0, 0
    for ln in range(1, maxlen + 1):
        code <<= 1
        first[ln] = code
        offs[ln] = idx
        cnt[ln] = per_len[ln]
        code += per_len[ln]
        idx += per_len[ln]
    return first, cnt, offs, syms
