"""Quantized optimistic dual averaging (QODA) for distributed monotone variational inequalities.

Problem: find ``x*`` with ``<A(x*), x - x*> >= 0`` for all ``x`` in a closed convex set ``C``
(``C = R^d`` unless a ``projection`` is given), where ``A = (1/K) sum_k A_k`` is monotone and
worker ``k`` only has a stochastic oracle ``V_k(x) = A_k(x) + noise``.

QODA (one quantized exchange per iteration; ``Vbar_{1/2} = 0``, ``Y_1 = 0``)::

    X_{t+1/2} = P_C(X_t - gamma_t * Vbar_{t-1/2})   # reuse last round's vectors
    worker k: Vhat_{k,t+1/2} = Q(V_k(X_{t+1/2}))     # one allgather
    Vbar_{t+1/2} = mean_k Vhat_{k,t+1/2}
    Y_{t+1} = Y_t - Vbar_{t+1/2}
    X_{t+1} = P_C(X_1 + eta_{t+1} * Y_{t+1})

with adaptive steps ``eta_t, gamma_t = lr / (offset + sum_{s<t} ||Vbar_{s+1/2} -
Vbar_{s-1/2}||^2)^exponent`` (:class:`StepSchedule`; separate schedules for ``eta`` and
``gamma`` are allowed) and the ergodic average of the ``X_{t+1/2}`` as output.
Baselines: unquantized ODA (:func:`oda`, FP32 messages) and quantized extra-gradient in dual
averaging form (:func:`quantized_extragradient`, Q-GenX-style, two exchanges per iteration).

The algorithms only use the :class:`~sparsecert.distributed.comm.Communicator` protocol, so they
run unchanged on ``SimComm`` and ``MPIComm``: each process evaluates and encodes the
messages of its local workers, every process decodes all messages (the "server" computation
is replicated), and the sizes of the fixed-length, Elias-gamma and Huffman codes of every
message are computed by the receivers from the decoded content.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsecert.distributed.comm import Communicator, Traffic, build_local
from sparsecert.distributed.compress import Identity
from sparsecert.distributed.encoder import Encoder
from sparsecert.distributed.options import RunOptions
from sparsecert.distributed.qoda.checkpoint import VECTORS, restore_state, run_config, save_state
from sparsecert.distributed.quantize import (
    CODES,
    LayerMap,
    Quantizer,
    global_adaptive,
    global_uniform,
    layerwise_adaptive,
    layerwise_uniform,
)
from sparsecert.distributed.quantize_codes import code_sizes
from sparsecert.distributed.round_decoder import RoundDecoder
from sparsecert.distributed.runlog import RunLog
from sparsecert.distributed.timing import PhaseClock

__all__ = [
    "ReducedMonitor",
    "StepSchedule",
    "QODAResult",
    "make_quantizer",
    "qoda",
    "oda",
    "quantized_extragradient",
    "QUANTIZER_KINDS",
]

Operator = Callable[[np.ndarray, np.random.Generator], np.ndarray]
QUANTIZER_KINDS = ("global_uniform", "global_adaptive", "layerwise_uniform", "layerwise_adaptive")


@dataclass(frozen=True)
class StepSchedule:
    """Step size ``lr / (offset + base)^exponent``.

    ``base`` is the running sum of squared differences of consecutive averaged (quantized)
    vectors when ``adaptive`` (an AdaGrad-like rule), else ``t - 1``.
    """

    lr: float = 1.0
    exponent: float = 0.5
    offset: float = 1.0
    adaptive: bool = True

    def __post_init__(self) -> None:
        if not (np.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be positive and finite, got {self.lr}")
        if not (np.isfinite(self.exponent) and self.exponent >= 0):
            raise ValueError(f"exponent must be >= 0, got {self.exponent}")
        if not (np.isfinite(self.offset) and self.offset > 0):
            raise ValueError(f"offset must be > 0, got {self.offset}")

    def __call__(self, t: int, sum_sq: float) -> float:
        base = sum_sq if self.adaptive else float(t - 1)
        return self.lr / (self.offset + base) ** self.exponent


@dataclass(frozen=True)
class ReducedMonitor:
    """A monitor computed from per-worker local sums, reduced over all workers.

    Each process evaluates ``local(worker, x)`` for the workers it hosts (``worker`` is the
    object built for that id, e.g. by a factory), the sums over all workers are formed with
    ``comm.allreduce`` (in worker order: identical on every communicator) and
    ``finish(total, x)`` turns them into the recorded metrics. No process reads another's data.

    Parameters
    ----------
    local : callable
        ``local(worker, x) -> array`` (the same shape for every worker).
    finish : callable
        ``finish(total, x) -> dict`` of metrics.
    """

    local: Callable[[Any, np.ndarray], np.ndarray]
    finish: Callable[[np.ndarray, np.ndarray], Mapping[str, float]]


@dataclass
class QODAResult:
    """Output of :func:`qoda`, :func:`oda` and :func:`quantized_extragradient`.

    Attributes
    ----------
    x_bar : numpy.ndarray
        Ergodic average of the points where the oracles were queried (``X_{t+1/2}``).
    x_last : numpy.ndarray
        Last ``X_{t+1/2}``.
    method : str
        ``"qoda"``, ``"oda"`` or ``"qeg"``.
    n_iter : int
        Iterations run.
    history : dict of numpy.ndarray
        Per recorded iteration: ``iteration``, ``oracle_calls`` (per worker), ``exchanges``,
        ``bits_up`` (uplink bits sent per worker as counted by the communicator, mean over
        workers), ``bits_received`` (bits of the other workers' messages received per worker,
        mean), ``bits_fixed`` / ``bits_gamma`` / ``bits_huffman`` (what the same messages cost
        under each code, mean per worker), ``compute_s`` (cumulative compute seconds of one
        node, see :mod:`~sparsecert.distributed.timing`), ``eta`` and every key returned by the
        monitor.
    bits_per_worker : dict of numpy.ndarray
        Final cumulative bits of each worker under each code (``"fixed"``, ``"gamma"``,
        ``"huffman"``), as counted (``"up"``: sent; ``"received"``: from the other workers)
        and as payload bytes (``"payload"``, 8 bits per byte).
    traffic : Traffic
        The communicator's counts during the run (bits per worker per direction).
    node_seconds : dict of float
        Compute seconds of one node per phase (``oracle``, ``fit``, ``encode``, ``decode``,
        ``update``), monitors excluded.
    warm_up_s : float
        Seconds of the encoder's warm-up before the iterations (numba compilation, or loading
        from its cache), not included in ``compute_s``.
    wall_s : float
        Wall-clock seconds of this process in the iterations (monitors and real communication
        included).
    """

    x_bar: np.ndarray
    x_last: np.ndarray
    method: str
    n_iter: int
    history: dict[str, np.ndarray]
    bits_per_worker: dict[str, np.ndarray]
    traffic: Traffic = field(repr=False)
    node_seconds: dict[str, float] = field(default_factory=dict)
    warm_up_s: float = 0.0
    wall_s: float = 0.0

    @property
    def stats(self) -> Traffic:
        """Alias of :attr:`traffic`."""
        return self.traffic

    def bits_to(self, key: str, eps: float, bits: str = "bits_up") -> float:
        """Bits per worker at the first recorded iteration with ``history[key] <= eps``
        (``inf`` when never reached)."""
        vals = self.history[key]
        hit = np.flatnonzero(vals <= eps)
        return float(self.history[bits][hit[0]]) if hit.size else float("inf")


def make_quantizer(kind: str, layers: int | Sequence[int] | LayerMap, s: int,
                   code: str = "fixed", types: Sequence[int] | None = None) -> Quantizer:
    """One of :data:`QUANTIZER_KINDS` over the given layers (global kinds ignore the split)."""
    lmap = LayerMap.make(layers, types)
    if kind == "global_uniform":
        return global_uniform(lmap.dim, s, code)
    if kind == "global_adaptive":
        return global_adaptive(lmap.dim, s, code)
    if kind == "layerwise_uniform":
        return layerwise_uniform(lmap, s, code)
    if kind == "layerwise_adaptive":
        return layerwise_adaptive(lmap, s, code)
    raise ValueError(f"quantizer kind must be one of {QUANTIZER_KINDS}, got {kind!r}")


class _Exchange:
    """One quantized all-to-all exchange of oracle values (shared by all methods)."""

    def __init__(self, operators: Mapping[int, Operator], comm: Communicator, encoder: Encoder,
                 clock: PhaseClock, count_codes: bool = True) -> None:
        for i, op in operators.items():
            if not callable(op):
                raise TypeError(f"operator of worker {i} is not callable")
        self.ops = operators
        self.comm = comm
        self.clock = clock
        self.d = encoder.dim
        self.quantized = isinstance(encoder, Quantizer)
        self.enc = {i: encoder.clone() for i in comm.local_workers}
        self.dec = [encoder.clone() for _ in range(comm.n_workers)]  # one decoder per sender
        self.decode_round = RoundDecoder(self.dec)
        # the sizes under the other codes are book-keeping (a pass over every message
        # received): counted only when asked; the transmitted code's size is always known
        self.count_codes = count_codes and self.quantized
        sent = encoder.code if self.quantized else "fixed"
        codes = CODES if count_codes else (sent,)
        self.bits = {c: np.zeros(comm.n_workers, dtype=np.int64) for c in codes}
        self._q = encoder
        self.payload_bits = np.zeros(comm.n_workers, dtype=np.int64)
        self.calls = 0

    def __call__(self, x: np.ndarray, adapt: bool) -> np.ndarray:
        clock = self.clock
        local = {}
        for i in self.comm.local_workers:
            rng = self.comm.worker_rng(i)
            with clock("oracle"):
                v = np.asarray(self.ops[i](x, rng), dtype=np.float64)
                ok = v.shape == (self.d,) and bool(np.isfinite(v).all())
            if not ok:
                if v.shape != (self.d,):
                    raise ValueError(f"operator of worker {i} returned shape {v.shape}, "
                                     f"expected ({self.d},)")
                raise ValueError(f"operator of worker {i} returned NaN or inf")
            enc = self.enc[i]
            if adapt and self.quantized and enc.adaptive:
                with clock("fit"):
                    enc.adapt(v)
            with clock("encode"):
                local[i] = enc.encode(v, rng)
        n_bits, n_bytes = self._agreed_size(adapt)
        msgs = self.comm.allgather(local, n_bits=n_bits, n_bytes=n_bytes)
        self.calls += 1
        total = np.zeros(self.d)
        with clock("decode"):
            self.decode_round(msgs, total, zeroed=True)
            total /= len(msgs)
        # book-keeping, not timed: what the same messages cost under the other codes (a user
        # sending one code does not compute these)
        for i, msg in enumerate(msgs):
            self.payload_bits[i] += 8 * len(msg.payload)
            sizes = (code_sizes(self.dec[i], msg) if self.count_codes
                     else dict.fromkeys(self.bits, msg.n_bits))
            for c in self.bits:
                self.bits[c][i] += sizes[c]
        return total

    def _agreed_size(self, adapt: bool) -> tuple[int | None, int | None]:
        """``(bits, bytes)`` of every message of this exchange when every process knows them
        in advance (the communicator then moves the bytes alone): fixed-length quantized
        messages (with the levels in a round that refits them) and fixed-size encoders;
        ``(None, None)`` otherwise."""
        q = self._q
        if self.quantized:
            if q.code != "fixed":
                return None, None
            n_bits = q.fixed_bits(with_levels=adapt and q.adaptive)
            return n_bits, -(-n_bits // 8)
        return q.message_bits, q.message_bytes


def _resolve_quantizer(quantizer, layers, s: int | None, d: int, code: str | None) -> Encoder:
    if code is not None and code not in CODES:
        raise ValueError(f"code must be one of {CODES}, got {code!r}")
    if quantizer is None:
        return Identity(d, "float32")
    if isinstance(quantizer, str):
        if s is None:
            raise ValueError("a quantizer given by name needs s (the number of inner levels)")
        if quantizer.startswith("layerwise") and layers is None:
            raise ValueError(f"the {quantizer!r} quantizer needs the layer map (layers=...)")
        return make_quantizer(quantizer, d if layers is None else layers, s,
                              code or "fixed")
    if isinstance(quantizer, Quantizer):
        return quantizer if code is None or code == quantizer.code else quantizer.with_code(code)
    if not isinstance(quantizer, Encoder):
        raise TypeError("quantizer must be None, a kind name, a Quantizer or another Encoder")
    return quantizer


def _check_common(x0, n_iter, record_every, level_update_every):
    x0 = np.asarray(x0, dtype=np.float64)
    if x0.ndim != 1 or x0.size == 0:
        raise ValueError(f"x0 must be a non-empty 1-D array, got shape {x0.shape}")
    if not np.all(np.isfinite(x0)):
        raise ValueError("x0 contains NaN or inf")
    for name, val in (("n_iter", n_iter), ("record_every", record_every),
                      ("level_update_every", level_update_every)):
        if int(val) != val or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    return x0.copy()


def _local_operators(operators, comm: Communicator) -> dict[int, Any]:
    """The local workers' operators from a sequence (one per worker) or a factory."""
    if isinstance(operators, Sequence) and not isinstance(operators, str | bytes):
        if len(operators) != comm.n_workers:
            raise ValueError(f"got {len(operators)} operators for a communicator with "
                             f"{comm.n_workers} workers")
    elif not callable(operators):
        raise TypeError("operators must be a sequence of callables (one per worker) or a "
                        "factory worker_id -> operator")
    return build_local(comm, operators)


