"""Numba kernels of the quantizers (:mod:`~sparsecert.distributed.quantize`).

* :func:`layer_norms`: per-layer l2 norms rounded *up* to float32 (so that ``|v_i| <= r_l``).
* :func:`round_one` / :func:`fill_codes` / :func:`quantize_kernel`: unbiased random rounding
  to the levels, with the uniforms generated in the kernel (53 bits of the ``i``-th SplitMix64
  output of a per-message seed drawn from the sender's generator).
* :func:`pack_codes` / :func:`unpack_codes`: fixed-width codes to and from a bitstream, eight
  codes (``nb`` whole bytes) per 64-bit word.
* :func:`encode_fixed_kernel` / :func:`decode_fixed_kernel`: one fixed-code message (header
  included) in one call, and all the messages of a round back into one sum in one call; the
  decoder validates every message before it touches the sum.
* :func:`add_values`: ``out += values`` in one pass (the decoder of dense float32 / float64
  messages, :class:`~sparsecert.distributed.compress.Identity`); :func:`to_float32`: its
  float32 encoder's cast and check in one pass.
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
    "fill_codes",
    "quantize_kernel",
    "pack_codes",
    "unpack_codes",
    "encode_fixed_kernel",
    "decode_fixed_kernel",
    "add_values",
    "to_float32",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_M53 = 2.0 ** -53
_BYTE = np.uint64(255)
_BLOCK = 512  # coordinates per block of fill_codes (its buffers stay in L1)
_DBLOCK = 2048  # coordinates per block of the decoder (a multiple of 8)
_BYTE_TABLES = 4096  # layers of at least this size are decoded through tables of whole bytes


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
def _unpack_triples(buf, pos, codes):  # pragma: no cover - compiled
    """:func:`unpack_codes` for 3-bit codes: eight codes from the three bytes of their group
    (plus the next one when ``pos`` is not on a byte boundary), with constant shifts."""
    n = codes.size
    ng = n // 8
    o = pos & 7
    x = buf[pos >> 3:]
    if o == 0:
        for g in range(ng):
            w = ((np.uint32(x[3 * g]) << np.uint32(16)) | (np.uint32(x[3 * g + 1]) << np.uint32(8))
                 | np.uint32(x[3 * g + 2]))
            c = codes[8 * g:8 * g + 8]
            for j in range(8):
                c[j] = np.uint8((w >> np.uint32(21 - 3 * j)) & np.uint32(7))
    else:
        so = np.uint32(8 - o)
        for g in range(ng):
            w = ((np.uint32(x[3 * g]) << np.uint32(24)) | (np.uint32(x[3 * g + 1]) << np.uint32(16))
                 | (np.uint32(x[3 * g + 2]) << np.uint32(8)) | np.uint32(x[3 * g + 3])) >> so
            c = codes[8 * g:8 * g + 8]
            for j in range(8):
                c[j] = np.uint8((w >> np.uint32(21 - 3 * j)) & np.uint32(7))
    p = pos + 24 * ng
    for i in range(8 * ng, n):
        codes[i] = np.uint8(get_bits(buf, p, 3))
        p += 3


@njit(cache=True, nogil=True)
def _pack_triples(codes, buf, pos):  # pragma: no cover - compiled
    """:func:`pack_codes` for 3-bit codes: each group of eight codes is one 24-bit word,
    written as three bytes (shifted by ``pos & 7``, the spill carried to the next group)."""
    n = codes.size
    ng = n // 8
    o = pos & 7
    x = buf[pos >> 3:]
    if o == 0:
        for g in range(ng):
            c = codes[8 * g:8 * g + 8]
            w = np.uint32(0)
            for j in range(8):
                w |= np.uint32(c[j]) << np.uint32(21 - 3 * j)
            x[3 * g] = np.uint8(w >> np.uint32(16))
            x[3 * g + 1] = np.uint8((w >> np.uint32(8)) & np.uint32(255))
            x[3 * g + 2] = np.uint8(w & np.uint32(255))
    elif ng > 0:
        so = np.uint64(8 - o)
        carry = np.uint64(x[0]) << np.uint64(24)  # the bits before pos in the first byte
        for g in range(ng):
            c = codes[8 * g:8 * g + 8]
            w = np.uint64(0)
            for j in range(8):
                w |= np.uint64(c[j]) << np.uint64(21 - 3 * j)
            ww = carry | (w << so)  # 32 bits from the group's first byte on
            x[3 * g] = np.uint8((ww >> np.uint64(24)) & _BYTE)
            x[3 * g + 1] = np.uint8((ww >> np.uint64(16)) & _BYTE)
            x[3 * g + 2] = np.uint8((ww >> np.uint64(8)) & _BYTE)
            carry = (ww & _BYTE) << np.uint64(24)
        x[3 * ng] = np.uint8(carry >> np.uint64(24))
    p = pos + 24 * ng
    for i in range(8 * ng, n):
        p = put_bits(buf, p, np.uint64(codes[i]), 3)
    return pos + 3 * n


@njit(cache=True, nogil=True)
def _pack_nibbles(codes, buf, pos):  # pragma: no cover - compiled
    """:func:`pack_codes` for 4-bit codes: byte ``j`` of the body holds the low ``8 - o``
    bits of code pair ``j - 1`` and the high ``o`` bits of pair ``j`` (``o = pos & 7``),
    computed from the codes alone (no read-modify-write: the loop vectorises)."""
    n = codes.size
    npair = n // 2
    b0 = pos >> 3
    o = pos & 7
    if npair > 0:
        c = codes[:2 * npair]
        if o == 0:
            dst = buf[b0:b0 + npair]
            for j in range(npair):
                dst[j] = (c[2 * j] << np.uint8(4)) | c[2 * j + 1]
        else:
            s1 = np.uint8(o)
            s2 = np.uint8(8 - o)
            buf[b0] |= np.uint8((c[0] << np.uint8(4)) | c[1]) >> s1
            dst = buf[b0 + 1:b0 + 1 + npair]
            cn = codes[2:2 * npair]
            for j in range(npair - 1):
                prev = np.uint8((c[2 * j] << np.uint8(4)) | c[2 * j + 1])
                cur = np.uint8((cn[2 * j] << np.uint8(4)) | cn[2 * j + 1])
                dst[j] = np.uint8(prev << s2) | (cur >> s1)
            last = np.uint8((c[2 * npair - 2] << np.uint8(4)) | c[2 * npair - 1])
            dst[npair - 1] = np.uint8(last << s2)
    end = pos + 4 * n
    if n > 2 * npair:
        put_bits(buf, end - 4, np.uint64(codes[n - 1]), 4)
    return end


@njit(cache=True, nogil=True)
def pack_codes(codes, nb, buf, pos):  # pragma: no cover - compiled
    """Write the ``nb``-bit ``codes`` at bit ``pos`` of ``buf`` (zero from ``pos`` on);
    returns the end position. Eight codes fill ``nb`` whole bytes, so every group of eight
    starts at the same offset within its byte: one 64-bit word per group (``nb <= 7``);
    4-bit codes two per byte (:func:`_pack_nibbles`), 3-bit codes eight per three bytes
    (:func:`_pack_triples`)."""
    n = codes.size
    if nb == 4:
        return _pack_nibbles(codes, buf, pos)
    if nb == 3:
        return _pack_triples(codes, buf, pos)
    bytepos = pos >> 3
    o = pos & 7
    acc = np.uint64(buf[bytepos]) >> np.uint64(8 - o) if o else np.uint64(0)
    omask = (np.uint64(1) << np.uint64(o)) - np.uint64(1)
    unb = np.uint64(nb)
    n_groups = n // 8 if nb <= 7 else 0
    for grp in range(n_groups):
        w = np.uint64(0)
        for j in range(8):
            w = (w << unb) | np.uint64(codes[8 * grp + j])
        acc = (acc << np.uint64(8 * nb)) | w
        for k in range(nb):
            buf[bytepos + k] = np.uint8((acc >> np.uint64(o + 8 * (nb - 1 - k))) & _BYTE)
        bytepos += nb
        acc &= omask
    nacc = o
    for i in range(8 * n_groups, n):
        acc = (acc << unb) | np.uint64(codes[i])
        nacc += nb
        if nacc >= 8:
            nacc -= 8
            buf[bytepos] = np.uint8((acc >> np.uint64(nacc)) & _BYTE)
            bytepos += 1
    if nacc > 0:
        buf[bytepos] = np.uint8((acc << np.uint64(8 - nacc)) & _BYTE)
    return bytepos * 8 + nacc


@njit(cache=True, nogil=True)
def _unpack_nibbles(buf, pos, codes):  # pragma: no cover - compiled
    """:func:`unpack_codes` for 4-bit codes: each byte of the body, realigned to the byte
    grid (``o = pos & 7`` bits from the next byte), holds two codes. The loops read
    contiguous slices (no index arithmetic on ``buf``), so they vectorise."""
    n = codes.size
    npair = n // 2
    b0 = pos >> 3
    o = pos & 7
    src = buf[b0:b0 + npair]
    if o == 0:
        for j in range(npair):
            rb = src[j]
            codes[2 * j] = rb >> np.uint8(4)
            codes[2 * j + 1] = rb & np.uint8(15)
    else:
        nxt = buf[b0 + 1:b0 + 1 + npair]
        s1 = np.uint8(o)
        s2 = np.uint8(8 - o)
        for j in range(npair):
            rb = np.uint8((src[j] << s1) | (nxt[j] >> s2))
            codes[2 * j] = rb >> np.uint8(4)
            codes[2 * j + 1] = rb & np.uint8(15)
    if n > 2 * npair:
        codes[n - 1] = np.uint8(get_bits(buf, pos + 4 * (n - 1), 4))


@njit(cache=True, nogil=True)
def unpack_codes(buf, pos, nb, codes):  # pragma: no cover - compiled
    """Read ``codes.size`` codes of ``nb`` bits from bit ``pos`` of ``buf`` (the inverse of
    :func:`pack_codes`: a group of eight codes is read from ``nb`` (+1) bytes at once; 4-bit
    codes two per realigned byte, 3-bit codes with constant shifts)."""
    n = codes.size
    if nb == 4:
        _unpack_nibbles(buf, pos, codes)
        return
    if nb == 3:
        _unpack_triples(buf, pos, codes)
        return
    bytepos = pos >> 3
    o = pos & 7
    unb = np.uint64(nb)
    m1 = (np.uint64(1) << unb) - np.uint64(1)
    n_groups = n // 8 if nb <= 7 else 0
    for grp in range(n_groups):
        val = np.uint64(0)
        for k in range(nb):
            val = (val << np.uint64(8)) | np.uint64(buf[bytepos + k])
        if o:
            val = ((val << np.uint64(8)) | np.uint64(buf[bytepos + nb])) >> np.uint64(8 - o)
        for j in range(8):
            codes[8 * grp + j] = np.uint8((val >> np.uint64(nb * (7 - j))) & m1)
        bytepos += nb
    p = pos + 8 * nb * n_groups
    for i in range(8 * n_groups, n):
        codes[i] = np.uint8(get_bits(buf, p, nb))
        p += nb


@njit(cache=True, nogil=True)
def add_values(out, values):  # pragma: no cover - compiled
    """``out[i] += values[i]`` (float32 values are widened exactly: the same sums as numpy's
    ``out += values``, without its buffered casting loop)."""
    for i in range(out.size):
        out[i] += values[i]


_F32_MAX = float(np.finfo(np.float32).max)


@njit(cache=True, nogil=True)
def to_float32(v, out):  # pragma: no cover - compiled
    """``out[i] = float32(v[i])`` (round to nearest) in one pass; returns the number of
    entries that are NaN, infinite or larger in magnitude than the largest float32 (the
    encoder of dense float32 messages, :class:`~sparsecert.distributed.compress.Identity`,
    refuses those)."""
    bad = 0
    for i in range(v.size):
        x = v[i]
        bad += np.int64(not abs(x) <= _F32_MAX)
        out[i] = np.float32(x)
    return bad


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


@njit(cache=True, nogil=True)
def f32_from_bits(bits):  # pragma: no cover - compiled
    a = np.empty(1, dtype=np.uint32)
    a[0] = np.uint32(bits)
    return np.float64(a.view(np.float32)[0])


@njit(cache=True, nogil=True)
def _read_header(buf, end, has_flag, n_inner, new, norms, dim, nb):  # pragma: no cover
    """Parse and check one message's header into ``new`` (its levels, if it carries them)
    and ``norms``; returns ``(status, got_levels, body_position)``."""
    n_types, n_sym = new.shape
    n_layers = norms.size
    pos = 0
    got = 0
    if has_flag:
        if end < 1:
            return -1, 0, 0
        got = np.int64(get_bits(buf, 0, 1))
        pos = 1
    n_hdr = pos + (32 * n_inner * n_types if got else 0) + 32 * n_layers
    if n_hdr + nb * dim != end or buf.size != (end + 7) // 8:
        return -1, got, 0
    if got:
        for t in range(n_types):
            new[t, 0] = 0.0
            new[t, n_sym - 1] = 1.0
            for j in range(1, n_sym - 1):
                new[t, j] = f32_from_bits(get_bits(buf, pos, 32))
                pos += 32
                if not (new[t, j] > new[t, j - 1]):  # also rejects NaN
                    return -2, got, 0
            if not (new[t, n_sym - 2] < 1.0):
                return -2, got, 0
    for layer in range(n_layers):
        norms[layer] = f32_from_bits(get_bits(buf, pos, 32))
        pos += 32
        if not (norms[layer] >= 0.0 and norms[layer] < np.inf):
            return -3, got, 0
    return 0, got, pos


@njit(cache=True, nogil=True)
def decode_fixed_kernel(bufs, meta, has_flag, n_inner, tables, offsets, ltype, width, out,
                         hists, zeroed):  # pragma: no cover - compiled
    """Read ``K`` fixed-code messages and add their vectors to ``out`` (if not empty).

    ``bufs`` holds the payloads one after the other, ``meta[k] = (bytes, bits)`` of message
    ``k``; ``tables[k]`` are its receiver's current levels (types x levels; overwritten by new
    ones). Header: the flag bit (if ``has_flag``), new inner levels (``n_inner`` per type,
    float32) if the flag is set, the layer norms (float32). Body: the (sign, index) codes,
    unpacked block by block and added through per-layer tables of signed ``r * level``
    values; each coordinate of ``out`` receives the messages in order (the same sums as adding
    the decoded vectors one after the other). If ``hists`` is not empty, the indices of
    message ``k`` are counted per layer in ``hists[k]``. ``zeroed``: the caller guarantees
    that ``out`` is +0.0 everywhere (not checked: the first two messages' table of sums is
    then used without a pass over ``out`` to check it).

    Returns ``(status, k, n_got, got_levels, norms)``; status 0, or for message ``k`` -1
    truncated stream / trailing bits (or an ``out`` of the wrong size, or payloads that do
    not add up to ``bufs``), -2 invalid levels, -3 invalid norms, -4 an index out of range;
    ``n_got`` messages carried new levels. ``tables`` and ``out`` are untouched unless every
    message is valid.
    """
    n_msg = meta.shape[0]
    starts = np.zeros(n_msg + 1, dtype=np.int64)
    for k in range(n_msg):
        starts[k + 1] = starts[k] + meta[k, 0]
    ends = meta[:, 1]
    n_types, n_sym = tables.shape[1], tables.shape[2]
    n_layers = offsets.size - 1
    dim = offsets[n_layers]
    nb = width + 1
    norms = np.zeros((n_msg, n_layers))
    got = np.zeros(n_msg, dtype=np.int64)
    body = np.zeros(n_msg, dtype=np.int64)
    new = np.empty((n_msg, n_types, n_sym))
    if (out.size != 0 and out.size != dim) or starts[n_msg] != bufs.size:
        return -1, 0, 0, got, norms
    for k in range(n_msg):
        buf = bufs[starts[k]:starts[k + 1]]
        status, got[k], body[k] = _read_header(buf, ends[k], has_flag, n_inner, new[k],
                                               norms[k], dim, nb)
        if status < 0:
            return status, k, 0, got, norms
    imask = (1 << width) - 1
    codes = np.empty((n_msg, _DBLOCK), dtype=np.uint8)  # one block of every message's codes
    if n_sym < (1 << width) or hists.size > 0:  # check the indices before adding anything
        for k in range(n_msg):
            buf = bufs[starts[k]:starts[k + 1]]
            ck = codes[k]
            layer = 0
            for b0 in range(0, dim, _DBLOCK):
                b1 = min(b0 + _DBLOCK, dim)
                unpack_codes(buf, body[k] + nb * b0, nb, ck[:b1 - b0])
                if n_sym < (1 << width):
                    top = np.uint8(0)
                    for i in range(b1 - b0):
                        top = max(top, ck[i] & np.uint8(imask))
                    if top >= n_sym:
                        return -4, k, 0, got, norms
                if hists.size > 0:
                    while offsets[layer + 1] <= b0:
                        layer += 1
                    li = layer
                    while li < n_layers and offsets[li] < b1:
                        for i in range(max(offsets[li], b0), min(offsets[li + 1], b1)):
                            hists[k, li, np.int64(ck[i - b0]) & imask] += 1
                        li += 1
    n_got = 0
    for k in range(n_msg):
        if got[k]:
            tables[k, :, :] = new[k]
            n_got += 1
    if out.size == 0:
        return 0, 0, n_got, got, norms
    n_codes = 1 << nb  # (sign, index) codes
    lut = np.zeros((n_layers, n_msg, n_codes))  # decoded value of each code
    for layer in range(n_layers):
        for k in range(n_msg):
            r = norms[k, layer]
            for c in range(n_codes):
                idx = c & imask
                val = r * tables[k, ltype[layer], idx] if idx < n_sym else 0.0
                lut[layer, k, c] = -val if (c >> width) else val
    zero = zeroed and n_msg >= 2 and nb <= 5  # out is +0.0: the first two messages at once
    if n_msg >= 2 and nb <= 5 and not zeroed:
        ov = out.view(np.uint64)
        bits = np.uint64(0)
        for i in range(dim):  # an OR of all the bit patterns (a loop that vectorises)
            bits |= ov[i]
        zero = bits == 0
    pair = np.empty((n_layers, n_codes * n_codes if zero else 0))
    for layer in range(n_layers):
        for c1 in range(n_codes if zero else 0):
            for c0 in range(n_codes):
                pair[layer, c0 | (c1 << nb)] = (0.0 + lut[layer, 0, c0]) + lut[layer, 1, c1]
    if nb == 4:  # 4-bit codes: two per byte, added through tables indexed by whole bytes
        _add_nibble_messages(bufs, starts, body, out, offsets, lut, pair, zero)
        return 0, 0, n_got, got, norms
    layer = 0
    for b0 in range(0, dim, _DBLOCK):  # block by block: the codes stay in L1
        b1 = min(b0 + _DBLOCK, dim)
        for k in range(n_msg):
            unpack_codes(bufs[starts[k]:starts[k + 1]], body[k] + nb * b0, nb,
                         codes[k, :b1 - b0])
        while offsets[layer + 1] <= b0:
            layer += 1
        li = layer
        while li < n_layers and offsets[li] < b1:
            lo, hi = max(offsets[li], b0), min(offsets[li + 1], b1)
            _add_codes(out[lo:hi], codes, lo - b0, lut[li], pair[li], nb)
            li += 1
    return 0, 0, n_got, got, norms


@njit(cache=True, nogil=True)
def _add_codes(out, codes, c0_, lut, pair, nb):  # pragma: no cover - compiled
    """``out[i] += lut[k, codes[k, c0_ + i]]`` for ``k = 0, 1, ...`` in this order (each
    coordinate receives the messages one after the other), four messages per pass. With a
    ``pair`` table (``out`` is +0.0: ``pair[c0 | c1 << nb] = (0.0 + lut[0, c0]) +
    lut[1, c1]``) the first two messages are one look-up: the same sums."""
    n_msg = codes.shape[0]
    n = out.size
    a, b = c0_, c0_ + n
    o = out
    k = 0
    if pair.size > 0:
        c0, c1 = codes[0][a:b], codes[1][a:b]
        if n_msg >= 4:
            l2, l3 = lut[2], lut[3]
            c2, c3 = codes[2][a:b], codes[3][a:b]
            for i in range(n):
                j = np.intp(c0[i]) | (np.intp(c1[i]) << nb)
                o[i] = (pair[j] + l2[c2[i]]) + l3[c3[i]]
            k = 4
        else:
            for i in range(n):
                o[i] = pair[np.intp(c0[i]) | (np.intp(c1[i]) << nb)]
            k = 2
    while k + 4 <= n_msg:
        l0, l1, l2, l3 = lut[k], lut[k + 1], lut[k + 2], lut[k + 3]
        c0, c1, c2, c3 = codes[k][a:b], codes[k + 1][a:b], codes[k + 2][a:b], codes[k + 3][a:b]
        for i in range(n):
            o[i] = (((o[i] + l0[c0[i]]) + l1[c1[i]]) + l2[c2[i]]) + l3[c3[i]]
        k += 4
    if k + 2 <= n_msg:
        l0, l1 = lut[k], lut[k + 1]
        c0, c1 = codes[k][a:b], codes[k + 1][a:b]
        for i in range(n):
            o[i] = (o[i] + l0[c0[i]]) + l1[c1[i]]
        k += 2
    if k < n_msg:
        l0 = lut[k]
        c0 = codes[k][a:b]
        for i in range(n):
            o[i] += l0[c0[i]]


@njit(cache=True, nogil=True)
def _realign(buf, pos, dst):  # pragma: no cover - compiled
    """``dst[j]`` = the 8 bits of ``buf`` from bit ``pos + 8 j`` on (a loop that vectorises);
    the bits read must lie in ``buf``."""
    n = dst.size
    b0 = pos >> 3
    o = pos & 7
    src = buf[b0:b0 + n]
    if o == 0:
        for j in range(n):
            dst[j] = src[j]
    else:
        nxt = buf[b0 + 1:b0 + 1 + n]
        s1 = np.uint8(o)
        s2 = np.uint8(8 - o)
        for j in range(n):
            dst[j] = np.uint8((src[j] << s1) | (nxt[j] >> s2))


@njit(cache=True, nogil=True)
def _add_nibble_messages(bufs, starts, body, out, offsets, lut, pair, zero):  # pragma: no cover
    """The adding part of :func:`decode_fixed_kernel` for 4-bit codes: the same sums as
    :func:`_add_codes` (each coordinate receives the messages in order; with ``zero``, the
    first two messages are one look-up in ``pair``). Block by block, each message's body is
    realigned to the byte grid (a byte holds the codes of coordinates ``2 j`` and
    ``2 j + 1``) and, in layers of at least ``_BYTE_TABLES`` coordinates, read through
    per-layer tables of the two decoded values of every byte value (``blut``): half the loads
    of reading code by code, and no unpacking; smaller layers are read half byte by half
    byte (:func:`_add_halves`: their tables would cost more to build than they save). A layer
    boundary inside a byte splits it: its coordinate is added on its own."""
    n_msg = starts.size - 1
    n_layers = offsets.size - 1
    dim = offsets[n_layers]
    k_first = 2 if zero else 0  # (the tables of the first two are not read then)
    blut = np.empty((n_layers, n_msg, 512))  # byte b: its two values at 2 b and 2 b + 1
    for layer in range(n_layers):
        if offsets[layer + 1] - offsets[layer] < _BYTE_TABLES:
            continue  # a small layer: read code by code (its byte tables would cost more)
        for k in range(k_first, n_msg):
            t = blut[layer, k]
            lk = lut[layer, k]
            for b in range(256):
                t[2 * b] = lk[b >> 4]
                t[2 * b + 1] = lk[b & 15]
    rb = np.empty((n_msg, _DBLOCK // 2), dtype=np.uint8)
    layer = 0
    for b0 in range(0, dim, _DBLOCK):
        b1 = min(b0 + _DBLOCK, dim)
        npair = (b1 - b0) // 2
        for k in range(n_msg):
            _realign(bufs[starts[k]:starts[k + 1]], body[k] + 4 * b0, rb[k, :npair])
        while offsets[layer + 1] <= b0:
            layer += 1
        li = layer
        while li < n_layers and offsets[li] < b1:
            a, e = max(offsets[li], b0) - b0, min(offsets[li + 1], b1) - b0
            if a & 1:  # the layer starts in the low half of a byte
                _add_one(bufs, starts, body, out, b0 + a, lut[li], pair[li], zero)
                a += 1
            if e & 1 and e - 1 >= a:  # it ends in the high half of one
                _add_one(bufs, starts, body, out, b0 + e - 1, lut[li], pair[li], zero)
                e -= 1
            if e > a and offsets[li + 1] - offsets[li] >= _BYTE_TABLES:
                _add_bytes(out[b0 + a:b0 + e], rb, a // 2, e // 2, blut[li], pair[li], zero)
            elif e > a:
                _add_halves(out[b0 + a:b0 + e], rb, a // 2, e // 2, lut[li], pair[li], zero)
            li += 1


@njit(cache=True, nogil=True)
def _add_one(bufs, starts, body, out, i, lut, pair, zero):  # pragma: no cover - compiled
    """Coordinate ``i`` of :func:`_add_nibble_messages`, its codes read one by one."""
    n_msg = starts.size - 1
    k = 0
    acc = out[i]
    if zero:
        c0 = get_bits(bufs[starts[0]:starts[1]], body[0] + 4 * i, 4)
        c1 = get_bits(bufs[starts[1]:starts[2]], body[1] + 4 * i, 4)
        acc = pair[np.intp(c0) | (np.intp(c1) << 4)]
        k = 2
    while k < n_msg:
        acc += lut[k, np.intp(get_bits(bufs[starts[k]:starts[k + 1]], body[k] + 4 * i, 4))]
        k += 1
    out[i] = acc


@njit(cache=True, nogil=True)
def _add_bytes(out, rb, j0, j1, blut, pair, zero):  # pragma: no cover - compiled
    """``out[2 j + h] += value of the code in half h of byte j0 + j`` of every message in
    turn (``h = 0``: the high half; ``blut[k, 2 b + h]``), four messages per pass; with
    ``zero`` (``out`` is +0.0) the first two messages are one look-up in ``pair`` (as
    :func:`_add_codes`)."""
    n_msg = rb.shape[0]
    n = j1 - j0
    k = 0
    if zero:
        x0, x1 = rb[0, j0:j1], rb[1, j0:j1]
        if n_msg >= 4:
            t2, t3 = blut[2], blut[3]
            x2, x3 = rb[2, j0:j1], rb[3, j0:j1]
            for j in range(n):
                p, q = np.intp(x0[j]), np.intp(x1[j])
                c2, c3 = np.intp(x2[j]) << 1, np.intp(x3[j]) << 1
                out[2 * j] = (pair[(p >> 4) | (q & 240)] + t2[c2]) + t3[c3]
                out[2 * j + 1] = (pair[(p & 15) | ((q & 15) << 4)] + t2[c2 + 1]) + t3[c3 + 1]
            k = 4
        else:
            for j in range(n):
                p, q = np.intp(x0[j]), np.intp(x1[j])
                out[2 * j] = pair[(p >> 4) | (q & 240)]
                out[2 * j + 1] = pair[(p & 15) | ((q & 15) << 4)]
            k = 2
    while k + 4 <= n_msg:
        t0, t1, t2, t3 = blut[k], blut[k + 1], blut[k + 2], blut[k + 3]
        x0, x1, x2, x3 = rb[k, j0:j1], rb[k + 1, j0:j1], rb[k + 2, j0:j1], rb[k + 3, j0:j1]
        for j in range(n):
            c0, c1 = np.intp(x0[j]) << 1, np.intp(x1[j]) << 1
            c2, c3 = np.intp(x2[j]) << 1, np.intp(x3[j]) << 1
            out[2 * j] = (((out[2 * j] + t0[c0]) + t1[c1]) + t2[c2]) + t3[c3]
            out[2 * j + 1] = ((((out[2 * j + 1] + t0[c0 + 1]) + t1[c1 + 1]) + t2[c2 + 1])
                              + t3[c3 + 1])
        k += 4
    while k < n_msg:
        t0 = blut[k]
        x0 = rb[k, j0:j1]
        for j in range(n):
            c0 = np.intp(x0[j]) << 1
            out[2 * j] += t0[c0]
            out[2 * j + 1] += t0[c0 + 1]
        k += 1


@njit(cache=True, nogil=True)
def _add_halves(out, rb, j0, j1, lut, pair, zero):  # pragma: no cover - compiled
    """:func:`_add_bytes` with the codes' tables ``lut`` (one value per 4-bit code): each half
    of a byte is looked up on its own."""
    n_msg = rb.shape[0]
    n = j1 - j0
    k = 0
    if zero:
        x0, x1 = rb[0, j0:j1], rb[1, j0:j1]
        for j in range(n):
            p, q = np.intp(x0[j]), np.intp(x1[j])
            out[2 * j] = pair[(p >> 4) | (q & 240)]
            out[2 * j + 1] = pair[(p & 15) | ((q & 15) << 4)]
        k = 2
    while k < n_msg:
        t0 = lut[k]
        x0 = rb[k, j0:j1]
        for j in range(n):
            c0 = np.intp(x0[j])
            out[2 * j] += t0[c0 >> 4]
            out[2 * j + 1] += t0[c0 & 15]
        k += 1
