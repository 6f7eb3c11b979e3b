"""Unbiased (layer-wise, adaptive) stochastic quantizers: :class:`Quantizer`, one Encoder.

A vector ``v`` is split into *layers* (contiguous blocks, :class:`LayerMap`). Each layer
``l`` is sent as its norm ``r_l = ||v_l||_2`` (float32), the signs of its coordinates and,
for every coordinate, the index of a *level* in a sequence
``0 = l_0 < l_1 < ... < l_s < l_{s+1} = 1`` shared by all layers of the same *type*. The
normalised magnitude ``u = |v_i| / r_l`` lies between two adjacent levels
``l_tau <= u <= l_{tau+1}`` and is rounded up with probability
``(u - l_tau) / (l_{tau+1} - l_tau)``, down otherwise, so the quantized vector is unbiased and
its variance is ``r_l^2 * sum_i (u_i - l_tau)(l_{tau+1} - u_i)`` (see
:func:`quantization_variance`).

Constructors: :func:`global_uniform` (QSGD: one layer, uniform levels; the same class as
:class:`RandomQuantizer`), :func:`global_adaptive`, :func:`layerwise_uniform`,
:func:`layerwise_adaptive` (levels re-optimised by :meth:`Quantizer.adapt` with
:func:`~sparsecert.distributed.levels.optimize_levels`).

Randomness: one 64-bit seed is drawn from the sender's generator per message; coordinate ``i``
is rounded up when ``U_i < p_i`` with ``U_i`` the 53-bit uniform of the ``i``-th SplitMix64
output of that seed (the resolution of ``Generator.random``), so the fused numba encoder needs
no array of uniforms and the stream is the same whichever communicator runs.

Encoding
--------
Every message is a real bitstream (MSB first, :mod:`~sparsecert.distributed.bitstream`):

* adaptive quantizers only: 1 bit, whether new levels follow; if so, for each layer type, its
  ``s`` inner levels as float32 (``32 s`` bits per type);
* for each layer, its norm as float32 (32 bits; rounded *up* to float32 so that ``u <= 1``);
* ``code="fixed"``: for every coordinate its sign bit and its level index in
  ``b = ceil(log2(s + 2))`` bits;
* ``code="gamma"``: the indices as Elias-gamma codes of ``index + 1``, then one sign bit per
  coordinate with a non-zero index;
* ``code="huffman"``: per layer, ``s + 2`` code lengths of 5 bits (0 = symbol absent) defining a
  canonical Huffman code of that layer's indices, the coded indices, then the signs of the
  non-zero coordinates.

``Message.n_bits`` is the exact length of the stream; :meth:`Quantizer.bits` gives the size
under any code from the content alone (tested to agree). The fixed code is written and read by
fused numba kernels (norms, rounding, packing in two passes; decoding straight into the
receiver's sum).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import (
    BitReader,
    BitWriter,
    canonical_codes,
    gamma_lengths,
    get_bits,
    huffman_lengths,
    put_bits,
)
from sparsecert.distributed.comm import Message
from sparsecert.distributed.encoder import Encoder, check_vector
from sparsecert.distributed.levels import (
    DEFAULT_INITS,
    check_inner_levels,
    check_levels,
    levels_variance,
    optimize_levels,
    optimize_sorted,
    uniform_levels,
)

__all__ = [
    "LayerMap",
    "QuantizedVector",
    "Quantizer",
    "RandomQuantizer",
    "global_uniform",
    "global_adaptive",
    "layerwise_uniform",
    "layerwise_adaptive",
    "uniform_levels",
    "optimize_levels",
    "levels_variance",
    "quantization_variance",
    "CODES",
]

CODES = ("fixed", "gamma", "huffman")


# ----------------------------------------------------------------------------- layer map
@dataclass(frozen=True)
class LayerMap:
    """Contiguous layers of a vector and the type of each layer.

    Parameters
    ----------
    sizes : tuple of int
        Number of coordinates of each layer (all positive).
    types : tuple of int
        Type id of each layer, ``0 .. n_types - 1`` (layers of one type share levels).
    """

    sizes: tuple[int, ...]
    types: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.sizes) == 0:
            raise ValueError("a LayerMap needs at least one layer")
        if any(int(s) != s or s < 1 for s in self.sizes):
            raise ValueError(f"layer sizes must be positive integers, got {self.sizes}")
        if len(self.types) != len(self.sizes):
            raise ValueError(
                f"got {len(self.types)} layer types for {len(self.sizes)} layers"
            )
        t = sorted(set(self.types))
        if t != list(range(len(t))):
            raise ValueError(f"layer types must be 0..n_types-1, got {self.types}")

    @classmethod
    def make(cls, layers: int | Sequence[int] | LayerMap, types: Sequence[int] | None = None
             ) -> LayerMap:
        """Build from a dimension (one layer), a sequence of sizes, or a LayerMap."""
        if isinstance(layers, LayerMap):
            if types is not None:
                raise ValueError("types given together with a LayerMap")
            return layers
        if isinstance(layers, int | np.integer):
            sizes: tuple[int, ...] = (int(layers),)
        else:
            sizes = tuple(int(s) for s in layers)
        if types is None:
            types = tuple(range(len(sizes)))
        return cls(sizes, tuple(int(t) for t in types))

    @property
    def dim(self) -> int:
        return int(sum(self.sizes))

    @property
    def n_layers(self) -> int:
        return len(self.sizes)

    @property
    def n_types(self) -> int:
        return max(self.types) + 1

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)

    @property
    def layer_of(self) -> np.ndarray:
        """Layer id of every coordinate."""
        return np.repeat(np.arange(self.n_layers), self.sizes)

    @property
    def type_of(self) -> np.ndarray:
        """Type id of every coordinate."""
        return np.repeat(np.asarray(self.types, dtype=np.int64), self.sizes)


def _levels_per_type(levels, n_types: int) -> list[np.ndarray]:
    if isinstance(levels, np.ndarray) and levels.ndim == 1:
        return [check_levels(levels)] * n_types
    out = [check_levels(lv) for lv in levels]
    if len(out) != n_types:
        raise ValueError(f"got {len(out)} level arrays for {n_types} layer types")
    return out


# ----------------------------------------------------------------------------- kernels
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_M53 = 2.0 ** -53


@njit(cache=True, nogil=True)
def _uniform(seed, i):  # pragma: no cover - compiled
    """53-bit uniform in [0, 1) from the i-th SplitMix64 output of ``seed``."""
    z = seed + np.uint64(i + 1) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * _TWO_M53


@njit(cache=True, nogil=True)
def _layer_norms(v, offsets):  # pragma: no cover - compiled
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


_NO_LEVELS = np.zeros(0, dtype=np.float32)
_PAD = 8  # level tables are padded to 8 entries: a fixed-length (branch-free) cell search


@njit(cache=True, nogil=True)
def _round_one(x, r, lvp, igp, seed, i, n_inner):  # pragma: no cover - compiled
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
    if n_inner <= _PAD - 2:
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
    return lo + np.int64(_uniform(seed, i) < (u - lvp[lo]) * igp[lo])


@njit(cache=True, nogil=True)
def _quantize_kernel(v, norms, offsets, ltype, ptab, pig, seed, n_inner):  # pragma: no cover
    index = np.empty(v.size, dtype=np.int64)
    for layer in range(offsets.size - 1):
        r = norms[layer]
        lvp = ptab[ltype[layer]]
        igp = pig[ltype[layer]]
        for i in range(offsets[layer], offsets[layer + 1]):
            index[i] = _round_one(v[i], r, lvp, igp, seed, i, n_inner)
    return index


@njit(cache=True, nogil=True)
def _f32_bits(x):  # pragma: no cover - compiled
    """IEEE float32 bit pattern of ``x`` (already float32-representable) as uint64."""
    a = np.empty(1, dtype=np.float32)
    a[0] = x
    return np.uint64(a.view(np.uint32)[0])


@njit(cache=True, nogil=True)
def _encode_fixed_kernel(v, offsets, ltype, ptab, pig, seed, width, flag, levels32, out,
                         n_inner):
    """One fixed-code message: the layer norms (float32, rounded up), the header (``flag`` <
    0: none; else the flag bit, then ``levels32`` if it is 1; then the norms) and the
    (sign, index) of every coordinate through a 64-bit accumulator flushed byte by byte.
    ``out`` (if not empty) receives the decoded vector. Returns ``(buf, n_bits)``;
    ``n_bits = -1`` if a layer norm is not finite (NaN / inf entries or an overflow)."""
    norms = _layer_norms(v, offsets)
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
                pos = put_bits(buf, pos, _f32_bits(levels32[j]), 32)
    for layer in range(norms.size):
        pos = put_bits(buf, pos, _f32_bits(norms[layer]), 32)
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
            idx = _round_one(x, r, lvp, igp, seed, i, n_inner)
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
def _f32_from_bits(bits):  # pragma: no cover - compiled
    a = np.empty(1, dtype=np.uint32)
    a[0] = np.uint32(bits)
    return np.float64(a.view(np.float32)[0])


@njit(cache=True, nogil=True)
def _decode_fixed_kernel(buf, end, has_flag, n_inner, table, offsets, ltype, width, out,
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
                new[t, j] = _f32_from_bits(get_bits(buf, pos, 32))
                pos += 32
                if not (new[t, j] > new[t, j - 1]):  # also rejects NaN
                    return -2, got, norms
            if not (new[t, n_sym - 2] < 1.0):
                return -2, got, norms
    for layer in range(n_layers):
        norms[layer] = _f32_from_bits(get_bits(buf, pos, 32))
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


# ----------------------------------------------------------------------------- variance
def _normalised(v: np.ndarray, lmap: LayerMap) -> tuple[np.ndarray, np.ndarray]:
    """Float32 (rounded-up) layer norms and normalised magnitudes ``u`` in [0, 1]."""
    norms = _layer_norms(v, lmap.offsets)
    r = norms[lmap.layer_of]
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(r > 0, np.abs(v) / np.where(r > 0, r, 1.0), 0.0)
    return norms, np.minimum(u, 1.0)


def quantization_variance(v: np.ndarray, layers: int | Sequence[int] | LayerMap,
                          levels: np.ndarray | Sequence[np.ndarray]) -> float:
    """Exact variance ``E||Q(v) - v||^2 = sum_l r_l^2 sum_i (u_i - l_tau)(l_{tau+1} - u_i)``.

    ``levels`` is one level array (used by every layer type) or one per layer type. The layer
    norms are the float32 values actually transmitted.
    """
    lmap = LayerMap.make(layers)
    v = check_vector(v, lmap.dim)
    lv_list = _levels_per_type(levels, lmap.n_types)
    norms, u = _normalised(v, lmap)
    w = norms[lmap.layer_of] ** 2
    tid = lmap.type_of
    return float(sum(levels_variance(u[tid == t], w[tid == t], lv_list[t])
                     for t in range(lmap.n_types)))


# ----------------------------------------------------------------------------- quantized vector
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


# ----------------------------------------------------------------------------- quantizers
class Quantizer(Encoder):
    """Unbiased stochastic quantizer over a layer map (an :class:`Encoder`).

    One instance holds the current levels (one array per layer type). A sender encodes with
    its own instance; a receiver decodes with a *copy* (:meth:`clone`) kept in sync by the
    levels that travel inside messages (adaptive quantizers are ``stateful``).

    Parameters
    ----------
    layers : int, sequence of int or LayerMap
        Dimension (one layer: a global quantizer) or layer sizes.
    s : int
        Number of inner levels; an index costs ``ceil(log2(s + 2))`` bits with the fixed code.
    adaptive : bool
        Whether :meth:`adapt` re-optimises the levels (otherwise they stay uniform).
    types : sequence of int, optional
        Type of each layer (layers of one type share levels); default: one type per layer.
    code : {"fixed", "gamma", "huffman"}
        The code written by :meth:`encode`.
    inits : sequence
        Initialisations tried by :func:`~sparsecert.distributed.levels.optimize_levels` (the
        current levels are always tried too).
    """

    unbiased = True
    randomized = True

    def __init__(self, layers: int | Sequence[int] | LayerMap, s: int, *, adaptive: bool = False,
                 types: Sequence[int] | None = None, code: str = "fixed",
                 inits: Sequence[str] = DEFAULT_INITS) -> None:
        self.s = check_inner_levels(s)
        if code not in CODES:
            raise ValueError(f"code must be one of {CODES}, got {code!r}")
        self.lmap = LayerMap.make(layers, types)
        super().__init__(self.lmap.dim)
        self.adaptive = bool(adaptive)
        self.stateful = self.adaptive
        self.code = code
        self.inits = tuple(inits)
        self.levels = [uniform_levels(s) for _ in range(self.lmap.n_types)]
        self._pending: list[np.ndarray] | None = None
        self._layer_of = self.lmap.layer_of
        self._offsets = self.lmap.offsets
        self._ltypes = np.asarray(self.lmap.types, dtype=np.int64)
        self._type_of = self.lmap.type_of
        self._type_layers = [np.flatnonzero(self._ltypes == t) for t in range(self.lmap.n_types)]
        if not self.adaptive:
            n_int = self.s + 1  # QSGD bound per layer, the largest layer decides
            dmax = max(self.lmap.sizes)
            self.omega = min(dmax / n_int**2, math.sqrt(dmax) / n_int)

    @property
    def levels(self) -> list[np.ndarray]:
        """The current level arrays, one per layer type."""
        return self._levels

    @levels.setter
    def levels(self, value: Sequence[np.ndarray]) -> None:
        lv = [check_levels(x) for x in value]
        if len(lv) != self.lmap.n_types or any(x.size != self.s + 2 for x in lv):
            raise ValueError(f"need {self.lmap.n_types} level arrays of {self.s + 2} levels")
        self._levels = lv
        self._table = np.ascontiguousarray(np.stack(lv))
        width = max(_PAD, self.s + 2)
        self._ptab = np.full((len(lv), width), np.inf)
        self._ptab[:, :self.s + 2] = self._table
        self._pig = np.zeros((len(lv), width))
        self._pig[:, :self.s + 1] = 1.0 / np.diff(self._table, axis=1)

    def __repr__(self) -> str:
        kind = "adaptive" if self.adaptive else "uniform"
        return (f"Quantizer(layers={self.lmap.sizes}, s={self.s}, {kind}, "
                f"code={self.code!r})")

    @property
    def index_bits(self) -> int:
        """Bits of one fixed-length level index, ``ceil(log2(s + 2))``."""
        return (self.s + 1).bit_length()

    @property
    def message_bits(self) -> int | None:
        if self.code == "fixed" and not self.adaptive:
            return self.fixed_bits()
        return None

    def fixed_bits(self, with_levels: bool = False) -> int:
        """Analytic size of a fixed-length message."""
        return self._header_bits(with_levels) + self.dim * (1 + self.index_bits)

    def _header_bits(self, with_levels: bool) -> int:
        flag = 1 if self.adaptive else 0
        extra = 32 * self.s * self.lmap.n_types if with_levels else 0
        return flag + extra + 32 * self.lmap.n_layers

    def with_code(self, code: str) -> Quantizer:
        """A copy that writes ``code`` (same levels)."""
        if code not in CODES:
            raise ValueError(f"code must be one of {CODES}, got {code!r}")
        out = self.clone()
        out.code = code
        return out

    # -- levels
    def adapt(self, v: np.ndarray) -> list[np.ndarray]:
        """Re-optimise each type's levels on ``v`` (normalised per layer, weighted by the
        squared layer norms); the new levels go out with the next encoded message."""
        if not self.adaptive:
            raise ValueError("adapt() called on a non-adaptive quantizer")
        v = check_vector(v, self.dim)
        norms = _layer_norms(v, self._offsets)
        off = self._offsets
        new = []
        for t, layers in enumerate(self._type_layers):
            us_parts, ws_parts = [], []
            for li in layers:
                r = norms[li]
                part = np.abs(v[off[li]:off[li + 1]])
                u = np.minimum(part / r, 1.0) if r > 0 else np.zeros(part.size)
                us_parts.append(u)
                ws_parts.append(np.full(part.size, r * r))
            if len(layers) == 1:  # one layer: constant weight, a plain sort
                us, ws = np.sort(us_parts[0]), ws_parts[0]
            else:
                u_all, w_all = np.concatenate(us_parts), np.concatenate(ws_parts)
                order = np.argsort(u_all, kind="stable")
                us, ws = u_all[order], w_all[order]
            lv, _ = optimize_sorted(us, ws, self.s, (*self.inits, self.levels[t]))
            new.append(lv)
        self.levels = new
        self._pending = [lv.copy() for lv in new]
        return new

    def _norms(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``v`` as float64 and its float32 (rounded-up) layer norms; one pass checks the
        entries too (a NaN or inf makes a norm non-finite)."""
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (self.dim,):
            raise ValueError(f"v must have shape ({self.dim},), got {v.shape}")
        norms = _layer_norms(v, self._offsets)
        if not np.all(np.isfinite(norms)):
            check_vector(v, self.dim)  # names NaN / inf entries
            raise ValueError("cannot quantize: a layer norm overflows float32")
        return v, norms

    # -- quantization
    @staticmethod
    def _seed(rng: np.random.Generator) -> np.uint64:
        return np.uint64(rng.integers(0, 2**64, dtype=np.uint64))

    def quantize(self, v: np.ndarray, rng: np.random.Generator) -> QuantizedVector:
        """Unbiased random rounding of ``v`` (draws one 64-bit seed from ``rng``); takes the
        pending new levels, if any, into the result."""
        seed = self._seed(self._need_rng(rng))
        v, norms = self._norms(v)
        index = _quantize_kernel(v, norms, self._offsets, self._ltypes, self._ptab,
                                 self._pig, seed, self.s)
        qv = QuantizedVector(norms, index, v < 0, self._pending)
        self._pending = None
        return qv

    def dequantize(self, qv: QuantizedVector) -> np.ndarray:
        """The vector represented by ``qv`` under the current levels."""
        mag = qv.norms[self._layer_of] * self._table[self._type_of, qv.index]
        return np.where(qv.negative, -mag, mag)

    def __call__(self, v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Quantize and return the reconstructed vector (no encoding)."""
        return self.dequantize(self.quantize(v, rng))

    # -- coding
    def _header(self, w: BitWriter, qv_norms: np.ndarray, new_levels) -> None:
        if self.adaptive:
            w.uints([int(new_levels is not None)], 1)
            if new_levels is not None:
                w.float32s(np.concatenate([lv[1:-1] for lv in new_levels]))
        elif new_levels is not None:
            raise ValueError("a non-adaptive quantizer cannot send levels")
        w.float32s(qv_norms)

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        """Quantize ``v`` and write it as a bitstream in this quantizer's code."""
        if self.code != "fixed":
            return self.pack(self.quantize(v, rng))
        return self._encode_fixed(v, rng, want_decoded=False)[0]

    def roundtrip(self, v: np.ndarray, rng: np.random.Generator | None = None
                  ) -> tuple[Message, np.ndarray]:
        if self.code != "fixed":
            qv = self.quantize(v, rng)
            return self.pack(qv), self.dequantize(qv)
        return self._encode_fixed(v, rng, want_decoded=True)

    def _encode_fixed(self, v, rng, want_decoded: bool) -> tuple[Message, np.ndarray | None]:
        seed = self._seed(self._need_rng(rng))
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (self.dim,):
            raise ValueError(f"v must have shape ({self.dim},), got {v.shape}")
        pending = self._pending
        if not self.adaptive:
            flag, levels32 = -1, _NO_LEVELS
        elif pending is None:
            flag, levels32 = 0, _NO_LEVELS
        else:
            flag = 1
            levels32 = np.concatenate([lv[1:-1] for lv in pending]).astype(np.float32)
        out = np.zeros(self.dim if want_decoded else 0)
        buf, n_bits = _encode_fixed_kernel(v, self._offsets, self._ltypes, self._ptab,
                                           self._pig, seed, self.index_bits, flag, levels32, out,
                                           self.s)
        if n_bits < 0:
            check_vector(v, self.dim)  # names NaN / inf entries
            raise ValueError("cannot quantize: a layer norm overflows float32")
        self._pending = None
        return Message(buf.tobytes(), int(n_bits)), (out if want_decoded else None)

    def pack(self, qv: QuantizedVector, code: str | None = None) -> Message:
        """Write an already quantized vector as a bitstream (default: this quantizer's code)."""
        code = self.code if code is None else code
        if code not in CODES:
            raise ValueError(f"code must be one of {CODES}, got {code!r}")
        w = BitWriter()
        self._header(w, qv.norms, qv.new_levels)
        idx = qv.index
        if code == "fixed":
            b = self.index_bits
            w.uints((qv.negative.astype(np.uint64) << np.uint64(b)) | idx.astype(np.uint64),
                    1 + b)
            return w.message()
        if code == "gamma":
            w.codewords(idx + 1, gamma_lengths(idx + 1))
        else:
            off = self._offsets
            for li in range(self.lmap.n_layers):
                part = idx[off[li]: off[li + 1]]
                lengths = huffman_lengths(np.bincount(part, minlength=self.s + 2))
                w.uints(lengths, 5)
                w.codewords(canonical_codes(lengths)[part], lengths[part])
        w.uints(qv.negative[idx > 0], 1)
        return w.message()

    def histogram(self, qv: QuantizedVector) -> np.ndarray:
        """Counts of each level index per layer, shape ``(n_layers, s + 2)``."""
        n = self.s + 2
        flat = np.bincount(self._layer_of * n + qv.index, minlength=self.lmap.n_layers * n)
        return flat.reshape(self.lmap.n_layers, n)

    def bits(self, qv: QuantizedVector, code: str | None = None) -> int:
        """Exact size of ``qv`` under ``code`` (default: this quantizer's code)."""
        return self.bits_from_histogram(self.histogram(qv), qv.new_levels is not None, code)

    def bits_from_histogram(self, hist: np.ndarray, with_levels: bool,
                            code: str | None = None) -> int:
        """Exact message size from the per-layer index counts (see :meth:`histogram`)."""
        code = self.code if code is None else code
        if code not in CODES:
            raise ValueError(f"code must be one of {CODES}, got {code!r}")
        header = self._header_bits(with_levels)
        if code == "fixed":
            return header + self.dim * (1 + self.index_bits)
        hist = np.asarray(hist, dtype=np.int64)
        nnz = int(hist[:, 1:].sum())
        if code == "gamma":
            glen = gamma_lengths(np.arange(1, self.s + 3))
            return header + int(hist.sum(axis=0) @ glen) + nnz
        body = sum(int(row @ huffman_lengths(row)) for row in hist)
        return header + self.lmap.n_layers * 5 * (self.s + 2) + body + nnz

    def _read_header(self, rd: BitReader) -> tuple[np.ndarray, list[np.ndarray] | None]:
        s, lm = self.s, self.lmap
        new_levels = None
        if self.adaptive and rd.uints(1, 1)[0]:
            inner = rd.float32s(s * lm.n_types).reshape(lm.n_types, s)
            new_levels = [np.concatenate([[0.0], inner[t], [1.0]]) for t in range(lm.n_types)]
            self.levels = new_levels  # checked by the setter
        norms = rd.float32s(lm.n_layers)
        if not np.all(np.isfinite(norms)) or np.any(norms < 0):
            raise ValueError("corrupt message: layer norms must be finite and >= 0")
        return norms, new_levels

    def read(self, msg: Message) -> QuantizedVector:
        """Read a message into its quantized content (updating the levels if it carries new
        ones)."""
        if not isinstance(msg, Message):
            raise TypeError("read expects a sparsecert.distributed.comm.Message")
        rd = BitReader(msg)
        d, s, lm = self.dim, self.s, self.lmap
        norms, new_levels = self._read_header(rd)
        if self.code == "fixed":
            b = self.index_bits
            codes = rd.uints(d, 1 + b)
            negative = (codes >> b).astype(bool)
            index = codes & ((1 << b) - 1)
        else:
            if self.code == "gamma":
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

    def read_add(self, msg: Message, out: np.ndarray) -> tuple[np.ndarray, bool]:
        """``out += decode(msg)``; returns the per-layer index counts and whether the message
        carried new levels (what :meth:`bits_from_histogram` needs). Raises ``ValueError`` on
        a corrupt message (then ``out`` may hold part of the sum)."""
        if self.code != "fixed":
            qv = self.read(msg)
            out += self.dequantize(qv)
            return self.histogram(qv), qv.new_levels is not None
        if not isinstance(msg, Message):
            raise TypeError("decode expects a sparsecert.distributed.comm.Message")
        hist = np.zeros((self.lmap.n_layers, self.s + 2), dtype=np.int64)
        table = self._table.copy()
        status, got, _ = _decode_fixed_kernel(
            np.frombuffer(msg.payload, dtype=np.uint8), msg.n_bits, self.adaptive, self.s,
            table, self._offsets, self._ltypes, self.index_bits, out, hist)
        if status < 0:
            raise ValueError({-1: "truncated message or trailing bits: the stream length does "
                                  "not match the header",
                              -2: "corrupt message: the levels must increase strictly in (0, 1)",
                              -3: "corrupt message: layer norms must be finite and >= 0",
                              -4: "corrupt message: level index out of range"}[int(status)])
        if got:
            self.levels = list(table)
        return hist, bool(got)

    def decode(self, msg: Message) -> np.ndarray:
        """Decode a message (updating the levels if it carries new ones)."""
        out = np.zeros(self.dim)
        self.read_add(msg, out)
        return out

    def decode_add(self, msg: Message, out: np.ndarray, scale: float = 1.0) -> None:
        if scale == 1.0:
            self.read_add(msg, out)
        else:
            out += scale * self.decode(msg)


class RandomQuantizer(Quantizer):
    """The QSGD quantizer: unbiased random rounding to ``levels`` uniform steps (l2 norm).

    ``C(v)_j = ||v|| sign(v_j) xi_j / levels`` where ``xi_j`` rounds ``levels |v_j| / ||v||`` up
    or down at random so that ``E[xi_j] = levels |v_j| / ||v||``. The norm is sent as float32,
    rounded *up*, and the levels are computed from the value sent, so the decoded vector is
    exactly unbiased. ``omega = min(d / levels^2, sqrt(d) / levels)``. This is a
    :class:`Quantizer` over one layer with ``s = levels - 1`` uniform inner levels; the
    fixed-code message has ``32 + d (1 + ceil(log2(levels + 1)))`` bits.

    Parameters
    ----------
    dim : int
        Vector dimension.
    levels : int
        Number of quantization steps ``1 <= levels <= 31``.
    code : {"fixed", "gamma", "huffman"}
    """

    def __init__(self, dim: int, levels: int = 1, code: str = "fixed") -> None:
        if isinstance(levels, bool) or int(levels) != levels or not 1 <= levels <= 31:
            raise ValueError(f"levels must be an integer in [1, 31], got {levels!r}")
        if isinstance(dim, bool) or int(dim) != dim or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        super().__init__(int(dim), int(levels) - 1, adaptive=False, code=code)
        self.qsgd_levels = int(levels)

    def __repr__(self) -> str:
        extra = "" if self.code == "fixed" else f", code={self.code!r}"
        return f"RandomQuantizer(dim={self.dim}, levels={self.qsgd_levels}{extra})"


def global_uniform(dim: int, s: int, code: str = "fixed") -> RandomQuantizer:
    """QSGD: one norm for the whole vector, ``s`` uniform inner levels (a RandomQuantizer with
    ``s + 1`` steps)."""
    return RandomQuantizer(int(dim), check_inner_levels(s) + 1, code)


def global_adaptive(dim: int, s: int, code: str = "fixed") -> Quantizer:
    """One norm for the whole vector, levels optimised for the empirical variance."""
    return Quantizer(int(dim), s, adaptive=True, code=code)


def layerwise_uniform(layers: Sequence[int] | LayerMap, s: int, code: str = "fixed",
                      types: Sequence[int] | None = None) -> Quantizer:
    """One norm per layer, uniform levels."""
    return Quantizer(layers, s, adaptive=False, code=code, types=types)


def layerwise_adaptive(layers: Sequence[int] | LayerMap, s: int, code: str = "fixed",
                       types: Sequence[int] | None = None) -> Quantizer:
    """One norm per layer and levels optimised per layer type."""
    return Quantizer(layers, s, adaptive=True, code=code, types=types)
