"""Safe-EF for non-smooth constrained distributed optimisation.

Problem (Islamov, As, Fatkhullin, ICML 2025, arXiv 2505.06053)::

    minimize   f(x) = (1/n) sum_i f_i(x)
    subject to g(x) <= 0,   g = (1/n) sum_i g_i   or   g = G((1/n) sum_i q_i)

with convex, Lipschitz, possibly non-smooth ``f_i`` and constraint parts held by ``n``
workers (:mod:`~sparsecert.distributed.safe_ef.workers`). Every method is written against
the :class:`~sparsecert.distributed.comm.Communicator` protocol only (default
:class:`~sparsecert.distributed.comm.SimComm`), so the same code runs in-process or on MPI;
the server lives on the root process (see :mod:`~sparsecert.distributed.safe_ef.run` for
what travels in a round). All bits are those of the real encoded messages.

:func:`safe_ef`
    EF14 error feedback on the uplink + constraint switching + optional EF21-P downlink.
:func:`safe_ef_stochastic`
    The same with minibatch subgradients and a minibatch estimate of ``g`` for the switch.

The baselines live in :mod:`~sparsecert.distributed.safe_ef.baselines` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sparsecert.distributed.compress import Compressor
from sparsecert.distributed.safe_ef.baselines import (
    ef14_lagrangian,
    ef21_switching,
    switching_subgradient,
    topk_no_ef,
)
from sparsecert.distributed.safe_ef.run import (
    RoundInfo,
    RunOptions,
    SafeEFResult,
    _check_int,
    _Downlink,
    _Run,
    common_params,
    compressed_run,
)
from sparsecert.distributed.safe_ef.workers import (
    AveragedConstraint,
    AveragedWorker,
    FunctionWorker,
    StochasticWorker,
    Worker,
)

__all__ = [
    "Worker",
    "StochasticWorker",
    "AveragedWorker",
    "AveragedConstraint",
    "FunctionWorker",
    "RunOptions",
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

Workers = Sequence[Any] | Callable[[int], Any]


def safe_ef(
    workers: Workers,
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    *,
    downlink: Compressor | None = None,
    constraint: AveragedConstraint | None = None,
    options: RunOptions | None = None,
) -> SafeEFResult:
    """Safe-EF: EF14 error feedback + constraint switching + optional EF21-P downlink.

    Each round ``t``: the server forms ``g(x_t)``; if ``g(x_t) <= c`` every worker takes
    ``h_i`` in the subdifferential of ``f_i`` at ``x_t`` (a productive step), otherwise of its
    constraint part; worker ``i`` sends ``v_i = C(e_i + gamma h_i)`` and keeps
    ``e_i <- e_i + gamma h_i - v_i``; the server sets ``w <- w - mean_i v_i`` and the model
    becomes ``x <- x + C_0(w - x)`` (``x = w`` without downlink compression).
    The output averages ``x_t`` over the productive rounds.

    Parameters
    ----------
    workers : sequence of workers, or callable
        One :class:`~sparsecert.distributed.safe_ef.workers.Worker` per worker, or a factory
        ``worker_id -> worker`` called only for this process's workers (then
        ``options.comm`` is required). With ``constraint`` the workers implement
        :class:`~sparsecert.distributed.safe_ef.workers.AveragedWorker`.
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
        ``C_0`` of the EF21-P downlink; None broadcasts the model exactly (float64).
    constraint : AveragedConstraint or None
        None: ``g = mean_i g_i``. Otherwise ``g = G(mean_i q_i)`` with this ``G``.
    options : RunOptions or None
        Communicator, monitor, records, callback, stop rule, scalar encoding.

    Returns
    -------
    SafeEFResult
    """
    gamma, c, n_rounds = common_params(gamma, c, n_rounds)
    run, comp, down = compressed_run("safe_ef", workers, x0, n_rounds, options,
                                     {"gamma": gamma, "c": c}, compressor, downlink,
                                     constraint=constraint, checkpointable=True)
    local = run.local
    return _ef14_loop(run, comp, down, gamma, c, lambda i: local[i])


def _ef14_loop(run: _Run, comp: Compressor, down: _Downlink, gamma: float, c: float,
               oracle: Callable[[int], Any]) -> SafeEFResult:
    """The Safe-EF round loop; ``oracle(i)`` gives worker ``i``'s functions for this use
    (the worker itself, or a fresh minibatch of it for the stochastic variant)."""
    e = {i: np.zeros(run.d) for i in run.local}
    run.rngs["downlink"] = down.rng
    t0, x, w = run.resume(run.x0.copy(), run.x0.copy() if run.root else None, {"e": e})

    def one_round(t: int, x: np.ndarray) -> tuple[np.ndarray | None, float, bool, dict]:
        nonlocal w
        productive, s, gx = run.switch({i: oracle(i) for i in run.local}, x, c)

        def step(i: int) -> np.ndarray:
            return gamma * run.direction(i, oracle(i), x, productive, s)

        total = run.uplink(run.ef14_messages(comp, e, step), comp)
        if w is not None:
            w = w - total
        return w, gx, productive, {"e": e}

    return run.drive(down, x, one_round, t0)


def safe_ef_stochastic(
    workers: Workers,
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    batch_size: int = 1,
    *,
    downlink: Compressor | None = None,
    constraint: AveragedConstraint | None = None,
    options: RunOptions | None = None,
) -> SafeEFResult:
    """Stochastic Safe-EF: :func:`safe_ef` with minibatches.

    Each round every worker draws (with its own generator ``comm.worker_rng(i)``) one
    minibatch to estimate its constraint part for the switch and an independent one for the
    subgradient. Parameters are those of :func:`safe_ef` plus ``batch_size``; workers must
    have a ``minibatch(rng, batch_size)`` method
    (:class:`~sparsecert.distributed.safe_ef.workers.StochasticWorker`).
    """
    gamma, c, n_rounds = common_params(gamma, c, n_rounds)
    batch_size = _check_int("batch_size", batch_size, 1)
    run, comp, down = compressed_run("safe_ef_stochastic", workers, x0, n_rounds, options,
                                     {"gamma": gamma, "c": c, "batch_size": batch_size},
                                     compressor, downlink, constraint=constraint,
                                     checkpointable=True)
    for i, wk in run.local.items():
        if not callable(getattr(wk, "minibatch", None)):
            raise TypeError(f"worker {i} has no minibatch(rng, batch_size) method")
    cm, local = run.comm, run.local
    return _ef14_loop(run, comp, down, gamma, c,
                      lambda i: local[i].minibatch(cm.worker_rng(i), batch_size))


METHODS: dict[str, Callable[..., SafeEFResult]] = {
    "safe_ef": safe_ef,
    "safe_ef_stochastic": safe_ef_stochastic,
    "switching_subgradient": switching_subgradient,
    "topk_no_ef": topk_no_ef,
    "ef21_switching": ef21_switching,
    "ef14_lagrangian": ef14_lagrangian,
}
"""Name -> function of every Safe-EF method."""
