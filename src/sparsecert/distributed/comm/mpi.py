"""Workers spread over MPI ranks: :class:`MPIComm` (mpi4py, imported on demand)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Mapping
from typing import Any

import numpy as np

from sparsecert.distributed.comm.protocol import BaseComm, _as_message, sum_in_order
from sparsecert.distributed.message import Message

__all__ = ["MPIComm", "mpi_available", "install_abort_hook"]

_HOOKED: list[bool] = []


def _finish_output(line: str) -> None:
    """Write ``line`` to file descriptor 2 unbuffered, after flushing what Python buffered,
    then close descriptors 1 and 2: everything this rank printed is in the launcher's pipes,
    followed by their end, before the abort is sent (no sleep, no buffer left behind)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    data = line.encode("utf-8", "replace")
    try:
        while data:
            data = data[os.write(2, data):]
    except OSError:
        pass
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass


def install_abort_hook() -> None:
    """Make an uncaught exception on this rank end the whole MPI job: print one line
    (``sparsecert: error on MPI rank r of n: Type: message``; the traceback too when
    ``SPARSECERT_MPI_TRACEBACK=1``), written unbuffered and followed by the end of this rank's
    output streams, then call ``MPI.COMM_WORLD.Abort(1)``. Without it the other
    ranks wait forever in their next collective. Installed once per process (the previous
    hook is not called: the process is ending anyway)."""
    if _HOOKED:
        return
    from mpi4py import MPI

    def hook(kind, value, tb) -> None:
        world = MPI.COMM_WORLD
        if os.environ.get("SPARSECERT_MPI_TRACEBACK", "") not in ("", "0"):
            traceback.print_exception(kind, value, tb)
        text = str(value).strip().splitlines()
        line = f"{kind.__name__}: {text[0]}" if text else kind.__name__
        msg = f"sparsecert: error on MPI rank {world.Get_rank()} of {world.Get_size()}: {line}\n"
        _finish_output(msg)
        world.Abort(1)

    sys.excepthook = hook
    _HOOKED.append(True)


def mpi_available() -> tuple[bool, str]:
    """Whether mpi4py and an MPI library load; returns ``(ok, reason)``."""
    try:
        from mpi4py import MPI  # noqa: F401
    except ImportError as exc:  # mpi4py itself missing
        return False, f"mpi4py is not installed ({exc}); install the [mpi] extra"
    except RuntimeError as exc:  # mpi4py present, MPI library missing
        return False, f"mpi4py cannot load an MPI library ({exc}); `pip install mpich`"
    return True, ""


