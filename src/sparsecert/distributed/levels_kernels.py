"""Compiled kernels of :class:`~sparsecert.distributed.compress.TopKLevels`: the top-k set, the
scale and the packed signs and levels in one pass (encoder), the values written back at their
indices (decoder). They compute exactly what the reference numpy code of the class computes
(the same top-k set, the same rounding; tested)."""

from __future__ import annotations

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import pack_codes, unpack_codes

__all__ = ["levels_encode", "levels_decode"]


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
def levels_decode(buf, k, bits, scale_code, idx, out, add, factor):  # pragma: no cover
    """Read ``k`` codes from ``buf`` and write (``add``: add ``factor`` times) their values
    at ``idx`` of ``out``."""
    s = _from_bfloat16(scale_code)
    L = (1 << bits) - 1
    codes = np.empty(k, dtype=np.uint8)
    unpack_codes(buf, 0, 1 + bits, codes)
    mask = np.int64(L)
    for j in range(k):
        c = np.int64(codes[j])
        val = (c & mask) * (s / L)
        if c >> bits:
            val = -val
        if add:
            out[idx[j]] += factor * val
        else:
            out[idx[j]] = val
