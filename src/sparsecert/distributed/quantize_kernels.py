"""Numba kernels of the quantizers' encoder (:mod:`~sparsecert.distributed.quantize`).

* :func:`layer_norms`: per-layer l2 norms rounded *up* to float32 (so that ``|v_i| <= r_l``).
* :func:`round_one` / :func:`fill_codes` / :func:`quantize_kernel`: unbiased random rounding
  to the levels, with the uniforms generated in the kernel (53 bits of the ``i``-th SplitMix64
  output of a per-message seed drawn from the sender's generator).
* :func:`encode_fixed_kernel`: one fixed-code message (header included) in one call; the codes
  are packed by the bit packer's fast fixed-width path
  (:func:`~sparsecert.distributed.bitstream.pack_codes`).

The decoder's kernels are in :mod:`~sparsecert.distributed.dequantize_kernels`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import pack_codes, put_bits

__all__ = [
    "NO_LEVELS",
    "PAD",
    "uniform",
    "layer_norms",
    "round_one",
    "fill_codes",
    "quantize_kernel",
    "encode_fixed_kernel",
    "f32_bits",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_M53 = 2.0 ** -53
_BLOCK = 512  # coordinates per block of fill_codes (its buffers stay in L1)


@njit(cache=True, nogil=True)
def uniform(seed, i):  # pragma: no cover - compiled
    """53-bit uniform in [0, 1) from the i-th SplitMix64 output of ``seed``."""
    z = seed + np.uint64(i + 1) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TWO_M53


@njit(cache=True, nogil=True)
def sum_squares(v, start, stop):  # pragma: no cover - compiled
    """``sum(v[start:stop] ** 2)`` in float64 in a fixed order: eight running sums (coordinate
    ``start + 8 g + j`` goes to sum ``j``), added pairwise, then the remaining coordinates in
    turn. Eight independent sums instead of one chain of dependent additions: about 3x
    faster, and the same value on every run and every machine."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    n8 = (stop - start) // 8
    w = v[start:start + 8 * n8]
    for g in range(n8):
        r = w[8 * g:8 * g + 8]
        a0 += r[0] * r[0]
        a1 += r[1] * r[1]
        a2 += r[2] * r[2]
        a3 += r[3] * r[3]
        a4 += r[4] * r[4]
        a5 += r[5] * r[5]
        a6 += r[6] * r[6]
        a7 += r[7] * r[7]
    ss = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
    for i in range(start + 8 * n8, stop):
        ss += v[i] * v[i]
    return ss


@njit(cache=True, nogil=True)
def layer_norms(v, offsets):  # pragma: no cover - compiled
    """Layer norms (:func:`sum_squares`, square root) rounded *up* to float32 (returned as
    float64)."""
    out = np.empty(offsets.size - 1)
    for layer in range(offsets.size - 1):
        r = math.sqrt(sum_squares(v, offsets[layer], offsets[layer + 1]))
        r32 = np.float32(r)
        if np.float64(r32) < r:
            r32 = np.nextafter(r32, np.float32(np.inf))
        out[layer] = np.float64(r32)
    return out


NO_LEVELS = np.zeros(0, dtype=np.float32)
PAD = 8  # level tables are padded to 8 entries: a fixed-length (branch-free) cell search


