"""In-process simulation of the workers and the server: :class:`SimComm`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sparsecert.distributed.comm.protocol import BaseComm, _as_message, sum_in_order
from sparsecert.distributed.message import Message

__all__ = ["SimComm"]


class SimComm(BaseComm):
    """In-process, deterministic simulation of ``n_workers`` workers (and the server).

    Parameters
    ----------
    n_workers : int
        Number of simulated workers.
    seed : int or None
        Seed of the per-worker random generators (``SeedSequence(seed).spawn``).
    """

    def gather(self, local: Mapping[int, Message], n_bits: int | None = None,
               n_bytes: int | None = None) -> list[Message]:
        return self._collect(local, "gather", n_bits, n_bytes, to_server=True)

    def allgather(self, local: Mapping[int, Message], n_bits: int | None = None,
                  n_bytes: int | None = None) -> list[Message]:
        return self._collect(local, "allgather", n_bits, n_bytes, to_server=False)

    def _collect(self, local: Mapping[int, Message], name: str, n_bits: int | None,
                 n_bytes: int | None, to_server: bool) -> list[Message]:
        """Every worker's message in worker order (one process holds them all), counted as
        sent to the server (``gather``) or to every other worker (``allgather``)."""
        msgs = self._check_local(local, name)
        self._check_size(msgs, n_bits, n_bytes)
        out = [msgs[i] for i in range(self.n_workers)]
        self._count_uplink(out, to_server=to_server)
        return out

    def broadcast(self, msg: Message | None) -> Message:
        if msg is None:
            raise ValueError("SimComm.broadcast needs the message")
        msg = _as_message(msg)
        self._count_downlink(msg)
        return msg

    def allreduce(self, local: Mapping[int, Any]) -> np.ndarray:
        vals = self._check_values(local)
        return sum_in_order([vals[i] for i in range(self.n_workers)])

    def barrier(self) -> None:
        """Nothing to wait for in one process."""
