"""Safe-EF and baselines for non-smooth constrained distributed optimisation.

Problem (Islamov, As, Fatkhullin, ICML 2025, arXiv 2505.06053)::

    minimize   f(x) = (1/n) sum_i f_i(x)
    subject to g(x) = (1/n) sum_i g_i(x) <= 0

with convex, Lipschitz, possibly non-smooth ``f_i, g_i`` held by ``n`` workers (the
:class:`Worker` protocol). Every method here is written against the
:class:`~sparsecert.distributed.comm.Communicator` protocol only (default
:class:`~sparsecert.distributed.comm.SimComm`), so the same code runs in-process or on MPI.

One iteration ("round") of the switching methods has two uplink exchanges: every worker sends
``g_i(x_t)`` (float32 by default, 32 bits; see ``scalar_dtype``); the server forms ``g(x_t)``
and the step is *productive* (``t in I``) when ``g(x_t) <= c``; then every worker sends its
compressed vector. The server (replicated on every process) aggregates and broadcasts the new
model (downlink). All bits are
those of the real encoded messages, counted by the communicator.

Methods
-------
:func:`safe_ef`
    EF14 error feedback on the uplink + constraint switching + optional EF21-P downlink.
:func:`safe_ef_stochastic`
    The same with minibatch subgradients and a minibatch estimate of ``g`` for the switch.
:func:`switching_subgradient`
    Uncompressed switching subgradient method (Polyak 1967), dense uplink.
:func:`topk_no_ef`
    Compressed switching method without error feedback.
:func:`ef21_switching`
    EF21 (compressed gradient-difference estimator) with switching.
:func:`ef14_lagrangian`
    EF14 on the Lagrangian ``f + lambda g`` with a projected dual ascent on ``lambda``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sparsecert.distributed.comm import (
    BitStats,
    Communicator,
    Message,
    SimComm,
    decode_dense,
    encode_dense,
)
from sparsecert.distributed.compress import Compressor, Identity

__all__ = [
    "Worker",
    "StochasticWorker",
    "FunctionWorker",
    "RoundInfo",
    "SafeEFResult",
    "safe_ef",
    "safe_ef_stochastic",
    "switching_subgradient",
    "topk_no_ef",
    "ef21_switching",
    "ef14_lagrangian",
    "METHODS",
]


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class Worker(Protocol):
    """What one worker holds: its objective and constraint parts with subgradients."""

    def f(self, x: np.ndarray) -> float:
        """Local objective ``f_i(x)``."""
        ...

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        """A subgradient of ``f_i`` at ``x``."""
        ...

    def g(self, x: np.ndarray) -> float:
        """Local constraint ``g_i(x)`` (the constraint is ``mean_i g_i(x) <= 0``)."""
        ...

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        """A subgradient of ``g_i`` at ``x``."""
        ...


@runtime_checkable
class StochasticWorker(Worker, Protocol):
    """A worker that can draw a minibatch: an unbiased stochastic view of itself."""

    def minibatch(self, rng: np.random.Generator, batch_size: int) -> Worker:
        """A :class:`Worker` whose ``f, g`` and subgradients are unbiased estimates of this
        worker's, computed on a random minibatch drawn with ``rng``."""
        ...


@dataclass(frozen=True)
class FunctionWorker:
    """A :class:`Worker` built from four callables (handy for user problems)."""

    f_fun: Callable[[np.ndarray], float]
    f_subgrad_fun: Callable[[np.ndarray], np.ndarray]
    g_fun: Callable[[np.ndarray], float]
    g_subgrad_fun: Callable[[np.ndarray], np.ndarray]

    def f(self, x: np.ndarray) -> float:
        return float(self.f_fun(x))

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.f_subgrad_fun(x), dtype=np.float64)

    def g(self, x: np.ndarray) -> float:
        return float(self.g_fun(x))

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.g_subgrad_fun(x), dtype=np.float64)