@njit(cache=True, nogil=True)
def round_one(x, r, lvp, gap, seed, i, n_inner):  # pragma: no cover - compiled
    """Level index of ``|x| / r`` after unbiased random rounding. With
    ``u = min(|x| * (1 / r), 1)`` (``1 / r`` rounded to float64, once per layer in
    :func:`fill_codes`: a multiplication per coordinate instead of a division) in the cell
    ``[lv[lo], lv[lo + 1])``, the index is ``lo + 1`` when ``lv[lo] + U * (lv[lo + 1] -
    lv[lo]) < u`` for ``U`` the ``i``-th uniform of ``seed`` (probability ``(u - lv[lo]) /
    (lv[lo + 1] - lv[lo])`` up to rounding), else ``lo``. ``lvp`` holds the ``n_inner + 2``
    levels (padded with ``+inf``), ``gap`` the differences of consecutive levels (0 from the
    last level on); ``lo`` by binary search (:func:`_round_block` counts the thresholds
    ``lv[j] + U gap[j]`` below ``u`` instead: the same index)."""
    if r <= 0.0:
        return 0
    u = abs(x) * (1.0 / r)
    if u > 1.0:
        u = 1.0
    lo, hi = 0, n_inner + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if lvp[mid] <= u:
            lo = mid
        else:
            hi = mid
    return lo + np.int64(lvp[lo] + uniform(seed, i) * gap[lo] < u)


@njit(cache=True, nogil=True)
def _draw_uniforms(seed, start, unif):  # pragma: no cover - compiled
    """``unif[j]`` = the ``(start + j)``-th uniform of ``seed`` (as :func:`uniform`)."""
    z0 = seed + np.uint64(start) * _GOLDEN
    for j in range(unif.size):
        z = z0 + np.uint64(j + 1) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
        unif[j] = np.float64(np.int64(z >> np.uint64(11))) * _TWO_M53


@njit(cache=True, nogil=True)
def _round_block(v, r, lvp, gap, unif, width, codes, n_inner):  # pragma: no cover - compiled
    """Codes of ``v`` (one layer, at most 6 inner levels, ``r > 0``) given its uniforms: the
    index is the number of thresholds ``t_j = lv[j] + U gap[j]`` (``j = 0 .. s``) below ``u``:
    the index of :func:`round_one` (a threshold below ``lv[lo]`` lies below ``u``, the one of
    ``u``'s cell decides the rounding, the others lie above ``u``). The thresholds increase
    (``t_j <= lv[j + 1] <= t_{j+1}`` in floating point too when each level plus its gap is
    the next level, which :func:`fill_codes` checks with :func:`_exact_gaps`), so the count
    is found by a branch-free binary search: 3 thresholds computed and compared instead of 7
    (2 instead of 3 with at most 2 inner levels; those past the last level are ``1`` with
    ``gap = 0``, or ``+inf``). The levels are held in scalars and the loop vectorises."""
    b0, b1, b2, b3 = lvp[0], lvp[1], lvp[2], lvp[3]
    b4, b5, b6 = lvp[4], lvp[5], lvp[6]
    d0, d1, d2, d3 = gap[0], gap[1], gap[2], gap[3]
    d4, d5, d6 = gap[4], gap[5], gap[6]
    ir = 1.0 / r
    if n_inner <= 2:
        for j in range(v.size):
            x = v[j]
            u = min(abs(x) * ir, 1.0)
            w = unif[j]
            c1 = b1 + w * d1 < u
            bk = b2 if c1 else b0
            dk = d2 if c1 else d0
            c0 = bk + w * dk < u
            idx = (np.int64(c1) << 1) | np.int64(c0)
            codes[j] = np.uint8((np.int64(x < 0.0) << width) | idx)
    else:
        for j in range(v.size):
            x = v[j]
            u = min(abs(x) * ir, 1.0)
            w = unif[j]
            c2 = b3 + w * d3 < u  # count >= 4
            bb = b5 if c2 else b1
            db = d5 if c2 else d1
            c1 = bb + w * db < u  # then t_5 (count >= 6) or t_1 (count >= 2)
            bh = b6 if c1 else b4
            dh = d6 if c1 else d4
            bl = b2 if c1 else b0
            dl = d2 if c1 else d0
            bk = bh if c2 else bl
            dk = dh if c2 else dl
            c0 = bk + w * dk < u  # then t_6, t_4, t_2 or t_0
            idx = (np.int64(c2) << 2) | (np.int64(c1) << 1) | np.int64(c0)
            codes[j] = np.uint8((np.int64(x < 0.0) << width) | idx)


