"""Communication layer shared by the distributed methods (Safe-EF, QODA, DTZO-style).

The algorithms are written against the small :class:`Communicator` protocol and never know
which implementation they run on:

* :class:`SimComm` simulates ``n_workers`` workers in one process, deterministically.
* :class:`MPIComm` spreads the workers over MPI ranks (mpi4py over MPICH, the ``[mpi]`` extra);
  every exchange is an MPI collective on numpy byte / float buffers (``Gatherv``,
  ``Allgatherv``, ``Bcast``), never a pickled Python object.

Model
-----
There are ``n_workers`` logical workers and one logical **server**. Worker ``i`` lives on
process ``i % size`` (:attr:`Communicator.local_workers` lists the ones hosted here; all of
them for :class:`SimComm`); the server lives on the root process (rank 0). Data stay where
they live: a process builds only its local workers (:func:`build_local` calls a factory with
each local worker id) and monitors are reductions of local sums (:meth:`Communicator.allreduce`).

Four exchanges, all collective (every process calls them, in the same order):

``gather(local)`` (uplink, worker -> server)
    Every worker sends one :class:`Message`; the server (root) receives all of them in worker
    order; other processes get ``None``.
``broadcast(msg)`` (downlink, server -> every worker)
    The server's message (given on the root; ``None`` elsewhere) reaches every worker.
``allgather(local)`` (peer exchange, worker -> every worker)
    Every worker's message reaches every worker (a replicated server: each process decodes
    all messages and runs the same server computation). Each worker *receives* the other
    ``n - 1`` messages, and that is counted.
``allreduce(local)`` (monitoring, not counted)
    The sum over all workers of per-worker float arrays, in worker order (so identical on
    every process and bit-for-bit equal to :class:`SimComm`). Meant for monitors (objective,
    constraint, residual histories) that the algorithm itself does not use; algorithm
    traffic must go through the three metered exchanges.

Traffic
-------
Every message is a :class:`Message`: real encoded bytes plus its exact size in bits.
:attr:`Communicator.traffic` (a :class:`Traffic`) counts, in one unit (**bits per worker per
direction**): what each worker sent on the uplink, what it received from the other workers
(``allgather`` only) and what it received on the downlink; what the server received and sent
(a broadcast counts once per receiving worker); and what this process sent to / received from
other processes (messages that stay inside one process are not on the wire).
``traffic.per_worker()`` gives the means used in every benchmark table.

How a method uses it
--------------------
A round of a server-based method (Safe-EF)::

    local = build_local(comm, workers)  # {i: worker} for the local ids
    msgs = {i: encode(local[i], x, comm.worker_rng(i))
            for i in comm.local_workers}
    got = comm.gather(msgs)  # list on the root, None elsewhere
    # the server state lives on the root
    reply = server_step(got) if comm.is_root else None
    x = apply(comm.broadcast(reply))  # every process decodes the same bytes
    fg = {i: [local[i].f(x), local[i].g(x)] for i in local}
    f, g = comm.allreduce(fg) / comm.n_workers

A method with a replicated server (QODA) uses ``allgather`` instead of ``gather`` +
``broadcast``. Worker randomness comes from ``comm.worker_rng(i)`` (the same stream on every
communicator), so SimComm and MPIComm give identical iterates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = [
    "Message",
    "Traffic",
    "BitStats",
    "Communicator",
    "SimComm",
    "MPIComm",
    "build_local",
    "encode_dense",
    "decode_dense",
    "encode_scalars",
    "decode_scalars",
    "encode_flag",
    "decode_flag",
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


def encode_flag(flag: bool) -> Message:
    """One bit (e.g. the server's "productive step" decision)."""
    return Message(b"\x80" if flag else b"\x00", 1)


def decode_flag(msg: Message) -> bool:
    """Inverse of :func:`encode_flag`."""
    if msg.n_bits != 1:
        raise ValueError(f"a flag message has 1 bit, got {msg.n_bits}")
    return bool(msg.payload[0] & 0x80)


# --------------------------------------------------------------------------- traffic


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


# --------------------------------------------------------------------------- protocol

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

    def gather(self, local: Mapping[int, Message]) -> list[Message] | None:
        """Uplink: one message per local worker; the root gets all of them in worker order,
        other processes ``None``."""
        ...

    def allgather(self, local: Mapping[int, Message]) -> list[Message]:
        """Peer exchange: every process gets every worker's message, in worker order."""
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


# --------------------------------------------------------------------------- implementations


def _as_message(m: Any) -> Message:
    if not isinstance(m, Message):
        raise TypeError("exchanged messages must be sparsecert.distributed.comm.Message")
    return m


class _BaseComm:
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
        t = self.traffic
        bits = np.array([m.n_bits for m in msgs], dtype=np.int64)
        t.up_sent += bits
        t.rounds += 1
        if to_server:
            t.server_received += int(bits.sum())
        else:
            t.up_received += int(bits.sum()) - bits

    def _count_downlink(self, msg: Message) -> None:
        t = self.traffic
        t.down_received += msg.n_bits
        t.server_sent += msg.n_bits * self.n_workers


def _sum_in_order(values: Sequence[np.ndarray]) -> np.ndarray:
    acc = np.zeros_like(values[0], dtype=np.float64)
    for v in values:
        acc = acc + v
    return acc


class SimComm(_BaseComm):
    """In-process, deterministic simulation of ``n_workers`` workers (and the server).

    Parameters
    ----------
    n_workers : int
        Number of simulated workers.
    seed : int or None
        Seed of the per-worker random generators (``SeedSequence(seed).spawn``).
    """

    def gather(self, local: Mapping[int, Message]) -> list[Message]:
        msgs = self._check_local(local, "gather")
        out = [msgs[i] for i in range(self.n_workers)]
        self._count_uplink(out, to_server=True)
        return out

    def allgather(self, local: Mapping[int, Message]) -> list[Message]:
        msgs = self._check_local(local, "allgather")
        out = [msgs[i] for i in range(self.n_workers)]
        self._count_uplink(out, to_server=False)
        return out

    def broadcast(self, msg: Message | None) -> Message:
        if msg is None:
            raise ValueError("SimComm.broadcast needs the message")
        msg = _as_message(msg)
        self._count_downlink(msg)
        return msg

    def allreduce(self, local: Mapping[int, Any]) -> np.ndarray:
        vals = self._check_values(local)
        return _sum_in_order([vals[i] for i in range(self.n_workers)])

    def barrier(self) -> None:
        """Nothing to wait for in one process."""


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
    """Workers spread over MPI ranks (worker ``i`` on rank ``i % size``), server on rank 0.

    Every exchange is a collective on numpy buffers: a header array of ``(n_bits, n_bytes)``
    pairs (int64) and one concatenated byte buffer (uint8), moved with ``Gatherv`` (uplink),
    ``Allgatherv`` (peer exchange) or ``Bcast`` (downlink); :meth:`allreduce` moves float64
    buffers with ``Allgatherv`` and sums them in worker order on every rank (an MPI ``SUM``
    reduction would add in an implementation-defined order and could differ from
    :class:`SimComm` in the last bit). The headers (message lengths) are framing, not counted.

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

    def __init__(self, n_workers: int | None = None, seed: int | None = 0,
                 comm: Any = None) -> None:
        ok, reason = mpi_available()
        if not ok:
            raise RuntimeError(reason)
        from mpi4py import MPI

        self._MPI = MPI
        self._comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank = int(self._comm.Get_rank())
        self.size = int(self._comm.Get_size())
        super().__init__(self.size if n_workers is None else n_workers, seed)
        self._local = tuple(i for i in range(self.n_workers) if i % self.size == self.rank)
        self._by_rank = [
            [i for i in range(self.n_workers) if i % self.size == r] for r in range(self.size)
        ]

    @property
    def local_workers(self) -> tuple[int, ...]:
        return self._local

    # -- packing
    def _pack(self, msgs: Mapping[int, Message]) -> tuple[np.ndarray, np.ndarray]:
        head = np.array([[msgs[i].n_bits, len(msgs[i].payload)] for i in self._local],
                        dtype=np.int64).reshape(-1, 2)
        data = np.frombuffer(b"".join(bytes(msgs[i].payload) for i in self._local),
                             dtype=np.uint8)
        return head, data

    def _unpack(self, head: np.ndarray, data: np.ndarray) -> list[Message]:
        """Messages in worker order from the rank-ordered header/byte buffers."""
        out: list[Message | None] = [None] * self.n_workers
        row, off = 0, 0
        for ids in self._by_rank:
            for i in ids:
                n_bits, nb = int(head[row, 0]), int(head[row, 1])
                out[i] = Message(data[off:off + nb].tobytes(), n_bits)
                row += 1
                off += nb
        return out  # type: ignore[return-value]

    def _head_layout(self) -> tuple[list[int], list[int]]:
        counts = [2 * len(ids) for ids in self._by_rank]
        return counts, list(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int))

    def _byte_layout(self, head: np.ndarray) -> tuple[list[int], list[int]]:
        counts, row = [], 0
        for ids in self._by_rank:
            counts.append(int(head[row:row + len(ids), 1].sum()))
            row += len(ids)
        return counts, list(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int))

    def _local_bits(self, msgs: Mapping[int, Message]) -> int:
        return int(sum(msgs[i].n_bits for i in self._local))

    # -- exchanges
    def gather(self, local: Mapping[int, Message]) -> list[Message] | None:
        MPI = self._MPI
        msgs = self._check_local(local, "gather")
        head, data = self._pack(msgs)
        hcounts, hdispl = self._head_layout()
        root = self.rank == 0
        rhead = np.empty(sum(hcounts), dtype=np.int64) if root else None
        self._comm.Gatherv(head.ravel(), [rhead, hcounts, hdispl, MPI.INT64_T] if root else None,
                           root=0)
        if root:
            rhead = rhead.reshape(-1, 2)
            bcounts, bdispl = self._byte_layout(rhead)
            rdata = np.empty(sum(bcounts), dtype=np.uint8)
            self._comm.Gatherv(data, [rdata, bcounts, bdispl, MPI.BYTE], root=0)
            out = self._unpack(rhead, rdata)
            bits = np.array([m.n_bits for m in out], dtype=np.int64)
        else:
            self._comm.Gatherv(data, None, root=0)
            out = None
        # Every process counts every worker's uplink bits: the root knows them all; the
        # other ranks learn the totals with one tiny broadcast (book-keeping, not traffic).
        if not root:
            bits = np.empty(self.n_workers, dtype=np.int64)
        self._comm.Bcast(bits, root=0)
        t = self.traffic
        t.up_sent += bits
        t.server_received += int(bits.sum())
        t.rounds += 1
        mine = self._local_bits(msgs)
        if root:
            t.process_received += int(bits.sum()) - mine
        else:
            t.process_sent += mine
        return out

    def allgather(self, local: Mapping[int, Message]) -> list[Message]:
        MPI = self._MPI
        msgs = self._check_local(local, "allgather")
        head, data = self._pack(msgs)
        hcounts, hdispl = self._head_layout()
        rhead = np.empty(sum(hcounts), dtype=np.int64)
        self._comm.Allgatherv(head.ravel(), [rhead, hcounts, hdispl, MPI.INT64_T])
        rhead = rhead.reshape(-1, 2)
        bcounts, bdispl = self._byte_layout(rhead)
        rdata = np.empty(sum(bcounts), dtype=np.uint8)
        self._comm.Allgatherv(data, [rdata, bcounts, bdispl, MPI.BYTE])
        out = self._unpack(rhead, rdata)
        self._count_uplink(out, to_server=False)
        mine = self._local_bits(msgs)
        t = self.traffic
        t.process_sent += mine * (self.size - 1)
        t.process_received += sum(m.n_bits for m in out) - mine
        return out

    def broadcast(self, msg: Message | None) -> Message:
        root = self.rank == 0
        if root:
            if msg is None:
                raise ValueError("MPIComm.broadcast needs the message on rank 0")
            msg = _as_message(msg)
            head = np.array([msg.n_bits, len(msg.payload)], dtype=np.int64)
        else:
            head = np.empty(2, dtype=np.int64)
        self._comm.Bcast(head, root=0)
        buf = (np.frombuffer(bytes(msg.payload), dtype=np.uint8).copy() if root
               else np.empty(int(head[1]), dtype=np.uint8))
        self._comm.Bcast(buf, root=0)
        out = msg if root else Message(buf.tobytes(), int(head[0]))
        self._count_downlink(out)
        if root:
            self.traffic.process_sent += out.n_bits * (self.size - 1)
        else:
            self.traffic.process_received += out.n_bits
        return out

    def allreduce(self, local: Mapping[int, Any]) -> np.ndarray:
        MPI = self._MPI
        vals = self._check_values(local)
        shape = next(iter(vals.values())).shape if vals else None
        # ranks without workers learn the shape from the others
        dims = np.full(8, -1, dtype=np.int64)
        if shape is not None:
            if len(shape) > 7:
                raise ValueError("allreduce supports arrays of at most 7 dimensions")
            dims[0] = len(shape)
            dims[1:1 + len(shape)] = shape
        alld = np.empty((self.size, 8), dtype=np.int64)
        self._comm.Allgather(dims, alld)
        ref = alld[alld[:, 0] >= 0]
        if ref.size == 0:
            raise ValueError("allreduce called with no workers")
        shape = tuple(int(s) for s in ref[0, 1:1 + ref[0, 0]])
        if any(tuple(r[1:1 + r[0]]) != shape for r in ref):
            raise ValueError("allreduce needs arrays of one shape on every process")
        size = int(np.prod(shape, dtype=np.int64))
        send = (np.concatenate([vals[i].ravel() for i in self._local]) if self._local
                else np.zeros(0))
        counts = [size * len(ids) for ids in self._by_rank]
        displ = list(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int))
        recv = np.empty(sum(counts), dtype=np.float64)
        self._comm.Allgatherv(np.ascontiguousarray(send, dtype=np.float64),
                              [recv, counts, displ, MPI.DOUBLE])
        per_worker: list[np.ndarray | None] = [None] * self.n_workers
        off = 0
        for ids in self._by_rank:
            for i in ids:
                per_worker[i] = recv[off:off + size].reshape(shape)
                off += size
        return _sum_in_order(per_worker)  # type: ignore[arg-type]

    def process_traffic(self) -> np.ndarray:
        """``(size, 2)`` array of ``[bits sent, bits received]`` of every process (collective;
        the same on every rank)."""
        mine = np.array([self.traffic.process_sent, self.traffic.process_received],
                        dtype=np.int64)
        out = np.empty((self.size, 2), dtype=np.int64)
        self._comm.Allgather(mine, out)
        return out

    def barrier(self) -> None:
        """Wait for every process."""
        self._comm.Barrier()