def _monitor_metrics(monitor, comm: Communicator, local_ops: Mapping[int, Any],
                     x_bar: np.ndarray) -> dict[str, float]:
    if monitor is None:
        return {}
    if isinstance(monitor, ReducedMonitor):
        total = comm.allreduce({i: monitor.local(op, x_bar) for i, op in local_ops.items()})
        return dict(monitor.finish(total, x_bar))
    return dict(monitor(x_bar))


def _warm_up(encoder: Encoder, count_codes: bool) -> float:
    """Run the encoder's kernels once on a throwaway copy (numba compiles or loads them from
    its cache here, not inside the iterations), and the code-size book-keeping when it is
    on; returns the seconds it took."""
    t0 = time.perf_counter()
    enc = encoder.clone()
    v = np.linspace(-1.0, 1.0, enc.dim)
    if isinstance(enc, Quantizer) and enc.adaptive:
        enc.adapt(v)
    msg = enc.encode(v, np.random.default_rng(0))
    dec = enc.clone()
    if count_codes and isinstance(enc, Quantizer):
        code_sizes(dec, msg)
    dec.decode_add(msg, np.zeros(enc.dim))
    return time.perf_counter() - t0


def _step(base: np.ndarray, scale: float, direction: np.ndarray, proj, tmp: np.ndarray
          ) -> np.ndarray:
    """``proj(base + scale * direction)`` as a new array (``tmp`` is scratch)."""
    np.multiply(direction, scale, out=tmp)
    tmp += base
    return np.array(proj(tmp), dtype=np.float64)