@njit(cache=True, nogil=True)
def _exact_gaps(lvp, gap, n_inner):  # pragma: no cover - compiled
    """Whether ``lvp[j] + gap[j] == lvp[j + 1]`` in float64 for every cell: then
    ``t_j <= lv[j + 1] <= t_{j+1}`` for the thresholds of :func:`_round_block` (rounding is
    monotone), so they increase."""
    for j in range(n_inner + 1):
        if lvp[j] + gap[j] != lvp[j + 1]:
            return False
    return True


@njit(cache=True, nogil=True)
def fill_codes(v, norms, offsets, ltype, ptab, pgap, seed, n_inner, width, codes):  # noqa: E501
    """``codes[i] = sign << width | index`` of every coordinate (``index`` after unbiased random
    rounding, as :func:`round_one`). With at most 6 inner levels the uniforms of a block are
    drawn in one loop and the rounding done in another (both vectorise; fused, they do not);
    a table where a level plus its gap is not the next level in float64 (not seen with
    float32 levels; a safety net) goes through :func:`round_one`."""
    unif = np.empty(_BLOCK)
    for layer in range(offsets.size - 1):
        r = norms[layer]
        start, stop = offsets[layer], offsets[layer + 1]
        t = ltype[layer]
        if r <= 0.0:
            for i in range(start, stop):
                codes[i] = np.uint8(np.int64(v[i] < 0.0) << width)
        elif n_inner <= PAD - 2 and _exact_gaps(ptab[t], pgap[t], n_inner):
            for b0 in range(start, stop, _BLOCK):
                b1 = min(b0 + _BLOCK, stop)
                _draw_uniforms(seed, b0, unif[:b1 - b0])
                _round_block(v[b0:b1], r, ptab[t], pgap[t], unif, width, codes[b0:b1],
                             n_inner)
        else:
            lvp, gp = ptab[t], pgap[t]
            for i in range(start, stop):
                x = v[i]
                idx = round_one(x, r, lvp, gp, seed, i, n_inner)
                codes[i] = np.uint8((np.int64(x < 0.0) << width) | idx)


@njit(cache=True, nogil=True)
def quantize_kernel(v, norms, offsets, ltype, ptab, pgap, seed, n_inner):  # pragma: no cover
    width = 1
    while (1 << width) < n_inner + 2:
        width += 1
    codes = np.empty(v.size, dtype=np.uint8)
    fill_codes(v, norms, offsets, ltype, ptab, pgap, seed, n_inner, width, codes)
    return (codes & np.uint8((1 << width) - 1)).astype(np.int64)


@njit(cache=True, nogil=True)
def f32_bits(x):  # pragma: no cover - compiled
    """IEEE float32 bit pattern of ``x`` (already float32-representable) as uint64."""
    a = np.empty(1, dtype=np.float32)
    a[0] = x
    return np.uint64(a.view(np.uint32)[0])


@njit(cache=True, nogil=True)
def encode_fixed_kernel(v, offsets, ltype, ptab, pgap, seed, width, flag, levels32, out,
                         n_inner):
    """One fixed-code message: the layer norms (float32, rounded up), the header (``flag`` <
    0: none; else the flag bit, then ``levels32`` if it is 1; then the norms) and the
    (sign, index) code of every coordinate (:func:`fill_codes`, then :func:`pack_codes`).
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
    codes = np.empty(v.size, dtype=np.uint8)
    fill_codes(v, norms, offsets, ltype, ptab, pgap, seed, n_inner, width, codes)
    end = pack_codes(codes, nb, buf, pos)
    if out.size > 0:
        imask = (1 << width) - 1
        for layer in range(offsets.size - 1):
            r = norms[layer]
            lvp = ptab[ltype[layer]]
            for i in range(offsets[layer], offsets[layer + 1]):
                c = np.int64(codes[i])
                val = r * lvp[c & imask]
                out[i] = -val if c >> width else val
    return buf, end
