"""Shared pieces of the trilevel solvers: the problem protocol, the result record, the
worker-side oracle that turns values (or grey-box gradients) into block gradient estimates while
counting every query, and the run every solver builds on (:class:`_TrilevelRun`: the oracle,
the master's generator, the history, the server sum and the consensus round).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from sparsecert.distributed.comm import Communicator, Traffic, build_local
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig, zo_rows
from sparsecert.distributed.message import Message, decode_dense, encode_dense

__all__ = ["TrilevelWorker", "TrilevelProblem", "BoundWorker", "DTZOResult", "Monitor"]

Monitor = Callable[[np.ndarray], dict[str, float]]


@runtime_checkable
class TrilevelWorker(Protocol):
    """One worker's black boxes: its three level objectives ``f_{l,j}``."""

    def value(self, level: int, Z: np.ndarray) -> np.ndarray:
        """``f_{level,j}`` at the rows of ``Z`` (shape ``(m, d)``) -> ``(m,)``."""
        ...

    def has_gradient(self, level: int) -> bool:
        """Whether :meth:`gradient` is available for this level (grey box)."""
        ...

    def gradient(self, level: int, Z: np.ndarray) -> np.ndarray:
        """Full gradient in ``z`` of ``f_{level,j}`` at the rows of ``Z`` -> ``(m, d)``."""
        ...


@runtime_checkable
class TrilevelProblem(Protocol):
    """What the trilevel solvers need from a problem: its shape, a starting point and a
    factory of workers.

    A solver calls :meth:`worker` only for the workers its process hosts
    (:attr:`Communicator.local_workers <sparsecert.distributed.comm.Communicator.local_workers>`),
    so a problem whose factory loads worker ``j``'s data on demand keeps every worker's data on
    its own process under MPI.

    Attributes
    ----------
    dims : tuple of int
        ``(d1, d2, d3)``; points are ``z = concatenate([x1, x2, x3])`` of length ``d``.
    n_workers : int
    """

    dims: tuple[int, int, int]
    n_workers: int

    def initial_point(self) -> np.ndarray:
        """A starting point ``z0`` of length ``d`` (the same on every process)."""
        ...

    def worker(self, j: int) -> TrilevelWorker:
        """Worker ``j``'s level objectives."""
        ...


class BoundWorker:
    """A :class:`TrilevelWorker` view of a problem that holds every worker's data and answers
    ``value(level, worker, Z)`` (the shipped test problems)."""

    def __init__(self, problem, j: int) -> None:
        self.problem, self.j = problem, int(j)

    def value(self, level: int, Z: np.ndarray) -> np.ndarray:
        return self.problem.value(level, self.j, Z)

    def has_gradient(self, level: int) -> bool:
        return self.problem.has_gradient(level)

    def gradient(self, level: int, Z: np.ndarray) -> np.ndarray:
        return self.problem.gradient(level, self.j, Z)


@dataclass
class DTZOResult:
    """Output of the trilevel solvers.

    Attributes
    ----------
    z : numpy.ndarray
        Final consensus point ``(x1, x2, x3)``.
    x1, x2, x3 : numpy.ndarray
    history : dict of str to numpy.ndarray
        Per recorded iteration: ``iter``, ``queries`` (function values, all workers),
        ``grad_calls``, ``bits_up``, ``bits_down`` and ``bits_total`` (bits per worker: the mean
        over workers of what each sent to the server, received from it, and both), ``rounds``,
        ``consensus_error`` (``max_j ||z_j - z||``), ``f1`` (the level-1 objective at the
        consensus point, a reduction of the workers' values; not counted in ``queries``), the
        method's own counters (``cut_queries``, ``n_cuts3``, ``n_cuts2``, ``cuts_dropped``,
        ..., and for the DTZO-style method and its first-order reference ``seconds``, the
        run's wall seconds on this process so far, records excluded) and the monitor's
        entries.
    method : str
    n_queries, n_grad_calls : int
    bits_up, bits_down : float
        Bits per worker per direction (means over workers), as in :attr:`traffic`.
    rounds : int
        Uplink exchanges.
    traffic : sparsecert.distributed.comm.Traffic
        The communicator's full record (per worker, server and process, sent and received).
    residual_trace : dict of str to numpy.ndarray
        The method's own residual estimates: ``iter``, ``res3``, ``res2`` at every cut point
        and, with ``check_residuals``, at the returned point (DTZO-style only).
    warnings : list of str
        The diagnostics issued as :class:`~sparsecert.distributed.dtzo.diagnostics.DTZOWarning`
        (empty when the run looks sound).
    """

    z: np.ndarray
    x1: np.ndarray
    x2: np.ndarray
    x3: np.ndarray
    history: dict[str, np.ndarray]
    method: str
    n_queries: int
    n_grad_calls: int
    bits_up: float
    bits_down: float
    rounds: int
    traffic: Traffic | None = None
    residual_trace: dict[str, np.ndarray] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------------------------