@dataclass(frozen=True)
class _Steps:
    """The update's settings: step schedules, projection, level refits."""

    eta: StepSchedule
    gamma: StepSchedule | None
    projection: Callable | None
    level_update_every: int
    count_codes: bool = True


def _options(options: RunOptions | None, comm: Communicator, method: str) -> RunOptions:
    opts = RunOptions() if options is None else options
    if not isinstance(opts, RunOptions):
        raise TypeError("options must be a sparsecert.distributed.options.RunOptions")
    if opts.comm is not None and opts.comm is not comm:
        raise ValueError(f"{method}: RunOptions.comm differs from the communicator given")
    opts.refuse(method, "store_iterates", "callback", "scalar_dtype", "server_seed")
    return opts


def _run(method: str, operators, x0, comm: Communicator, n_iter: int, q: Encoder,
         steps: _Steps, opts: RunOptions) -> QODAResult:
    record_every = opts.every(10)
    monitor, stop = opts.monitor, opts.stop
    x1 = _check_common(x0, n_iter, record_every, steps.level_update_every)
    d = x1.size
    if q.dim != d:
        raise ValueError(f"quantizer dimension {q.dim} differs from x0's {d}")
    eta, gamma, projection = steps.eta, steps.gamma, steps.projection
    level_update_every = steps.level_update_every
    if not isinstance(eta, StepSchedule) or not (gamma is None or isinstance(gamma, StepSchedule)):
        raise TypeError("eta and gamma must be StepSchedule instances")
    if monitor is not None and not (isinstance(monitor, ReducedMonitor) or callable(monitor)):
        raise TypeError("monitor must be a callable x_bar -> dict or a ReducedMonitor")
    gamma = eta if gamma is None else gamma
    proj = (lambda z: z) if projection is None else projection
    if projection is not None:
        x1 = np.asarray(proj(x1), dtype=np.float64)
    local_ops = _local_operators(operators, comm)
    warm_up_s = _warm_up(q, steps.count_codes)
    clock = PhaseClock()
    ex = _Exchange(local_ops, comm, q, clock, steps.count_codes)
    traffic0 = comm.traffic.copy()
    n_local = len(comm.local_workers)

    y = np.zeros(d)
    x = x1.copy()
    v_prev = np.zeros(d)  # Vbar_{t-1/2} (QODA) ; unused by QEG
    sum_sq = 0.0
    x_sum = np.zeros(d)
    x_half = x1.copy()
    hist: dict[str, list] = {k: [] for k in (
        "iteration", "oracle_calls", "exchanges", "bits_up", "bits_received",
        *(f"bits_{c}" for c in ex.bits), "compute_s", "eta")}
    step_eta = eta(1, 0.0)
    step_gamma = gamma(1, 0.0)
    tmp = np.empty(d)  # scratch of the updates (no temporaries per iteration)
    log = None  # RunLog of opts.log, made at the first record
    config = run_config(method, comm, x1, q, record_every, level_update_every, list(ex.bits))
    first, wall0 = 1, 0.0
    if opts.resume is not None:  # the state after iteration first - 1 of the saved run
        done, vec, sum_sq, wall0 = restore_state(opts.resume, config, n_iter, ex, clock, hist)
        y, x, v_prev, x_sum, x_half = (vec[k] for k in VECTORS)
        first = done + 1
        step_eta, step_gamma = eta(first, sum_sq), gamma(first, sum_sq)
    t_start = time.perf_counter()
    t = first - 1
    for t in range(first, n_iter + 1):
        adapt = (t - 1) % level_update_every == 0
        if method == "qeg":
            v_lead = ex(x, adapt)
            with clock("update"):
                x_half = _step(x, -step_gamma, v_lead, proj, tmp)
            v_half = ex(x_half, False)
            v_old = v_lead
        else:
            with clock("update"):
                x_half = _step(x, -step_gamma, v_prev, proj, tmp)
            v_half = ex(x_half, adapt)
            v_old, v_prev = v_prev, v_half
        with clock("update"):
            diff = np.subtract(v_half, v_old, out=v_old)
            y -= v_half
            sum_sq += float(diff @ diff)
            step_eta = eta(t + 1, sum_sq)
            step_gamma = gamma(t + 1, sum_sq)
            x = _step(x1, step_eta, y, proj, tmp)
            x_sum += x_half
        if t % record_every == 0 or t == n_iter:
            x_bar = x_sum / t
            tr = comm.traffic - traffic0
            hist["iteration"].append(t)
            hist["exchanges"].append(ex.calls)
            hist["oracle_calls"].append(ex.calls)
            hist["bits_up"].append(float(np.mean(tr.up_sent)))
            hist["bits_received"].append(float(np.mean(tr.up_received)))
            for c in ex.bits:
                hist[f"bits_{c}"].append(float(np.mean(ex.bits[c])))
            hist["compute_s"].append(clock.node_total(n_local))
            hist["eta"].append(step_eta)
            metrics = _monitor_metrics(monitor, comm, local_ops, x_bar)
            for k, val in metrics.items():
                hist.setdefault(k, []).append(float(val))
            if opts.log is not None:
                if log is None:  # the columns are known at the first record
                    log = RunLog(opts.log, ["iteration", "compute_s", "bits_up",
                                            "bits_received", *metrics], comm.is_root,
                                 append=opts.resume is not None)
                log.write({k: v[-1] for k, v in hist.items()})
            if stop is not None and stop(t, x_bar, metrics):
                break
        if opts.checkpoint is not None and (t % opts.checkpoint_every == 0 or t == n_iter):
            save_state(opts.checkpoint, config, t, dict(zip(VECTORS, (y, x, v_prev, x_sum,
                                                                      x_half), strict=True)),
                       sum_sq, ex, clock, hist, wall0 + time.perf_counter() - t_start,
                       comm.traffic - traffic0)
    wall_s = wall0 + time.perf_counter() - t_start
    if log is not None:
        log.close()
    n_done = t
    history = {k: np.asarray(v) for k, v in hist.items()}
    tr = comm.traffic - traffic0
    bpw = {c: arr.copy() for c, arr in ex.bits.items()}
    bpw["up"] = tr.up_sent.copy()
    bpw["received"] = tr.up_received.copy()
    bpw["payload"] = ex.payload_bits.copy()
    return QODAResult(x_sum / n_done, x_half, method, int(n_done), history, bpw, tr,
                      clock.node_seconds(n_local), warm_up_s, wall_s)


