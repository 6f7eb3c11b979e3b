"""Communication layer shared by the distributed methods (Safe-EF, QODA, DTZO-style).

The algorithms are written against the small :class:`Communicator` protocol and never know
which implementation they run on:

* :class:`SimComm` simulates ``n_workers`` workers in one process, deterministically.
* :class:`MPIComm` spreads the workers over MPI ranks (mpi4py over MPICH, the ``[mpi]`` extra).

Model
-----
There are ``n_workers`` logical workers and one logical server. Each process *hosts* a subset
of the workers (:attr:`Communicator.local_workers`; all of them for :class:`SimComm`, the
workers ``i`` with ``i % size == rank`` for :class:`MPIComm`). The server's computation is
replicated on every process (it is deterministic), so a worker-to-server exchange is an
*allgather* of encoded messages and a server-to-worker exchange is a *broadcast*.

Every message is a :class:`Message`: real encoded bytes plus its exact size in bits (the
bit length of the encoded payload, which may be shorter than ``8 * len(payload)`` when the
last byte is padded). Bits are counted per worker on the uplink and per worker on the
downlink in :attr:`Communicator.stats`; nothing is assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "Message",
    "BitStats",
    "Communicator",
    "SimComm",
    "MPIComm",
    "encode_dense",
    "decode_dense",
    "encode_scalars",
    "decode_scalars",
    "mpi_available",
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


@dataclass
class BitStats:
    """Bits and rounds counted by a communicator.

    Attributes
    ----------
    up : numpy.ndarray
        Total uplink bits sent by each worker (length ``n_workers``).
    down : numpy.ndarray
        Total downlink bits received by each worker.
    rounds : int
        Number of uplink exchanges (``allgather`` calls).
    """

    n_workers: int
    up: np.ndarray = field(init=False)
    down: np.ndarray = field(init=False)
    rounds: int = 0

    def __post_init__(self) -> None:
        self.up = np.zeros(self.n_workers, dtype=np.int64)
        self.down = np.zeros(self.n_workers, dtype=np.int64)

    def copy(self) -> BitStats:
        out = BitStats(self.n_workers)
        out.up[:] = self.up
        out.down[:] = self.down
        out.rounds = self.rounds
        return out


@runtime_checkable
class Communicator(Protocol):
    """What a distributed algorithm needs from its transport."""

    n_workers: int
    stats: BitStats

    @property
    def local_workers(self) -> tuple[int, ...]:
        """Worker ids hosted by this process."""
        ...

    @property
    def is_root(self) -> bool:
        """True on exactly one process (the one that should print / write files)."""
        ...

    def worker_rng(self, worker: int) -> np.random.Generator:
        """The worker's own random generator (same stream whichever communicator runs)."""
        ...

    def allgather(self, local: dict[int, Message]) -> list[Message]:
        """Uplink: every worker sends one message; all processes receive all of them in
        worker order. Counts each worker's bits on the uplink."""
        ...

    def broadcast(self, msg: Message | None) -> Message:
        """Downlink: the server's message (given on the root process; other processes may
        pass ``None``) reaches every worker. Counts its bits once per worker."""
        ...


class _BaseComm:
    def __init__(self, n_workers: int, seed: int | None = 0) -> None:
        if int(n_workers) != n_workers or n_workers < 1:
            raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
        self.n_workers = int(n_workers)
        self.seed = seed
        self.stats = BitStats(self.n_workers)
        seq = np.random.SeedSequence(seed)
        self._rngs = {
            i: np.random.default_rng(s) for i, s in enumerate(seq.spawn(self.n_workers))
        }

    def worker_rng(self, worker: int) -> np.random.Generator:
        return self._rngs[worker]

    def reset_stats(self) -> None:
        """Zero the bit counters."""
        self.stats = BitStats(self.n_workers)

    def _check_local(self, local: dict[int, Message]) -> None:
        expected = set(self.local_workers)
        if set(local) != expected:
            raise ValueError(
                f"allgather expects one message from each local worker {sorted(expected)}, "
                f"got {sorted(local)}"
            )
        for m in local.values():
            if not isinstance(m, Message):
                raise TypeError("allgather messages must be sparsecert.distributed.comm.Message")


class SimComm(_BaseComm):
    """In-process, deterministic simulation of ``n_workers`` workers.

    Parameters
    ----------
    n_workers : int
        Number of simulated workers.
    seed : int or None
        Seed of the per-worker random generators (``SeedSequence(seed).spawn``).
    """

    @property
    def local_workers(self) -> tuple[int, ...]:
        return tuple(range(self.n_workers))

    @property
    def is_root(self) -> bool:
        return True

    def allgather(self, local: dict[int, Message]) -> list[Message]:
        self._check_local(local)
        out = [local[i] for i in range(self.n_workers)]
        for i, m in enumerate(out):
            self.stats.up[i] += m.n_bits
        self.stats.rounds += 1
        return out

    def broadcast(self, msg: Message | None) -> Message:
        if msg is None:
            raise ValueError("SimComm.broadcast needs the message")
        self.stats.down += msg.n_bits
        return msg


def mpi_available() -> tuple[bool, str]:
    """Whether mpi4py and an MPI library load; returns ``(ok, reason)``."""
    try:
        from mpi4py import MPI  # noqa: F401
    except ImportError as exc:  # mpi4py itself missing
        return False, f"mpi4py is not installed ({exc}); install the [mpi] extra"
    except RuntimeError as exc:  # mpi4py present, MPI library missing
        return False, f"mpi4py cannot load an MPI library ({exc}); `pip install mpich`"
    return True, ""


class MPIComm(_BaseComm):
    """Workers spread over MPI ranks (worker ``i`` lives on rank ``i % size``).

    Parameters
    ----------
    n_workers : int or None
        Number of logical workers; defaults to the number of ranks.
    seed : int or None
        Seed of the per-worker generators: the same streams as :class:`SimComm` with the same
        seed, so both give identical iterates.
    comm : mpi4py.MPI.Comm, optional
        Defaults to ``MPI.COMM_WORLD``.
    """

    def __init__(self, n_workers: int | None = None, seed: int | None = 0, comm: Any = None):
        ok, reason = mpi_available()
        if not ok:
            raise RuntimeError(reason)
        from mpi4py import MPI

        self._comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self._comm.Get_rank()
        self.size = self._comm.Get_size()
        super().__init__(self.size if n_workers is None else n_workers, seed)
        self._local = tuple(i for i in range(self.n_workers) if i % self.size == self.rank)

    @property
    def local_workers(self) -> tuple[int, ...]:
        return self._local

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def allgather(self, local: dict[int, Message]) -> list[Message]:
        self._check_local(local)
        # Real bytes travel: each rank sends its workers' (id, payload, n_bits) triples.
        parts = self._comm.allgather([(i, bytes(m.payload), m.n_bits) for i, m in local.items()])
        merged: dict[int, Message] = {}
        for part in parts:
            for i, payload, n_bits in part:
                merged[i] = Message(payload, n_bits)
        out = [merged[i] for i in range(self.n_workers)]
        for i, m in enumerate(out):
            self.stats.up[i] += m.n_bits
        self.stats.rounds += 1
        return out

    def broadcast(self, msg: Message | None) -> Message:
        data = (bytes(msg.payload), msg.n_bits) if self.rank == 0 and msg is not None else None
        if self.rank == 0 and msg is None:
            raise ValueError("MPIComm.broadcast needs the message on rank 0")
        payload, n_bits = self._comm.bcast(data, root=0)
        out = Message(payload, n_bits)
        self.stats.down += out.n_bits
        return out

    def barrier(self) -> None:
        self._comm.Barrier()