def _check_problem(problem: TrilevelProblem, comm: Communicator) -> tuple[int, int, int]:
    if not isinstance(problem, TrilevelProblem):
        raise TypeError("problem must implement sparsecert.distributed.dtzo.trilevel."
                        "TrilevelProblem (dims, n_workers, initial_point(), worker(j))")
    dims = tuple(int(v) for v in problem.dims)
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"problem.dims must be three positive integers, got {problem.dims}")
    if problem.n_workers != comm.n_workers:
        raise ValueError(
            f"problem has {problem.n_workers} workers but the communicator has {comm.n_workers}"
        )
    z0 = np.asarray(problem.initial_point(), dtype=np.float64)
    if z0.shape != (sum(dims),) or not np.all(np.isfinite(z0)):
        raise ValueError(f"initial_point must be a finite vector of length {sum(dims)}")
    return dims  # type: ignore[return-value]


def local_workers(problem: TrilevelProblem, comm: Communicator) -> dict[int, TrilevelWorker]:
    """Build this process's workers (and only them) with the problem's factory."""
    workers = build_local(comm, problem.worker)
    for j, w in workers.items():
        if not isinstance(w, TrilevelWorker):
            raise TypeError(f"problem.worker({j}) must return a TrilevelWorker "
                            "(value(level, Z), has_gradient(level), gradient(level, Z))")
    return workers


class _Ledger:
    """Per-worker counters, reduced over all workers for the history (monitoring: not metered).

    ``cut_queries`` counts the function values spent building cuts (a subset of ``queries``);
    ``monitor_queries`` those spent on the ``f1`` monitor (not in ``queries``).
    """

    def __init__(self, comm: Communicator) -> None:
        self.comm = comm
        self.queries = {j: 0 for j in comm.local_workers}
        self.grads = {j: 0 for j in comm.local_workers}
        self.cut_queries = {j: 0 for j in comm.local_workers}
        self.monitor_queries = {j: 0 for j in comm.local_workers}

    def reduce(self, f1: dict[int, float], consensus: dict[int, float]) -> dict[str, float]:
        """Sums over workers of the counters and of ``f1``, and the largest consensus error
        (each worker contributes its own entry of a length-``N`` vector)."""
        N = self.comm.n_workers
        local = {}
        for j in self.comm.local_workers:
            v = np.zeros(5 + N)
            v[:5] = (self.queries[j], self.grads[j], self.cut_queries[j],
                     self.monitor_queries[j], f1.get(j, 0.0))
            v[5 + j] = consensus.get(j, 0.0)
            local[j] = v
        tot = self.comm.allreduce(local)
        return {"queries": tot[0], "grad_calls": tot[1], "cut_queries": tot[2],
                "monitor_queries": tot[3], "f1": tot[4], "consensus_error": tot[5:].max()}


class _Oracle:
    """Worker-side block gradients (zeroth order or exact), all queries counted."""

    def __init__(self, workers: dict[int, TrilevelWorker], comm: Communicator, ledger: _Ledger,
                 exact_levels: tuple[int, ...]) -> None:
        self.workers = workers
        self.comm = comm
        self.ledger = ledger
        self.exact = set(exact_levels)
        for lev in self.exact:
            if any(not w.has_gradient(lev) for w in workers.values()):
                raise ValueError(f"exact gradients requested for level {lev}, which has none")

    def values(self, level: int, j: int, Z: np.ndarray, monitor: bool = False) -> np.ndarray:
        v = np.asarray(self.workers[j].value(level, Z), dtype=np.float64)
        if v.shape != (Z.shape[0],):
            raise ValueError(f"worker.value returned shape {v.shape}, expected ({Z.shape[0]},)")
        if not np.all(np.isfinite(v)):
            raise ValueError(
                f"worker {j}'s value(level={level}) returned NaN or inf (diverging "
                "iterates? reduce the step sizes)"
            )
        if monitor:
            self.ledger.monitor_queries[j] += Z.shape[0]
        else:
            self.ledger.queries[j] += Z.shape[0]
        return v

    def grad(self, level: int, j: int, base: np.ndarray, C: np.ndarray, offset: np.ndarray,
             zo: ZOConfig) -> np.ndarray:
        """Gradient in ``base`` (``(m, nb)``) of ``f_{level,j}(base @ C.T + offset)``."""
        if level in self.exact:
            Z = base @ C.T + offset
            G = np.asarray(self.workers[j].gradient(level, Z), dtype=np.float64)
            self.ledger.grads[j] += Z.shape[0]
            return G @ C
        n_q = zo.queries_per_point(base.shape[1])
        return zo_rows(lambda pts: self.values(level, j, pts @ C.T
                                               + np.repeat(offset, n_q, axis=0)),
                       base, self.comm.worker_rng(j), zo)[0]


def server_sum(comm: Communicator, local: dict[int, np.ndarray], dtype: str,
               shape: tuple[int, ...]) -> np.ndarray:
    """Every worker sends an array to the server (uplink), the server broadcasts their sum
    (downlink); returns the sum, as decoded by every process."""
    msgs = comm.gather({j: encode_dense(np.ravel(v), dtype) for j, v in local.items()})
    reply = None
    if comm.is_root:
        total = np.zeros(int(np.prod(shape)))
        for m in msgs:
            total += decode_dense(m, dtype)
        reply = encode_dense(total, dtype)
    return decode_dense(comm.broadcast(reply), dtype).reshape(shape)


