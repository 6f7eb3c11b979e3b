"""The master's subproblem of the DTZO-style method: consensus plus an exterior penalty on cut
violation, solved by a damped Newton method with exact Hessians.

::

    min_z  (rho N / 2) ||z - wbar||^2 + (beta / 2) sum_c max(0, m_c(z) - eps)^2

``wbar`` is the mean of the workers' last ``z_j + u_j``, ``m_c`` the cut models of
:mod:`sparsecert.distributed.dtzo.cuts` (the penalty is convex: ``m_c`` is a norm of an affine
map for quadratic cuts and affine for linear cuts, and ``max(0, .)^2`` of a convex function is
convex).
"""

from __future__ import annotations

import numpy as np

from sparsecert.distributed.dtzo.cuts import Cut

__all__ = ["penalised_objective", "solve_master"]


def penalised_objective(z: np.ndarray, wbar: np.ndarray, rhoN: float, cuts: list[Cut],
                        eps: float, beta: float, need_hess: bool):
    """Value, gradient and (optionally) Hessian of the master objective at ``z``."""
    diff = z - wbar
    val = 0.5 * rhoN * diff @ diff
    grad = rhoN * diff
    hess = rhoN * np.eye(z.size) if need_hess else None
    for c in cuts:
        dz = z - c.z_c
        if c.kind == "quadratic":
            v = c.r + c.J @ dz
            n = np.linalg.norm(v)
            if n <= eps:
                continue
            jv = c.J.T @ v
            val += 0.5 * beta * (n - eps) ** 2
            grad = grad + beta * (n - eps) / n * jv
            if need_hess:
                hess += beta * ((1 - eps / n) * (c.J.T @ c.J) + (eps / n**3) * np.outer(jv, jv))
        else:
            s = np.linalg.norm(c.r)
            g = c.J.T @ c.r / s
            mval = s + g @ dz
            if mval <= eps:
                continue
            val += 0.5 * beta * (mval - eps) ** 2
            grad = grad + beta * (mval - eps) * g
            if need_hess:
                hess += beta * np.outer(g, g)
    return val, grad, hess


def solve_master(z0: np.ndarray, wbar: np.ndarray, rhoN: float, cuts: list[Cut], eps: float,
                 beta: float, max_steps: int = 100) -> np.ndarray:
    """Damped Newton (Armijo backtracking) from ``z0``."""
    z = z0.copy()
    for _ in range(max_steps):
        f, g, H = penalised_objective(z, wbar, rhoN, cuts, eps, beta, True)
        step = -np.linalg.solve(H, g)
        slope = g @ step
        s = 1.0
        while s > 1e-12:
            if penalised_objective(z + s * step, wbar, rhoN, cuts, eps, beta,
                                   False)[0] <= f + 1e-4 * s * slope:
                break
            s *= 0.5
        z = z + s * step
        if np.linalg.norm(s * step) <= 1e-14 * (1.0 + np.linalg.norm(z)):
            break
    return z
