"""The one encoder protocol of the distributed wing.

Every compressor (:class:`~sparsecert.distributed.compress.TopK`,
:class:`~sparsecert.distributed.compress.RandK`, :class:`~sparsecert.distributed.compress.Identity`)
and every quantizer (:class:`~sparsecert.distributed.quantize.Quantizer`, including the QSGD
quantizer :class:`~sparsecert.distributed.quantize.RandomQuantizer`) is an :class:`Encoder`:
``encode(v, rng) -> Message`` writes a real bitstream whose ``n_bits`` is its exact length,
``decode(msg) -> ndarray`` reads it back. The algorithms always use the *decoded* vector, so
what they compute is what a receiver reconstructs from the bits counted.

Stateful encoders (the adaptive quantizers, whose levels travel inside some messages) need one
decoder per sender on the receiving side: ``encoder.clone()``. Stateless encoders can share one.

Adding an encoder: subclass :class:`Encoder`, set the capability flags (``unbiased``,
``randomized``, ``stateful``, ``delta`` / ``omega`` when known), implement :meth:`encode` and
:meth:`decode` with :mod:`~sparsecert.distributed.bitstream`, and test the round trip and the
bit count against an independent computation.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from sparsecert.distributed.message import Message

__all__ = ["Encoder", "check_vector"]


def check_vector(v: np.ndarray, d: int, name: str = "v") -> np.ndarray:
    """``v`` as a float64 vector of shape ``(d,)`` with finite entries (else ``ValueError``)."""
    arr = np.asarray(v, dtype=np.float64)
    if arr.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


class Encoder(ABC):
    """Encodes vectors of dimension ``dim`` into bitstream messages (``comm.Message``).

    Attributes
    ----------
    dim : int
        Dimension of the vectors encoded.
    unbiased : bool
        Whether ``E[decode(encode(v))] = v``.
    randomized : bool
        Whether :meth:`encode` draws from the random generator (then ``rng`` is required).
    stateful : bool
        Whether decoding changes the decoder's state (then a receiver keeps one decoder per
        sender, made with :meth:`clone`).
    delta : float or None
        Contraction parameter, ``E||C(v) - v||^2 <= (1 - delta) ||v||^2``, when known.
    omega : float or None
        Variance parameter of an unbiased encoder, ``E||C(v) - v||^2 <= omega ||v||^2``, when
        known.
    """

    dim: int
    unbiased: bool = False
    randomized: bool = False
    stateful: bool = False
    delta: float | None = None
    omega: float | None = None

    def __init__(self, dim: int) -> None:
        if isinstance(dim, bool) or int(dim) != dim or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        self.dim = int(dim)

    @property
    def message_bits(self) -> int | None:
        """Exact size in bits of every message, or ``None`` when it depends on the content."""
        return None

    @property
    def message_bytes(self) -> int | None:
        """Bytes of the payload of every message when :attr:`message_bits` is fixed (its bits
        rounded up to whole bytes, unless the encoder pads its parts to bytes), else None."""
        fixed = self.message_bits
        return None if fixed is None else -(-fixed // 8)

    @abstractmethod
    def encode(self, v: np.ndarray, rng: np.random.Generator | None = None) -> Message:
        """Encode ``C(v)`` as a bitstream; ``rng`` is required by randomized encoders."""

    @abstractmethod
    def decode(self, msg: Message) -> np.ndarray:
        """The dense float64 vector encoded in ``msg``."""

    def roundtrip(self, v: np.ndarray, rng: np.random.Generator | None = None
                  ) -> tuple[Message, np.ndarray]:
        """``(message, decoded vector)`` for ``v`` (the vector is what :meth:`decode` returns
        on the message)."""
        msg = self.encode(v, rng)
        return msg, self.decode(msg)

    def decode_add(self, msg: Message, out: np.ndarray, scale: float = 1.0) -> None:
        """``out += scale * decode(msg)`` (in place; encoders may fuse the two)."""
        out += scale * self.decode(msg)

    def decode_sum(self, msgs: Sequence[Message], out: np.ndarray) -> None:
        """``out += decode(m)`` for every message of ``msgs`` in turn (in place; the same
        floating-point sums as adding the decoded vectors one after the other; encoders may
        fuse the loop)."""
        for m in msgs:
            out += self.decode(m)

    def clone(self) -> Encoder:
        """An independent copy (e.g. a receiver's decoder for one sender)."""
        return copy.deepcopy(self)

    # -- helpers for subclasses
    def _need_rng(self, rng: np.random.Generator | None) -> np.random.Generator:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"{type(self).__name__} is randomized: pass a numpy Generator as rng")
        return rng

    def _check_msg(self, msg: Message) -> None:
        if not isinstance(msg, Message):
            raise TypeError("decode expects a sparsecert.distributed.comm.Message")
        fixed = self.message_bits
        if fixed is not None and (msg.n_bits != fixed or len(msg.payload) != self.message_bytes):
            raise ValueError(
                f"{type(self).__name__} message must carry {fixed} bits, got "
                f"{msg.n_bits} bits in {len(msg.payload)} bytes"
            )