class MPIComm(BaseComm):
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
    abort_on_error : bool
        Install :func:`install_abort_hook`: an uncaught exception on any rank ends the whole
        job with a one-line error instead of leaving the other ranks waiting.

    Collectives per exchange: ``gather`` two ``Gatherv`` (lengths, bytes), one (the bytes)
    when the caller gives the agreed size (``n_bits``, ``n_bytes``); ``broadcast`` one
    ``Bcast`` of a buffer holding the lengths and the bytes (a second one only when a message
    outgrows the buffer, which then grows); ``allgather`` two ``Allgatherv`` (lengths, bytes),
    one (the bytes) when the caller gives the agreed size; ``allreduce`` an
    ``Allgather`` of shapes and an ``Allgatherv``. The uplink bits of other ranks' workers,
    which only the root receives, reach the other processes' :attr:`traffic` with the next
    broadcast (the bits of the gathers since the last one travel in its header): after a
    ``broadcast`` every process has counted the same logical traffic.
    """

    def __init__(self, n_workers: int | None = None, seed: int | None = 0,
                 comm: Any = None, abort_on_error: bool = True) -> None:
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
        # uplink bits the root received since the last broadcast (sent with it) and the number
        # of gathers they cover; the broadcast buffer's capacity in bytes (the same on all ranks)
        self._pending = np.zeros(self.n_workers, dtype=np.int64)
        self._pending_rounds = 0
        self._bcap = 8 * (4 + self.n_workers) + 256
        if abort_on_error:
            install_abort_hook()

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
    def _gather_framed(self, msgs: Mapping[int, Message]
                       ) -> tuple[list[Message] | None, np.ndarray | None]:
        """Messages of any sizes: a ``Gatherv`` of the lengths, then one of the bytes."""
        MPI = self._MPI
        head, data = self._pack(msgs)
        hcounts, hdispl = self._head_layout()
        if self.rank != 0:
            self._comm.Gatherv(head.ravel(), None, root=0)
            self._comm.Gatherv(data, None, root=0)
            return None, None
        rhead = np.empty(sum(hcounts), dtype=np.int64)
        self._comm.Gatherv(head.ravel(), [rhead, hcounts, hdispl, MPI.INT64_T], root=0)
        rhead = rhead.reshape(-1, 2)
        bcounts, bdispl = self._byte_layout(rhead)
        rdata = np.empty(sum(bcounts), dtype=np.uint8)
        self._comm.Gatherv(data, [rdata, bcounts, bdispl, MPI.BYTE], root=0)
        out = self._unpack(rhead, rdata)
        return out, np.array([m.n_bits for m in out], dtype=np.int64)

    def gather(self, local: Mapping[int, Message], n_bits: int | None = None,
               n_bytes: int | None = None) -> list[Message] | None:
        MPI = self._MPI
        msgs = self._check_local(local, "gather")
        nbytes = self._check_size(msgs, n_bits, n_bytes)
        root = self.rank == 0
        if nbytes is not None:  # sizes agreed in advance: one Gatherv of the bytes alone
            data = np.frombuffer(b"".join(bytes(msgs[i].payload) for i in self._local),
                                 dtype=np.uint8)
            counts = [nbytes * len(ids) for ids in self._by_rank]
            if root:
                displ = list(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int))
                rdata = np.empty(sum(counts), dtype=np.uint8)
                self._comm.Gatherv(data, [rdata, counts, displ, MPI.BYTE], root=0)
                rhead = np.empty((self.n_workers, 2), dtype=np.int64)
                rhead[:, 0], rhead[:, 1] = n_bits, nbytes
                out = self._unpack(rhead, rdata)
                bits = np.full(self.n_workers, n_bits, dtype=np.int64)
            else:
                self._comm.Gatherv(data, None, root=0)
                out = None
        else:
            out, bits = self._gather_framed(msgs)
        # The root counts every worker's uplink now; the other processes count their own
        # workers' bits when the next broadcast brings the root's counts (no extra collective).
        t = self.traffic
        mine = self._local_bits(msgs)
        if root:
            t.up_sent += bits
            t.server_received += int(bits.sum())
            t.rounds += 1
            t.process_received += int(bits.sum()) - mine
            self._pending += bits
            self._pending_rounds += 1
        else:
            t.process_sent += mine
        return out

    def allgather(self, local: Mapping[int, Message], n_bits: int | None = None,
                  n_bytes: int | None = None) -> list[Message]:
        MPI = self._MPI
        msgs = self._check_local(local, "allgather")
        nbytes = self._check_size(msgs, n_bits, n_bytes)
        if nbytes is not None:  # sizes agreed in advance: one Allgatherv of the bytes alone
            rhead = np.empty((self.n_workers, 2), dtype=np.int64)
            rhead[:, 0], rhead[:, 1] = n_bits, nbytes
            data = np.frombuffer(b"".join([msgs[i].payload for i in self._local]),
                                 dtype=np.uint8)
        else:
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
        n = self.n_workers
        nhead = 8 * (3 + n)  # n_bits, n_bytes, pending rounds, pending bits per worker
        buf = np.empty(self._bcap, dtype=np.uint8)
        head = buf[:nhead].view(np.int64)
        if root:
            if msg is None:
                raise ValueError("MPIComm.broadcast needs the message on rank 0")
            msg = _as_message(msg)
            payload = np.frombuffer(bytes(msg.payload), dtype=np.uint8)
            head[:3] = (msg.n_bits, payload.size, self._pending_rounds)
            head[3:] = self._pending
            first = min(payload.size, self._bcap - nhead)
            buf[nhead:nhead + first] = payload[:first]
        self._comm.Bcast(buf, root=0)
        n_bits, nbytes, rounds = (int(x) for x in head[:3])
        pending = head[3:].copy()
        room = self._bcap - nhead
        if nbytes > room:  # outgrew the buffer: the rest follows, and the buffer grows
            rest = (payload[room:].copy() if root
                    else np.empty(nbytes - room, dtype=np.uint8))
            self._comm.Bcast(rest, root=0)
            self._bcap = nhead + nbytes
            data = bytes(buf[nhead:]) + rest.tobytes()
        else:
            data = buf[nhead:nhead + nbytes].tobytes()
        out = msg if root else Message(data, n_bits)
        if not root:  # the other ranks' uplink since the last broadcast
            t = self.traffic
            t.up_sent += pending
            t.server_received += int(pending.sum())
            t.rounds += rounds
        self._pending[:] = 0
        self._pending_rounds = 0
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
        return sum_in_order(per_worker)  # type: ignore[arg-type]

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
