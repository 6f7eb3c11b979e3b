"""Numba kernels of the quantizers' decoder (:mod:`~sparsecert.distributed.quantize`).

:func:`decode_fixed_kernel` reads all the fixed-code messages of a round back into one sum in
one call; it validates every message before it touches the sum. The codes are read with the
bit packer's fast fixed-width path (:func:`~sparsecert.distributed.bitstream.unpack_codes`);
4-bit codes are added through tables of whole bytes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import get_bits, unpack_codes

__all__ = ["decode_fixed_kernel", "f32_from_bits"]

_DBLOCK = 2048  # coordinates per block of the decoder (a multiple of 8)
_BYTE_TABLES = 4096  # layers of at least this size are decoded through tables of whole bytes


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
