"""Compressors (sparsifiers and the dense encoding) as Encoders with exact bit counts.

Every compressor maps a vector ``v`` of a fixed dimension ``d`` to a
:class:`~sparsecert.distributed.comm.Message` whose ``payload`` holds the bytes actually sent and
whose ``n_bits`` is the exact length of the encoding; :meth:`~Encoder.decode` reads the
payload back. The algorithms always use the *decoded* vector, so what they compute is exactly
what a receiver could reconstruct from the bits counted.

Encodings (no headers: ``d``, ``k`` and the value type are agreed in advance):

* :class:`TopK` and :class:`RandK`: ``k`` values (float32 by default; float16 and float64 on
  request; a value outside the type's range raises) followed by the ``k``
  indices in increasing order, each bit-packed with ``ceil(log2 d)`` bits:
  ``k * (32 + ceil(log2 d))`` bits.
* :class:`TopKLevels`: the top-k entries as a per-message scale (16 bits) and, per entry, a
  sign bit and a ``b``-bit level of the scale (deterministic rounding to the nearest level),
  then the index set: ``16 + k (1 + b) + index bits``.
* :class:`Identity`: the dense vector, ``32 d`` bits (float32), ``16 d`` (float16) or ``64 d``
  (float64).
* :class:`~sparsecert.distributed.quantize.RandomQuantizer` (QSGD, ``s`` levels; defined with the
  other quantizers and re-exported here): the norm as float32, then for every coordinate a sign
  bit and the level in ``ceil(log2(s + 1))`` bits: ``32 + d * (1 + ceil(log2(s + 1)))`` bits.

``Compressor`` is another name of the :class:`~sparsecert.distributed.encoder.Encoder` protocol.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from sparsecert.distributed.bitstream import pack_uints, unpack_uints
from sparsecert.distributed.encoder import Encoder, check_vector
from sparsecert.distributed.levels_kernels import (
    levels_decode,
    levels_decode_many,
    levels_encode,
)
from sparsecert.distributed.message import Message
from sparsecert.distributed.quantize import RandomQuantizer
from sparsecert.distributed.subsets import SubsetCode

__all__ = [
    "Compressor",
    "Encoder",
    "TopK",
    "TopKTernary",
    "TopKLevels",
    "RandK",
    "RandomQuantizer",
    "Identity",
    "index_bits",
    "pack_uints",
    "unpack_uints",
    "topk_indices",
]

Compressor = Encoder

_VALUE_DTYPES = {"float16": 16, "float32": 32, "float64": 64}


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


def _cast(values: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``values`` in the wire type ``dt``; a value outside its range is an error, not an inf."""
    if dt.itemsize < 8 and np.abs(values).max(initial=0.0) > np.finfo(dt).max:
        raise ValueError(f"a value of magnitude {np.abs(values).max():.3g} does not fit in "
                         f"{dt.name}; use a wider value_dtype")
    return np.ascontiguousarray(values, dtype=dt)


def index_bits(d: int) -> int:
    """Bits needed to write an index in ``{0, ..., d - 1}``: ``ceil(log2 d)`` (0 when d = 1)."""
    if int(d) != d or d < 1:
        raise ValueError(f"dimension must be a positive integer, got {d!r}")
    return (int(d) - 1).bit_length()


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


def _check_value_dtype(value_dtype: str) -> str:
    if value_dtype not in _VALUE_DTYPES:
        raise ValueError(f"value_dtype must be one of {sorted(_VALUE_DTYPES)}, got {value_dtype!r}")
    return value_dtype


class _KeptSet(Encoder):
    """An encoder that keeps ``k`` of the ``dim`` coordinates and sends their index set in
    ``index_code`` (:class:`~sparsecert.distributed.subsets.SubsetCode`)."""

    def __init__(self, dim: int, k: int, index_code: str) -> None:
        super().__init__(dim)
        if isinstance(k, bool) or int(k) != k or not 1 <= k <= self.dim:
            raise ValueError(f"k must be an integer in [1, dim={self.dim}], got {k!r}")
        self.k = int(k)
        self.index_code = index_code
        self._subsets = SubsetCode(self.dim, self.k, index_code)


