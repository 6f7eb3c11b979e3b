"""Messages and the dense codecs: what every exchange of the distributed wing carries.

A :class:`Message` is the encoded bytes actually transmitted plus the exact bit length of the
encoding. The dense codecs here (raw little-endian floats, a few scalars, one flag bit) sit
below the communication layer (:mod:`~sparsecert.distributed.comm`) and the encoders
(:mod:`~sparsecert.distributed.encoder`), which both import this module and nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Message",
    "encode_dense",
    "decode_dense",
    "encode_scalars",
    "decode_scalars",
    "encode_flag",
    "decode_flag",
]


@dataclass(frozen=True)
class Message:
    """An encoded message.

    Parameters
    ----------
    payload : bytes
        The encoded bytes actually transmitted.
    n_bits : int
        Exact bit length of the encoding (``<= 8 * len(payload)``).
    """

    payload: bytes
    n_bits: int

    def __post_init__(self) -> None:
        if not isinstance(self.payload, bytes | bytearray):
            raise TypeError("Message.payload must be bytes")
        if self.n_bits < 0 or self.n_bits > 8 * len(self.payload):
            raise ValueError(
                f"Message.n_bits={self.n_bits} is inconsistent with a payload of "
                f"{len(self.payload)} bytes"
            )


def encode_dense(v: np.ndarray, dtype: str = "float32") -> Message:
    """Encode a dense vector as raw little-endian floats (32 or 64 bits per entry)."""
    arr = np.ascontiguousarray(np.asarray(v, dtype=np.dtype(dtype).newbyteorder("<")))
    data = arr.tobytes()
    return Message(data, 8 * len(data))


def decode_dense(msg: Message, dtype: str = "float32") -> np.ndarray:
    """Inverse of :func:`encode_dense` (returns float64)."""
    return np.frombuffer(msg.payload, dtype=np.dtype(dtype).newbyteorder("<")).astype(np.float64)


def encode_scalars(*values: float) -> Message:
    """Encode a few float64 scalars (64 bits each)."""
    return encode_dense(np.asarray(values, dtype=np.float64), "float64")


def decode_scalars(msg: Message) -> np.ndarray:
    """Inverse of :func:`encode_scalars`."""
    return decode_dense(msg, "float64")


def encode_flag(flag: bool) -> Message:
    """One bit (e.g. the server's "productive step" decision)."""
    return Message(b"\x80" if flag else b"\x00", 1)


def decode_flag(msg: Message) -> bool:
    """Inverse of :func:`encode_flag`."""
    if msg.n_bits != 1:
        raise ValueError(f"a flag message has 1 bit, got {msg.n_bits}")
    return bool(msg.payload[0] & 0x80)
