"""The one bit packer of the distributed wing: MSB-first bitstreams and the codes written in them.

Every encoder (:mod:`~sparsecert.distributed.compress`, :mod:`~sparsecert.distributed.quantize`)
writes its messages with the functions here, so a message's ``n_bits`` is the exact length of
the stream it carries and a receiver reads it back with :class:`BitReader`.

* Writing: :func:`pack_codewords` concatenates codewords (the ``lengths[i]`` low bits of
  ``values[i]``, most significant bit first); :func:`pack_uints` is the fixed-width case and
  :class:`BitWriter` collects segments (headers, float32 fields, bodies) and packs them once.
* Reading: :class:`BitReader` (fixed-width integers, float32 fields, Elias-gamma and canonical
  Huffman codes) and :func:`unpack_uints`.
* Codes: Elias gamma (:func:`gamma_lengths`) and canonical Huffman (:func:`huffman_lengths`,
  :func:`canonical_codes`).

The numba kernels :func:`put_bits` / :func:`get_bits` are also what the fused encoders of
:mod:`~sparsecert.distributed.quantize` call, one codeword at a time, into a zeroed ``uint8``
buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sparsecert.distributed.comm import Message

__all__ = [
    "BitReader",
    "BitWriter",
    "pack_codewords",
    "pack_uints",
    "unpack_uints",
    "gamma_lengths",
    "huffman_lengths",
    "canonical_codes",
    "put_bits",
    "get_bits",
]

_U1 = np.uint64(1)


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

    The result has ``ceil(len(values) * width / 8)`` bytes (the last one zero-padded).
    """
    values = np.asarray(values, dtype=np.int64).ravel()
    if width == 0 or values.size == 0:
        if width == 0 and np.any(values != 0):
            raise ValueError("width 0 can only encode zeros")
        return b""
    if not 0 < width <= 63 or values.min() < 0 or values.max() >= (1 << width):
        raise ValueError(f"values do not fit in {width} bits")
    return pack_codewords(values, np.full(values.size, width, dtype=np.int64))[0]


def unpack_uints(data: bytes, count: int, width: int) -> np.ndarray:
    """Inverse of :func:`pack_uints` for ``count`` integers of ``width`` bits."""
    if width == 0 or count == 0:
        return np.zeros(count, dtype=np.int64)
    nbytes = -(-count * width // 8)
    if len(data) < nbytes:
        raise ValueError(f"need {nbytes} bytes for {count} integers of {width} bits")
    return _read_uints(np.frombuffer(data, dtype=np.uint8), 0, int(count), int(width))


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
        first, cnt, offs, syms = _canonical_tables(np.asarray(lengths, dtype=np.int64))
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


# ----------------------------------------------------------------------------- codes
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


def _canonical_tables(lengths: np.ndarray):
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