_DOC_PARAMS = """

    Parameters
    ----------
    operators : sequence of callables, or a factory
        ``operators[k](x, rng) -> V_k(x)`` for every worker ``k``, or a factory
        ``operators(k) -> V_k`` called once for each worker this process hosts (so a process
        never builds another's data); ``rng`` is the worker's generator
        (``comm.worker_rng(k)``).
    x0 : numpy.ndarray
        Starting point ``X_1``.
    comm : Communicator
        ``SimComm`` or ``MPIComm`` with ``n_workers == len(operators)``.
    n_iter : int
        Number of iterations.
    quantizer : Encoder, str or None
        The quantizer (a :class:`~sparsecert.distributed.quantize.Quantizer`, or any other
        :class:`~sparsecert.distributed.encoder.Encoder`; cloned per worker and per receiver);
        a kind name from :data:`QUANTIZER_KINDS` (then ``layers`` and ``s`` are used); ``None``
        sends FP32 vectors.
    layers : int, sequence of int or LayerMap, optional
        Layer map used when the quantizer is given by name.
    s : int, optional
        Inner levels when the quantizer is given by name.
    code : {"fixed", "gamma", "huffman"}, optional
        Code actually transmitted (default: the quantizer's). The sizes under the other codes
        are recorded too.
    eta, gamma : StepSchedule
        Dual-averaging and extrapolation steps (``gamma`` defaults to ``eta``).
    projection : callable, optional
        Euclidean projection onto the constraint set.
    level_update_every : int
        Adaptive quantizers re-optimise their levels every this many iterations.
    count_codes : bool
        Record what every message would cost under the other codes too
        (``history["bits_gamma"]`` etc.; default). This is book-keeping a user sending one
        code does not need: a pass over every received message each round, outside the
        timed phases but inside the wall time. ``False`` records the transmitted code's
        size only (``history["bits_<code>"]``).
    options : RunOptions, optional
        The run options shared with Safe-EF (:class:`~sparsecert.distributed.options.RunOptions`):
        ``monitor`` (``monitor(x_bar) -> dict`` of metrics recorded in the history, evaluated
        by every process, or a :class:`ReducedMonitor`: local sums of the hosted workers,
        reduced over all workers), ``record_every`` (default 10; the last iteration is always
        recorded), ``stop`` (``stop(t, x_bar, metrics) -> bool`` at every recorded
        iteration; True stops the run there, and ``n_iter`` of the result is then the
        iterations done) and ``log`` (a CSV path or a callable: one row per record,
        iteration, compute seconds of one node, bits sent and received per worker, the
        monitor's metrics; written by the root; a resumed run appends to its own),
        ``checkpoint`` / ``checkpoint_every`` (each process saves its state to
        ``<checkpoint>.<rank>.npz`` every this many iterations and at the end) and ``resume``
        (continue a saved run: same configuration, start point and number of processes;
        ``n_iter`` counts from the original start; the result equals the uninterrupted
        run's). ``comm`` may repeat the communicator; the other fields are refused.

    Returns
    -------
    QODAResult
"""


