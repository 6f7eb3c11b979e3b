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


from sparsecert.distributed import message as _message
from sparsecert.distributed.comm.mpi import MPIComm, mpi_available
from sparsecert.distributed.comm.protocol import BaseComm, Communicator, build_local
from sparsecert.distributed.comm.sim import SimComm
from sparsecert.distributed.comm.traffic import BitStats, Traffic
from sparsecert.distributed.message import *  # noqa: F403 (the names of message.__all__)

__all__ = [
    "Traffic",
    "BitStats",
    "Communicator",
    "BaseComm",
    "SimComm",
    "MPIComm",
    "build_local",
    "mpi_available",
    *_message.__all__,  # the message and its dense codecs, re-exported from the layer below
]
