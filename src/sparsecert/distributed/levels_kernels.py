"""Compiled kernels of :class:`~sparsecert.distributed.compress.TopKLevels`: the top-k set, the
scale and the packed signs and levels in one pass (encoder), the values written back at their
indices (decoder). They compute exactly what the reference numpy code of the class computes
(the same top-k set, the same rounding; tested)."""

from __future__ import annotations

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import pack_codes, unpack_codes
from sparsecert.distributed.subsets import _unrank64

__all__ = ["levels_encode", "levels_decode", "levels_decode_many"]


@njit(cache=True, nogil=True)
def _bfloat16(x):  # pragma: no cover - compiled
    """The bfloat16 code of ``x`` (float32 rounded to nearest, ties to even), or -1 when it
    rounds to infinity or is not finite."""
    f = np.empty(1, dtype=np.float32)
    f[0] = np.float32(x)
    u = np.int64(f.view(np.uint32)[0])
    code = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    if not np.isfinite(f[0]) or (code & 0x7F80) == 0x7F80:
        return np.int64(-1)
    return code


@njit(cache=True, nogil=True)
def _from_bfloat16(code):  # pragma: no cover - compiled
    u = np.empty(1, dtype=np.uint32)
    u[0] = np.uint32(code << 16)
    return np.float64(u.view(np.float32)[0])


@njit(cache=True, nogil=True)
def levels_encode(v, k, bits, idx, buf, out):  # pragma: no cover - compiled
    """Top-``k`` of ``|v|`` (ties to the lower index; ``idx`` gets the sorted set), the
    bfloat16 scale of the largest kept magnitude (returned; -1 if it overflows), per kept
    entry the code ``sign << bits | level`` packed MSB first into ``buf`` (zeroed first), and
    the decoded vector in ``out`` (zeroed first)."""
    d = v.size
    a = np.abs(v)
    order = np.argsort(-a, kind="mergesort")  # stable: equal magnitudes by index
    for j in range(k):
        idx[j] = order[j]
    idx.sort()
    m = 0.0
    for j in range(k):
        m = max(m, a[idx[j]])
    code = _bfloat16(m)
    if code < 0:
        return code
    s = _from_bfloat16(code)
    L = (1 << bits) - 1
    f = L / s if s > 0 else 0.0
    codes = np.empty(k, dtype=np.uint8)
    for i in range(d):
        out[i] = 0.0
    for j in range(k):
        x = v[idx[j]]
        lev = min(L, np.int64(np.rint(a[idx[j]] * f))) if s > 0 else 0
        neg = 1 if x < 0 else 0
        codes[j] = np.uint8((neg << bits) | lev)
        val = lev * (s / L)
        out[idx[j]] = -val if neg else val
    for i in range(buf.size):
        buf[i] = 0
    pack_codes(codes, 1 + bits, buf, 0)
    return code


@njit(cache=True, nogil=True)
def _put_levels(codes, bits, s, idx, out, add):  # pragma: no cover - compiled
    """The value ``+-level * s / L`` of each code ``sign << bits | level`` written (``add``:
    added) at ``idx`` of ``out``."""
    L = (1 << bits) - 1
    mask = np.int64(L)
    for j in range(codes.size):
        c = np.int64(codes[j])
        val = (c & mask) * (s / L)
        if c >> bits:
            val = -val
        if add:
            out[idx[j]] += val
        else:
            out[idx[j]] = val


@njit(cache=True, nogil=True)
def levels_decode(buf, k, bits, scale_code, idx, out):  # pragma: no cover - compiled
    """Read ``k`` codes from ``buf`` and write their values at ``idx`` of ``out``."""
    codes = np.empty(k, dtype=np.uint8)
    unpack_codes(buf, 0, 1 + bits, codes)
    _put_levels(codes, bits, _from_bfloat16(scale_code), idx, out, False)


@njit(cache=True, nogil=True)
def levels_decode_many(data, n, size, k, bits, ncode, nbits_idx, table, out,
                       add):  # pragma: no cover - compiled
    """Decode ``n`` messages of ``size`` bytes each, laid end to end in ``data`` (scale code,
    packed signs and levels, enumerative index rank with ``table[j, c] = C(c, j)``), in
    order: ``add`` adds every kept value into ``out`` (message after message, the sums of
    decoding each one and adding it; 0-valued coordinates add nothing), otherwise writes
    them (``n = 1``: ``out`` zeroed first by the caller). Returns -1 - m for the first
    message ``m`` whose rank is out of range (nothing of it or later ones written), else 0.
    """
    d = out.size
    nb_idx = (nbits_idx + 7) // 8
    shift = 8 * nb_idx - nbits_idx
    codes = np.empty(k, dtype=np.uint8)
    idx = np.empty(k, dtype=np.int64)
    for m in range(n):
        base = m * size
        scale_code = np.int64(data[base]) | (np.int64(data[base + 1]) << 8)
        r = np.uint64(0)
        for b in range(nb_idx):
            r = (r << np.uint64(8)) | np.uint64(data[base + 2 + ncode + b])
        rank = np.int64(r >> np.uint64(shift))
        if rank >= table[k, d]:
            return -1 - m
        _unrank64(rank, k, d, table, idx)
        unpack_codes(data[base + 2:base + 2 + ncode], 0, 1 + bits, codes)
        _put_levels(codes, bits, _from_bfloat16(scale_code), idx, out, add)
    return 0

