"""Run machinery shared by Safe-EF and its baselines.

:class:`RunOptions` (how a run is driven: communicator, monitor, records, callback, stop),
:class:`RoundInfo` (what a callback sees), :class:`SafeEFResult` (what every method returns)
and the private :class:`_Run`, which owns the validation, the round loop every method shares
(:meth:`_Run.drive`: a method writes only its round), the server-side exchanges of a round
(constraint switch, uplink, downlink), output averaging and the history.

Roles: the **server** lives on the root process (``comm.is_root``) and is the only one that
holds the aggregated state ``w`` (and the multiplier of the Lagrangian baseline). A round is:

1. every worker sends its constraint quantity (``g_i(x_t)``, or ``q_i(x_t)`` for an
   :class:`~sparsecert.distributed.safe_ef.workers.AveragedConstraint`) with ``gather``;
2. the server decides the switch and ``broadcast``\\ s it: one bit (plus ``G'(qbar)``, ``m``
   floats, on a constraint step of an averaged constraint);
3. every worker sends its compressed vector with ``gather``; the server aggregates;
4. the server ``broadcast``\\ s the model (exact float64, or ``C_0(w - x)`` for EF21-P).

So every process ends the round with the same ``x_{t+1}``, decoded from the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsecert.distributed.comm import BaseComm, Communicator, SimComm, Traffic, build_local
from sparsecert.distributed.compress import Compressor
from sparsecert.distributed.message import Message, decode_dense, encode_dense
from sparsecert.distributed.options import RunOptions
from sparsecert.distributed.options import check_int as _check_int
from sparsecert.distributed.runlog import RunLog
from sparsecert.distributed.safe_ef.checkpoint import restore_run, save_run
from sparsecert.distributed.safe_ef.constraints import (
    _ONE,
    _MeanConstraint,
    _NoConstraint,
    _OuterConstraint,
)
from sparsecert.distributed.safe_ef.workers import AveragedConstraint, AveragedWorker, Worker

__all__ = ["RunOptions", "RoundInfo", "SafeEFResult", "Monitor", "Stop", "HISTORY"]

HISTORY = ("rounds", "seconds", "bits_up", "bits_down", "bits_total", "objective", "violation",
           "objective_last", "violation_last")
"""The history recorded at every record point (and the columns of the run's log)."""

Monitor = Callable[[np.ndarray], tuple[float, float]]
"""``x -> (f(x), g(x))``; called on every process at the same record points."""
Stop = Callable[[int, float, float], bool]
"""``stop(rounds, objective, violation)`` of the output at a record point; True ends the run."""



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
    w_next : numpy.ndarray or None
        The server's state after the round (``x_next`` without a compressed downlink); None
        on processes other than the root.
    g_value : float
        The constraint value ``g(x_t)`` the server used (NaN on processes other than the root,
        which only receive the decision).
    productive : bool
        Whether round ``t`` used objective subgradients (``g_value <= c``).
    state : dict
        Method-specific state on this process, e.g. ``{"e": {i: e_i}}`` for EF14.
    """

    t: int
    x: np.ndarray
    x_next: np.ndarray
    w_next: np.ndarray | None
    g_value: float
    productive: bool
    state: dict[str, Any]


@dataclass
class SafeEFResult:
    """Common result record of every Safe-EF method.

    Attributes
    ----------
    method : str
        Method name.
    x : numpy.ndarray
        The output: the average of ``x_t`` over the productive rounds (``x0`` if there were
        none); over all rounds for the Lagrangian baseline.
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
    bits_up, bits_down, bits_total : numpy.ndarray
        Cumulative bits per worker (mean over workers) at the record points: sent on the
        uplink, received on the downlink, and their sum.
    seconds : numpy.ndarray
        Wall-clock seconds of the method at the record points (this process; the monitor,
        the log and the checkpoints excluded; a resumed run continues the count).
    traffic : Traffic
        Everything the communicator counted during this run (per worker, server, process).
    params : dict
        The parameters used.
    iterates : numpy.ndarray or None
        ``x_0, ..., x_T`` (shape ``(T + 1, d)``) when ``store_iterates=True``.
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
    bits_total: np.ndarray
    seconds: np.ndarray
    traffic: Traffic
    params: dict[str, Any] = field(default_factory=dict)
    iterates: np.ndarray | None = None

    @property
    def stats(self) -> Traffic:
        """Alias of :attr:`traffic`."""
        return self.traffic

    def first_reaching(self, gap_tol: float, viol_tol: float, f_star: float,
                       bits: str = "up") -> tuple[float, float]:
        """``(rounds, bits per worker)`` at the first record point where the output has
        ``f - f_star <= gap_tol`` and violation ``<= viol_tol`` (``(inf, inf)`` if none);
        ``bits`` is ``"up"``, ``"down"`` or ``"total"``."""
        if bits not in ("up", "down", "total"):
            raise ValueError(f"bits must be 'up', 'down' or 'total', got {bits!r}")
        ok = (self.objective - f_star <= gap_tol) & (self.violation <= viol_tol)
        hits = np.flatnonzero(ok)
        if hits.size == 0:
            return float("inf"), float("inf")
        j = hits[0]
        return float(self.rounds[j]), float(getattr(self, f"bits_{bits}")[j])


# --------------------------------------------------------------------------- validation


def _check_positive(name: str, value: float, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        rel = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {rel} and finite, got {value}")
    return v


def _check_compressor(comp: Compressor, d: int, name: str = "compressor") -> Compressor:
    if not isinstance(comp, Compressor):
        raise TypeError(f"{name} must be a sparsecert.distributed.compress.Compressor "
                        "(an Encoder)")
    if comp.stateful:
        raise ValueError(f"{name} {comp!r} is stateful (adaptive levels): Safe-EF decodes "
                         "every worker's message with one decoder; use a stateless encoder")
    if comp.dim != d:
        raise ValueError(f"{name}.dim={comp.dim} does not match the dimension {d} of x0")
    warm_up(comp)
    return comp


def warm_up(comp: Compressor) -> None:
    """Run a copy of ``comp`` once both ways (encode, round trip, decode of the bytes as a
    receiver gets them) so that its compiled kernels compile, or load from numba's cache,
    here and not inside a run's timed rounds; a throwaway generator, so no worker's stream is
    touched."""
    c = comp.clone()
    v = np.linspace(-1.0, 1.0, c.dim)
    msg = c.encode(v, np.random.default_rng(0))
    c.roundtrip(v, np.random.default_rng(0))
    c.decode(Message(bytes(msg.payload), msg.n_bits))


def common_params(gamma: float, c: float, n_rounds: int) -> tuple[float, float, int]:
    """Validated ``(gamma, c, n_rounds)``."""
    gamma = _check_positive("gamma", gamma)
    if isinstance(c, bool) or not isinstance(c, int | float | np.floating | np.integer) \
            or not np.isfinite(float(c)):
        raise ValueError(f"c must be a finite real number, got {c!r}")
    return gamma, float(c), _check_int("n_rounds", n_rounds, 1)


# --------------------------------------------------------------------------- constraints


def _server_mean(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Deterministic mean in worker order."""
    acc = np.zeros_like(vectors[0])
    for v in vectors:
        acc += v
    return acc / len(vectors)


_FLOAT_MAX = {"float16": float(np.finfo(np.float16).max),
              "float32": float(np.finfo(np.float32).max), "float64": np.inf}


def _encode_floats(v: np.ndarray, dtype: str) -> Message:
    v = np.asarray(v, dtype=np.float64)
    if np.abs(v).max(initial=0.0) > _FLOAT_MAX[dtype]:
        raise ValueError(f"a value of {v} does not fit in {dtype}; use a wider "
                         "RunOptions.scalar_dtype")
    return encode_dense(v, dtype)


def _encode_decision(productive: bool, s: np.ndarray | None, dtype: str) -> Message:
    """The server's switch decision: one bit, then (optionally) ``s`` as ``dtype`` floats.
    The flag occupies the first byte of the payload but counts as one bit."""
    floats = b"" if s is None else _encode_floats(s, dtype).payload
    return Message((b"\x80" if productive else b"\x00") + floats, 1 + 8 * len(floats))


def _decode_decision(msg: Message, dtype: str) -> tuple[bool, np.ndarray | None]:
    productive = bool(msg.payload[0] & 0x80)
    if len(msg.payload) == 1:
        return productive, None
    return productive, decode_dense(Message(msg.payload[1:], msg.n_bits - 1), dtype)


class _Downlink:
    """Server-to-worker model update. ``None``: the server broadcasts ``w`` exactly (float64,
    ``64 d`` bits) and ``x = w``. A compressor ``C_0``: EF21-P, broadcast ``C_0(w - x)`` and
    ``x <- x + C_0(w - x)`` (on the server and every worker alike)."""

    def __init__(self, comp: Compressor | None, d: int, seed: int) -> None:
        self.comp = None if comp is None else _check_compressor(comp, d, "downlink")
        self.rng = np.random.default_rng(np.random.SeedSequence(seed))

    def step(self, comm: Communicator, w: np.ndarray | None, x: np.ndarray) -> np.ndarray:
        root = comm.is_root
        if self.comp is None:
            msg = comm.broadcast(encode_dense(w, "float64") if root else None)
            return decode_dense(msg, "float64")
        msg = comm.broadcast(self.comp.encode(w - x, self.rng) if root else None)
        return x + self.comp.decode(msg)


# --------------------------------------------------------------------------- the run


def compressed_run(method: str, workers: Sequence[Any] | Callable[[int], Any], x0: np.ndarray,
                   n_rounds: int, options: RunOptions | None, params: dict[str, Any],
                   compressor: Compressor | None, downlink: Compressor | None,
                   **run_kw: Any) -> tuple[_Run, Compressor | None, _Downlink]:
    """A method's run (:class:`_Run`, its ``params`` recorded with the compressors' reprs),
    its checked uplink ``compressor`` (None: the method encodes its own way) and its
    downlink."""
    params = {**params, **({} if compressor is None else {"compressor": repr(compressor)}),
              "downlink": repr(downlink)}
    run = _Run(method, workers, x0, n_rounds, options, params, **run_kw)
    comp = None if compressor is None else _check_compressor(compressor, run.d)
    return run, comp, _Downlink(downlink, run.d, run.opts.server_seed)



class _Run:
    """Book-keeping shared by the methods: validation, the exchanges, output averaging and
    history records."""

    def __init__(
        self,
        method: str,
        workers: Sequence[Any] | Callable[[int], Any],
        x0: np.ndarray,
        n_rounds: int,
        options: RunOptions | None,
        params: dict[str, Any],
        *,
        constraint: AveragedConstraint | str | None = None,
        average_all: bool = False,
        checkpointable: bool = False,
    ) -> None:
        opts = RunOptions() if options is None else options
        if not isinstance(opts, RunOptions):
            raise TypeError("options must be a sparsecert.distributed.safe_ef.RunOptions")
        self.opts = opts
        if not checkpointable:
            opts.refuse(method, "checkpoint", "resume")
        self.scalar_dtype = opts.scalar_dtype
        if isinstance(constraint, str):
            if constraint != "none":
                raise ValueError(f"constraint must be an AveragedConstraint, None or 'none', "
                                 f"got {constraint!r}")
            self.cons: Any = _NoConstraint()
        elif constraint is None:
            self.cons = _MeanConstraint()
        else:
            self.cons = _OuterConstraint(constraint)
        if not isinstance(workers, type) and isinstance(workers, Worker | AveragedWorker):
            raise TypeError("workers must be a sequence of workers (or a factory worker_id -> "
                            "worker), not one worker")
        is_factory = callable(workers) and not isinstance(workers, Sequence)
        if opts.comm is None:
            if is_factory:
                raise ValueError("a worker factory needs RunOptions(comm=...) to know n_workers")
            if isinstance(workers, Sequence) and len(workers) == 0:
                raise ValueError("workers must not be empty")
            self.comm: Communicator = SimComm(len(workers))  # type: ignore[arg-type]
        else:
            self.comm = opts.comm
        if not isinstance(self.comm, Communicator):
            raise TypeError("comm must implement the Communicator protocol")
        self.local: dict[int, Any] = build_local(self.comm, workers)
        for i, w in self.local.items():
            self.cons.check_worker(i, w)
        x0 = np.asarray(x0, dtype=np.float64)
        if x0.ndim != 1 or x0.size == 0:
            raise ValueError(f"x0 must be a non-empty 1-D array, got shape {x0.shape}")
        if not np.all(np.isfinite(x0)):
            raise ValueError("x0 contains NaN or inf")
        self.x0 = x0.copy()
        self.d = x0.size
        self.n_rounds = _check_int("n_rounds", n_rounds, 1)
        self.record_every = opts.every(1)
        self.monitor = self._reduction_monitor if opts.monitor is None else opts.monitor
        self.root = self.comm.is_root
        self.method = method
        self.params = dict(params, constraint=self.cons.name)
        self.average_all = average_all
        self._t0 = self.comm.traffic.copy()
        self.x_sum = np.zeros(self.d)
        self.n_avg = 0
        self.productive: list[bool] = []
        self.iterates = [self.x0.copy()] if opts.store_iterates else None
        self.hist: dict[str, list[float]] = {k: [] for k in HISTORY}
        self.rngs: dict[str, np.random.Generator] = {
            f"worker{i}": self.comm.worker_rng(i) for i in self.local}
        self.log = RunLog(opts.log, list(HISTORY), self.root, append=opts.resume is not None)
        self._paused = 0.0  # seconds spent in records, logs and checkpoints (not the method's)
        self._seconds0 = 0.0  # seconds of the run before a resume
        self._start = time.perf_counter()
        self._record(0, self.x0)

    # -- monitors
    def _reduction_monitor(self, x: np.ndarray) -> tuple[float, float]:
        """``(f(x), g(x))`` from a reduction of the local workers' values."""
        tot = self.comm.allreduce(
            {i: np.concatenate([[w.f(x)], self.cons.local(w, x)]) for i, w in self.local.items()}
        )
        mean = tot / self.comm.n_workers
        return float(mean[0]), self.cons.value(mean[1:])

    # -- exchanges
    def _constraint_values(self, oracles: Mapping[int, Any], x: np.ndarray) -> np.ndarray | None:
        """Uplink of the local constraint quantities; the server's mean (None elsewhere)."""
        dt = self.scalar_dtype
        msgs = {}
        for i, o in oracles.items():
            q = self.cons.local(o, x)
            if not np.all(np.isfinite(q)):
                raise ValueError(f"worker {i} returned a non-finite constraint value {q}")
            msgs[i] = _encode_floats(q, dt)
        nb = self.cons.m * np.dtype(dt).itemsize
        got = self._gather(msgs, 8 * nb, nb)
        if got is None:
            return None
        return _server_mean([decode_dense(m, dt) for m in got])

    def switch(self, oracles: Mapping[int, Any], x: np.ndarray,
               c: float) -> tuple[bool, np.ndarray, float]:
        """The constraint exchange of a switching round: ``(productive, s, g(x))`` where ``s``
        is the outer subgradient for a constraint step (``g`` is NaN off the root). Without a
        constraint every round is productive and nothing is exchanged."""
        if isinstance(self.cons, _NoConstraint):
            return True, _ONE, float("nan")
        qbar = self._constraint_values(oracles, x)
        g, reply = float("nan"), None
        if self.root:
            g = self.cons.value(qbar)
            productive = g <= c
            s = None if productive or not self.cons.sends_s else self.cons.subgrad(qbar)
            reply = _encode_decision(productive, s, self.scalar_dtype)
        productive, s = _decode_decision(self.comm.broadcast(reply), self.scalar_dtype)
        return productive, (_ONE if s is None else s), g

    def multiplier(self, oracles: Mapping[int, Any], x: np.ndarray,
                   lam: float) -> tuple[np.ndarray, float]:
        """Lagrangian exchange: uplink of the constraint quantities; the server broadcasts
        ``lam * s`` (``s = G'(qbar)``; just ``lam`` for a mean constraint). Returns
        ``(lam * s, g(x))`` (``g`` is NaN off the root)."""
        if isinstance(self.cons, _NoConstraint):
            raise ValueError("the Lagrangian baseline needs a constraint")
        qbar = self._constraint_values(oracles, x)
        g, reply = float("nan"), None
        if self.root:
            g = self.cons.value(qbar)
            ls = lam * self.cons.subgrad(qbar) if self.cons.sends_s else np.array([lam])
            reply = _encode_floats(ls, self.scalar_dtype)
        return decode_dense(self.comm.broadcast(reply), self.scalar_dtype), g

    def direction(self, i: int, o: Any, x: np.ndarray, productive: bool,
                  s: np.ndarray) -> np.ndarray:
        """A subgradient of ``f_i`` (productive step) or of the constraint part (``J_i^T s``)."""
        h = o.f_subgrad(x) if productive else self.cons.vjp(o, x, s)
        return self.check_subgrad(i, h)

    def check_subgrad(self, i: int, h: np.ndarray) -> np.ndarray:
        h = np.asarray(h, dtype=np.float64)
        if h.shape != (self.d,):
            raise ValueError(
                f"worker {i} returned a subgradient of shape {h.shape}, want ({self.d},)"
            )
        if not np.all(np.isfinite(h)):
            raise ValueError(f"worker {i} returned a non-finite subgradient")
        return h

    def ef14_messages(self, comp: Compressor, e: dict[int, np.ndarray],
                      step: Callable[[int], np.ndarray]) -> dict[int, Message]:
        """EF14 on the uplink: each local worker ``i`` sends ``C(e_i + step(i))`` and keeps
        what the compressor dropped in ``e_i`` (updated in place)."""
        msgs = {}
        for i in self.local:
            u = e[i] + step(i)
            msg, v = comp.roundtrip(u, self.comm.worker_rng(i))
            e[i] = u - v
            msgs[i] = msg
        return msgs

    def uplink(self, msgs: dict[int, Message], decoder: Compressor) -> np.ndarray | None:
        """Gather the compressed vectors; the server's mean of the decoded ones (None off
        the root)."""
        got = self._gather(msgs, decoder.message_bits, decoder.message_bytes)
        if got is None:
            return None
        acc = np.zeros(self.d)  # _server_mean of the decoded vectors, in one call
        decoder.decode_sum(got, acc)
        return acc / len(got)

    def _gather(self, msgs: dict[int, Message], n_bits: int | None,
                n_bytes: int | None) -> list[Message] | None:
        """``comm.gather`` of messages of ``n_bits`` bits in ``n_bytes`` bytes each (None:
        sizes vary); the size goes to the shipped communicators (MPI then needs one
        collective instead of two)."""
        if n_bits is not None and isinstance(self.comm, BaseComm):
            return self.comm.gather(msgs, n_bits=n_bits, n_bytes=n_bytes)
        return self.comm.gather(msgs)

    # -- per-round book-keeping
    def end_round(self, t: int, x: np.ndarray, x_next: np.ndarray, w_next: np.ndarray | None,
                  g_value: float, productive: bool, state: dict[str, Any]) -> bool:
        """Book-keeping after round ``t``; returns True when ``stop`` asks to end the run."""
        self.productive.append(bool(productive))
        if productive or self.average_all:
            self.x_sum += x
            self.n_avg += 1
        if self.iterates is not None:
            self.iterates.append(x_next.copy())
        if self.opts.callback is not None:
            self.opts.callback(RoundInfo(t, x.copy(), x_next.copy(),
                                         None if w_next is None else w_next.copy(), g_value,
                                         bool(productive), state))
        done = t + 1
        stopped = False
        if done % self.record_every == 0 or done == self.n_rounds:
            self._record(done, x_next)
            h = self.hist
            stop = self.opts.stop
            stopped = stop is not None and stop(done, h["objective"][-1], h["violation"][-1])
        every = self.opts.checkpoint_every
        if self.opts.checkpoint is not None and (done % every == 0 or done == self.n_rounds
                                                 or stopped):
            t0 = time.perf_counter()
            save_run(self, done, x_next, w_next, state)
            self._paused += time.perf_counter() - t0
        return stopped

    def close_round(self, t: int, down: _Downlink, x: np.ndarray, w: np.ndarray | None,
                    g_value: float, productive: bool, state: dict[str, Any]
                    ) -> tuple[np.ndarray, bool]:
        """The downlink of round ``t`` (``w``: the server's new state) and the round's
        book-keeping (:meth:`end_round`): ``(x_{t+1}, whether to stop)``."""
        x_next = down.step(self.comm, w, x)
        return x_next, self.end_round(t, x, x_next, w, g_value, productive, state)

    def drive(self, down: _Downlink, x: np.ndarray,
              one_round: Callable[[int, np.ndarray], tuple[np.ndarray | None, float, bool,
                                                            dict[str, Any]]],
              t0: int = 0) -> SafeEFResult:
        """The round loop of every method: for ``t = t0, ..., n_rounds - 1``,
        ``one_round(t, x_t)`` runs the method's exchanges and returns
        ``(w, g(x_t), productive, state)`` (``w``: the server's new state, None off the root),
        then :meth:`close_round` sends the model down and keeps the books; ends early when
        ``stop`` asks. Returns the run's result."""
        for t in range(t0, self.n_rounds):
            w, g_value, productive, state = one_round(t, x)
            x, stopped = self.close_round(t, down, x, w, g_value, productive, state)
            if stopped:
                break
        return self.result(x)

    def seconds(self) -> float:
        """Seconds of the method so far (records, logs and checkpoints excluded; a resumed
        run continues its count)."""
        return self._seconds0 + time.perf_counter() - self._start - self._paused

    def resume(self, x: np.ndarray, w: np.ndarray | None, state: dict[str, Any]
               ) -> tuple[int, np.ndarray, np.ndarray | None]:
        """``(rounds done, x, w)`` of the checkpoint ``RunOptions.resume`` (``state``'s arrays
        restored in place), or ``(0, x, w)`` without one; starts the clock (:meth:`begin`)."""
        self.begin()
        if self.opts.resume is None:
            return 0, x, w
        return restore_run(self, x, w, state)

    def begin(self) -> None:
        """Start the method's clock (right before the first round: the set-up, the encoders'
        first compilation and the first record are not the method's time)."""
        self._start = time.perf_counter()
        self._paused = 0.0

    def output(self) -> np.ndarray:
        return self.x_sum / self.n_avg if self.n_avg > 0 else self.x0.copy()

    def _record(self, done: int, x_cur: np.ndarray) -> None:
        t0 = time.perf_counter()
        seconds = self.seconds()
        fo, go = self.monitor(self.output())
        fl, gl = self.monitor(x_cur)
        h = self.hist
        h["rounds"].append(done)
        h["objective"].append(fo)
        h["violation"].append(max(go, 0.0))
        h["objective_last"].append(fl)
        h["violation_last"].append(max(gl, 0.0))
        pw = (self.comm.traffic - self._t0).per_worker()
        h["bits_up"].append(pw["up"])
        h["bits_down"].append(pw["down"])
        h["bits_total"].append(pw["total"])
        h["seconds"].append(seconds)
        if done > 0 or self.opts.resume is None:  # a resumed log has its first row
            self.log.write({k: v[-1] for k, v in h.items()})
        self._paused += time.perf_counter() - t0

    def result(self, x_last: np.ndarray) -> SafeEFResult:
        self.log.close()
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
            bits_total=h["bits_total"],
            seconds=h["seconds"],
            traffic=self.comm.traffic - self._t0,
            params=self.params,
            iterates=None if self.iterates is None else np.asarray(self.iterates),
        )
