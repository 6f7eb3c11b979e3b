"""Zeroth-order cuts of the DTZO-style method: the cut record, its model, the Jacobian estimates
and the level-3 solution map the inner cuts imply.

A cut on the residual ``r`` of a level, taken at ``x_c``, stores ``r_c = r(x_c)`` and a Jacobian
estimate ``J_c``; its *quadratic* model is ``m_c(z) = ||r_c + J_c (z - z_c)||`` (the Gauss-Newton
model of ``||r||``) and its *linear* model the tangent ``||r_c|| + g_c^T (z - z_c)`` with
``g_c = J_c^T r_c / ||r_c||``.

Jacobians (:class:`JacobianEstimator`) come from residual trajectories at ``x_c`` and at
``x_c +- mu u_i`` along orthonormal directions ``u_i`` (central differences, common random
numbers). A *full* frame costs ``2 n + 1`` trajectories in ``n`` variables, which makes a
refinement cost grow like ``d * d3`` queries. The *update* mode re-uses the previous cut's
Jacobian: it is corrected along the secant between the two cut points (Broyden) and re-measured
along a few fresh random directions (``2 s + 1`` trajectories). The same trajectories test the
old Jacobian: when it mispredicts either the change of the residual between the two cut points
or the directional derivatives along the fresh directions by more than ``refresh_tol``
(relative; the second is a random sketch of its error in every direction), a full frame is
measured instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sparsecert.distributed.dtzo.zeroth_order import (
    combine_differences,
    perturbation_points,
    sample_directions,
)

__all__ = ["Cut", "cut_model", "JacobianEstimator", "level3_map"]

Residuals = Callable[[np.ndarray], np.ndarray]
"""Maps ``(m, n)`` points of a level's variables to ``(m, k)`` residuals."""


@dataclass
class Cut:
    """One zeroth-order cut ``m(z) <= eps`` on the residual of ``level`` (2 or 3).

    ``r`` is the residual at ``z_c``, ``J`` its Jacobian estimate in the *full* variable ``z``
    (zero columns for ``x3`` when ``level == 2``).
    """

    level: int
    z_c: np.ndarray
    r: np.ndarray
    J: np.ndarray
    kind: str
    born: int
    inactive: int = 0


def cut_model(cut: Cut, z: np.ndarray) -> np.ndarray:
    """Model value ``m_c(z)`` of the cut at the rows of ``z`` (or one point)."""
    z = np.asarray(z, dtype=np.float64)
    dz = z - cut.z_c
    if cut.kind == "quadratic":
        return np.linalg.norm(cut.r + dz @ cut.J.T, axis=-1)
    s = np.linalg.norm(cut.r)
    g = cut.J.T @ cut.r / s if s > 0 else np.zeros_like(cut.z_c)
    return s + dz @ g


@dataclass
class JacobianStats:
    """How the Jacobians were obtained: cuts with a full frame, cuts by update, and the
    trajectories (one per point at which a residual was computed)."""

    full: int = 0
    updated: int = 0
    trajectories: int = 0


class JacobianEstimator:
    """Residual and Jacobian at a cut point, per level (see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
        The master's generator (directions are drawn from it; a shared seed makes them known
        to every process without being sent).
    mu : float
        Radius of the central differences.
    sketch : int or None
        ``q < n`` truncates the full frame to ``q`` random directions weighted by ``n / q`` (an
        unbiased but noisy sketch); ``None`` keeps the full frame.
    mode : {"full", "update"}
    dirs : int
        Fresh directions per update.
    refresh_tol : float
        Relative prediction error of the previous Jacobian above which an update falls back
        to a full frame.
    """

    def __init__(self, rng: np.random.Generator, mu: float, sketch: int | None, mode: str,
                 dirs: int, refresh_tol: float) -> None:
        self.rng, self.mu, self.sketch = rng, mu, sketch
        self.mode, self.dirs, self.refresh_tol = mode, dirs, refresh_tol
        self._last: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.stats = JacobianStats()

    def _run(self, residuals: Residuals, X: np.ndarray) -> np.ndarray:
        self.stats.trajectories += X.shape[0]
        return residuals(X)

    def _full(self, x_c: np.ndarray, residuals: Residuals,
              r: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        n = x_c.size
        q = n if self.sketch is None else min(self.sketch, n)
        U = sample_directions(self.rng, n, q, "orthogonal")
        pts = perturbation_points(x_c[None, :], U, self.mu, "central")
        if r is None:
            R = self._run(residuals, np.vstack([x_c[None, :], pts]))
            r, R = R[0], R[1:]
        else:
            R = self._run(residuals, pts)
        self.stats.full += 1
        return r, combine_differences(R, U, self.mu, "central", n / q)[0]

    def estimate(self, level: int, x_c: np.ndarray,
                 residuals: Residuals) -> tuple[np.ndarray, np.ndarray]:
        """``(r(x_c), J)`` for the level, by a full frame or by updating the last Jacobian."""
        x_c = np.asarray(x_c, dtype=np.float64)
        n = x_c.size
        if self.mode != "update" or level not in self._last:
            r, J = self._full(x_c, residuals, None)
        else:
            J_prev, x_prev, r_prev = self._last[level]
            U = sample_directions(self.rng, n, min(self.dirs, n), "orthogonal")
            R = self._run(residuals, np.vstack(
                [x_c[None, :], perturbation_points(x_c[None, :], U, self.mu, "central")]))
            r = R[0]
            step, dr = x_c - x_prev, r - r_prev
            miss = dr - J_prev @ step
            Y = combine_differences(R[1:], U, self.mu, "central", 1.0)[0] @ U.T  # J(x_c) U^T
            stale = np.linalg.norm(Y - J_prev @ U.T) > self.refresh_tol * np.linalg.norm(Y)
            if stale or np.linalg.norm(miss) > self.refresh_tol * np.linalg.norm(dr):
                r, J = self._full(x_c, residuals, r)
            else:
                J = J_prev.copy()
                ss = step @ step
                if ss > 0.0:  # Broyden: match the secant between the two cut points
                    J += np.outer(miss, step) / ss
                J = J - (J @ U.T - Y) @ U  # re-measured along the rows of U
                self.stats.updated += 1
        self._last[level] = (J, x_c.copy(), r.copy())
        return r, J


def level3_map(cuts: list[Cut], d12: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Level-3 solution map ``x3 = A x12 + b`` minimising the sum of the inner cuts' models
    ``sum_c ||r_c + J_c (z - z_c)||^2`` over ``x3`` (``None`` without level-3 cuts)."""
    cuts3 = [c for c in cuts if c.level == 3]
    if not cuts3:
        return None
    d3 = cuts3[0].r.size
    S = np.zeros((d3, d3))
    M = np.zeros((d3, d12))
    v = np.zeros(d3)
    for c in cuts3:
        J12, J3 = c.J[:, :d12], c.J[:, d12:]
        a = c.r - c.J @ c.z_c
        S += J3.T @ J3
        M += J3.T @ J12
        v += J3.T @ a
    sol = np.linalg.lstsq(S, -np.hstack([M, v[:, None]]), rcond=None)[0]
    return sol[:, :d12], sol[:, d12]