def traffic_row(comm: Communicator) -> dict[str, float]:
    """Bits per worker per direction so far, and the uplink rounds."""
    pw = comm.traffic.per_worker()
    return {"bits_up": pw["up"], "bits_down": pw["down"], "bits_total": pw["total"],
            "rounds": comm.traffic.rounds}


class _TrilevelRun:
    """What a run of every trilevel method holds (the checked problem's dimensions, the oracle
    of this process's workers and its ledger, the master's generator, the history) and the
    exchanges of its rounds.

    Parameters
    ----------
    problem, comm, monitor
        As given to the method.
    exact_levels : tuple of int
        Levels whose gradients the oracle uses.
    seed_key : list of int
        Entropy of the master's generator (the same on every process, so what it draws is
        known everywhere without being sent).
    """

    def __init__(self, problem: TrilevelProblem, comm: Communicator, monitor: Monitor | None,
                 exact_levels: tuple[int, ...], seed_key: list[int]) -> None:
        self.dims = _check_problem(problem, comm)
        self.problem, self.comm, self.monitor = problem, comm, monitor
        self.oracle = _Oracle(local_workers(problem, comm), comm, _Ledger(comm), exact_levels)
        self.ledger = self.oracle.ledger
        self.rng = np.random.default_rng(np.random.SeedSequence(seed_key))
        self.hist: dict[str, list[float]] = {}

    def check_participation(self, participation: int | None) -> None:
        N = self.comm.n_workers
        if participation is not None and participation > N:
            raise ValueError(f"participation={participation} exceeds n_workers={N}")

    # -- the exchanges of a round
    def server_sum(self, local: dict[int, np.ndarray], dtype: str,
                   shape: tuple[int, ...]) -> np.ndarray:
        """:func:`server_sum` on this run's communicator."""
        return server_sum(self.comm, local, dtype, shape)

    def participants(self, participation: int | None) -> np.ndarray:
        """The workers taking part in a round: all of them (``participation`` None or at least
        ``n_workers``), else a sorted uniform sample without replacement from the master's
        generator."""
        N = self.comm.n_workers
        if participation is None or participation >= N:
            return np.arange(N)
        return np.sort(self.rng.choice(N, size=participation, replace=False))

    def consensus_round(self, part: np.ndarray, send: Callable[[int], np.ndarray],
                        server: Callable[[dict[int, np.ndarray]], np.ndarray],
                        dtype: str) -> np.ndarray:
        """One round of a consensus method: each local participant ``j`` (in ``part``) sends
        the vector ``send(j)`` (called in worker order), the other workers nothing (an empty
        message, no bits); the server's ``server({j: v_j})`` of the participants' decoded
        vectors (in ``part`` order) is broadcast. Returns the new point as every process
        decodes it."""
        comm = self.comm
        pset = set(part.tolist())
        msgs = comm.gather({j: encode_dense(send(j), dtype) if j in pset else Message(b"", 0)
                            for j in comm.local_workers})
        reply = None
        if comm.is_root:
            reply = encode_dense(server({j: decode_dense(msgs[j], dtype) for j in part}), dtype)
        return decode_dense(comm.broadcast(reply), dtype)

    # -- the history and the result
    def history_row(self, t: int, z: np.ndarray, copies: dict[int, np.ndarray] | None = None,
                    **extra: float) -> dict[str, float]:
        """What every trilevel method records at iteration ``t``: the level-1 objective at the
        point ``z`` (monitor queries), the query counters, the consensus error
        ``max_j ||z_j - z||`` of the workers' ``copies`` (0 without), the traffic so far, the
        method's ``extra`` entries and the monitor's."""
        comm, oracle = self.comm, self.oracle
        f1 = {j: float(oracle.values(1, j, z[None, :], monitor=True)[0])
              for j in comm.local_workers}
        cons = {} if copies is None else {j: float(np.linalg.norm(copies[j] - z))
                                          for j in comm.local_workers}
        row = {"iter": t, **self.ledger.reduce(f1, cons), **traffic_row(comm), **extra}
        if self.monitor is not None:
            row.update(self.monitor(z.copy()))
        return row

    def append(self, row: dict[str, float]) -> None:
        """Add a row to the history."""
        for k, v in row.items():
            self.hist.setdefault(k, []).append(float(v))

    def result(self, z: np.ndarray, method: str) -> DTZOResult:
        d1, d2, _ = self.dims
        h = {k: np.asarray(v) for k, v in self.hist.items()}
        comm = self.comm
        pw = comm.traffic.per_worker()
        return DTZOResult(
            z=z.copy(), x1=z[:d1].copy(), x2=z[d1:d1 + d2].copy(), x3=z[d1 + d2:].copy(),
            history=h, method=method, n_queries=int(h["queries"][-1]),
            n_grad_calls=int(h["grad_calls"][-1]), bits_up=pw["up"], bits_down=pw["down"],
            rounds=int(comm.traffic.rounds), traffic=comm.traffic.copy(),
        )
