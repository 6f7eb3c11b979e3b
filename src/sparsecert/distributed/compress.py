"""Compressors that produce real encoded messages with exact bit counts.

Every compressor maps a vector ``v`` of a fixed dimension ``d`` to a
:class:`~sparsecert.distributed.comm.Message` whose ``payload`` holds the bytes actually sent and
whose ``n_bits`` is the exact length of the encoding; :meth:`Compressor.decode` reads the
payload back. The algorithms always use the *decoded* vector, so what they compute is exactly
what a receiver could reconstruct from the bits counted.

Encodings (no headers: ``d``, ``k`` and the value type are agreed in advance):

* :class:`TopK` and :class:`RandK`: ``k`` values (float32 by default) followed by the ``k``
  indices in increasing order, each bit-packed with ``ceil(log2 d)`` bits:
  ``k * (32 + ceil(log2 d))`` bits.
* :class:`Identity`: the dense vector, ``32 d`` bits (float32) or ``64 d`` (float64).
* :class:`RandomQuantizer` (QSGD-style, ``s`` levels): the norm as float32, then for every
  coordinate a sign bit and the level in ``ceil(log2(s + 1))`` bits:
  ``32 + d * (1 + ceil(log2(s + 1)))`` bits.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from sparsecert.distributed.comm import Message

__all__ = [
    "Compressor",
    "TopK",
    "RandK",
    "RandomQuantizer",
    "Identity",
    "index_bits",
    "pack_uints",
    "unpack_uints",
    "topk_indices",
]

_VALUE_DTYPES = {"float32": 32, "float64": 64}


def index_bits(d: int) -> int:
    """Bits needed to write an index in ``{0, ..., d - 1}``: ``ceil(log2 d)`` (0 when d = 1)."""
    if int(d) != d or d < 1:
        raise ValueError(f"dimension must be a positive integer, got {d!r}")
    return (int(d) - 1).bit_length()


def pack_uints(values: np.ndarray, width: int) -> bytes:
    """Bit-pack non-negative integers, ``width`` bits each, most significant bit first.

    The result has ``ceil(len(values) * width / 8)`` bytes (the last one zero-padded).
    """
    values = np.asarray(values, dtype=np.int64)
    count = values.size
    if width == 0 or count == 0:
        if width == 0 and np.any(values != 0):
            raise ValueError("width 0 can only encode zeros")
        return b""
    if values.min() < 0 or values.max() >= (1 << width):
        raise ValueError(f"values do not fit in {width} bits")
    nbytes = -(-count * width // 8)
    if count <= 64:  # small messages: one Python integer is fastest
        acc = 0
        for v in values.tolist():
            acc = (acc << width) | v
        return (acc << (8 * nbytes - count * width)).to_bytes(nbytes, "big")
    shifts = np.arange(width - 1, -1, -1, dtype=np.int64)
    bits = ((values[:, None] >> shifts) & 1).astype(np.uint8)
    return np.packbits(bits.ravel()).tobytes()


def unpack_uints(data: bytes, count: int, width: int) -> np.ndarray:
    """Inverse of :func:`pack_uints` for ``count`` integers of ``width`` bits."""
    if width == 0 or count == 0:
        return np.zeros(count, dtype=np.int64)
    nbytes = -(-count * width // 8)
    if len(data) < nbytes:
        raise ValueError(f"need {nbytes} bytes for {count} integers of {width} bits")
    if count <= 64:
        acc = int.from_bytes(data[:nbytes], "big") >> (8 * nbytes - count * width)
        mask = (1 << width) - 1
        out = [0] * count
        for j in range(count - 1, -1, -1):
            out[j] = acc & mask
            acc >>= width
        return np.array(out, dtype=np.int64)
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=count * width)
    bits = bits.reshape(count, width).astype(np.int64)
    weights = np.int64(1) << np.arange(width - 1, -1, -1, dtype=np.int64)
    return bits @ weights


def topk_indices(v: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``|v_j|``, ties broken towards the lower index; sorted.

    Deterministic: the result depends only on ``v`` and ``k``.
    """
    a = np.abs(v)
    d = a.size
    if k >= d:
        return np.arange(d)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k == 1:  # argmax returns the first (lowest-index) maximiser
        return np.array([int(np.argmax(a))])
    thresh = np.partition(a, d - k)[d - k]  # the k-th largest magnitude
    above = np.flatnonzero(a > thresh)
    ties = np.flatnonzero(a == thresh)[: k - above.size]
    return np.sort(np.concatenate([above, ties]))


def _check_vector(v: np.ndarray, d: int, name: str = "v") -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


