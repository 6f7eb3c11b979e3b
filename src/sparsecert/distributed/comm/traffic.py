"""Traffic accounting: bits per worker and per direction, counted from the encoded messages.

:class:`Traffic` is the record every communicator keeps (``comm.traffic``);
:func:`count_uplink` and :func:`count_downlink` are the one place where an exchange is
counted, whichever communicator runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Traffic", "BitStats", "count_uplink", "count_downlink"]


def _zeros(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int64)


@dataclass
class Traffic:
    """Bits counted by a communicator, per worker and per direction.

    Attributes
    ----------
    n_workers : int
        Number of logical workers.
    up_sent : numpy.ndarray
        Uplink bits each worker sent (``gather`` and ``allgather``).
    up_received : numpy.ndarray
        Bits of the *other* workers' messages each worker received (``allgather`` only).
    down_received : numpy.ndarray
        Downlink bits each worker received (``broadcast``).
    server_received : int
        Uplink bits the server received (``gather``).
    server_sent : int
        Downlink bits the server sent (a broadcast counts once per worker).
    process_sent, process_received : int
        Bits this process sent to / received from *other* processes (0 under
        :class:`SimComm`). A broadcast reaches each other process once, whatever the number of
        workers it hosts.
    rounds : int
        Number of uplink exchanges (``gather`` and ``allgather`` calls).
    """

    n_workers: int
    up_sent: np.ndarray = field(init=False)
    up_received: np.ndarray = field(init=False)
    down_received: np.ndarray = field(init=False)
    server_received: int = 0
    server_sent: int = 0
    process_sent: int = 0
    process_received: int = 0
    rounds: int = 0

    def __post_init__(self) -> None:
        n = self.n_workers
        self.up_sent, self.up_received, self.down_received = _zeros(n), _zeros(n), _zeros(n)

    # Short names kept for the callers written against the first version of this record.
    @property
    def up(self) -> np.ndarray:
        """Alias of :attr:`up_sent`."""
        return self.up_sent

    @property
    def down(self) -> np.ndarray:
        """Alias of :attr:`down_received`."""
        return self.down_received

    def copy(self) -> Traffic:
        """An independent snapshot."""
        out = Traffic(self.n_workers)
        out.up_sent[:] = self.up_sent
        out.up_received[:] = self.up_received
        out.down_received[:] = self.down_received
        for name in ("server_received", "server_sent", "process_sent", "process_received",
                     "rounds"):
            setattr(out, name, getattr(self, name))
        return out

    def __sub__(self, other: Traffic) -> Traffic:
        """Traffic since the snapshot ``other``."""
        if not isinstance(other, Traffic) or other.n_workers != self.n_workers:
            return NotImplemented
        out = self.copy()
        out.up_sent -= other.up_sent
        out.up_received -= other.up_received
        out.down_received -= other.down_received
        for name in ("server_received", "server_sent", "process_sent", "process_received",
                     "rounds"):
            setattr(out, name, getattr(self, name) - getattr(other, name))
        return out

    @property
    def total(self) -> int:
        """All bits delivered: server uplink + peers' messages + downlink, over all workers."""
        return int(self.server_received + self.up_received.sum() + self.down_received.sum())

    def per_worker(self) -> dict[str, float]:
        """Means over workers, in bits per worker: ``up`` (sent), ``down`` (received from the
        server), ``peer`` (received from other workers), ``sent``, ``received`` and ``total``
        (``sent + received``)."""
        up = float(self.up_sent.mean())
        down = float(self.down_received.mean())
        peer = float(self.up_received.mean())
        return {"up": up, "down": down, "peer": peer, "sent": up, "received": down + peer,
                "total": up + down + peer}

    def as_dict(self) -> dict[str, Any]:
        """Plain-Python view (lists and ints), e.g. for JSON."""
        return {
            "n_workers": self.n_workers,
            "up_sent": self.up_sent.tolist(),
            "up_received": self.up_received.tolist(),
            "down_received": self.down_received.tolist(),
            "server_received": int(self.server_received),
            "server_sent": int(self.server_sent),
            "process_sent": int(self.process_sent),
            "process_received": int(self.process_received),
            "rounds": int(self.rounds),
            "per_worker": self.per_worker(),
            "total": self.total,
        }


BitStats = Traffic
"""Former name of :class:`Traffic` (``up``/``down`` remain as aliases)."""


def count_uplink(traffic: Traffic, bits: np.ndarray, to_server: bool) -> None:
    """Count one uplink exchange: ``bits[i]`` sent by worker ``i``, received by the server
    (``gather``) or by every other worker (``allgather``)."""
    traffic.up_sent += bits
    traffic.rounds += 1
    if to_server:
        traffic.server_received += int(bits.sum())
    else:
        traffic.up_received += int(bits.sum()) - bits


def count_downlink(traffic: Traffic, n_bits: int) -> None:
    """Count one broadcast of ``n_bits`` from the server to every worker."""
    traffic.down_received += n_bits
    traffic.server_sent += n_bits * traffic.n_workers
