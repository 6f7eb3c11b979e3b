"""The record returned by the relaxation solver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RelaxationResult", "STATUSES"]

STATUSES = ("converged", "cutoff", "max_iter", "time_limit")


@dataclass
class RelaxationResult:
    """Result of one (node) perspective relaxation.

    Attributes
    ----------
    coef : ndarray (p,)
        Final primal iterate (zeros on the fixed-out features).
    intercept : float
        0.0 unless ``fit_intercept`` (squared loss: ``y_mean - x_mean @ coef``).
    objective : float
        Relaxation primal value ``P(coef) = F(coef) + 2 (lambda2 + mu) g_node(coef)`` with
        ``F = loss - mu ||b||^2`` (the plain relaxation when ``mu = 0``).
    lower_bound : float
        Running maximum of the valid bound over all evaluated points.
    dual : ndarray (n,)
        ``zeta = f'(X b~)`` at the point ``b~`` that attained ``lower_bound``; with ``mu = 0`` the
        Fenchel dual value ``D(zeta)`` equals ``lower_bound`` (Fenchel-Young).
    bound_point : ndarray (p,)
        The point ``b~`` at which ``lower_bound`` was attained (zeros on fixed-out features).
    z : ndarray (p,)
        Relaxed indicators at ``coef`` (1 on fixed-in, 0 on fixed-out).
    n_iter, n_restarts : int
    status : str
        ``"converged"`` (relative gap <= rel_tol), ``"cutoff"`` (lower_bound >= cutoff),
        ``"max_iter"`` or ``"time_limit"``.
    time : float
        Wall-clock seconds spent in the solver.
    eig_shift : float
        The shift ``mu`` used.
    gap : float
        ``(objective - lower_bound) / max(1, |objective|)``.
    strategy : str
        The node strategy that solved it (``"exact"``, ``"zspace"``, ``"working_set"`` or
        ``"full"``; see ``strategies``).
    race : strategies.Race or None
        With ``solve_node(race=True)``: the race of z-space and FISTA on the node.
    """

    coef: np.ndarray
    intercept: float
    objective: float
    lower_bound: float
    dual: np.ndarray
    bound_point: np.ndarray
    z: np.ndarray
    n_iter: int
    n_restarts: int
    status: str
    time: float
    eig_shift: float
    gap: float
    strategy: str = ""
    race: Any = None
