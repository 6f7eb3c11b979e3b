"""What a quantized message carries, and its three codes.

:class:`~sparsecert.distributed.quantize.Quantizer` is an encoder with three entry points
(``encode``, ``decode``, ``decode_add``). The functions here work on what lies between: the
quantized content of a message (:class:`QuantizedVector`: layer norms, level indices, signs,
new levels) and its bitstream under each code (``"fixed"``, ``"gamma"``, ``"huffman"``), and
the sizes a message would have under the other codes (:func:`code_sizes`, the book-keeping of
QODA's history). A quantizer writes and reads its own code through them; tests and
benchmarks use them to look inside a message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparsecert.distributed.bitstream import (
    BitReader,
    BitWriter,
    canonical_codes,
    gamma_lengths,
    huffman_lengths,
)
from sparsecert.distributed.encoder import Encoder
from sparsecert.distributed.message import Message
from sparsecert.distributed.quantize_kernels import quantize_kernel

# ``q`` is a :class:`~sparsecert.distributed.quantize.Quantizer` everywhere below (annotated as
# the Encoder it is, so that this module does not import the quantizer's own)
Quantizer = Encoder

__all__ = [
    "CODES",
    "QuantizedVector",
    "quantize",
    "dequantize",
    "write",
    "read",
    "read_add",
    "histogram",
    "histogram_of",
    "bits",
    "bits_from_histogram",
    "code_sizes",
]

CODES = ("fixed", "gamma", "huffman")


@dataclass
class QuantizedVector:
    """What a quantized message carries (before entropy coding).

    Attributes
    ----------
    norms : numpy.ndarray
        Float32 layer norms (as float64).
    index : numpy.ndarray
        Level index of each coordinate (int64).
    negative : numpy.ndarray
        Sign of each coordinate (True = negative).
    new_levels : list of numpy.ndarray or None
        Levels sent with this message (one array per type) or None.
    """

    norms: np.ndarray
    index: np.ndarray
    negative: np.ndarray
    new_levels: list[np.ndarray] | None = None


def quantize(q: Quantizer, v: np.ndarray, rng: np.random.Generator) -> QuantizedVector:
    """Unbiased random rounding of ``v`` (draws one 64-bit seed from ``rng``); takes the
    pending new levels, if any, into the result."""
    seed = q._seed(q._need_rng(rng))
    v, norms = q._norms(v)
    index = quantize_kernel(v, norms, q._offsets, q._ltypes, q._ptab,
                             q._pgap, seed, q.s)
    qv = QuantizedVector(norms, index, v < 0, q._pending)
    q._pending = None
    return qv


def dequantize(q: Quantizer, qv: QuantizedVector) -> np.ndarray:
    """The vector represented by ``qv`` under the current levels."""
    mag = qv.norms[q._layer_of] * q._table[q._type_of, qv.index]
    return np.where(qv.negative, -mag, mag)


def _write_header(q: Quantizer, w: BitWriter, qv_norms: np.ndarray, new_levels) -> None:
    if q.adaptive:
        w.uints([int(new_levels is not None)], 1)
        if new_levels is not None:
            w.float32s(np.concatenate([lv[1:-1] for lv in new_levels]))
    elif new_levels is not None:
        raise ValueError("a non-adaptive quantizer cannot send levels")
    w.float32s(qv_norms)


def write(q: Quantizer, qv: QuantizedVector, code: str | None = None) -> Message:
    """Write an already quantized vector as a bitstream (default: this quantizer's code)."""
    code = q.code if code is None else code
    if code not in CODES:
        raise ValueError(f"code must be one of {CODES}, got {code!r}")
    w = BitWriter()
    _write_header(q, w, qv.norms, qv.new_levels)
    idx = qv.index
    if code == "fixed":
        b = q.index_bits
        w.uints((qv.negative.astype(np.uint64) << np.uint64(b)) | idx.astype(np.uint64),
                1 + b)
        return w.message()
    if code == "gamma":
        w.codewords(idx + 1, gamma_lengths(idx + 1))
    else:
        off = q._offsets
        for li in range(q.lmap.n_layers):
            part = idx[off[li]: off[li + 1]]
            lengths = huffman_lengths(np.bincount(part, minlength=q.s + 2))
            w.uints(lengths, 5)
            w.codewords(canonical_codes(lengths)[part], lengths[part])
    w.uints(qv.negative[idx > 0], 1)
    return w.message()


def histogram(q: Quantizer, qv: QuantizedVector) -> np.ndarray:
    """Counts of each level index per layer, shape ``(n_layers, s + 2)``."""
    n = q.s + 2
    flat = np.bincount(q._layer_of * n + qv.index, minlength=q.lmap.n_layers * n)
    return flat.reshape(q.lmap.n_layers, n)


def bits(q: Quantizer, qv: QuantizedVector, code: str | None = None) -> int:
    """Exact size of ``qv`` under ``code`` (default: this quantizer's code)."""
    return bits_from_histogram(q, histogram(q, qv), qv.new_levels is not None, code)


def bits_from_histogram(q: Quantizer, hist: np.ndarray, with_levels: bool,
                        code: str | None = None) -> int:
    """Exact message size from the per-layer index counts (see :func:`histogram`)."""
    code = q.code if code is None else code
    if code not in CODES:
        raise ValueError(f"code must be one of {CODES}, got {code!r}")
    header = q._header_bits(with_levels)
    if code == "fixed":
        return header + q.dim * (1 + q.index_bits)
    hist = np.asarray(hist, dtype=np.int64)
    nnz = int(hist[:, 1:].sum())
    if code == "gamma":
        glen = gamma_lengths(np.arange(1, q.s + 3))
        return header + int(hist.sum(axis=0) @ glen) + nnz
    body = sum(int(row @ huffman_lengths(row)) for row in hist)
    return header + q.lmap.n_layers * 5 * (q.s + 2) + body + nnz


def _read_header(q: Quantizer, rd: BitReader) -> tuple[np.ndarray, list[np.ndarray] | None]:
    s, lm = q.s, q.lmap
    new_levels = None
    if q.adaptive and rd.uints(1, 1)[0]:
        inner = rd.float32s(s * lm.n_types).reshape(lm.n_types, s)
        new_levels = [np.concatenate([[0.0], inner[t], [1.0]]) for t in range(lm.n_types)]
        q.levels = new_levels  # checked by the setter
    norms = rd.float32s(lm.n_layers)
    if not np.all(np.isfinite(norms)) or np.any(norms < 0):
        raise ValueError("corrupt message: layer norms must be finite and >= 0")
    return norms, new_levels


def read(q: Quantizer, msg: Message) -> QuantizedVector:
    """Read a message into its quantized content (updating the levels if it carries new
    ones)."""
    if not isinstance(msg, Message):
        raise TypeError("read expects a sparsecert.distributed.message.Message")
    rd = BitReader(msg)
    d, s, lm = q.dim, q.s, q.lmap
    norms, new_levels = _read_header(q, rd)
    if q.code == "fixed":
        b = q.index_bits
        codes = rd.uints(d, 1 + b)
        negative = (codes >> b).astype(bool)
        index = codes & ((1 << b) - 1)
    else:
        if q.code == "gamma":
            index = rd.gamma(d)
        else:
            off = lm.offsets
            parts = []
            for li in range(lm.n_layers):
                lengths = rd.uints(s + 2, 5)
                parts.append(rd.huffman(int(off[li + 1] - off[li]), lengths))
            index = np.concatenate(parts)
        nz = index > 0
        negative = np.zeros(d, dtype=bool)
        negative[nz] = rd.uints(int(nz.sum()), 1).astype(bool)
    if np.any(index > s + 1):
        raise ValueError("corrupt message: level index out of range")
    rd.finish()
    return QuantizedVector(norms, index, negative, new_levels)


def read_add(q: Quantizer, msg: Message, out: np.ndarray, count: bool = True
             ) -> tuple[np.ndarray | None, bool]:
    """``out += decode(msg)``; returns the per-layer index counts (``None`` unless
    ``count``) and whether the message carried new levels (what
    :func:`bits_from_histogram` needs). Raises ``ValueError`` on a corrupt message (then
    ``out`` is untouched with the fixed code, and may hold part of the sum with the
    others)."""
    if q.code != "fixed":
        qv = read(q, msg)
        out += dequantize(q, qv)
        return (histogram(q, qv) if count else None), qv.new_levels is not None
    q._check_out(msg, out)
    hist = np.zeros((q.lmap.n_layers, q.s + 2) if count else (0, 0), dtype=np.int64)
    got = q._read_fixed(msg, q._table.copy(), out, hist)
    return (hist if count else None), got


def histogram_of(q: Quantizer, msg: Message) -> tuple[np.ndarray, bool]:
    """Per-layer index counts of a message and whether it carries new levels, without
    decoding it (this decoder's levels are not touched): what the same content costs
    under the other codes follows (:func:`bits_from_histogram`)."""
    if q.code != "fixed":
        qv = read(q.clone(), msg)
        return histogram(q, qv), qv.new_levels is not None
    hist = np.zeros((q.lmap.n_layers, q.s + 2), dtype=np.int64)
    got = q._read_fixed(msg, q._table.copy(), np.zeros(0), hist, keep_levels=True)
    return hist, got


def code_sizes(q: Quantizer, msg: Message) -> dict[str, int]:
    """Exact size of the content of ``msg`` under every code (the one it was written in is
    its ``n_bits``), without decoding it (``q``'s levels are not touched)."""
    counts = None
    out = {}
    for c in CODES:
        if c == q.code:
            out[c] = int(msg.n_bits)
        else:
            if counts is None:
                counts = histogram_of(q, msg)
            out[c] = bits_from_histogram(q, *counts, c)
    return out