class _SparseCompressor(_KeptSet):
    """Shared encoding of k (value, index) pairs."""

    def __init__(self, dim: int, k: int, value_dtype: str = "float32",
                 index_code: str = "fixed") -> None:
        super().__init__(dim, k, index_code)
        self.value_dtype = _check_value_dtype(value_dtype)
        self._vbits = _VALUE_DTYPES[value_dtype]
        self._dt = np.dtype(value_dtype).newbyteorder("<")

    @property
    def message_bits(self) -> int:
        return self.k * self._vbits + self._subsets.bits

    def _encode(self, idx: np.ndarray, values: np.ndarray) -> Message:
        vals = _cast(values, self._dt).tobytes()
        payload = vals + self._subsets.encode(idx)
        return Message(payload, self.message_bits)

    def _roundtrip_sparse(self, idx: np.ndarray, values: np.ndarray) -> tuple[Message, np.ndarray]:
        """Message and decoded vector without re-parsing the bytes just written (the decoded
        vector is what :meth:`decode` returns on the message; tested)."""
        vals = _cast(values, self._dt)
        msg = Message(vals.tobytes() + self._subsets.encode(idx), self.message_bits)
        out = np.zeros(self.dim)
        out[idx] = vals
        return msg, out

    def decode(self, msg: Message) -> np.ndarray:
        self._check_msg(msg)
        nv = self.k * self._vbits // 8
        vals = np.frombuffer(msg.payload[:nv], dtype=self._dt).astype(np.float64)
        idx = self._subsets.decode(msg.payload[nv:])
        out = np.zeros(self.dim)
        out[idx] = vals
        return out

    def __repr__(self) -> str:
        name = type(self).__name__
        extra = "" if self.index_code == "fixed" else f", index_code={self.index_code!r}"
        return f"{name}(dim={self.dim}, k={self.k}, value_dtype={self.value_dtype!r}{extra})"


class TopK(_SparseCompressor):
    """Greedy top-k sparsification (deterministic; contractive with ``delta = k / d``).

    Keeps the ``k`` entries of largest magnitude; ties go to the lower index.

    Parameters
    ----------
    dim : int
        Vector dimension ``d``.
    k : int
        Number of entries kept, ``1 <= k <= d``.
    value_dtype : {"float32", "float16", "float64"}
        Encoding of the kept values (float64 makes ``k = d`` lossless; float16 halves the
        value bits, its rounding is fed back by error feedback).
    index_code : {"fixed", "enumerative"}
        Code of the index set (:mod:`~sparsecert.distributed.subsets`): ``k ceil(log2 d)``
        bits, or the set's rank among the ``k``-subsets in ``ceil(log2 C(d, k))`` bits (the
        same indices, fewer bits).
    """

    def __init__(self, dim: int, k: int, value_dtype: str = "float32",
                 index_code: str = "fixed") -> None:
        super().__init__(dim, k, value_dtype, index_code)
        self.delta = self.k / self.dim

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        v = check_vector(v, self.dim)
        idx = topk_indices(v, self.k)
        return self._encode(idx, v[idx])

    def roundtrip(
        self, v: np.ndarray, rng: np.random.Generator | None = None
    ) -> tuple[Message, np.ndarray]:
        v = check_vector(v, self.dim)
        idx = topk_indices(v, self.k)
        return self._roundtrip_sparse(idx, v[idx])