# --------------------------------------------------------------------------- results


@dataclass
class RoundInfo:
    """What a ``callback`` sees after each round (on every process).

    Attributes
    ----------
    t : int
        Round index (0-based).
    x : numpy.ndarray
        The model ``x_t`` at which the subgradients were computed.
    x_next : numpy.ndarray
        The model ``x_{t+1}`` after the downlink.
    w_next : numpy.ndarray
        The server's state after the round (``x_next`` without a compressed downlink).
    g_value : float
        The aggregated constraint value the server used for the switch.
    productive : bool
        Whether round ``t`` used objective subgradients (``g_value <= c``).
    state : dict
        Method-specific worker state on this process, e.g. ``{"e": {i: e_i}}`` for EF14.
    """

    t: int
    x: np.ndarray
    x_next: np.ndarray
    w_next: np.ndarray
    g_value: float
    productive: bool
    state: dict[str, Any]


@dataclass
class SafeEFResult:
    """Common result record of every method in this module.

    Attributes
    ----------
    method : str
        Method name.
    x : numpy.ndarray
        The output: the average of ``x_t`` over the productive rounds (``x0`` if there were
        none); over all rounds for :func:`ef14_lagrangian`.
    x_last : numpy.ndarray
        The last model ``x_T``.
    n_rounds, n_productive : int
        Rounds run and productive rounds among them.
    productive : numpy.ndarray
        Boolean flag per round.
    rounds : numpy.ndarray
        Rounds completed at each record point (starts with 0).
    objective, violation : numpy.ndarray
        ``f`` and ``max(g, 0)`` of the output at the record points.
    objective_last, violation_last : numpy.ndarray
        The same for the current model ``x_t``.
    bits_up, bits_down : numpy.ndarray
        Cumulative uplink / downlink bits per worker (mean over workers) at the record points.
    iterates : numpy.ndarray or None
        ``x_0, ..., x_T`` (shape ``(T + 1, d)``) when ``store_iterates=True``.
    stats : BitStats
        Bits counted by the communicator during this run.
    params : dict
        The parameters used.
    """

    method: str
    x: np.ndarray
    x_last: np.ndarray
    n_rounds: int
    n_productive: int
    productive: np.ndarray
    rounds: np.ndarray
    objective: np.ndarray
    violation: np.ndarray
    objective_last: np.ndarray
    violation_last: np.ndarray
    bits_up: np.ndarray
    bits_down: np.ndarray
    stats: BitStats
    params: dict[str, Any] = field(default_factory=dict)
    iterates: np.ndarray | None = None

    def first_reaching(
        self, gap_tol: float, viol_tol: float, f_star: float
    ) -> tuple[float, float]:
        """``(rounds, uplink bits per worker)`` at the first record point where the output
        has ``f - f_star <= gap_tol`` and violation ``<= viol_tol`` (``(inf, inf)`` if none)."""
        ok = (self.objective - f_star <= gap_tol) & (self.violation <= viol_tol)
        hits = np.flatnonzero(ok)
        if hits.size == 0:
            return float("inf"), float("inf")
        j = hits[0]
        return float(self.rounds[j]), float(self.bits_up[j])


# --------------------------------------------------------------------------- machinery


Monitor = Callable[[np.ndarray], tuple[float, float]]
Stop = Callable[[int, float, float], bool]
"""``stop(rounds, objective, violation)`` of the output at a record point; True ends the run."""


