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

A :class:`Quantizer` has three entry points: ``encode``, ``decode`` and ``decode_add``.
``Message.n_bits`` is the exact length of the stream;
:func:`~sparsecert.distributed.quantize_codes.code_sizes` gives the size of a message's content
under every code (tested to agree with the encoders), and
:mod:`~sparsecert.distributed.quantize_codes` reads and writes that content. The fixed code is
written by one numba call per message (:mod:`~sparsecert.distributed.quantize_kernels`: norms,
rounding and packing) and read by one call per round
(:class:`~sparsecert.distributed.round_decoder.RoundDecoder`: all messages straight into the
receiver's sum).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sparsecert.distributed.dequantize_kernels import decode_fixed_kernel
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
from sparsecert.distributed.message import Message
from sparsecert.distributed.quantize_codes import (
    CODES,
    QuantizedVector,
    dequantize,
    quantize,
    read,
    write,
)
from sparsecert.distributed.quantize_kernels import (
    NO_LEVELS,
    PAD,
    encode_fixed_kernel,
    layer_norms,
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


# ----------------------------------------------------------------------------- variance
def _normalised(v: np.ndarray, lmap: LayerMap) -> tuple[np.ndarray, np.ndarray]:
    """Float32 (rounded-up) layer norms and normalised magnitudes ``u`` in [0, 1]."""
    norms = layer_norms(v, lmap.offsets)
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
        width = max(PAD, self.s + 2)
        self._ptab = np.full((len(lv), width), np.inf)
        self._ptab[:, :self.s + 2] = self._table
        self._pgap = np.zeros((len(lv), width))  # level differences, 0 from the last level on
        self._pgap[:, :self.s + 1] = np.diff(self._table, axis=1)

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
        norms = layer_norms(v, self._offsets)
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
        norms = layer_norms(v, self._offsets)
        if not np.all(np.isfinite(norms)):
            check_vector(v, self.dim)  # names NaN / inf entries
            raise ValueError("cannot quantize: a layer norm overflows float32")
        return v, norms

    # -- quantization
    @staticmethod
    def _seed(rng: np.random.Generator) -> np.uint64:
        """``rng.integers(0, 2**64, dtype=np.uint64)``; from a PCG64 generator that is its
        next raw 64-bit output, read directly (the same value, several microseconds less)."""
        bg = rng.bit_generator
        if type(bg) is np.random.PCG64:
            return np.uint64(bg.random_raw())
        return np.uint64(rng.integers(0, 2**64, dtype=np.uint64))

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        """Quantize ``v`` and write it as a bitstream in this quantizer's code."""
        if self.code != "fixed":
            return write(self, quantize(self, v, rng))
        return self._encode_fixed(v, rng)

    def _encode_fixed(self, v, rng) -> Message:
        seed = self._seed(self._need_rng(rng))
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (self.dim,):
            raise ValueError(f"v must have shape ({self.dim},), got {v.shape}")
        pending = self._pending
        if not self.adaptive:
            flag, levels32 = -1, NO_LEVELS
        elif pending is None:
            flag, levels32 = 0, NO_LEVELS
        else:
            flag = 1
            levels32 = np.concatenate([lv[1:-1] for lv in pending]).astype(np.float32)
        buf, n_bits = encode_fixed_kernel(v, self._offsets, self._ltypes, self._ptab,
                                           self._pgap, seed, self.index_bits, flag, levels32,
                                           _NO_OUT, self.s)
        if n_bits < 0:
            check_vector(v, self.dim)  # names NaN / inf entries
            raise ValueError("cannot quantize: a layer norm overflows float32")
        self._pending = None
        return Message(buf.tobytes(), int(n_bits))

    def _read_fixed(self, msg: Message, table: np.ndarray, out: np.ndarray, hist: np.ndarray,
                    keep_levels: bool = False) -> bool:
        tables = table[None]
        dst = out if out.flags.c_contiguous else np.ascontiguousarray(out)
        status, _, n_got, _, _ = decode_fixed_kernel(
            np.frombuffer(msg.payload, dtype=np.uint8),
            np.array([[len(msg.payload), msg.n_bits]], dtype=np.int64), self.adaptive, self.s,
            tables, self._offsets, self._ltypes, self.index_bits, dst,
            hist[None] if hist.size else _NO_HISTS, False)
        if status < 0:
            raise ValueError(_DECODE_ERRORS[int(status)])
        if dst is not out:
            out[:] = dst
        if n_got and not keep_levels:
            self.levels = list(tables[0])
        return bool(n_got)

    def decode(self, msg: Message) -> np.ndarray:
        """Decode a message (updating the levels if it carries new ones)."""
        out = np.zeros(self.dim)
        self.decode_add(msg, out)
        return out

    def decode_add(self, msg: Message, out: np.ndarray, scale: float = 1.0) -> None:
        """``out += scale * decode(msg)``. Raises ``ValueError`` on a corrupt message (then
        ``out`` is untouched with the fixed code, and may hold part of the sum with the
        others)."""
        if scale != 1.0:
            out += scale * self.decode(msg)
        elif self.code != "fixed":
            out += dequantize(self, read(self, msg))
        else:
            self._check_out(msg, out)
            self._read_fixed(msg, self._table.copy(), out, _NO_HIST)

    def _check_out(self, msg: Message, out: np.ndarray) -> None:
        if not isinstance(msg, Message):
            raise TypeError("decode expects a sparsecert.distributed.message.Message")
        if out.shape != (self.dim,) or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape ({self.dim},)")


_NO_HISTS = np.zeros((0, 0, 0), dtype=np.int64)
_NO_HIST = np.zeros((0, 0), dtype=np.int64)
_NO_OUT = np.zeros(0)
_DECODE_ERRORS = {
    -1: "truncated message or trailing bits: the stream length does not match the header",
    -2: "corrupt message: the levels must increase strictly in (0, 1)",
    -3: "corrupt message: layer norms must be finite and >= 0",
    -4: "corrupt message: level index out of range",
}


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
