"""The communicator protocol the distributed methods are written against, and the shared base.

:class:`Communicator` is what an algorithm may call (see :mod:`sparsecert.distributed.comm`
for the model); :func:`build_local` builds this process's workers; :class:`BaseComm` holds
the validation, the per-worker generators and the counting shared by
:class:`~sparsecert.distributed.comm.sim.SimComm` and
:class:`~sparsecert.distributed.comm.mpi.MPIComm`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from sparsecert.distributed.comm.traffic import Traffic, count_downlink, count_uplink
from sparsecert.distributed.message import Message

__all__ = ["Communicator", "BaseComm", "build_local", "sum_in_order"]

W = TypeVar("W")


@runtime_checkable
class Communicator(Protocol):
    """What a distributed algorithm needs from its transport (see the module docstring)."""

    n_workers: int
    traffic: Traffic

    @property
    def rank(self) -> int:
        """This process's index (0 for :class:`SimComm`)."""
        ...

    @property
    def size(self) -> int:
        """Number of processes (1 for :class:`SimComm`)."""
        ...

    @property
    def local_workers(self) -> tuple[int, ...]:
        """Worker ids hosted by this process, increasing."""
        ...

    @property
    def is_root(self) -> bool:
        """True on the process that hosts the server (and should print / write files)."""
        ...

    def worker_rng(self, worker: int) -> np.random.Generator:
        """The worker's own random generator (same stream whichever communicator runs)."""
        ...

    def gather(self, local: Mapping[int, Message], n_bits: int | None = None,
               n_bytes: int | None = None) -> list[Message] | None:
        """Uplink: one message per local worker; the root gets all of them in worker order,
        other processes ``None``. ``n_bits``: every message has exactly this many bits in
        ``n_bytes`` bytes (default ``ceil(n_bits / 8)``), agreed in advance by every process
        (a message of another size is a ``ValueError``); the lengths need not travel."""
        ...

    def allgather(self, local: Mapping[int, Message], n_bits: int | None = None,
                  n_bytes: int | None = None) -> list[Message]:
        """Peer exchange: every process gets every worker's message, in worker order.
        ``n_bits`` / ``n_bytes``: the agreed size of every message, as in :meth:`gather`."""
        ...

    def broadcast(self, msg: Message | None) -> Message:
        """Downlink: the server's message (on the root; ``None`` elsewhere) to every worker."""
        ...

    def allreduce(self, local: Mapping[int, Any]) -> np.ndarray:
        """Sum over all workers of equal-shape float arrays, in worker order (not metered)."""
        ...


def build_local(comm: Communicator, workers: Sequence[W] | Callable[[int], W]) -> dict[int, W]:
    """The local workers: ``{i: workers[i]}`` from a sequence, or ``{i: workers(i)}`` from a
    factory called once per local worker id (so a process never builds another's data).

    Raises
    ------
    ValueError
        If a sequence does not have one entry per worker.
    """
    if callable(workers) and not isinstance(workers, Sequence):
        return {i: workers(i) for i in comm.local_workers}
    if isinstance(workers, str | bytes) or not isinstance(workers, Sequence):
        raise TypeError("workers must be a sequence of workers or a factory worker_id -> worker")
    if len(workers) != comm.n_workers:
        raise ValueError(
            f"comm has {comm.n_workers} workers but {len(workers)} were given"
        )
    return {i: workers[i] for i in comm.local_workers}


def _as_message(m: Any) -> Message:
    if not isinstance(m, Message):
        raise TypeError("exchanged messages must be sparsecert.distributed.comm.Message")
    return m


