"""The one bit packer of the distributed wing: MSB-first bitstreams.

Every encoder (:mod:`~sparsecert.distributed.compress`, :mod:`~sparsecert.distributed.quantize`)
writes its messages with the functions here, so a message's ``n_bits`` is the exact length of
the stream it carries and a receiver reads it back with :class:`BitReader`.

* Writing: :func:`pack_codewords` concatenates codewords (the ``lengths[i]`` low bits of
  ``values[i]``, most significant bit first): the general packer. :func:`pack_uints` is the
  fixed-width case, written by the fast path :func:`pack_codes` (eight codes of ``nb`` bits
  fill ``nb`` whole bytes; 3- and 4-bit codes with constant shifts), which writes the same
  bits as the general packer (tested). :class:`BitWriter` collects segments (headers, float32
  fields, bodies) and packs them once.
* Reading: :class:`BitReader` (fixed-width integers, float32 fields, Elias-gamma and canonical
  Huffman codes), :func:`unpack_uints` and its fast path :func:`unpack_codes`.
* The codes themselves (Elias gamma, canonical Huffman) are built in
  :mod:`~sparsecert.distributed.entropy` (re-exported here).

The numba kernels :func:`put_bits` / :func:`get_bits` / :func:`pack_codes` /
:func:`unpack_codes` are also what the fused kernels of the quantizers call, into a zeroed
``uint8`` buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sparsecert.distributed.entropy import (
    canonical_codes,
    canonical_tables,
    gamma_lengths,
    huffman_lengths,
)
from sparsecert.distributed.message import Message

__all__ = [
    "BitReader",
    "BitWriter",
    "pack_codewords",
    "pack_uints",
    "unpack_uints",
    "pack_codes",
    "unpack_codes",
    "gamma_lengths",
    "huffman_lengths",
    "canonical_codes",
    "put_bits",
    "get_bits",
]

_U1 = np.uint64(1)
_BYTE = np.uint64(255)


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def put_bits(buf, pos, value, n):  # pragma: no cover - compiled
    """Write the ``n`` (<= 64) low bits of the uint64 ``value`` at bit ``pos`` of the zeroed
    uint8 buffer ``buf``, most significant first; returns the new position."""
    while n > 0:
        off = pos & 7
        room = 8 - off
        take = room if room < n else n
        chunk = (value >> np.uint64(n - take)) & ((_U1 << np.uint64(take)) - _U1)
        buf[pos >> 3] |= np.uint8(chunk << np.uint64(room - take))
        pos += take
        n -= take
    return pos


@njit(cache=True, nogil=True)
def get_bits(buf, pos, n):  # pragma: no cover - compiled
    """Read ``n`` (<= 64) bits at bit ``pos`` of ``buf`` (MSB first) as a uint64."""
    val = np.uint64(0)
    while n > 0:
        off = pos & 7
        room = 8 - off
        take = room if room < n else n
        chunk = (np.uint64(buf[pos >> 3]) >> np.uint64(room - take)) & (
            (_U1 << np.uint64(take)) - _U1)
        val = (val << np.uint64(take)) | chunk
        pos += take
        n -= take
    return val


@njit(cache=True, nogil=True)
def _pack_kernel(values, lengths, total):  # pragma: no cover - compiled
    out = np.zeros((total + 7) // 8, dtype=np.uint8)
    pos = 0
    for i in range(values.size):
        pos = put_bits(out, pos, values[i], lengths[i])
    return out


@njit(cache=True, nogil=True)
def _read_uints(buf, pos, count, width):  # pragma: no cover - compiled
    out = np.empty(count, dtype=np.int64)
    for c in range(count):
        out[c] = np.int64(get_bits(buf, pos, width))
        pos += width
    return out


@njit(cache=True, nogil=True)
def _gamma_decode(buf, pos, count, end):  # pragma: no cover - compiled
    """``count`` Elias-gamma codes from ``pos`` (stream ends at bit ``end``); returns the
    decoded values minus one and the new position (-1 if the stream is corrupt)."""
    out = np.empty(count, dtype=np.int64)
    for c in range(count):
        z = 0
        while pos < end and get_bits(buf, pos, 1) == 0:
            z += 1
            pos += 1
        if z > 62 or pos + z + 1 > end:
            return out, -1
        out[c] = np.int64(get_bits(buf, pos, z + 1)) - 1
        pos += z + 1
    return out, pos


@njit(cache=True, nogil=True)
def _huffman_decode(buf, pos, count, end, first, cnt, offs, syms):  # pragma: no cover
    """``count`` canonical Huffman codewords (tables from :func:`_canonical_tables`)."""
    out = np.empty(count, dtype=np.int64)
    maxlen = first.size - 1
    for c in range(count):
        code = 0
        found = False
        for length in range(1, maxlen + 1):
            if pos >= end:
                return out, -1
            code = (code << 1) | np.int64(get_bits(buf, pos, 1))
            pos += 1
            k = code - first[length]
            if k >= 0 and k < cnt[length]:
                out[c] = syms[offs[length] + k]
                found = True
                break
        if not found:
            return out, -1
    return out, pos


# ------------------------------------------------------------------ the fast fixed-width path
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


# ----------------------------------------------------------------------------- writing
def pack_codewords(values: np.ndarray, lengths: np.ndarray) -> tuple[bytes, int]:
    """Concatenate codewords (the ``lengths[i]`` low bits of ``values[i]``, MSB first).

    Returns the bytes (last byte zero-padded) and the exact number of bits.
    """
    values = np.ascontiguousarray(values, dtype=np.uint64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if values.shape != lengths.shape or values.ndim != 1:
        raise ValueError("values and lengths must be 1-D arrays of the same length")
    if lengths.size and (lengths.min() < 0 or lengths.max() > 64):
        raise ValueError("codeword lengths must be in [0, 64]")
    total = int(lengths.sum())
    return _pack_kernel(values, lengths, total).tobytes(), total


def pack_uints(values: np.ndarray, width: int) -> bytes:
    """Bit-pack non-negative integers, ``width`` bits each, most significant bit first.

    The result has ``ceil(len(values) * width / 8)`` bytes (the last one zero-padded). Widths
    up to 8 go through the fast path :func:`pack_codes`, wider ones through
    :func:`pack_codewords` (the same bits).
    """
    values = np.asarray(values, dtype=np.int64).ravel()
    if width == 0 or values.size == 0:
        if width == 0 and np.any(values != 0):
            raise ValueError("width 0 can only encode zeros")
        return b""
    if not 0 < width <= 63 or values.min() < 0 or values.max() >= (1 << width):
        raise ValueError(f"values do not fit in {width} bits")
    if width <= 8:
        buf = np.zeros(-(-values.size * width // 8), dtype=np.uint8)
        pack_codes(values.astype(np.uint8), width, buf, 0)
        return buf.tobytes()
    return pack_codewords(values, np.full(values.size, width, dtype=np.int64))[0]


def unpack_uints(data: bytes, count: int, width: int) -> np.ndarray:
    """Inverse of :func:`pack_uints` for ``count`` integers of ``width`` bits."""
    if width == 0 or count == 0:
        return np.zeros(count, dtype=np.int64)
    nbytes = -(-count * width // 8)
    if len(data) < nbytes:
        raise ValueError(f"need {nbytes} bytes for {count} integers of {width} bits")
    buf = np.frombuffer(data, dtype=np.uint8)
    if width <= 8:
        codes = np.empty(int(count), dtype=np.uint8)
        unpack_codes(buf, 0, int(width), codes)
        return codes.astype(np.int64)
    return _read_uints(buf, 0, int(count), int(width))


class BitWriter:
    """Collects codeword segments in stream order and packs them once.

    Examples
    --------
    >>> w = BitWriter()
    >>> w.uints([1], 1)
    >>> w.float32s([2.5])
    >>> w.uints([3, 0, 2], 2)
    >>> w.message().n_bits
    39
    """

    def __init__(self) -> None:
        self._values: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []

    def codewords(self, values: np.ndarray, lengths: np.ndarray) -> None:
        """Append codewords of individual lengths."""
        self._values.append(np.asarray(values, dtype=np.uint64).ravel())
        self._lengths.append(np.asarray(lengths, dtype=np.int64).ravel())

    def uints(self, values, width: int) -> None:
        """Append non-negative integers of ``width`` bits each."""
        v = np.asarray(values, dtype=np.uint64).ravel()
        self.codewords(v, np.full(v.size, int(width), dtype=np.int64))

    def float32s(self, values) -> None:
        """Append IEEE float32 fields (32 bits each, big-endian bit order)."""
        f = np.ascontiguousarray(values, dtype=np.float32).ravel()
        self.uints(f.view(np.uint32).astype(np.uint64), 32)

    @property
    def n_bits(self) -> int:
        return int(sum(int(x.sum()) for x in self._lengths))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """All codewords so far as ``(values, lengths)`` (for a kernel that goes on writing)."""
        if not self._values:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        return np.concatenate(self._values), np.concatenate(self._lengths)

    def message(self) -> Message:
        """The packed stream."""
        payload, n_bits = pack_codewords(*self.arrays())
        return Message(payload, n_bits)


# ----------------------------------------------------------------------------- reading
class BitReader:
    """Sequential reader of a message's bitstream (raises ``ValueError`` past its end).

    Parameters
    ----------
    msg : Message
        The message; only its first ``msg.n_bits`` bits are read.
    """

    def __init__(self, msg: Message) -> None:
        if not isinstance(msg, Message):
            raise TypeError("BitReader expects a sparsecert.distributed.comm.Message")
        self.buf = np.frombuffer(msg.payload, dtype=np.uint8)
        self.end = int(msg.n_bits)
        self.pos = 0

    def _need(self, n: int) -> None:
        if self.pos + n > self.end:
            raise ValueError("truncated message: the bitstream ends early")

    def uints(self, count: int, width: int) -> np.ndarray:
        """``count`` unsigned integers of ``width`` (<= 63) bits."""
        if width == 0 or count == 0:
            return np.zeros(count, dtype=np.int64)
        self._need(count * width)
        out = _read_uints(self.buf, self.pos, int(count), int(width))
        self.pos += count * width
        return out

    def float32s(self, count: int) -> np.ndarray:
        """``count`` float32 fields, returned as float64."""
        return self.uints(count, 32).astype(np.uint32).view(np.float32).astype(np.float64)

    def gamma(self, count: int) -> np.ndarray:
        """``count`` Elias-gamma codes of ``n + 1``; returns the ``n``."""
        out, pos = _gamma_decode(self.buf, self.pos, int(count), self.end)
        if pos < 0:
            raise ValueError("corrupt Elias-gamma stream")
        self.pos = pos
        return out

    def huffman(self, count: int, lengths: np.ndarray) -> np.ndarray:
        """``count`` symbols of the canonical Huffman code with these code lengths."""
        first, cnt, offs, syms = canonical_tables(np.asarray(lengths, dtype=np.int64))
        out, pos = _huffman_decode(self.buf, self.pos, int(count), self.end, first, cnt, offs,
                                   syms)
        if pos < 0:
            raise ValueError("corrupt Huffman stream")
        self.pos = pos
        return out

    def finish(self) -> None:
        """Raise unless the whole stream has been read."""
        if self.pos != self.end:
            raise ValueError(f"message has {self.end - self.pos} trailing bits")