def qoda(operators: Sequence[Operator], x0: np.ndarray, comm: Communicator, n_iter: int, *,
         quantizer: Encoder | str | None = "layerwise_adaptive",
         layers: int | Sequence[int] | LayerMap | None = None, s: int | None = 6,
         code: str | None = None, eta: StepSchedule = StepSchedule(),
         gamma: StepSchedule | None = None, projection: Callable | None = None,
         level_update_every: int = 50, options: RunOptions | None = None,
         count_codes: bool = True) -> QODAResult:
    """Quantized optimistic dual averaging (one quantized exchange per iteration)."""
    x0 = np.asarray(x0, dtype=np.float64)
    q = _resolve_quantizer(quantizer, layers, s, x0.size, code)
    return _run("qoda", operators, x0, comm, n_iter, q,
                _Steps(eta, gamma, projection, level_update_every, bool(count_codes)),
                _options(options, comm, "qoda"))


def oda(operators: Sequence[Operator], x0: np.ndarray, comm: Communicator, n_iter: int, *,
        precision: str = "float32", eta: StepSchedule = StepSchedule(),
        gamma: StepSchedule | None = None, projection: Callable | None = None,
        options: RunOptions | None = None) -> QODAResult:
    """Unquantized optimistic dual averaging: messages are the raw oracle values as
    little-endian ``precision`` floats (``"float32"``: the FP32 baseline; ``"float64"``:
    lossless). The other parameters are those of :func:`qoda`."""
    x0 = np.asarray(x0, dtype=np.float64)
    return _run("oda", operators, x0, comm, n_iter, Identity(max(x0.size, 1), precision),
                _Steps(eta, gamma, projection, 1), _options(options, comm, "oda"))


