"""Unbiased (layer-wise, adaptive) stochastic quantizers with real bitstream encoders.

A vector ``v`` is split into *layers* (contiguous blocks, :class:`LayerMap`). Each layer
``l`` is sent as its norm ``r_l = ||v_l||_2`` (float32), the signs of its coordinates and,
for every coordinate, the index of a *level* in a sequence
``0 = l_0 < l_1 < ... < l_s < l_{s+1} = 1`` shared by all layers of the same *type*. The
normalised magnitude ``u = |v_i| / r_l`` lies between two adjacent levels
``l_tau <= u <= l_{tau+1}`` and is rounded up with probability
``(u - l_tau) / (l_{tau+1} - l_tau)``, down otherwise, so the quantized vector is unbiased and
its variance is ``r_l^2 * sum_i (u_i - l_tau)(l_{tau+1} - u_i)`` (see
:func:`quantization_variance`).

Four quantizers are provided (constructors :func:`global_uniform`, :func:`global_adaptive`,
:func:`layerwise_uniform`, :func:`layerwise_adaptive`): one layer (global) or a layer map, and
uniform levels (QSGD-like) or levels re-optimised to minimise the empirical variance
(:func:`optimize_levels`: exact coordinate descent, several initialisations, best kept).

Encoding
--------
Every message is a real bitstream (MSB first):

* 1 bit: whether new levels follow;
* if so, for each layer type, its ``s`` inner levels as float32 (``32 s`` bits per type);
* for each layer, its norm as float32 (32 bits; rounded *up* to float32 so that ``u <= 1``);
* ``code="fixed"``: ``d`` sign bits, then ``d`` level indices of ``ceil(log2(s + 2))`` bits;
* ``code="gamma"``: the indices as Elias-gamma codes of ``index + 1``, then one sign bit per
  coordinate with a non-zero index;
* ``code="huffman"``: per layer, ``s + 2`` code lengths of 5 bits (0 = symbol absent) defining a
  canonical Huffman code of that layer's indices, the coded indices, then the signs of the
  non-zero coordinates.

``Message.n_bits`` is the exact length of the stream; :func:`encoded_bits` gives the size of
any code for an already quantized vector without building the stream (tested to agree).
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from sparsecert.distributed.comm import Message

__all__ = [
    "LayerMap",
    "QuantizedVector",
    "Quantizer",
    "IdentityQuantizer",
    "global_uniform",
    "global_adaptive",
    "layerwise_uniform",
    "layerwise_adaptive",
    "uniform_levels",
    "optimize_levels",
    "levels_variance",
    "quantization_variance",
    "encoded_bits",
    "CODES",
]

CODES = ("fixed", "gamma", "huffman")
_MAX_S = 30  # s + 2 <= 32 symbols: Huffman code lengths fit in 5 bits


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


def uniform_levels(s: int) -> np.ndarray:
    """QSGD levels ``0, 1/(s+1), ..., 1`` (``s`` inner levels)."""
    _check_s(s)
    return np.arange(s + 2, dtype=np.float64) / (s + 1)


def _check_s(s: int) -> None:
    if int(s) != s or not 0 <= s <= _MAX_S:
        raise ValueError(f"the number of inner levels s must be an integer in [0, {_MAX_S}], "
                         f"got {s!r}")


def _check_levels(levels: np.ndarray) -> np.ndarray:
    lv = np.asarray(levels, dtype=np.float64)
    if lv.ndim != 1 or lv.size < 2:
        raise ValueError("levels must be a 1-D array with at least the two end points 0, 1")
    if lv[0] != 0.0 or lv[-1] != 1.0 or np.any(np.diff(lv) <= 0) or not np.all(np.isfinite(lv)):
        raise ValueError("levels must increase strictly from 0 to 1")
    return lv


def _check_vector(v: np.ndarray, d: int) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if arr.shape != (d,):
        raise ValueError(f"expected a vector of shape ({d},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("cannot quantize a vector with NaN or inf entries")
    return arr


def _float32_up(x: np.ndarray) -> np.ndarray:
    """Smallest float32 values >= x (as float64)."""
    x32 = x.astype(np.float32)
    low = x32.astype(np.float64) < x
    x32[low] = np.nextafter(x32[low], np.float32(np.inf))
    return x32.astype(np.float64)


# ----------------------------------------------------------------------------- variance
def levels_variance(u: np.ndarray, w: np.ndarray, levels: np.ndarray) -> float:
    """Empirical variance ``sum_j w_j (u_j - l_tau)(l_{tau+1} - u_j)`` of samples in [0, 1]."""
    lv = np.asarray(levels, dtype=np.float64)
    tau = np.clip(np.searchsorted(lv, u, side="right") - 1, 0, lv.size - 2)
    return float(np.sum(w * (u - lv[tau]) * (lv[tau + 1] - u)))


def _normalised(v: np.ndarray, lmap: LayerMap) -> tuple[np.ndarray, np.ndarray]:
    """Float32 (rounded-up) layer norms and normalised magnitudes ``u`` in [0, 1]."""
    sq = np.add.reduceat(v * v, lmap.offsets[:-1])
    norms = _float32_up(np.sqrt(sq))
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
    v = _check_vector(v, lmap.dim)
    lv_list = _levels_per_type(levels, lmap.n_types)
    norms, u = _normalised(v, lmap)
    w = norms[lmap.layer_of] ** 2
    tid = lmap.type_of
    return float(sum(levels_variance(u[tid == t], w[tid == t], lv_list[t])
                     for t in range(lmap.n_types)))


def _levels_per_type(levels, n_types: int) -> list[np.ndarray]:
    if isinstance(levels, np.ndarray) and levels.ndim == 1:
        return [_check_levels(levels)] * n_types
    out = [_check_levels(lv) for lv in levels]
    if len(out) != n_types:
        raise ValueError(f"got {len(out)} level arrays for {n_types} layer types")
    return out


# ----------------------------------------------------------------------------- level optimisation
def _cd_levels(us: np.ndarray, ws: np.ndarray, levels: np.ndarray, max_sweeps: int,
               rtol: float) -> tuple[np.ndarray, float]:
    """Exact coordinate descent on the inner levels (samples sorted ascending)."""
    cw = np.concatenate([[0.0], np.cumsum(ws)])
    cwu = np.concatenate([[0.0], np.cumsum(ws * us)])
    lv = _cd_kernel(us, cw, cwu, levels.astype(np.float64).copy(), int(max_sweeps), float(rtol))
    lv = _strictly_increasing_float32(lv)
    return lv, levels_variance(us, ws, lv)


@njit(cache=True, nogil=True)
def _sorted_variance(us, cw, lv):  # pragma: no cover - compiled
    # sum_j w_j (u_j - a)(b - u_j) over the sorted samples of each cell [a, b)
    total = 0.0
    m = us.size
    start = 0
    for i in range(lv.size - 1):
        a, b = lv[i], lv[i + 1]
        stop = np.searchsorted(us, b, side="left") if i < lv.size - 2 else m
        for j in range(start, stop):
            w = cw[j + 1] - cw[j]
            total += w * (us[j] - a) * (b - us[j])
        start = stop
    return total


@njit(cache=True, nogil=True)
def _cd_kernel(us, cw, cwu, lv, max_sweeps, rtol):  # pragma: no cover - compiled
    """Each inner level in turn is set to its exact minimiser given its neighbours: with
    ``a, b`` the neighbours, ``f(x) = sum_{u<x} w(u-a)(x-u) + sum_{u>=x} w(u-x)(b-u)`` is
    convex piecewise linear with slope ``D(j) = L(j) - R(j)`` right of the j-th sample in
    ``(a, b)`` (non-decreasing), so the minimiser is the sample where D turns >= 0 (binary
    search on prefix sums)."""
    best = _sorted_variance(us, cw, lv)
    for _ in range(max_sweeps):
        for i in range(1, lv.size - 1):
            a, b = lv[i - 1], lv[i + 1]
            lo = np.searchsorted(us, a, side="right")
            hi = np.searchsorted(us, b, side="left")
            if hi <= lo:
                continue
            left_j, right_j = lo + 1, hi + 1  # search j in [lo+1, hi]; hi+1 = "none"
            while left_j < right_j:
                j = (left_j + right_j) // 2
                lft = (cwu[j] - cwu[lo]) - a * (cw[j] - cw[lo])
                rgt = b * (cw[hi] - cw[j]) - (cwu[hi] - cwu[j])
                if lft - rgt >= 0.0:
                    right_j = j
                else:
                    left_j = j + 1
            k = min(left_j - (lo + 1), hi - lo - 1)
            x = us[lo + k]
            lv[i] = min(max(x, a), b)
        val = _sorted_variance(us, cw, lv)
        done = best - val <= rtol * max(best, 1e-300)
        best = min(best, val)
        if done:
            break
    return lv


def _strictly_increasing_float32(lv: np.ndarray) -> np.ndarray:
    """Round inner levels to float32 and make the sequence strictly increasing."""
    out = lv.astype(np.float32)
    out[0], out[-1] = 0.0, 1.0
    for i in range(1, out.size - 1):
        if out[i] <= out[i - 1]:
            out[i] = np.nextafter(out[i - 1], np.float32(1.0))
    for i in range(out.size - 2, 0, -1):
        if out[i] >= out[i + 1]:
            out[i] = np.nextafter(out[i + 1], np.float32(0.0))
    return out.astype(np.float64)


def optimize_levels(u: np.ndarray, w: np.ndarray | None, s: int, *,
                    inits: Sequence[str | np.ndarray] = ("uniform", "exponential", "quantile"),
                    max_sweeps: int = 30, rtol: float = 1e-7) -> tuple[np.ndarray, float]:
    """Levels minimising the empirical variance ``sum_j w_j (u_j - l_tau)(l_{tau+1} - u_j)``.

    Coordinate descent where each inner level is set to its exact minimiser given its two
    neighbours (the objective in one level is convex piecewise linear, minimised at a sample),
    run from each initialisation; the best result is returned.

    Parameters
    ----------
    u : numpy.ndarray
        Samples in [0, 1] (normalised magnitudes).
    w : numpy.ndarray or None
        Non-negative weights (squared layer norms); ``None`` means all ones.
    s : int
        Number of inner levels.
    inits : sequence
        ``"uniform"``, ``"exponential"`` (``2^-(s+1-j)``), ``"quantile"`` (weighted quantiles) or
        explicit level arrays.

    Returns
    -------
    levels : numpy.ndarray
        ``s + 2`` float32-representable levels from 0 to 1, strictly increasing.
    variance : float
        Their empirical variance.
    """
    _check_s(s)
    u = np.asarray(u, dtype=np.float64).ravel()
    w = np.ones_like(u) if w is None else np.asarray(w, dtype=np.float64).ravel()
    if u.shape != w.shape:
        raise ValueError(f"u and w must have the same length, got {u.size} and {w.size}")
    if np.any(~np.isfinite(u)) or np.any((u < 0) | (u > 1)):
        raise ValueError("samples u must lie in [0, 1]")
    if np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative")
    if len(inits) == 0:
        raise ValueError("at least one initialisation is needed")
    order = np.argsort(u, kind="stable")
    us, ws = u[order], w[order]
    best_lv, best_val = None, np.inf
    for init in inits:
        if isinstance(init, str):
            if init == "uniform":
                lv0 = uniform_levels(s)
            elif init == "exponential":
                lv0 = np.concatenate([[0.0], 2.0 ** -np.arange(s, 0, -1, dtype=np.float64), [1.0]])
            elif init == "quantile":
                cw = np.cumsum(ws)
                if cw.size == 0 or cw[-1] <= 0:
                    lv0 = uniform_levels(s)
                else:
                    q = np.arange(1, s + 1) / (s + 1) * cw[-1]
                    lv0 = np.concatenate([[0.0], us[np.searchsorted(cw, q)], [1.0]])
            else:
                raise ValueError(f"unknown initialisation {init!r}")
        else:
            lv0 = np.asarray(init, dtype=np.float64)
            if lv0.shape != (s + 2,):
                raise ValueError(f"an explicit initialisation needs {s + 2} levels")
        lv0 = _strictly_increasing_float32(np.clip(lv0, 0.0, 1.0))
        lv, val = _cd_levels(us, ws, lv0, max_sweeps, rtol)
        if val < best_val:
            best_lv, best_val = lv, val
    return best_lv, float(best_val)


# ----------------------------------------------------------------------------- bit packing
def _pack(values: np.ndarray, lengths: np.ndarray) -> tuple[bytes, int]:
    """Concatenate codewords (``lengths[i]`` low bits of ``values[i]``, MSB first)."""
    values = np.ascontiguousarray(values, dtype=np.uint64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if np.any(lengths < 0) or np.any(lengths > 64):
        raise ValueError("codeword lengths must be in [0, 64]")
    total = int(lengths.sum())
    return _pack_kernel(values, lengths, total).tobytes(), total


@njit(cache=True, nogil=True)
def _pack_kernel(values, lengths, total):  # pragma: no cover - compiled
    out = np.zeros((total + 7) // 8, dtype=np.uint8)
    pos = 0
    for i in range(values.size):
        v = values[i]
        for k in range(lengths[i] - 1, -1, -1):
            if (v >> np.uint64(k)) & np.uint64(1):
                out[pos >> 3] |= np.uint8(1 << (7 - (pos & 7)))
            pos += 1
    return out


@njit(cache=True, nogil=True)
def _read_uints(bits, pos, count, width):  # pragma: no cover - compiled
    out = np.empty(count, dtype=np.int64)
    for c in range(count):
        val = 0
        for _ in range(width):
            val = (val << 1) | bits[pos]
            pos += 1
        out[c] = val
    return out


class _BitReader:
    def __init__(self, msg: Message) -> None:
        self.bits = np.unpackbits(np.frombuffer(msg.payload, dtype=np.uint8))[: msg.n_bits]
        self.pos = 0

    def uints(self, count: int, width: int) -> np.ndarray:
        if width == 0:
            return np.zeros(count, dtype=np.int64)
        if self.pos + count * width > self.bits.size:
            raise ValueError("truncated message: the bitstream ends early")
        out = _read_uints(self.bits, self.pos, count, width)
        self.pos += count * width
        return out

    def float32s(self, count: int) -> np.ndarray:
        return self.uints(count, 32).astype(np.uint32).view(np.float32).astype(np.float64)

    def gamma(self, count: int) -> np.ndarray:
        out, pos = _gamma_decode(self.bits, self.pos, count)
        if pos < 0:
            raise ValueError("corrupt Elias-gamma stream")
        self.pos = pos
        return out

    def huffman(self, count: int, lengths: np.ndarray) -> np.ndarray:
        first, cnt, offs, syms = _canonical_tables(lengths)
        out, pos = _huffman_decode(self.bits, self.pos, count, first, cnt, offs, syms)
        if pos < 0:
            raise ValueError("corrupt Huffman stream")
        self.pos = pos
        return out


@njit(cache=True, nogil=True)
def _gamma_decode(bits, pos, count):  # pragma: no cover - compiled
    out = np.empty(count, dtype=np.int64)
    n = bits.size
    for c in range(count):
        z = 0
        while pos < n and bits[pos] == 0:
            z += 1
            pos += 1
        if pos + z + 1 > n:
            return out, -1
        val = 0
        for _ in range(z + 1):
            val = (val << 1) | bits[pos]
            pos += 1
        out[c] = val - 1
    return out, pos


@njit(cache=True, nogil=True)
def _huffman_decode(bits, pos, count, first, cnt, offs, syms):  # pragma: no cover - compiled
    out = np.empty(count, dtype=np.int64)
    n = bits.size
    maxlen = first.size - 1
    for c in range(count):
        code = 0
        length = 0
        found = False
        while length < maxlen:
            if pos >= n:
                return out, -1
            code = (code << 1) | bits[pos]
            pos += 1
            length += 1
            k = code - first[length]
            if k >= 0 and k < cnt[length]:
                out[c] = syms[offs[length] + k]
                found = True
                break
        if not found:
            return out, -1
    return out, pos


@njit(cache=True, nogil=True)
def _round_kernel(v, norms, offsets, ltype, table, rnd):  # pragma: no cover - compiled
    """Level index of each coordinate: ``u = min(|v_i| / r_l, 1)`` lies in
    ``[l_tau, l_{tau+1}]`` (largest such ``tau <= s``); round up with probability
    ``(u - l_tau) / (l_{tau+1} - l_tau)`` using the uniform ``rnd[i]``."""
    index = np.empty(v.size, dtype=np.int64)
    ns = table.shape[1]
    for layer in range(offsets.size - 1):
        r = norms[layer]
        lv = table[ltype[layer]]
        for i in range(offsets[layer], offsets[layer + 1]):
            u = min(abs(v[i]) / r, 1.0) if r > 0 else 0.0
            lo, hi = 0, ns - 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if lv[mid] <= u:
                    lo = mid
                else:
                    hi = mid
            p = (u - lv[lo]) / (lv[lo + 1] - lv[lo])
            index[i] = lo + 1 if rnd[i] < p else lo
    return index


def _huffman_lengths(freq: np.ndarray) -> np.ndarray:
    """Huffman code lengths for the symbol frequencies (0 for absent symbols)."""
    lengths = np.zeros(freq.size, dtype=np.int64)
    present = np.flatnonzero(freq > 0)
    if present.size == 1:
        lengths[present[0]] = 1
        return lengths
    heap = [(int(freq[i]), int(i), [int(i)]) for i in present]
    heapq.heapify(heap)
    while len(heap) > 1:
        f1, k1, s1 = heapq.heappop(heap)
        f2, k2, s2 = heapq.heappop(heap)
        for sym in s1 + s2:
            lengths[sym] += 1
        heapq.heappush(heap, (f1 + f2, min(k1, k2), s1 + s2))
    return lengths


def _canonical_codes(lengths: np.ndarray) -> np.ndarray:
    """Canonical Huffman codewords for the given lengths."""
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
    maxlen = int(lengths.max()) if lengths.size else 0
    first = np.zeros(maxlen + 1, dtype=np.int64)
    cnt = np.zeros(maxlen + 1, dtype=np.int64)
    offs = np.zeros(maxlen + 1, dtype=np.int64)
    order = sorted((int(lengths[i]), i) for i in range(lengths.size) if lengths[i] > 0)
    syms = np.array([s for _, s in order], dtype=np.int64)
    code, idx = 0, 0
    for ln in range(1, maxlen + 1):
        code <<= 1
        first[ln] = code
        offs[ln] = idx
        c = sum(1 for l_, _ in order if l_ == ln)
        cnt[ln] = c
        code += c
        idx += c
    return first, cnt, offs, syms


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


def _gamma_len(n: np.ndarray) -> np.ndarray:
    """Elias-gamma code length of positive integers."""
    nb = np.floor(np.log2(n.astype(np.float64))).astype(np.int64)
    # guard against floating point in log2 for exact powers of two
    nb = np.where((np.int64(1) << (nb + 1)) <= n, nb + 1, nb)
    nb = np.where((np.int64(1) << nb) > n, nb - 1, nb)
    return 2 * nb + 1


def _segments(qv: QuantizedVector, lmap: LayerMap, s: int, code: str
              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Codeword segments (values, lengths) of a message, in stream order."""
    if code not in CODES:
        raise ValueError(f"code must be one of {CODES}, got {code!r}")
    d = lmap.dim
    seg: list[tuple[np.ndarray, np.ndarray]] = []
    flag = qv.new_levels is not None
    seg.append((np.array([int(flag)]), np.array([1])))
    if flag:
        inner = np.concatenate([lv[1:-1] for lv in qv.new_levels]).astype(np.float32)
        seg.append((inner.view(np.uint32).astype(np.uint64), np.full(inner.size, 32)))
    n32 = qv.norms.astype(np.float32).view(np.uint32).astype(np.uint64)
    seg.append((n32, np.full(n32.size, 32)))
    idx = qv.index
    if code == "fixed":
        width = int(np.ceil(np.log2(s + 2)))
        seg.append((qv.negative.astype(np.uint64), np.ones(d, dtype=np.int64)))
        seg.append((idx.astype(np.uint64), np.full(d, width)))
        return seg
    if code == "gamma":
        seg.append(((idx + 1).astype(np.uint64), _gamma_len(idx + 1)))
    else:
        off = lmap.offsets
        for li in range(lmap.n_layers):
            part = idx[off[li]: off[li + 1]]
            lengths = _huffman_lengths(np.bincount(part, minlength=s + 2))
            codes = _canonical_codes(lengths)
            seg.append((lengths.astype(np.uint64), np.full(s + 2, 5)))
            seg.append((codes[part], lengths[part]))
    nz = idx > 0
    seg.append((qv.negative[nz].astype(np.uint64), np.ones(int(nz.sum()), dtype=np.int64)))
    return seg