class TopKTernary(_KeptSet):
    """Sparse ternary compression: the top-k entries replaced by ``mu * sign`` with
    ``mu = mean_{j in top-k} |v_j|`` (Sattler et al., 2019).

    Message: ``mu`` as float32, then ``k`` sign bits, then the ``k`` increasing indices in
    ``ceil(log2 d)`` bits each: ``32 + k (1 + ceil(log2 d))`` bits. Deterministic and
    contractive: ``||C(v) - v||^2 = ||v||^2 - ||v_S||_1^2 / k <= (1 - 1/(d k)) ||v||^2``.

    Parameters
    ----------
    dim, k, index_code
        As for :class:`TopK`.
    """

    def __init__(self, dim: int, k: int, index_code: str = "fixed") -> None:
        super().__init__(dim, k, index_code)
        self.delta = 1.0 / (self.dim * self.k)

    @property
    def message_bits(self) -> int:
        return 32 + self.k + self._subsets.bits

    @property
    def message_bytes(self) -> int:
        return 4 + -(-self.k // 8) + self._subsets.nbytes

    def _parts(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.float32]:
        v = check_vector(v, self.dim)
        idx = topk_indices(v, self.k)
        mu = np.float32(np.abs(v[idx]).mean())
        if not np.isfinite(mu):
            raise ValueError("the top-k mean magnitude does not fit in float32")
        return idx, (v[idx] < 0).astype(np.int64), mu

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        idx, neg, mu = self._parts(v)
        # mu, the sign bits and the indices; each part starts on a byte (padding not counted)
        payload = (np.array([mu], dtype="<f4").tobytes() + pack_uints(neg, 1)
                   + self._subsets.encode(idx))
        return Message(payload, self.message_bits)

    def decode(self, msg: Message) -> np.ndarray:
        self._check_msg(msg)
        mu = float(np.frombuffer(msg.payload[:4], dtype="<f4")[0])
        nsign = -(-self.k // 8)
        neg = unpack_uints(msg.payload[4:4 + nsign], self.k, 1)
        idx = self._subsets.decode(msg.payload[4 + nsign:])
        out = np.zeros(self.dim)
        out[idx] = np.where(neg == 1, -mu, mu)
        return out

    def __repr__(self) -> str:
        extra = "" if self.index_code == "fixed" else f", index_code={self.index_code!r}"
        return f"TopKTernary(dim={self.dim}, k={self.k}{extra})"


def to_bfloat16(x: float) -> np.uint16:
    """The 16-bit code of ``x`` as a bfloat16 (the float32 rounded to nearest, ties to even, to
    8 significant bits: relative error at most ``2**-9`` for ``|x|`` in the normal float32
    range); ``ValueError`` when ``x`` rounds to infinity or is not finite."""
    f = np.array([x], dtype=np.float32)
    u = int(f.view(np.uint32)[0])
    code = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    if not np.isfinite(f[0]) or (code & 0x7F80) == 0x7F80:
        raise ValueError(f"the scale {x:.3g} does not fit in a bfloat16")
    return np.uint16(code)


def from_bfloat16(code: int) -> float:
    """The value of a bfloat16 code (exact)."""
    return float(np.array([int(code) << 16], dtype=np.uint32).view(np.float32)[0])


class TopKLevels(_KeptSet):
    """Top-k with few bits per value: a per-message scale and, per kept entry, a sign and a
    ``bits``-bit level.

    The scale ``s`` is the largest kept magnitude rounded to a bfloat16 (16 bits, the range of
    float32); entry ``j`` of the top-k set is sent as its sign and the level
    ``l_j = min(L, round(|v_j| L / s))``, ``L = 2**bits - 1``, and decoded as
    ``sign_j l_j s / L`` (deterministic, no dither). Message: the scale, ``k (1 + bits)`` bits
    of signs and levels, the index set (``index_code`` as for :class:`TopK`).

    Contractive: every level is the nearest to ``|v_j|`` (0 is a level, so each kept entry's
    error is at most ``|v_j|``) and the largest entry gets level ``L``, off by at most the
    scale's rounding (``bits <= 6`` keeps it so), hence
    ``||C(v) - v||^2 <= ||v||^2 - (1 - 2**-16) max_j v_j^2 <= (1 - delta) ||v||^2`` with
    ``delta = (1 - 2**-16) / d``, for every ``v`` whose largest magnitude is a normal float32
    (at least ``2**-126``); ``tests/distributed/test_compress.py`` checks it numerically. Error
    feedback absorbs the rest of the rounding.

    Parameters
    ----------
    dim, k
        As for :class:`TopK`.
    bits : int
        Bits of each level, 1 to 6 (``2**bits`` levels, 0 included).
    index_code : {"enumerative", "fixed"}
        Code of the index set (:mod:`~sparsecert.distributed.subsets`).
    """

    def __init__(self, dim: int, k: int, bits: int = 3, index_code: str = "enumerative") -> None:
        super().__init__(dim, k, index_code)
        if isinstance(bits, bool) or int(bits) != bits or not 1 <= bits <= 6:
            raise ValueError(f"bits must be an integer in [1, 6], got {bits!r}")
        self.bits = int(bits)
        self.levels = (1 << self.bits) - 1
        self.delta = (1.0 - 2.0 ** -16) / self.dim
        self._ncode = -(-self.k * (1 + self.bits) // 8)

    @property
    def message_bits(self) -> int:
        return 16 + self.k * (1 + self.bits) + self._subsets.bits

    @property
    def message_bytes(self) -> int:
        return 2 + self._ncode + self._subsets.nbytes

    def _encode(self, v: np.ndarray) -> tuple[Message, np.ndarray]:
        v = check_vector(v, self.dim)
        idx = np.empty(self.k, dtype=np.int64)
        buf = np.empty(self._ncode, dtype=np.uint8)
        out = np.empty(self.dim)
        code = levels_encode(v, self.k, self.bits, idx, buf, out)
        if code < 0:
            raise ValueError(f"the scale {np.abs(v).max():.3g} does not fit in a bfloat16")
        payload = int(code).to_bytes(2, "little") + buf.tobytes() + self._subsets.encode(idx)
        return Message(payload, self.message_bits), out

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        return self._encode(v)[0]

    def roundtrip(self, v: np.ndarray, rng: np.random.Generator | None = None
                  ) -> tuple[Message, np.ndarray]:
        return self._encode(v)

    def decode(self, msg: Message) -> np.ndarray:
        self._check_msg(msg)
        data = msg.payload
        out = np.zeros(self.dim)
        if self._decode_many(bytes(data), 1, out, False):
            return out
        idx = self._subsets.decode(data[2 + self._ncode:])
        levels_decode(np.frombuffer(data, dtype=np.uint8, count=self._ncode, offset=2),
                      self.k, self.bits, int.from_bytes(data[:2], "little"), idx, out)
        return out

    def _decode_many(self, data: bytes, n: int, out: np.ndarray, add: bool) -> bool:
        """The compiled decoding of ``n`` messages laid end to end in ``data`` (enumerative
        index code with int64 ranks only); False when this encoder has no such path."""
        table = self._subsets._table
        if table is None or self.index_code != "enumerative":
            return False
        size = self.message_bytes
        if len(data) != n * size:
            raise ValueError(f"TopKLevels messages must carry {self.message_bits} bits")
        err = levels_decode_many(np.frombuffer(data, dtype=np.uint8), n, size, self.k,
                                 self.bits, self._ncode, self._subsets.bits, table, out, add)
        if err < 0:
            raise ValueError(f"corrupt sparse message {-1 - err}: subset rank out of range")
        return True

    def decode_sum(self, msgs: Sequence[Message], out: np.ndarray) -> None:
        """``out += decode(m)`` for every message in turn, in one compiled call (the same
        sums; a corrupt message raises)."""
        for msg in msgs:
            self._check_msg(msg)
        if out.dtype != np.float64 or out.shape != (self.dim,) or not self._decode_many(
                b"".join(bytes(m.payload) for m in msgs), len(msgs), out, True):
            super().decode_sum(msgs, out)

    def __repr__(self) -> str:
        return (f"TopKLevels(dim={self.dim}, k={self.k}, bits={self.bits}, "
                f"index_code={self.index_code!r})")


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

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        v = check_vector(v, self.dim)
        rng = self._need_rng(rng)
        idx = np.sort(rng.choice(self.dim, size=self.k, replace=False))
        vals = v[idx] * (self.dim / self.k) if self.scaled else v[idx]
        return self._encode(idx, vals)

    def __repr__(self) -> str:
        return (
            f"RandK(dim={self.dim}, k={self.k}, scaled={self.scaled}, "
            f"value_dtype={self.value_dtype!r})"
        )


class Identity(Encoder):
    """No compression: the dense vector as float32 (``32 d`` bits) or float64 (``64 d``)."""

    delta = 1.0
    omega = 0.0
    unbiased = True

    def __init__(self, dim: int, value_dtype: str = "float32") -> None:
        super().__init__(dim)
        self.value_dtype = _check_value_dtype(value_dtype)
        self._dt = np.dtype(value_dtype).newbyteorder("<")
        self._fast32 = np.little_endian and self._dt == np.dtype("<f4")

    @property
    def message_bits(self) -> int:
        return self.dim * _VALUE_DTYPES[self.value_dtype]

    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        if self._fast32:  # one pass: cast and check (as the quantizers' kernels)
            arr = np.asarray(v, dtype=np.float64)
            if arr.shape == (self.dim,):
                out = np.empty(self.dim, dtype=np.float32)
                if to_float32(arr, out) == 0:
                    return Message(out.tobytes(), 32 * self.dim)
        v = check_vector(v, self.dim)  # names the problem
        data = _cast(v, self._dt).tobytes()
        return Message(data, 8 * len(data))

    def decode(self, msg: Message) -> np.ndarray:
        self._check_msg(msg)
        return np.frombuffer(msg.payload, dtype=self._dt).astype(np.float64)

    def decode_add(self, msg: Message, out: np.ndarray, scale: float = 1.0) -> None:
        self._check_msg(msg)
        vals = np.frombuffer(msg.payload, dtype=self._dt)
        fast = vals.itemsize >= 4 and out.dtype == np.float64 and out.shape == vals.shape
        if scale == 1.0 and fast:
            add_values(out, vals)  # float32 -> float64 is exact: the same as adding decode(msg)
        elif scale == 1.0:
            out += vals
        else:
            out += scale * vals.astype(np.float64)

    def decode_sum(self, msgs: Sequence[Message], out: np.ndarray) -> None:
        """``out += decode(m)`` for every message in turn: the payloads read and widened as
        one array, then added row after row (the same sums)."""
        for m in msgs:
            self._check_msg(m)
        if not msgs:
            return
        rows = np.frombuffer(b"".join(bytes(m.payload) for m in msgs),
                             dtype=self._dt).reshape(len(msgs), self.dim).astype(np.float64)
        for row in rows:
            out += row

    def __repr__(self) -> str:
        return f"Identity(dim={self.dim}, value_dtype={self.value_dtype!r})"
