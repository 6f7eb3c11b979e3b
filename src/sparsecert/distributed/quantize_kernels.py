"""Numba kernels of the quantizers (:mod:`~sparsecert.distributed.quantize`).

* :func:`layer_norms`: per-layer l2 norms rounded *up* to float32 (so that ``|v_i| <= r_l``).
* :func:`round_one` / :func:`quantize_kernel`: unbiased random rounding to the levels, with the
  uniforms generated in the kernel (53 bits of the ``i``-th SplitMix64 output of a per-message
  seed drawn from the sender's generator).
* :func:`encode_fixed_kernel` / :func:`decode_fixed_kernel`: one fixed-code message each way in
  one call (header included); the decoder validates the header before it touches the sum.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import get_bits, put_bits

__all__ = [
    "NO_LEVELS",
    "PAD",
    "layer_norms",
    "round_one",
    "quantize_kernel",
    "encode_fixed_kernel",
    "decode_fixed_kernel",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_M53 = 2.0 ** -53


@njit(cache=True, nogil=True)
def uniform(seed, i):  # pragma: no cover - compiled
    """53-bit uniform in [0, 1) from the i-th SplitMix64 output of ``seed``."""
    z = seed + np.uint64(i + 1) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TWO_M53


@njit(cache=True, nogil=True)
def layer_norms(v, offsets):  # pragma: no cover - compiled
    """Layer norms rounded *up* to float32 (returned as float64)."""
    out = np.empty(offsets.size - 1)
    for layer in range(offsets.size - 1):
        ss = 0.0
        for i in range(offsets[layer], offsets[layer + 1]):
            ss += v[i] * v[i]
        r = math.sqrt(ss)
        r32 = np.float32(r)
        if np.float64(r32) < r:
            r32 = np.nextafter(r32, np.float32(np.inf))
        out[layer] = np.float64(r32)
    return out


NO_LEVELS = np.zeros(0, dtype=np.float32)
PAD = 8  # level tables are padded to 8 entries: a fixed-length (branch-free) cell search


@njit(cache=True, nogil=True)
def round_one(x, r, lvp, igp, seed, i, n_inner):  # pragma: no cover - compiled
    """Level index of ``|x| / r`` after unbiased random rounding: ``u = min(|x| / r, 1)`` lies
    in ``[lv[lo], lv[lo + 1]]`` and is rounded up when the ``i``-th uniform of ``seed`` is
    below ``(u - lv[lo]) / (lv[lo + 1] - lv[lo])``. ``lvp`` holds the ``n_inner + 2`` levels
    (padded with ``+inf``), ``igp`` the inverse gaps (0 past the last level). With at most
    6 inner levels ``lo`` counts the levels ``<= u`` in a loop of fixed length (no
    data-dependent branch; ``u = 1`` gives ``lo = s + 1`` and a zero probability), else a
    binary search."""
    if r <= 0.0:
        return 0
    u = abs(x) / r
    if u > 1.0:
        u = 1.0
    if n_inner <= PAD - 2:
        lo = 0
        for j in range(1, n_inner + 2):
            lo += lvp[j] <= u
    else:
        lo, hi = 0, n_inner + 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if lvp[mid] <= u:
                lo = mid
            else:
                hi = mid
    return lo + np.int64(uniform(seed, i) < (u - lvp[lo]) * igp[lo])


@njit(cache=True, nogil=True)
def quantize_kernel(v, norms, offsets, ltype, ptab, pig, seed, n_inner):  # pragma: no cover
    index = np.empty(v.size, dtype=np.int64)
    for layer in range(offsets.size - 1):
        r = norms[layer]
        lvp = ptab[ltype[layer]]
        igp = pig[ltype[layer]]
        for i in range(offsets[layer], offsets[layer + 1]):
            index[i] = round_one(v[i], r, lvp, igp, seed, i, n_inner)
    return index


@njit(cache=True, nogil=True)
def f32_bits(x):  # pragma: no cover - compiled
    """IEEE float32 bit pattern of ``x`` (already float32-representable) as uint64."""
    a = np.empty(1, dtype=np.float32)
    a[0] = x
    return np.uint64(a.view(np.uint32)[0])


@njit(cache=True, nogil=True)
def encode_fixed_kernel(v, offsets, ltype, ptab, pig, seed, width, flag, levels32, out,
                         n_inner):
    """One fixed-code message: the layer norms (float32, rounded up), the header (``flag`` <
    0: none; else the flag bit, then ``levels32`` if it is 1; then the norms) and the
    (sign, index) of every coordinate through a 64-bit accumulator flushed byte by byte.
    ``out`` (if not empty) receives the decoded vector. Returns ``(buf, n_bits)``;
    ``n_bits = -1`` if a layer norm is not finite (NaN / inf entries or an overflow)."""
    norms = layer_norms(v, offsets)
    for layer in range(norms.size):
        if not np.isfinite(norms[layer]):
            return np.zeros(0, dtype=np.uint8), -1
    n_hdr = (0 if flag < 0 else 1 + (32 * levels32.size if flag == 1 else 0)) + 32 * norms.size
    nb = width + 1
    total = n_hdr + nb * v.size
    buf = np.zeros((total + 7) // 8, dtype=np.uint8)
    pos = 0
    if flag >= 0:
        pos = put_bits(buf, pos, np.uint64(flag), 1)
        if flag == 1:
            for j in range(levels32.size):
                pos = put_bits(buf, pos, f32_bits(levels32[j]), 32)
    for layer in range(norms.size):
        pos = put_bits(buf, pos, f32_bits(norms[layer]), 32)
    bytepos = pos >> 3
    nacc = pos & 7
    acc = np.uint64(buf[bytepos]) >> np.uint64(8 - nacc) if nacc else np.uint64(0)
    want = out.size > 0
    for layer in range(offsets.size - 1):
        r = norms[layer]
        lvp = ptab[ltype[layer]]
        igp = pig[ltype[layer]]
        for i in range(offsets[layer], offsets[layer + 1]):
            x = v[i]
            idx = round_one(x, r, lvp, igp, seed, i, n_inner)
            acc = (acc << np.uint64(nb)) | np.uint64(idx) | (
                np.uint64(x < 0.0) << np.uint64(width))
            nacc += nb
            if nacc >= 8:
                nacc -= 8
                buf[bytepos] = np.uint8((acc >> np.uint64(nacc)) & np.uint64(255))
                bytepos += 1
            if want:
                val = r * lvp[idx]
                out[i] = -val if x < 0.0 else val
    if nacc > 0:
        buf[bytepos] = np.uint8((acc << np.uint64(8 - nacc)) & np.uint64(255))
    return buf, bytepos * 8 + nacc


@njit(cache=True, nogil=True)
def f32_from_bits(bits):  # pragma: no cover - compiled
    a = np.empty(1, dtype=np.uint32)
    a[0] = np.uint32(bits)
    return np.float64(a.view(np.float32)[0])


@njit(cache=True, nogil=True)
def decode_fixed_kernel(buf, end, has_flag, n_inner, table, offsets, ltype, width, out,
                         hist):  # pragma: no cover - compiled
    """Read one fixed-code message and add its vector to ``out``.

    Header: the flag bit (if ``has_flag``), new inner levels (``n_inner`` per type, float32)
    if the flag is set, the layer norms (float32). Body: (sign, index) codes read through a
    64-bit window refilled byte by byte and decoded through a per-layer table of signed
    ``r * level`` values; when a code has at most 4 bits, two codes at a time through a table
    of value pairs. ``table`` (types x levels) holds the current levels and is overwritten by
    new ones. If ``hist`` is not empty, the indices are counted per layer.

    Returns ``(status, got_levels, norms)``; status 0, or -1 truncated stream / trailing bits,
    -2 invalid levels, -3 invalid norms, -4 an index out of range. ``out`` and ``table`` are
    untouched unless the whole header is valid.
    """
    n_types, n_sym = table.shape
    n_layers = offsets.size - 1
    nb = width + 1
    norms = np.zeros(n_layers)
    pos = 0
    got = 0
    if has_flag:
        if end < 1:
            return -1, 0, norms
        got = np.int64(get_bits(buf, 0, 1))
        pos = 1
    n_hdr = pos + (32 * n_inner * n_types if got else 0) + 32 * n_layers
    if n_hdr + nb * out.size != end:
        return -1, got, norms
    new = np.empty((n_types, n_sym))
    if got:
        for t in range(n_types):
            new[t, 0] = 0.0
            new[t, n_sym - 1] = 1.0
            for j in range(1, n_sym - 1):
                new[t, j] = f32_from_bits(get_bits(buf, pos, 32))
                pos += 32
                if not (new[t, j] > new[t, j - 1]):  # also rejects NaN
                    return -2, got, norms
            if not (new[t, n_sym - 2] < 1.0):
                return -2, got, norms
    for layer in range(n_layers):
        norms[layer] = f32_from_bits(get_bits(buf, pos, 32))
        pos += 32
        if not (norms[layer] >= 0.0 and norms[layer] < np.inf):
            return -3, got, norms
    if got:
        table[:, :] = new
    if out.size == 0:
        return 0, got, norms
    bytepos = pos >> 3
    nacc = 8 - (pos & 7)
    acc = np.uint64(buf[bytepos])
    bytepos += 1
    n_codes = 1 << nb  # (sign, index) codes
    imask = (1 << width) - 1
    count = hist.size > 0
    # codes two at a time through a table of (value, value) pairs when it is small (nb <= 4)
    pairs = nb <= 4
    n_pair = n_codes * n_codes if pairs else 1
    single = np.zeros(n_codes)  # decoded value of each code in the current layer
    lut = np.zeros(2 * n_pair)
    pc = np.zeros(n_pair, dtype=np.int64)  # counts of pair codes
    sc = np.zeros(n_codes, dtype=np.int64)  # counts of single codes
    m1 = (np.uint64(1) << np.uint64(nb)) - np.uint64(1)
    m2 = (np.uint64(1) << np.uint64(2 * nb)) - np.uint64(1) if pairs else m1
    n_bad = 0
    for layer in range(n_layers):
        r = norms[layer]
        for c in range(n_codes):
            idx = c & imask
            val = r * table[ltype[layer], idx] if idx < n_sym else 0.0
            single[c] = -val if (c >> width) else val
        i = offsets[layer]
        stop = offsets[layer + 1]
        pc[:] = 0
        sc[:] = 0
        if pairs:
            for c1 in range(n_codes):
                for c2 in range(n_codes):
                    lut[2 * (c1 * n_codes + c2)] = single[c1]
                    lut[2 * (c1 * n_codes + c2) + 1] = single[c2]
            while i + 1 < stop:
                while nacc < 2 * nb:
                    acc = (acc << np.uint64(8)) | np.uint64(buf[bytepos])
                    bytepos += 1
                    nacc += 8
                nacc -= 2 * nb
                c = np.int64((acc >> np.uint64(nacc)) & m2)
                out[i] += lut[2 * c]
                out[i + 1] += lut[2 * c + 1]
                pc[c] += 1
                i += 2
        while i < stop:
            while nacc < nb:
                acc = (acc << np.uint64(8)) | np.uint64(buf[bytepos])
                bytepos += 1
                nacc += 8
            nacc -= nb
            c = np.int64((acc >> np.uint64(nacc)) & m1)
            out[i] += single[c]
            sc[c] += 1
            i += 1
        if pairs:
            for c in range(n_pair):
                if pc[c]:
                    sc[c // n_codes] += pc[c]
                    sc[c % n_codes] += pc[c]
        for c in range(n_codes):
            idx = c & imask
            if idx >= n_sym:
                n_bad += sc[c]
            elif count:
                hist[layer, idx] += sc[c]
    return (-4 if n_bad > 0 else 0), got, norms
