"""Workers spread over MPI ranks: :class:`MPIComm` (mpi4py, imported on demand)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sparsecert.distributed.comm.protocol import BaseComm, _as_message, sum_in_order
from sparsecert.distributed.message import Message

__all__ = ["MPIComm", "mpi_available"]


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
