"""Baselines for Safe-EF, on the same run machinery (server on the root process).

:func:`switching_subgradient`
    Uncompressed switching subgradient method (Polyak 1967), dense uplink.
:func:`topk_no_ef`
    Compressed switching method without error feedback.
:func:`ef21_switching`
    EF21 (compressed gradient-difference estimator) with switching.
:func:`ef14_lagrangian`
    EF14 on the Lagrangian ``f + lambda g`` with a projected dual ascent on ``lambda``.

Each takes ``downlink=`` like :func:`~sparsecert.distributed.safe_ef.algorithm.safe_ef`
(None: the server broadcasts the new model exactly in float64; a compressor ``C_0``: EF21-P,
``x <- x + C_0(w - x)``; ``Identity(d)`` sends the model change densely in float32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sparsecert.distributed.compress import Compressor, Identity
from sparsecert.distributed.safe_ef.run import (
    RunOptions,
    SafeEFResult,
    _check_positive,
    _Downlink,
    _Run,
    common_params,
    compressed_run,
)
from sparsecert.distributed.safe_ef.workers import AveragedConstraint

__all__ = ["switching_subgradient", "topk_no_ef", "ef21_switching", "ef14_lagrangian"]

Workers = Sequence[Any] | Callable[[int], Any]


def switching_subgradient(
    workers: Workers,
    x0: np.ndarray,
    gamma: float,
    n_rounds: int,
    c: float = 0.0,
    *,
    value_dtype: str = "float32",
    downlink: Compressor | None = None,
    constraint: AveragedConstraint | None = None,
    options: RunOptions | None = None,
) -> SafeEFResult:
    """Uncompressed switching subgradient method (Polyak's switching rule, distributed).

    Worker ``i`` sends ``gamma h_i`` dense (``value_dtype``: 32 or 64 bits per entry) and the
    server sets ``w = x - mean_i gamma h_i`` and sends it down (``downlink``). The output
    averages the productive rounds. Other parameters as in
    :func:`~sparsecert.distributed.safe_ef.algorithm.safe_ef`.
    """
    gamma, c, n_rounds = common_params(gamma, c, n_rounds)
    run, _, down = compressed_run("switching_subgradient", workers, x0, n_rounds, options,
                                  {"gamma": gamma, "c": c, "value_dtype": value_dtype}, None,
                                  downlink, constraint=constraint)
    return _switching_loop(run, Identity(run.d, value_dtype), down, gamma, c)


def _switching_loop(run: _Run, comp: Compressor, down: _Downlink, gamma: float,
                    c: float) -> SafeEFResult:
    """``x <- x - mean_i C(gamma h_i)`` with the switching rule (no error feedback)."""
    cm, local = run.comm, run.local

    def one_round(t: int, x: np.ndarray) -> tuple[np.ndarray | None, float, bool, dict]:
        productive, s, gx = run.switch(local, x, c)
        msgs = {i: comp.encode(gamma * run.direction(i, o, x, productive, s),
                                 cm.worker_rng(i))
                for i, o in local.items()}
        step = run.uplink(msgs, comp)
        return (None if step is None else x - step), gx, productive, {}

    run.begin()
    return run.drive(down, run.x0.copy(), one_round)


def topk_no_ef(
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
    """Compressed switching method without error feedback: ``x <- x - mean_i C(gamma h_i)``.

    Parameters as in :func:`~sparsecert.distributed.safe_ef.algorithm.safe_ef`.
    """
    gamma, c, n_rounds = common_params(gamma, c, n_rounds)
    run, comp, down = compressed_run("topk_no_ef", workers, x0, n_rounds, options,
                                     {"gamma": gamma, "c": c}, compressor, downlink,
                                     constraint=constraint)
    return _switching_loop(run, comp, down, gamma, c)


def ef21_switching(
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
    """EF21 with switching: worker ``i`` keeps an estimator ``s_i`` (``s_i^0 = 0``), sends
    ``m_i = C(h_i - s_i)`` and sets ``s_i <- s_i + m_i``; the server keeps
    ``s = mean_i s_i`` and steps ``w = x - gamma s``. EF21 was designed for smooth problems;
    it is a baseline here. Parameters as in
    :func:`~sparsecert.distributed.safe_ef.algorithm.safe_ef`.
    """
    gamma, c, n_rounds = common_params(gamma, c, n_rounds)
    run, comp, down = compressed_run("ef21_switching", workers, x0, n_rounds, options,
                                     {"gamma": gamma, "c": c}, compressor, downlink,
                                     constraint=constraint)
    cm, local = run.comm, run.local
    s_loc = {i: np.zeros(run.d) for i in local}
    est = np.zeros(run.d) if run.root else None

    def one_round(t: int, x: np.ndarray) -> tuple[np.ndarray | None, float, bool, dict]:
        nonlocal est
        productive, s, gx = run.switch(local, x, c)
        msgs = {}
        for i, o in local.items():
            h = run.direction(i, o, x, productive, s)
            msg, m = comp.roundtrip(h - s_loc[i], cm.worker_rng(i))
            s_loc[i] = s_loc[i] + m
            msgs[i] = msg
        step = run.uplink(msgs, comp)
        w = None
        if est is not None:
            est = est + step
            w = x - gamma * est
        return w, gx, productive, {"s": s_loc}

    run.begin()
    return run.drive(down, run.x0.copy(), one_round)


def ef14_lagrangian(
    workers: Workers,
    x0: np.ndarray,
    compressor: Compressor,
    gamma: float,
    n_rounds: int,
    eta: float | None = None,
    lam0: float = 0.0,
    *,
    downlink: Compressor | None = None,
    constraint: AveragedConstraint | None = None,
    options: RunOptions | None = None,
) -> SafeEFResult:
    """EF14 on the Lagrangian with a projected dual ascent (primal-dual baseline).

    The server holds ``lambda``. Each round the workers send their constraint parts at
    ``x_t``, the server broadcasts ``lambda_t`` (times ``G'(qbar)`` for an averaged
    constraint), worker ``i`` takes ``h_i`` in ``subdiff f_i(x_t) + lambda_t subdiff g_i(x_t)``
    and runs EF14 on ``gamma h_i``; then ``lambda_{t+1} = max(0, lambda_t + eta g(x_t))``
    (``eta = gamma`` by default). Every round counts as productive; the output averages all
    rounds. ``RoundInfo.g_value`` holds ``g(x_t)``, ``state["lam"]`` the server's multiplier
    ``lambda_t`` (NaN off the root) and ``state["lam_s"]`` what the workers decoded.
    """
    gamma = _check_positive("gamma", gamma)
    eta = gamma if eta is None else _check_positive("eta", eta)
    lam = _check_positive("lam0", lam0, allow_zero=True)
    run, comp, down = compressed_run("ef14_lagrangian", workers, x0, n_rounds, options,
                                     {"gamma": gamma, "eta": eta, "lam0": lam}, compressor,
                                     downlink, constraint=constraint, average_all=True)
    local = run.local
    w = run.x0.copy() if run.root else None
    e = {i: np.zeros(run.d) for i in local}

    def one_round(t: int, x: np.ndarray) -> tuple[np.ndarray | None, float, bool, dict]:
        nonlocal w, lam
        ls, gx = run.multiplier(local, x, lam)

        def step(i: int) -> np.ndarray:
            h = run.check_subgrad(i, local[i].f_subgrad(x))
            if np.any(ls != 0):
                h = h + run.check_subgrad(i, run.cons.vjp(local[i], x, ls))
            return gamma * h

        total = run.uplink(run.ef14_messages(comp, e, step), comp)
        if w is not None:
            w = w - total
        state = {"e": e, "lam": lam if run.root else float("nan"), "lam_s": ls}
        if run.root:  # the dual ascent; the round's state keeps lambda_t
            lam = max(0.0, lam + eta * gx)
        return w, gx, True, state

    run.begin()
    return run.drive(down, run.x0.copy(), one_round)