def quantized_extragradient(
        operators: Sequence[Operator], x0: np.ndarray, comm: Communicator, n_iter: int, *,
        quantizer: Encoder | str | None = "layerwise_adaptive",
        layers: int | Sequence[int] | LayerMap | None = None, s: int | None = 6,
        code: str | None = None, eta: StepSchedule = StepSchedule(),
        gamma: StepSchedule | None = None, projection: Callable | None = None,
        level_update_every: int = 50, options: RunOptions | None = None,
        count_codes: bool = True) -> QODAResult:
    """Quantized extra-gradient in dual-averaging form (Q-GenX-style): two quantized exchanges
    per iteration, ``X_{t+1/2} = P(X_t - gamma_t Vbar_t)``, ``Y_{t+1} = Y_t - Vbar_{t+1/2}``,
    ``X_{t+1} = P(X_1 + eta_{t+1} Y_{t+1})``, adaptive steps on ``||Vbar_{t+1/2} - Vbar_t||^2``.
    """
    x0 = np.asarray(x0, dtype=np.float64)
    q = _resolve_quantizer(quantizer, layers, s, x0.size, code)
    return _run("qeg", operators, x0, comm, n_iter, q,
                _Steps(eta, gamma, projection, level_update_every, bool(count_codes)),
                _options(options, comm, "quantized_extragradient"))


qoda.__doc__ += _DOC_PARAMS
quantized_extragradient.__doc__ += _DOC_PARAMS