class BaseComm:
    """Validation, generators and the bit book-keeping shared by both communicators."""

    rank: int = 0
    size: int = 1

    def __init__(self, n_workers: int, seed: int | None = 0) -> None:
        if isinstance(n_workers, bool) or int(n_workers) != n_workers or n_workers < 1:
            raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
        self.n_workers = int(n_workers)
        self.seed = seed
        self.traffic = Traffic(self.n_workers)
        seq = np.random.SeedSequence(seed)
        self._rngs = {
            i: np.random.default_rng(s) for i, s in enumerate(seq.spawn(self.n_workers))
        }

    # the first version of this API called the record ``stats``
    @property
    def stats(self) -> Traffic:
        """Alias of :attr:`traffic`."""
        return self.traffic

    @stats.setter
    def stats(self, value: Traffic) -> None:
        self.traffic = value

    @property
    def local_workers(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.n_workers) if i % self.size == self.rank)

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def owner(self, worker: int) -> int:
        """The process that hosts ``worker``."""
        return worker % self.size

    def worker_rng(self, worker: int) -> np.random.Generator:
        if worker not in self._rngs:
            raise ValueError(f"no worker {worker!r} (n_workers = {self.n_workers})")
        return self._rngs[worker]

    def reset_traffic(self) -> None:
        """Zero the bit counters."""
        self.traffic = Traffic(self.n_workers)

    reset_stats = reset_traffic

    def _check_local(self, local: Mapping[int, Message], what: str) -> dict[int, Message]:
        expected = self.local_workers
        if not isinstance(local, Mapping) or set(local) != set(expected):
            got = sorted(local) if isinstance(local, Mapping) else type(local).__name__
            raise ValueError(
                f"{what} expects one message from each local worker {list(expected)}, got {got}"
            )
        return {i: _as_message(local[i]) for i in expected}

    @staticmethod
    def _check_size(msgs: Mapping[int, Message], n_bits: int | None,
                    n_bytes: int | None) -> int | None:
        """The agreed bytes of a message (``n_bytes``, default ``ceil(n_bits / 8)``) after
        checking that every message has ``n_bits`` bits in that many bytes (None: sizes not
        fixed)."""
        if n_bits is None:
            if n_bytes is not None:
                raise ValueError("n_bytes needs n_bits")
            return None
        if isinstance(n_bits, bool) or int(n_bits) != n_bits or n_bits < 0:
            raise ValueError(f"n_bits must be a non-negative integer, got {n_bits!r}")
        nbytes = -(-int(n_bits) // 8) if n_bytes is None else int(n_bytes)
        if nbytes * 8 < n_bits:
            raise ValueError(f"{n_bits} bits do not fit in n_bytes={n_bytes}")
        for i, m in msgs.items():
            if m.n_bits != n_bits or len(m.payload) != nbytes:
                raise ValueError(f"worker {i}'s message has {m.n_bits} bits in "
                                 f"{len(m.payload)} bytes; the exchange agreed on {n_bits} "
                                 f"bits in {nbytes} bytes")
        return nbytes

    def _check_values(self, local: Mapping[int, Any]) -> dict[int, np.ndarray]:
        expected = self.local_workers
        if not isinstance(local, Mapping) or set(local) != set(expected):
            got = sorted(local) if isinstance(local, Mapping) else type(local).__name__
            raise ValueError(
                f"allreduce expects one array from each local worker {list(expected)}, "
                f"got {got}"
            )
        out = {i: np.asarray(local[i], dtype=np.float64) for i in expected}
        shapes = {v.shape for v in out.values()}
        if len(shapes) > 1:
            raise ValueError(f"allreduce needs arrays of one shape, got {sorted(shapes)}")
        return out

    # -- book-keeping (identical logic for both communicators: each process counts every
    #    worker's logical traffic, and its own process-to-process traffic)
    def _count_uplink(self, msgs: Sequence[Message], to_server: bool) -> None:
        count_uplink(self.traffic, np.array([m.n_bits for m in msgs], dtype=np.int64),
                     to_server)

    def _count_downlink(self, msg: Message) -> None:
        count_downlink(self.traffic, msg.n_bits)


def sum_in_order(values: Sequence[np.ndarray]) -> np.ndarray:
    """Sum of float arrays in the given order (the same on every communicator)."""
    acc = np.zeros_like(values[0], dtype=np.float64)
    for v in values:
        acc = acc + v
    return acc
