"""Quantization levels: uniform levels and levels that minimise the quantization variance.

A level sequence is ``0 = l_0 < l_1 < ... < l_s < l_{s+1} = 1`` (``s`` inner levels). A
normalised magnitude ``u`` in ``[l_tau, l_{tau+1}]`` rounded up with probability
``(u - l_tau) / (l_{tau+1} - l_tau)`` has variance ``(u - l_tau)(l_{tau+1} - u)``, so the
empirical variance of samples ``u_j`` with weights ``w_j`` is
``sum_j w_j (u_j - l_tau)(l_{tau+1} - u_j)`` (:func:`levels_variance`).

:func:`optimize_levels` minimises it by exact coordinate descent: with its neighbours ``a < b``
fixed, one inner level ``x`` enters through
``f(x) = sum_{a<u<x} w (u - a)(x - u) + sum_{x<=u<b} w (u - x)(b - u)``, convex and piecewise
linear with slope ``sum_{k<=j} w_k (u_k - a) - sum_{k>j} w_k (b - u_k)`` right of the j-th
sample (non-decreasing), so its exact minimiser is a sample point, found by a binary search on
prefix sums. Sweeps repeat until the variance stops decreasing; several initialisations are run
and the best kept; levels are rounded to float32 (they travel as float32) and kept strictly
increasing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

__all__ = [
    "MAX_INNER_LEVELS",
    "uniform_levels",
    "levels_variance",
    "optimize_levels",
    "optimize_sorted",
    "check_levels",
    "check_inner_levels",
]

MAX_INNER_LEVELS = 30  # s + 2 <= 32 symbols: Huffman code lengths fit in 5 bits
DEFAULT_INITS = ("uniform", "exponential", "quantile")


def check_inner_levels(s: int) -> int:
    """``s`` as an int in ``[0, MAX_INNER_LEVELS]`` (else ``ValueError``)."""
    if isinstance(s, bool) or int(s) != s or not 0 <= s <= MAX_INNER_LEVELS:
        raise ValueError(f"the number of inner levels s must be an integer in "
                         f"[0, {MAX_INNER_LEVELS}], got {s!r}")
    return int(s)


def check_levels(levels: np.ndarray) -> np.ndarray:
    """A level array increasing strictly from 0 to 1 (else ``ValueError``)."""
    lv = np.asarray(levels, dtype=np.float64)
    if lv.ndim != 1 or lv.size < 2:
        raise ValueError("levels must be a 1-D array with at least the two end points 0, 1")
    if lv[0] != 0.0 or lv[-1] != 1.0 or np.any(np.diff(lv) <= 0) or not np.all(np.isfinite(lv)):
        raise ValueError("levels must increase strictly from 0 to 1")
    return lv


def uniform_levels(s: int) -> np.ndarray:
    """QSGD levels ``0, 1/(s+1), ..., 1`` (``s`` inner levels)."""
    s = check_inner_levels(s)
    return np.arange(s + 2, dtype=np.float64) / (s + 1)


def levels_variance(u: np.ndarray, w: np.ndarray, levels: np.ndarray) -> float:
    """Empirical variance ``sum_j w_j (u_j - l_tau)(l_{tau+1} - u_j)`` of samples in [0, 1]."""
    lv = np.asarray(levels, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    tau = np.clip(np.searchsorted(lv, u, side="right") - 1, 0, lv.size - 2)
    return float(np.sum(np.asarray(w, dtype=np.float64) * (u - lv[tau]) * (lv[tau + 1] - u)))


@njit(cache=True, nogil=True)
def _prefix_sums(us, ws):  # pragma: no cover - compiled
    """Prefix sums of ``w``, ``w u`` and ``w u^2`` (a leading 0), in one pass: the sums of
    ``numpy.cumsum(w)``, ``numpy.cumsum(w * u)`` and ``numpy.cumsum(w * u * u)``."""
    m = us.size
    cw, cwu, cwu2 = np.zeros(m + 1), np.zeros(m + 1), np.zeros(m + 1)
    a = b = c = 0.0
    for i in range(m):
        wu = ws[i] * us[i]
        a += ws[i]
        b += wu
        c += wu * us[i]
        cw[i + 1], cwu[i + 1], cwu2[i + 1] = a, b, c
    return cw, cwu, cwu2


@njit(cache=True, nogil=True)
def _prefix_variance(us, cw, cwu, cwu2, lv):  # pragma: no cover - compiled
    """``sum_j w_j (u_j - a)(b - u_j)`` over the cells of ``lv`` from prefix sums of ``w``,
    ``w u`` and ``w u^2`` (samples sorted): ``-S2 + (a + b) S1 - a b S0`` per cell."""
    total = 0.0
    m = us.size
    start = 0
    for i in range(lv.size - 1):
        a, b = lv[i], lv[i + 1]
        stop = np.searchsorted(us, b, side="left") if i < lv.size - 2 else m
        s0 = cw[stop] - cw[start]
        s1 = cwu[stop] - cwu[start]
        s2 = cwu2[stop] - cwu2[start]
        total += -s2 + (a + b) * s1 - a * b * s0
        start = stop
    return total


@njit(cache=True, nogil=True)
def _cd_kernel(us, cw, cwu, cwu2, lv, max_sweeps, rtol):  # pragma: no cover - compiled
    """Exact coordinate descent on the inner levels of ``lv`` (samples ``us`` sorted)."""
    best = _prefix_variance(us, cw, cwu, cwu2, lv)
    for _ in range(max_sweeps):
        for i in range(1, lv.size - 1):
            a, b = lv[i - 1], lv[i + 1]
            lo = np.searchsorted(us, a, side="right")
            hi = np.searchsorted(us, b, side="left")
            if hi <= lo:
                continue
            left_j, right_j = lo + 1, hi + 1  # search j in [lo+1, hi]; hi+1 = "none"
            while left_j < right_j:
                j = (left_j + right_j) // 2
                lft = (cwu[j] - cwu[lo]) - a * (cw[j] - cw[lo])
                rgt = b * (cw[hi] - cw[j]) - (cwu[hi] - cwu[j])
                if lft - rgt >= 0.0:
                    right_j = j
                else:
                    left_j = j + 1
            k = min(left_j - (lo + 1), hi - lo - 1)
            x = us[lo + k]
            lv[i] = min(max(x, a), b)
        val = _prefix_variance(us, cw, cwu, cwu2, lv)
        done = best - val <= rtol * max(abs(best), 1e-300)
        best = min(best, val)
        if done:
            break
    return lv


@njit(cache=True, nogil=True)
def _sorted_variance(us, ws, lv):  # pragma: no cover - compiled
    """Exact (term by term) empirical variance of sorted samples."""
    total = 0.0
    tau = 0
    for j in range(us.size):
        u = us[j]
        while tau < lv.size - 2 and u >= lv[tau + 1]:
            tau += 1
        total += ws[j] * (u - lv[tau]) * (lv[tau + 1] - u)
    return total


def strictly_increasing_float32(lv: np.ndarray) -> np.ndarray:
    """Round inner levels to float32 and make the sequence strictly increasing."""
    out = np.asarray(lv, dtype=np.float64).astype(np.float32)
    out[0], out[-1] = 0.0, 1.0
    for i in range(1, out.size - 1):
        if out[i] <= out[i - 1]:
            out[i] = np.nextafter(out[i - 1], np.float32(1.0))
    for i in range(out.size - 2, 0, -1):
        if out[i] >= out[i + 1]:
            out[i] = np.nextafter(out[i + 1], np.float32(0.0))
    return out.astype(np.float64)


def _initial_levels(init, s: int, us: np.ndarray, cw: np.ndarray) -> np.ndarray:
    if isinstance(init, str):
        if init == "uniform":
            lv0 = uniform_levels(s)
        elif init == "exponential":
            lv0 = np.concatenate([[0.0], 2.0 ** -np.arange(s, 0, -1, dtype=np.float64), [1.0]])
        elif init == "quantile":
            if us.size == 0 or cw[-1] <= 0:
                lv0 = uniform_levels(s)
            else:
                q = np.arange(1, s + 1) / (s + 1) * cw[-1]
                pos = np.minimum(np.searchsorted(cw[1:], q), us.size - 1)
                lv0 = np.concatenate([[0.0], us[pos], [1.0]])
        else:
            raise ValueError(f"unknown initialisation {init!r}")
    else:
        lv0 = np.asarray(init, dtype=np.float64)
        if lv0.shape != (s + 2,):
            raise ValueError(f"an explicit initialisation needs {s + 2} levels")
    return strictly_increasing_float32(np.clip(lv0, 0.0, 1.0))


def optimize_sorted(us: np.ndarray, ws: np.ndarray, s: int,
                    inits: Sequence[str | np.ndarray] = DEFAULT_INITS, *,
                    max_sweeps: int = 30, rtol: float = 1e-7) -> tuple[np.ndarray, float]:
    """:func:`optimize_levels` on samples already sorted ascending (no checks)."""
    cw, cwu, cwu2 = _prefix_sums(np.ascontiguousarray(us, dtype=np.float64),
                                 np.ascontiguousarray(ws, dtype=np.float64))
    best_lv, best_val = None, np.inf
    for init in inits:
        lv0 = _initial_levels(init, s, us, cw)
        lv = _cd_kernel(us, cw, cwu, cwu2, lv0.copy(), int(max_sweeps), float(rtol))
        lv = strictly_increasing_float32(lv)
        val = _sorted_variance(us, ws, lv)
        if val < best_val:
            best_lv, best_val = lv, val
    return best_lv, float(best_val)


def optimize_levels(u: np.ndarray, w: np.ndarray | None, s: int, *,
                    inits: Sequence[str | np.ndarray] = DEFAULT_INITS,
                    max_sweeps: int = 30, rtol: float = 1e-7) -> tuple[np.ndarray, float]:
    """Levels minimising the empirical variance ``sum_j w_j (u_j - l_tau)(l_{tau+1} - u_j)``.

    Coordinate descent where each inner level is set to its exact minimiser given its two
    neighbours (the objective in one level is convex piecewise linear, minimised at a sample),
    run from each initialisation; the best result is returned.

    Parameters
    ----------
    u : numpy.ndarray
        Samples in [0, 1] (normalised magnitudes).
    w : numpy.ndarray or None
        Non-negative weights (squared layer norms); ``None`` means all ones.
    s : int
        Number of inner levels.
    inits : sequence
        ``"uniform"``, ``"exponential"`` (``2^-(s+1-j)``), ``"quantile"`` (weighted quantiles) or
        explicit level arrays.
    max_sweeps : int
        Maximum number of sweeps over the inner levels per initialisation.
    rtol : float
        Stop when a sweep lowers the variance by less than this fraction.

    Returns
    -------
    levels : numpy.ndarray
        ``s + 2`` float32-representable levels from 0 to 1, strictly increasing.
    variance : float
        Their empirical variance.
    """
    s = check_inner_levels(s)
    u = np.asarray(u, dtype=np.float64).ravel()
    w = np.ones_like(u) if w is None else np.asarray(w, dtype=np.float64).ravel()
    if u.shape != w.shape:
        raise ValueError(f"u and w must have the same length, got {u.size} and {w.size}")
    if np.any(~np.isfinite(u)) or np.any((u < 0) | (u > 1)):
        raise ValueError("samples u must lie in [0, 1]")
    if np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative")
    if len(inits) == 0:
        raise ValueError("at least one initialisation is needed")
    order = np.argsort(u, kind="stable")
    return optimize_sorted(u[order], w[order], s, inits, max_sweeps=max_sweeps, rtol=rtol)
