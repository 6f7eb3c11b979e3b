"""A receiver's decoding of a round: every sender's message added into one sum.

:class:`RoundDecoder` keeps one decoder per sender and the set-up of a round between rounds;
fixed-code quantized messages of one layout are read in one kernel call
(:func:`~sparsecert.distributed.dequantize_kernels.decode_fixed_kernel`), anything else
message by message through the decoders' ``decode_add``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sparsecert.distributed.dequantize_kernels import decode_fixed_kernel
from sparsecert.distributed.encoder import Encoder
from sparsecert.distributed.message import Message
from sparsecert.distributed.quantize import _DECODE_ERRORS, _NO_HISTS, Quantizer

__all__ = ["RoundDecoder", "decode_sum"]


class RoundDecoder:
    """A receiver's decoders of one round, one per sender: ``rd(msgs, out)`` adds
    ``decoders[k].decode(msgs[k])`` to ``out`` for every ``k`` (each decoder reads its own
    sender's messages and takes the levels they carry), as :func:`decode_sum`, with the
    per-round set-up done once.

    When every decoder is a fixed-code :class:`Quantizer` of one layout, a round is one kernel
    call that validates every message first (a corrupt one raises ``ValueError`` naming it,
    and nothing, no decoder, no entry of ``out``, is changed), then adds all of them to each
    coordinate in turn (the same floating-point sums as one message after the other, one
    pass over ``out`` per four messages); the receiver's levels of all senders are kept in one
    array (levels set on a decoder from outside are picked up). Other encoders go message by
    message through their ``decode_add``.

    Parameters
    ----------
    decoders : sequence of Encoder
        One decoder per sender (their codes and layouts must not change afterwards).
    """

    def __init__(self, decoders: Sequence[Encoder]) -> None:
        self.decoders = list(decoders)
        q0 = self.decoders[0] if self.decoders else None
        self.fused = (isinstance(q0, Quantizer) and q0.code == "fixed"
                      and all(isinstance(q, Quantizer) and q.code == "fixed" and q.lmap == q0.lmap
                              and q.s == q0.s and q.adaptive == q0.adaptive
                              for q in self.decoders))
        if self.fused:
            self._src = [q._table for q in self.decoders]
            self._tables = np.array(self._src)
            self._args = (q0.adaptive, q0.s)  # the kernel's fixed arguments
            self._layout = (q0._offsets, q0._ltypes, q0.index_bits)
            self._shape = (q0.dim,)

    def __call__(self, msgs: Sequence[Message], out: np.ndarray, zeroed: bool = False
                 ) -> None:
        """Add the round's decoded messages to ``out``. ``zeroed=True`` states that ``out``
        is +0.0 everywhere (as just made by ``numpy.zeros``; not checked): the fused kernel
        then skips the pass that checks it."""
        decoders = self.decoders
        if len(decoders) != len(msgs):
            raise ValueError(f"got {len(msgs)} messages for {len(decoders)} decoders")
        # few Python operations: right after the oracles each one runs with cold caches
        if not self.fused or not all([isinstance(m, Message) for m in msgs]):
            for q, m in zip(decoders, msgs, strict=True):
                q.decode_add(m, out)
            return
        if not isinstance(out, np.ndarray) or out.shape != self._shape or (
                out.dtype != np.float64):
            raise ValueError(f"out must be a float64 array of shape {self._shape}")
        meta = np.array([(len(m.payload), m.n_bits) for m in msgs], dtype=np.int64)
        src, tables = self._src, self._tables
        for k, q in enumerate(decoders):
            if q._table is not src[k]:  # levels set from outside since the last round
                tables[k] = q._table
                src[k] = q._table
        bufs = np.frombuffer(b"".join([m.payload for m in msgs]), dtype=np.uint8)
        dst = out if out.flags.c_contiguous else np.ascontiguousarray(out)
        status, k, n_got, got, _ = decode_fixed_kernel(
            bufs, meta, *self._args, tables, *self._layout, dst, _NO_HISTS, bool(zeroed))
        if status < 0:
            raise ValueError(f"message {int(k)}: {_DECODE_ERRORS[int(status)]}")
        if dst is not out:
            out[:] = dst
        if n_got:
            for k in np.flatnonzero(got):
                decoders[k].levels = list(tables[k])
                src[k] = decoders[k]._table


def decode_sum(decoders: Sequence[Encoder], msgs: Sequence[Message], out: np.ndarray) -> None:
    """``out += decoders[k].decode(msgs[k])`` for every ``k`` (each decoder reads its own
    sender's messages and takes the levels they carry).

    Fixed-code messages of one quantizer layout are read in one kernel call that adds all of
    them to each coordinate in turn (the same floating-point sums as one message after the
    other); anything else goes message by message. Raises ``ValueError`` naming the first
    corrupt message; with the fixed code nothing (no decoder, no entry of ``out``) is changed
    then. A receiver decoding many rounds keeps a :class:`RoundDecoder` instead (the same
    result, the set-up done once).
    """
    RoundDecoder(decoders)(msgs, out)