def _check_positive(name: str, value: float, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        rel = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {rel} and finite, got {value}")
    return v


def _check_int(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _server_mean(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Deterministic mean in worker order (identical on every process)."""
    acc = np.zeros_like(vectors[0])
    for v in vectors:
        acc += v
    return acc / len(vectors)


def _default_monitor(workers: Sequence[Worker]) -> Monitor:
    def monitor(x: np.ndarray) -> tuple[float, float]:
        fs = [w.f(x) for w in workers]
        gs = [w.g(x) for w in workers]
        return float(np.mean(fs)), float(np.mean(gs))

    return monitor


class _Run:
    """Book-keeping shared by the methods: validation, constraint exchange, downlink,
    output averaging, history records."""

    def __init__(
        self,
        method: str,
        workers: Sequence[Worker],
        x0: np.ndarray,
        n_rounds: int,
        comm: Communicator | None,
        monitor: Monitor | None,
        record_every: int,
        store_iterates: bool,
        callback: Callable[[RoundInfo], None] | None,
        params: dict[str, Any],
        average_all: bool = False,
        scalar_dtype: str = "float32",
        stop: Stop | None = None,
    ) -> None:
        self.stop = stop
        if scalar_dtype not in ("float32", "float64"):
            raise ValueError(f"scalar_dtype must be 'float32' or 'float64', got {scalar_dtype!r}")
        self.scalar_dtype = scalar_dtype
        if isinstance(workers, Worker):
            raise TypeError("workers must be a sequence of Worker objects, not one Worker")
        self.workers = list(workers)
        if not self.workers:
            raise ValueError("workers must not be empty")
        for i, w in enumerate(self.workers):
            if not isinstance(w, Worker):
                raise TypeError(
                    f"workers[{i}] ({type(w).__name__}) does not implement the Worker protocol "
                    "(f, f_subgrad, g, g_subgrad)"
                )
        self.comm: Communicator = SimComm(len(self.workers)) if comm is None else comm
        if not isinstance(self.comm, Communicator):
            raise TypeError("comm must implement the Communicator protocol")
        if self.comm.n_workers != len(self.workers):
            raise ValueError(
                f"comm has {self.comm.n_workers} workers but {len(self.workers)} were given"
            )
        x0 = np.asarray(x0, dtype=np.float64)
        if x0.ndim != 1 or x0.size == 0:
            raise ValueError(f"x0 must be a non-empty 1-D array, got shape {x0.shape}")
        if not np.all(np.isfinite(x0)):
            raise ValueError("x0 contains NaN or inf")
        self.x0 = x0.copy()
        self.d = x0.size
        self.n_rounds = _check_int("n_rounds", n_rounds, 1)
        self.record_every = _check_int("record_every", record_every, 1)
        self.monitor = _default_monitor(self.workers) if monitor is None else monitor
        self.local = tuple(self.comm.local_workers)
        self.callback = callback
        self.method = method
        self.params = params
        self.average_all = average_all
        self._up0 = self.comm.stats.up.copy()
        self._down0 = self.comm.stats.down.copy()
        self._rounds0 = self.comm.stats.rounds
        self.x_sum = np.zeros(self.d)
        self.n_avg = 0
        self.productive: list[bool] = []
        self.iterates = [self.x0.copy()] if store_iterates else None
        self.hist: dict[str, list[float]] = {
            k: []
            for k in (
                "rounds",
                "objective",
                "violation",
                "objective_last",
                "violation_last",
                "bits_up",
                "bits_down",
            )
        }
        self._record(0, self.x0)

    # -- exchanges
    def constraint_value(self, values: dict[int, float]) -> float:
        """Uplink of the scalars ``g_i`` (``scalar_dtype`` each); returns their mean."""
        for i, v in values.items():
            if not np.isfinite(v):
                raise ValueError(f"worker {i} returned a non-finite constraint value {v}")
        dt = self.scalar_dtype
        got = self.comm.allgather({i: encode_dense([values[i]], dt) for i in self.local})
        return float(np.mean([decode_dense(m, dt)[0] for m in got]))

    def check_subgrad(self, i: int, h: np.ndarray) -> np.ndarray:
        h = np.asarray(h, dtype=np.float64)
        if h.shape != (self.d,):
            raise ValueError(
                f"worker {i} returned a subgradient of shape {h.shape}, want ({self.d},)"
            )
        if not np.all(np.isfinite(h)):
            raise ValueError(f"worker {i} returned a non-finite subgradient")
        return h

    def uplink(self, msgs: dict[int, Message], decoder: Compressor) -> np.ndarray:
        got = self.comm.allgather(msgs)
        return _server_mean([decoder.decode(m) for m in got])

    # -- per-round book-keeping
    def end_round(
        self,
        t: int,
        x: np.ndarray,
        x_next: np.ndarray,
        w_next: np.ndarray,
        g_value: float,
        productive: bool,
        state: dict[str, Any],
    ) -> bool:
        """Book-keeping after round ``t``; returns True when ``stop`` asks to end the run."""
        self.productive.append(bool(productive))
        if productive or self.average_all:
            self.x_sum += x
            self.n_avg += 1
        if self.iterates is not None:
            self.iterates.append(x_next.copy())
        if self.callback is not None:
            self.callback(RoundInfo(t, x.copy(), x_next.copy(), w_next.copy(), g_value,
                                    bool(productive), state))
        done = t + 1
        if done % self.record_every == 0 or done == self.n_rounds:
            self._record(done, x_next)
            h = self.hist
            if self.stop is not None and self.stop(done, h["objective"][-1], h["violation"][-1]):
                return True
        return False

    def output(self) -> np.ndarray:
        return self.x_sum / self.n_avg if self.n_avg > 0 else self.x0.copy()

    def _record(self, done: int, x_cur: np.ndarray) -> None:
        fo, go = self.monitor(self.output())
        fl, gl = self.monitor(x_cur)
        h = self.hist
        h["rounds"].append(done)
        h["objective"].append(fo)
        h["violation"].append(max(go, 0.0))
        h["objective_last"].append(fl)
        h["violation_last"].append(max(gl, 0.0))
        h["bits_up"].append(float(np.mean(self.comm.stats.up - self._up0)))
        h["bits_down"].append(float(np.mean(self.comm.stats.down - self._down0)))

    def result(self, x_last: np.ndarray) -> SafeEFResult:
        stats = BitStats(self.comm.n_workers)
        stats.up[:] = self.comm.stats.up - self._up0
        stats.down[:] = self.comm.stats.down - self._down0
        stats.rounds = self.comm.stats.rounds - self._rounds0
        h = {k: np.asarray(v, dtype=np.float64) for k, v in self.hist.items()}
        return SafeEFResult(
            method=self.method,
            x=self.output(),
            x_last=x_last.copy(),
            n_rounds=len(self.productive),
            n_productive=int(sum(self.productive)),
            productive=np.asarray(self.productive, dtype=bool),
            rounds=h["rounds"].astype(np.int64),
            objective=h["objective"],
            violation=h["violation"],
            objective_last=h["objective_last"],
            violation_last=h["violation_last"],
            bits_up=h["bits_up"],
            bits_down=h["bits_down"],
            stats=stats,
            params=self.params,
            iterates=None if self.iterates is None else np.asarray(self.iterates),
        )


def _check_compressor(comp: Compressor, d: int, name: str = "compressor") -> Compressor:
    if not isinstance(comp, Compressor):
        raise TypeError(f"{name} must be a sparsecert.distributed.compress.Compressor "
                        "(an Encoder)")
    if comp.stateful:
        raise ValueError(f"{name} {comp!r} is stateful (adaptive levels): Safe-EF decodes "
                         "every worker's message with one decoder; use a stateless encoder")
    if comp.dim != d:
        raise ValueError(f"{name}.dim={comp.dim} does not match the dimension {d} of x0")
    return comp


class _Downlink:
    """Server-to-worker step. ``None``: the server broadcasts ``w`` exactly (float64, 64 d
    bits) and ``x = w``. A compressor ``C_0``: EF21-P, broadcast ``C_0(w - x)`` and
    ``x <- x + C_0(w - x)``."""

    def __init__(self, comp: Compressor | None, d: int, seed: int) -> None:
        self.comp = None if comp is None else _check_compressor(comp, d, "downlink")
        self.rng = np.random.default_rng(np.random.SeedSequence(seed))

    def step(self, comm: Communicator, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        if self.comp is None:
            msg = comm.broadcast(encode_dense(w, "float64"))
            return decode_dense(msg, "float64")
        msg = comm.broadcast(self.comp.encode(w - x, self.rng))
        return x + self.comp.decode(msg)


def _common_params(gamma: float, c: float, n_rounds: int) -> tuple[float, float, int]:
    gamma = _check_positive("gamma", gamma)
    if isinstance(c, bool) or not np.isfinite(float(c)):
        raise ValueError(f"c must be a finite real number, got {c!r}")
    return gamma, float(c), _check_int("n_rounds", n_rounds, 1)


# --------------------------------------------------------------------------- methods


def safe_ef(
    workers: Sequence[Worker],
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    *,
    downlink: Compressor | None = None,
    comm: Communicator | None = None,
    monitor: Monitor | None = None,
    record_every: int = 1,
    store_iterates: bool = False,
    callback: Callable[[RoundInfo], None] | None = None,
    server_seed: int = 0,
    scalar_dtype: str = "float32",
    stop: Stop | None = None,
) -> SafeEFResult:
    """Safe-EF: EF14 error feedback + constraint switching + optional EF21-P downlink.

    Each round ``t``: the server forms ``g(x_t) = mean_i g_i(x_t)``; if ``g(x_t) <= c`` every
    worker takes ``h_i`` in the subdifferential of ``f_i`` at ``x_t`` (a productive step),
    otherwise of ``g_i``; worker ``i`` sends ``v_i = C(e_i + gamma h_i)`` and keeps
    ``e_i <- e_i + gamma h_i - v_i``; the server sets ``w <- w - mean_i v_i`` and the workers'
    model becomes ``x <- x + C_0(w - x)`` (``x = w`` without downlink compression).
    The output averages ``x_t`` over the productive rounds.

    Parameters
    ----------
    workers : sequence of Worker
        One entry per worker (length ``comm.n_workers``); only the local ones are called for
        the algorithm, all of them by the default monitor.
    x0 : numpy.ndarray
        Starting point (shape ``(d,)``).
    compressor : Compressor
        Uplink compressor ``C`` (e.g. :class:`~sparsecert.distributed.compress.TopK`).
    gamma : float
        Step size.
    n_rounds : int
        Number of rounds.
    c : float
        Switching threshold.
    downlink : Compressor or None
        ``C_0`` of the EF21-P downlink; None broadcasts the model exactly.
    comm : Communicator or None
        Transport; default ``SimComm(len(workers))``.
    monitor : callable or None
        ``x -> (f(x), g(x))`` used for the history only (no bits counted); default: the mean
        over all workers.
    record_every : int
        Record the history every this many rounds (and at the last round).
    store_iterates : bool
        Keep ``x_0, ..., x_T`` in the result.
    callback : callable or None
        Called with a :class:`RoundInfo` after every round.
    server_seed : int
        Seed of the server's generator (randomized downlink compressors).
    scalar_dtype : {"float32", "float64"}
        Encoding of the constraint values ``g_i(x_t)`` on the uplink (32 or 64 bits each).
    stop : callable or None
        ``stop(rounds, objective, violation)`` evaluated on the output at every record point;
        returning True ends the run there (e.g. once a target accuracy is reached).

    Returns
    -------
    SafeEFResult
    """
    gamma, c, n_rounds = _common_params(gamma, c, n_rounds)
    run = _Run("safe_ef", workers, x0, n_rounds, comm, monitor, record_every, store_iterates,
               callback, {"gamma": gamma, "c": c, "compressor": repr(compressor),
                          "downlink": repr(downlink)},
               scalar_dtype=scalar_dtype, stop=stop)
    comp = _check_compressor(compressor, run.d)
    down = _Downlink(downlink, run.d, server_seed)
    W = run.workers
    return _ef14_loop(run, comp, down, gamma, c, n_rounds, lambda i: W[i])


def _ef14_loop(run: _Run, comp: Compressor, down: _Downlink, gamma: float, c: float,
               n_rounds: int, oracle: Callable[[int], Worker]) -> SafeEFResult:
    """The Safe-EF round loop; ``oracle(i)`` gives worker ``i``'s functions for this use
    (the worker itself, or a fresh minibatch of it for the stochastic variant)."""
    cm = run.comm
    x, w = run.x0.copy(), run.x0.copy()
    e = {i: np.zeros(run.d) for i in run.local}
    for t in range(n_rounds):
        gx = run.constraint_value({i: oracle(i).g(x) for i in run.local})
        productive = gx <= c
        msgs = {}
        for i in run.local:
            o = oracle(i)
            h = o.f_subgrad(x) if productive else o.g_subgrad(x)
            u = e[i] + gamma * run.check_subgrad(i, h)
            msg, v = comp.roundtrip(u, cm.worker_rng(i))
            e[i] = u - v
            msgs[i] = msg
        w = w - run.uplink(msgs, comp)
        x_next = down.step(cm, w, x)
        stopped = run.end_round(t, x, x_next, w, gx, productive, {"e": e})
        x = x_next
        if stopped:
            break
    return run.result(x)


def safe_ef_stochastic(
    workers: Sequence[StochasticWorker],
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    batch_size: int = 1,
    *,
    downlink: Compressor | None = None,
    comm: Communicator | None = None,
    monitor: Monitor | None = None,
    record_every: int = 1,
    store_iterates: bool = False,
    callback: Callable[[RoundInfo], None] | None = None,
    server_seed: int = 0,
    scalar_dtype: str = "float32",
    stop: Stop | None = None,
) -> SafeEFResult:
    """Stochastic Safe-EF: :func:`safe_ef` with minibatches.

    Each round every worker draws (with its own generator ``comm.worker_rng(i)``) one
    minibatch to estimate ``g_i(x_t)`` for the switch and an independent one for the
    subgradient. Parameters are those of :func:`safe_ef` plus ``batch_size``; workers must
    implement :class:`StochasticWorker`.
    """
    gamma, c, n_rounds = _common_params(gamma, c, n_rounds)
    batch_size = _check_int("batch_size", batch_size, 1)
    for i, wk in enumerate(workers):
        if not isinstance(wk, StochasticWorker):
            raise TypeError(f"workers[{i}] has no minibatch(rng, batch_size) method")
    run = _Run("safe_ef_stochastic", workers, x0, n_rounds, comm, monitor, record_every,
               store_iterates, callback,
               {"gamma": gamma, "c": c, "batch_size": batch_size,
                "compressor": repr(compressor), "downlink": repr(downlink)},
               scalar_dtype=scalar_dtype, stop=stop)
    comp = _check_compressor(compressor, run.d)
    down = _Downlink(downlink, run.d, server_seed)
    cm, W = run.comm, run.workers
    return _ef14_loop(run, comp, down, gamma, c, n_rounds,
                      lambda i: W[i].minibatch(cm.worker_rng(i), batch_size))


def switching_subgradient(
    workers: Sequence[Worker],
    x0: np.ndarray,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    *,
    value_dtype: str = "float32",
    comm: Communicator | None = None,
    monitor: Monitor | None = None,
    record_every: int = 1,
    store_iterates: bool = False,
    callback: Callable[[RoundInfo], None] | None = None,
    scalar_dtype: str = "float32",
    stop: Stop | None = None,
) -> SafeEFResult:
    """Uncompressed switching subgradient method (Polyak's switching rule, distributed).

    Worker ``i`` sends ``gamma h_i`` dense (``value_dtype``: 32 or 64 bits per entry) and the
    server sets ``x <- x - mean_i gamma h_i`` and broadcasts it (float64). The output averages
    the productive rounds. Other parameters as in :func:`safe_ef`.
    """
    gamma, c, n_rounds = _common_params(gamma, c, n_rounds)
    run = _Run("switching_subgradient", workers, x0, n_rounds, comm, monitor, record_every,
               store_iterates, callback, {"gamma": gamma, "c": c, "value_dtype": value_dtype},
               scalar_dtype=scalar_dtype, stop=stop)
    return _switching_loop(run, Identity(run.d, value_dtype), gamma, c, n_rounds)


def _switching_loop(run: _Run, comp: Compressor, gamma: float, c: float,
                    n_rounds: int) -> SafeEFResult:
    """``x <- x - mean_i C(gamma h_i)`` with the switching rule (no error feedback)."""
    cm, W = run.comm, run.workers
    x = run.x0.copy()
    for t in range(n_rounds):
        gx = run.constraint_value({i: W[i].g(x) for i in run.local})
        productive = gx <= c
        msgs = {}
        for i in run.local:
            h = W[i].f_subgrad(x) if productive else W[i].g_subgrad(x)
            msgs[i] = comp.encode(gamma * run.check_subgrad(i, h), cm.worker_rng(i))
        w = x - run.uplink(msgs, comp)
        x_next = decode_dense(cm.broadcast(encode_dense(w, "float64")), "float64")
        stopped = run.end_round(t, x, x_next, w, gx, productive, {})
        x = x_next
        if stopped:
            break
    return run.result(x)


def topk_no_ef(
    workers: Sequence[Worker],
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    *,
    comm: Communicator | None = None,
    monitor: Monitor | None = None,
    record_every: int = 1,
    store_iterates: bool = False,
    callback: Callable[[RoundInfo], None] | None = None,
    scalar_dtype: str = "float32",
    stop: Stop | None = None,
) -> SafeEFResult:
    """Compressed switching method without error feedback: ``x <- x - mean_i C(gamma h_i)``.

    Parameters as in :func:`safe_ef` (exact downlink).
    """
    gamma, c, n_rounds = _common_params(gamma, c, n_rounds)
    run = _Run("topk_no_ef", workers, x0, n_rounds, comm, monitor, record_every,
               store_iterates, callback,
               {"gamma": gamma, "c": c, "compressor": repr(compressor)},
               scalar_dtype=scalar_dtype, stop=stop)
    return _switching_loop(run, _check_compressor(compressor, run.d), gamma, c, n_rounds)


def ef21_switching(
    workers: Sequence[Worker],
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    *,
    comm: Communicator | None = None,
    monitor: Monitor | None = None,
    record_every: int = 1,
    store_iterates: bool = False,
    callback: Callable[[RoundInfo], None] | None = None,
    scalar_dtype: str = "float32",
    stop: Stop | None = None,
) -> SafeEFResult:
    """EF21 with switching: worker ``i`` keeps an estimator ``s_i`` (``s_i^0 = 0``), sends
    ``m_i = C(h_i - s_i)`` and sets ``s_i <- s_i + m_i``; the server keeps
    ``s = mean_i s_i`` and steps ``x <- x - gamma s``. EF21 was designed for smooth problems;
    it is a baseline here. Parameters as in :func:`safe_ef` (exact downlink).
    """
    gamma, c, n_rounds = _common_params(gamma, c, n_rounds)
    run = _Run("ef21_switching", workers, x0, n_rounds, comm, monitor, record_every,
               store_iterates, callback,
               {"gamma": gamma, "c": c, "compressor": repr(compressor)},
               scalar_dtype=scalar_dtype, stop=stop)
    comp = _check_compressor(compressor, run.d)
    cm, W = run.comm, run.workers
    x = run.x0.copy()
    s_loc = {i: np.zeros(run.d) for i in run.local}
    s = np.zeros(run.d)
    for t in range(n_rounds):
        gx = run.constraint_value({i: W[i].g(x) for i in run.local})
        productive = gx <= c
        msgs = {}
        for i in run.local:
            h = W[i].f_subgrad(x) if productive else W[i].g_subgrad(x)
            msg, m = comp.roundtrip(run.check_subgrad(i, h) - s_loc[i], cm.worker_rng(i))
            s_loc[i] = s_loc[i] + m
            msgs[i] = msg
        s = s + run.uplink(msgs, comp)
        w = x - gamma * s
        x_next = decode_dense(cm.broadcast(encode_dense(w, "float64")), "float64")
        stopped = run.end_round(t, x, x_next, w, gx, productive, {"s": s_loc})
        x = x_next
        if stopped:
            break
    return run.result(x)


def ef14_lagrangian(
    workers: Sequence[Worker],
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    eta: float | None = None,
    lam0: float = 0.0,
    *,
    comm: Communicator | None = None,
    monitor: Monitor | None = None,
    record_every: int = 1,
    store_iterates: bool = False,
    callback: Callable[[RoundInfo], None] | None = None,
    scalar_dtype: str = "float32",
    stop: Stop | None = None,
) -> SafeEFResult:
    """EF14 on the Lagrangian with a projected dual ascent (primal-dual baseline).

    Worker ``i`` takes ``h_i`` in ``subdiff f_i(x_t) + lambda_t subdiff g_i(x_t)`` and runs
    EF14 on ``gamma h_i``; the server steps ``lambda_{t+1} = max(0, lambda_t + eta g(x_t))``
    (``eta = gamma`` by default). Every round counts as productive; the output averages all
    rounds. ``RoundInfo.g_value`` holds ``g(x_t)``, ``state["lam"]`` the multiplier used.
    """
    gamma = _check_positive("gamma", gamma)
    eta = gamma if eta is None else _check_positive("eta", eta)
    lam = _check_positive("lam0", lam0, allow_zero=True)
    run = _Run("ef14_lagrangian", workers, x0, n_rounds, comm, monitor, record_every,
               store_iterates, callback,
               {"gamma": gamma, "eta": eta, "lam0": lam, "compressor": repr(compressor)},
               average_all=True,
               scalar_dtype=scalar_dtype, stop=stop)
    comp = _check_compressor(compressor, run.d)
    cm, W = run.comm, run.workers
    x, w = run.x0.copy(), run.x0.copy()
    e = {i: np.zeros(run.d) for i in run.local}
    for t in range(run.n_rounds):
        gx = run.constraint_value({i: W[i].g(x) for i in run.local})
        msgs = {}
        for i in run.local:
            h = run.check_subgrad(i, W[i].f_subgrad(x))
            if lam > 0:
                h = h + lam * run.check_subgrad(i, W[i].g_subgrad(x))
            u = e[i] + gamma * h
            msg, v = comp.roundtrip(u, cm.worker_rng(i))
            e[i] = u - v
            msgs[i] = msg
        w = w - run.uplink(msgs, comp)
        x_next = decode_dense(cm.broadcast(encode_dense(w, "float64")), "float64")
        stopped = run.end_round(t, x, x_next, w, gx, True, {"e": e, "lam": lam})
        lam = max(0.0, lam + eta * gx)
        x = x_next
        if stopped:
            break
    return run.result(x)


METHODS: dict[str, Callable[..., SafeEFResult]] = {
    "safe_ef": safe_ef,
    "safe_ef_stochastic": safe_ef_stochastic,
    "switching_subgradient": switching_subgradient,
    "topk_no_ef": topk_no_ef,
    "ef21_switching": ef21_switching,
    "ef14_lagrangian": ef14_lagrangian,
}
"""Name -> function of every method in this module."""