def encoded_bits(qv: QuantizedVector, lmap: LayerMap, s: int, code: str) -> int:
    """Exact size in bits of the message ``qv`` under ``code`` (without building it)."""
    if code not in CODES:
        raise ValueError(f"code must be one of {CODES}, got {code!r}")
    d, idx = lmap.dim, qv.index
    header = 1 + 32 * lmap.n_layers
    if qv.new_levels is not None:
        header += 32 * s * len(qv.new_levels)
    if code == "fixed":
        return header + d * (1 + int(np.ceil(np.log2(s + 2))))
    nnz = int(np.count_nonzero(idx))
    if code == "gamma":
        glen = _gamma_len(np.arange(1, s + 3))
        return header + int(glen[idx].sum()) + nnz
    freq = np.bincount(lmap.layer_of * (s + 2) + idx, minlength=lmap.n_layers * (s + 2))
    freq = freq.reshape(lmap.n_layers, s + 2)
    body = sum(int(freq[li] @ _huffman_lengths(freq[li])) for li in range(lmap.n_layers))
    return header + lmap.n_layers * 5 * (s + 2) + body + nnz


# ----------------------------------------------------------------------------- quantizers
class Quantizer:
    """Unbiased stochastic quantizer over a layer map, with encoder and decoder.

    One instance holds the current levels (one array per layer type). A worker encodes with
    its own instance; the receiver decodes with a *copy* (:meth:`clone`) kept in sync by the
    levels that travel inside messages.

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
        The code used by :meth:`encode`.
    inits : sequence
        Initialisations tried by :func:`optimize_levels`.
    """

    def __init__(self, layers: int | Sequence[int] | LayerMap, s: int, *, adaptive: bool = False,
                 types: Sequence[int] | None = None, code: str = "fixed",
                 inits: Sequence[str] = ("uniform", "exponential", "quantile")) -> None:
        _check_s(s)
        if code not in CODES:
            raise ValueError(f"code must be one of {CODES}, got {code!r}")
        self.lmap = LayerMap.make(layers, types)
        self.s = int(s)
        self.adaptive = bool(adaptive)
        self.code = code
        self.inits = tuple(inits)
        self.levels = [uniform_levels(s) for _ in range(self.lmap.n_types)]
        self._pending: list[np.ndarray] | None = None
        self._layer_of = self.lmap.layer_of
        self._offsets = self.lmap.offsets
        self._ltypes = np.asarray(self.lmap.types, dtype=np.int64)
        self._type_of = self.lmap.type_of

    @property
    def dim(self) -> int:
        return self.lmap.dim

    @property
    def index_bits(self) -> int:
        """Bits of one fixed-length level index."""
        return int(np.ceil(np.log2(self.s + 2)))

    def clone(self) -> Quantizer:
        """An independent copy (e.g. the receiver's decoder)."""
        return copy.deepcopy(self)

    def fixed_bits(self, with_levels: bool = False) -> int:
        """Analytic size of a fixed-length message."""
        extra = 32 * self.s * self.lmap.n_types if with_levels else 0
        return 1 + extra + 32 * self.lmap.n_layers + self.dim * (1 + self.index_bits)

    # -- levels
    def adapt(self, v: np.ndarray) -> list[np.ndarray]:
        """Re-optimise each type's levels on ``v`` (normalised per layer, weighted by the
        squared layer norms); the new levels go out with the next encoded message."""
        if not self.adaptive:
            raise ValueError("adapt() called on a non-adaptive quantizer")
        v = _check_vector(v, self.dim)
        norms, u = _normalised(v, self.lmap)
        w = norms[self._layer_of] ** 2
        new = []
        for t in range(self.lmap.n_types):
            m = self._type_of == t
            inits = (*self.inits, self.levels[t])
            lv, _ = optimize_levels(u[m], w[m], self.s, inits=inits)
            new.append(lv)
        self.levels = new
        self._pending = [lv.copy() for lv in new]
        return new

    # -- quantization
    def quantize(self, v: np.ndarray, rng: np.random.Generator) -> QuantizedVector:
        """Stochastic unbiased rounding of ``v`` (consumes ``d`` uniforms from ``rng``)."""
        v = _check_vector(v, self.dim)
        sq = np.add.reduceat(v * v, self._offsets[:-1])
        norms = _float32_up(np.sqrt(sq))
        table = np.ascontiguousarray(np.stack(self.levels))
        index = _round_kernel(v, norms, self._offsets, self._ltypes,
                              table, rng.random(self.dim))
        qv = QuantizedVector(norms, index, v < 0, self._pending)
        self._pending = None
        return qv

    def dequantize(self, qv: QuantizedVector) -> np.ndarray:
        """The vector represented by ``qv`` under the current levels."""
        table = np.stack(self.levels)  # (n_types, s + 2)
        mag = qv.norms[self._layer_of] * table[self._type_of, qv.index]
        return np.where(qv.negative, -mag, mag)

    def __call__(self, v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Quantize and return the reconstructed vector (no encoding)."""
        return self.dequantize(self.quantize(v, rng))

    # -- coding
    def encode(self, v: np.ndarray, rng: np.random.Generator, code: str | None = None
               ) -> tuple[Message, QuantizedVector]:
        """Quantize ``v`` and encode it as a real bitstream."""
        qv = self.quantize(v, rng)
        return self.encode_quantized(qv, code), qv

    def encode_quantized(self, qv: QuantizedVector, code: str | None = None) -> Message:
        segs = _segments(qv, self.lmap, self.s, self.code if code is None else code)
        payload, n_bits = _pack(np.concatenate([s[0] for s in segs]),
                                np.concatenate([s[1] for s in segs]))
        return Message(payload, n_bits)

    def bits(self, qv: QuantizedVector, code: str | None = None) -> int:
        """Exact size of ``qv`` under ``code`` (default: this quantizer's code)."""
        return encoded_bits(qv, self.lmap, self.s, self.code if code is None else code)

    def decode(self, msg: Message, code: str | None = None) -> tuple[np.ndarray, QuantizedVector]:
        """Decode a message (updating the levels if it carries new ones)."""
        code = self.code if code is None else code
        if code not in CODES:
            raise ValueError(f"code must be one of {CODES}, got {code!r}")
        rd = _BitReader(msg)
        d, s, lm = self.dim, self.s, self.lmap
        new_levels = None
        if rd.uints(1, 1)[0]:
            inner = rd.float32s(s * lm.n_types).reshape(lm.n_types, s)
            new_levels = [np.concatenate([[0.0], inner[t], [1.0]]) for t in range(lm.n_types)]
            self.levels = [_check_levels(lv) for lv in new_levels]
        norms = rd.float32s(lm.n_layers)
        if code == "fixed":
            negative = rd.uints(d, 1).astype(bool)
            index = rd.uints(d, self.index_bits)
        else:
            if code == "gamma":
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
        if np.any(index > s + 1) or np.any(index < 0):
            raise ValueError("corrupt message: level index out of range")
        if rd.pos != msg.n_bits:
            raise ValueError(f"message has {msg.n_bits - rd.pos} trailing bits")
        qv = QuantizedVector(norms, index, negative, new_levels)
        return self.dequantize(qv), qv


class IdentityQuantizer:
    """Lossless 'quantizer': the vector as raw little-endian floats (``dtype`` bits each)."""

    adaptive = False

    def __init__(self, dim: int, dtype: str = "float64") -> None:
        if int(dim) != dim or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        if dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
        self.lmap = LayerMap.make(int(dim))
        self.dtype = dtype
        self.code = "fixed"

    @property
    def dim(self) -> int:
        return self.lmap.dim

    def clone(self) -> IdentityQuantizer:
        return IdentityQuantizer(self.dim, self.dtype)

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None, code=None):
        from sparsecert.distributed.comm import encode_dense

        v = _check_vector(v, self.dim)
        return encode_dense(v, self.dtype), None

    def decode(self, msg: Message, code=None):
        from sparsecert.distributed.comm import decode_dense

        if msg.n_bits != self.dim * np.dtype(self.dtype).itemsize * 8:
            raise ValueError("message size does not match the dimension")
        return decode_dense(msg, self.dtype), None

    def bits(self, qv, code=None) -> int:
        return self.dim * np.dtype(self.dtype).itemsize * 8


def global_uniform(dim: int, s: int, code: str = "fixed") -> Quantizer:
    """QSGD-like: one norm for the whole vector, uniform levels."""
    return Quantizer(int(dim), s, adaptive=False, code=code)


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
