"""Codes for the index set of a sparse message: which ``k`` of ``d`` coordinates it carries.

* ``"fixed"``: each index in ``ceil(log2 d)`` bits (``k ceil(log2 d)`` bits);
* ``"enumerative"``: the set's rank among all ``k``-subsets (the combinatorial number system,
  colex order), ``ceil(log2 C(d, k))`` bits: the shortest fixed-length code of a ``k``-subset,
  what an entropy coder reaches for a support drawn uniformly. For ``k = 40`` of ``d = 200``:
  141 bits against 320.

Both write MSB first and start on a byte boundary of their part of the payload; the bit count
is the code's length (the padding of the last byte is not counted).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import pack_uints, unpack_uints

__all__ = ["INDEX_CODES", "SubsetCode"]

INDEX_CODES = ("fixed", "enumerative")


@lru_cache(maxsize=64)
def _binomials(d: int, k: int) -> tuple[tuple[int, ...], ...]:
    """``table[j][n] = C(n, j)`` for ``j <= k``, ``n <= d`` (Python integers)."""
    return tuple(tuple(math.comb(n, j) for n in range(d + 1)) for j in range(k + 1))


_SMALL = 1 << 62  # ranks below this go through the compiled int64 path


@njit(cache=True, nogil=True)
def _rank64(idx, table):  # pragma: no cover - compiled
    """``sum_j C(idx[j], j + 1)`` with ``table[j, n] = C(n, j)`` (int64, no overflow below
    ``2**62``)."""
    r = np.int64(0)
    for j in range(idx.size):
        r += table[j + 1, idx[j]]
    return r


@njit(cache=True, nogil=True)
def _unrank64(rank, k, d, table, out):  # pragma: no cover - compiled
    """The increasing indices of ``rank`` (the inverse of :func:`_rank64`)."""
    hi = d
    for j in range(k, 0, -1):  # the largest c < hi with C(c, j) <= rank
        lo, top = j - 1, hi - 1
        while lo < top:
            mid = (lo + top + 1) // 2
            if table[j, mid] <= rank:
                lo = mid
            else:
                top = mid - 1
        out[j - 1] = lo
        rank -= table[j, lo]
        hi = lo


class SubsetCode:
    """The code of ``k``-subsets of ``{0, ..., d - 1}`` (increasing index arrays).

    Parameters
    ----------
    d, k : int
        Dimension and subset size (``1 <= k <= d``).
    kind : {"fixed", "enumerative"}
    """

    def __init__(self, d: int, k: int, kind: str = "fixed") -> None:
        if kind not in INDEX_CODES:
            raise ValueError(f"index_code must be one of {INDEX_CODES}, got {kind!r}")
        self.d, self.k, self.kind = int(d), int(k), kind
        self.width = (self.d - 1).bit_length()
        self.bits = (self.k * self.width if kind == "fixed"
                     else (math.comb(self.d, self.k) - 1).bit_length())
        self._table = None  # int64 binomials when every rank fits (the compiled path)
        if kind == "enumerative":
            rows = _binomials(self.d, self.k)
            if max(max(r) for r in rows) < _SMALL:
                self._table = np.array(rows, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return -(-self.bits // 8)

    def encode(self, idx: np.ndarray) -> bytes:
        """The bytes of an increasing index array of length ``k``."""
        if self.kind == "fixed":
            return pack_uints(idx, self.width)
        if self._table is not None:
            rank = int(_rank64(np.asarray(idx, dtype=np.int64), self._table))
        else:
            rank = sum(math.comb(int(c), j + 1) for j, c in enumerate(idx))
        # MSB first, left-aligned in the last byte (as every part of a message)
        return (rank << (8 * self.nbytes - self.bits)).to_bytes(self.nbytes, "big")

    def decode(self, data: bytes) -> np.ndarray:
        """The increasing indices of ``data`` (``ValueError`` on a rank out of range)."""
        if self.kind == "fixed":
            idx = unpack_uints(data, self.k, self.width)
            if self.k and (idx[-1] >= self.d or (self.k > 1 and not (idx[1:] > idx[:-1]).all())):
                raise ValueError("corrupt sparse message: indices out of range or not increasing")
            return idx
        if len(data) < self.nbytes:
            raise ValueError("truncated sparse message")
        rank = int.from_bytes(data[:self.nbytes], "big") >> (8 * self.nbytes - self.bits)
        table = _binomials(self.d, self.k)
        if rank >= table[self.k][self.d]:
            raise ValueError("corrupt sparse message: subset rank out of range")
        out = np.empty(self.k, dtype=np.int64)
        if self._table is not None:
            _unrank64(np.int64(rank), self.k, self.d, self._table, out)
            return out
        hi = self.d
        for j in range(self.k, 0, -1):  # the largest c < hi with C(c, j) <= rank
            row = table[j]
            lo, top = j - 1, hi - 1
            while lo < top:
                mid = (lo + top + 1) // 2
                if row[mid] <= rank:
                    lo = mid
                else:
                    top = mid - 1
            out[j - 1] = lo
            rank -= row[lo]
            hi = lo
        return out