class Compressor(ABC):
    """A compression operator on vectors of dimension ``dim``.

    Attributes
    ----------
    dim : int
        Dimension of the vectors compressed.
    delta : float or None
        Contraction parameter: ``E||C(v) - v||^2 <= (1 - delta) ||v||^2`` (None if the
        operator is not contractive).
    omega : float or None
        Variance parameter of an unbiased compressor: ``E||C(v) - v||^2 <= omega ||v||^2``.
    unbiased : bool
        Whether ``E[C(v)] = v``.
    randomized : bool
        Whether :meth:`compress` uses the random generator.
    """

    dim: int
    delta: float | None = None
    omega: float | None = None
    unbiased: bool = False
    randomized: bool = False

    def __init__(self, dim: int) -> None:
        if isinstance(dim, bool) or int(dim) != dim or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.dim = int(dim)

    @property
    @abstractmethod
    def message_bits(self) -> int:
        """Exact size in bits of every message this compressor produces."""

    @abstractmethod
    def compress(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        """Encode ``C(v)``; ``rng`` is required by randomized compressors."""

    @abstractmethod
    def decode(self, msg: Message) -> np.ndarray:
        """The dense float64 vector encoded in ``msg``."""

    def roundtrip(
        self, v: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[Message, np.ndarray]:
        """``(message, decoded vector)`` for ``v``."""
        msg = self.compress(v, rng)
        return msg, self.decode(msg)

    def _need_rng(self, rng: np.random.Generator | None) -> np.random.Generator:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"{type(self).__name__} is randomized: pass a numpy Generator as rng")
        return rng

    def _check_msg(self, msg: Message) -> None:
        if not isinstance(msg, Message):
            raise TypeError("decode expects a sparsecert.distributed.comm.Message")
        if msg.n_bits != self.message_bits or len(msg.payload) != -(-self.message_bits // 8):
            raise ValueError(
                f"{type(self).__name__} message must carry {self.message_bits} bits, got "
                f"{msg.n_bits} bits in {len(msg.payload)} bytes"
            )


def _check_value_dtype(value_dtype: str) -> str:
    if value_dtype not in _VALUE_DTYPES:
        raise ValueError(f"value_dtype must be one of {sorted(_VALUE_DTYPES)}, got {value_dtype!r}")
    return value_dtype


class _SparseCompressor(Compressor):
    """Shared encoding of k (value, index) pairs."""

    def __init__(self, dim: int, k: int, value_dtype: str = "float32") -> None:
        super().__init__(dim)
        if isinstance(k, bool) or int(k) != k or not 1 <= k <= self.dim:
            raise ValueError(f"k must be an integer in [1, dim={self.dim}], got {k!r}")
        self.k = int(k)
        self.value_dtype = _check_value_dtype(value_dtype)
        self._vbits = _VALUE_DTYPES[value_dtype]
        self._ibits = index_bits(self.dim)
        self._dt = np.dtype(value_dtype).newbyteorder("<")

    @property
    def message_bits(self) -> int:
        return self.k * (self._vbits + self._ibits)

    def _encode(self, idx: np.ndarray, values: np.ndarray) -> Message:
        vals = np.ascontiguousarray(values, dtype=self._dt).tobytes()
        payload = vals + pack_uints(idx, self._ibits)
        return Message(payload, self.message_bits)

    def _roundtrip_sparse(self, idx: np.ndarray, values: np.ndarray) -> tuple[Message, np.ndarray]:
        """Message and decoded vector without re-parsing the bytes just written (the decoded
        vector is what :meth:`decode` returns on the message; tested)."""
        vals = np.ascontiguousarray(values, dtype=self._dt)
        msg = Message(vals.tobytes() + pack_uints(idx, self._ibits), self.message_bits)
        out = np.zeros(self.dim)
        out[idx] = vals
        return msg, out

    def decode(self, msg: Message) -> np.ndarray:
        self._check_msg(msg)
        nv = self.k * self._vbits // 8
        vals = np.frombuffer(msg.payload[:nv], dtype=self._dt).astype(np.float64)
        idx = unpack_uints(msg.payload[nv:], self.k, self._ibits)
        if idx[-1] >= self.dim or (self.k > 1 and not (idx[1:] > idx[:-1]).all()):
            raise ValueError("corrupt sparse message: indices out of range or not increasing")
        out = np.zeros(self.dim)
        out[idx] = vals
        return out

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(dim={self.dim}, k={self.k}, value_dtype={self.value_dtype!r})"


class TopK(_SparseCompressor):
    """Greedy top-k sparsification (deterministic; contractive with ``delta = k / d``).

    Keeps the ``k`` entries of largest magnitude; ties go to the lower index.

    Parameters
    ----------
    dim : int
        Vector dimension ``d``.
    k : int
        Number of entries kept, ``1 <= k <= d``.
    value_dtype : {"float32", "float64"}
        Encoding of the kept values (float64 makes ``k = d`` lossless).
    """

    def __init__(self, dim: int, k: int, value_dtype: str = "float32") -> None:
        super().__init__(dim, k, value_dtype)
        self.delta = self.k / self.dim

    def compress(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        v = _check_vector(v, self.dim)
        idx = topk_indices(v, self.k)
        return self._encode(idx, v[idx])

    def roundtrip(
        self, v: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[Message, np.ndarray]:
        v = _check_vector(v, self.dim)
        idx = topk_indices(v, self.k)
        return self._roundtrip_sparse(idx, v[idx])


class RandK(_SparseCompressor):
    """Random-k sparsification (``k`` coordinates uniformly without replacement).

    Parameters
    ----------
    dim, k, value_dtype
        As for :class:`TopK`.
    scaled : bool
        If True (default) the kept values are multiplied by ``d / k``: unbiased with
        ``omega = d / k - 1``. If False, the plain (contractive, ``delta = k / d`` in
        expectation) variant.
    """

    randomized = True

    def __init__(
        self, dim: int, k: int, scaled: bool = True, value_dtype: str = "float32"
    ) -> None:
        super().__init__(dim, k, value_dtype)
        self.scaled = bool(scaled)
        if self.scaled:
            self.unbiased = True
            self.omega = self.dim / self.k - 1.0
        else:
            self.delta = self.k / self.dim

    def compress(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        v = _check_vector(v, self.dim)
        rng = self._need_rng(rng)
        idx = np.sort(rng.choice(self.dim, size=self.k, replace=False))
        vals = v[idx] * (self.dim / self.k) if self.scaled else v[idx]
        return self._encode(idx, vals)

    def __repr__(self) -> str:
        return (
            f"RandK(dim={self.dim}, k={self.k}, scaled={self.scaled}, "
            f"value_dtype={self.value_dtype!r})"
        )


class Identity(Compressor):
    """No compression: the dense vector as float32 (``32 d`` bits) or float64 (``64 d``)."""

    delta = 1.0
    omega = 0.0
    unbiased = True

    def __init__(self, dim: int, value_dtype: str = "float32") -> None:
        super().__init__(dim)
        self.value_dtype = _check_value_dtype(value_dtype)
        self._dt = np.dtype(value_dtype).newbyteorder("<")

    @property
    def message_bits(self) -> int:
        return self.dim * _VALUE_DTYPES[self.value_dtype]

    def compress(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        v = _check_vector(v, self.dim)
        data = np.ascontiguousarray(v, dtype=self._dt).tobytes()
        return Message(data, 8 * len(data))

    def decode(self, msg: Message) -> np.ndarray:
        self._check_msg(msg)
        return np.frombuffer(msg.payload, dtype=self._dt).astype(np.float64)

    def __repr__(self) -> str:
        return f"Identity(dim={self.dim}, value_dtype={self.value_dtype!r})"


class RandomQuantizer(Compressor):
    """Unbiased random quantization with ``s`` levels (QSGD-style, l2 norm scaling).

    ``C(v)_j = ||v|| sign(v_j) xi_j / s`` where ``xi_j`` rounds ``s |v_j| / ||v||`` up or down
    at random so that ``E[xi_j] = s |v_j| / ||v||``. The norm is sent as float32, rounded
    *up*, and the levels are computed from the value sent, so the decoded vector is exactly
    unbiased. ``omega = min(d / s^2, sqrt(d) / s)``.

    Parameters
    ----------
    dim : int
        Vector dimension.
    levels : int
        Number of quantization levels ``s >= 1``.
    """

    unbiased = True
    randomized = True

    def __init__(self, dim: int, levels: int = 1) -> None:
        super().__init__(dim)
        if isinstance(levels, bool) or int(levels) != levels or levels < 1:
            raise ValueError(f"levels must be a positive integer, got {levels!r}")
        self.levels = int(levels)
        self._lbits = index_bits(self.levels + 1)
        self.omega = min(self.dim / self.levels**2, math.sqrt(self.dim) / self.levels)

    @property
    def message_bits(self) -> int:
        return 32 + self.dim * (1 + self._lbits)

    def compress(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        v = _check_vector(v, self.dim)
        rng = self._need_rng(rng)
        norm = float(np.linalg.norm(v))
        norm32 = np.float32(norm)
        if float(norm32) < norm:
            norm32 = np.nextafter(norm32, np.float32(np.inf))
        s = self.levels
        if norm32 > 0:
            r = np.minimum(np.abs(v) / float(norm32) * s, s)
        else:
            r = np.zeros(self.dim)
        low = np.floor(r)
        level = (low + (rng.random(self.dim) < (r - low))).astype(np.int64)
        sign = (v < 0).astype(np.int64)
        codes = (sign << self._lbits) | level
        payload = np.array([norm32], dtype="<f4").tobytes() + pack_uints(codes, 1 + self._lbits)
        return Message(payload, self.message_bits)

    def decode(self, msg: Message) -> np.ndarray:
        self._check_msg(msg)
        norm = float(np.frombuffer(msg.payload[:4], dtype="<f4")[0])
        codes = unpack_uints(msg.payload[4:], self.dim, 1 + self._lbits)
        level = codes & ((1 << self._lbits) - 1)
        if np.any(level > self.levels):
            raise ValueError("corrupt quantizer message: level out of range")
        sign = np.where(codes >> self._lbits, -1.0, 1.0)
        return norm * sign * level / self.levels

    def __repr__(self) -> str:
        return f"RandomQuantizer(dim={self.dim}, levels={self.levels})"
