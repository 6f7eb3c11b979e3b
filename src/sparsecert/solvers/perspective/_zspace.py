r"""The relaxation in the space of the indicators z (least squares, no box, p >> n).

For least squares without a box the inner minimisation over b is a weighted ridge with a
closed form in the n x n "kernel" space:

    phi(z) = min_b ||y - X b||^2 + lambda2 sum_j b_j^2 / z_j = y^T alpha,
    alpha  = (I + X diag(z) X^T / lambda2)^{-1} y,   b(z) = diag(z) X^T alpha / lambda2,

and the relaxation is ``min { phi(z) : z in Z_node }`` (Z_node: z = 1 on S1, 0 on S0, the free
entries in [0, 1] with sum <= k - |S1|). ``phi`` is convex and smooth, with gradient
``-(X_j^T alpha)^2 / lambda2``: accelerated projected gradient (FISTA with backtracking and
function-value restart) on ``z``. The conditioning of X enters only through n x n solves, which
is what makes it fast when FISTA on b is slow (riboflavin: ||X||^2 = 1.8e7).

The bound at any z is the Fenchel dual at ``zeta = -2 alpha`` (which is ``f'(X b(z))``):

    D(-2 alpha) = 2 y^T alpha - ||alpha||^2 - 2 lambda2 g*_node(X^T alpha / lambda2),

valid for every alpha (it is exactly phi(z) + min_{z' in Z} grad phi(z)^T (z' - z), the
Frank-Wolfe gap bound). ``b(z)`` is primal feasible with ``P(b(z)) <= phi(z)``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from numba import njit

from sparsecert.solvers.perspective._gfun import FREE, IN, gstar_node

__all__ = ["ZSpace"]


@njit(cache=True, nogil=True)
def project_capped(v: np.ndarray, k: float) -> np.ndarray:
    """Euclidean projection onto ``{0 <= z <= 1, sum z <= k}`` (exact, O(p log p)).

    If ``clip(v, 0, 1)`` already sums to at most ``k`` it is the projection; otherwise the
    projection is ``clip(v - tau, 0, 1)`` with the ``tau > 0`` at which the sum equals ``k``.
    ``s(tau) = sum_i clip(v_i - tau, 0, 1)`` is piecewise linear and non-increasing with
    breakpoints ``v_i - 1`` (coordinate i leaves the cap) and ``v_i`` (it reaches 0): a sweep over
    the sorted breakpoints finds ``tau`` exactly.
    """
    p = v.shape[0]
    z = np.empty(p)
    total = 0.0
    for i in range(p):
        zi = min(max(v[i], 0.0), 1.0)
        z[i] = zi
        total += zi
    if total <= k:
        return z
    bp = np.empty(2 * p)
    for i in range(p):
        bp[i] = v[i] - 1.0
        bp[p + i] = v[i]
    order = np.argsort(bp, kind="mergesort")
    # slope magnitude at tau = 0+: coordinates strictly inside (0, 1) after the shift
    m = 0
    for i in range(p):
        if v[i] - 1.0 <= 0.0 < v[i]:
            m += 1
    prev, val = 0.0, total
    tau = 0.0
    for r in range(2 * p):
        j = order[r]
        t = bp[j]
        if t <= 0.0:
            continue
        nxt = val - m * (t - prev)
        if nxt <= k:
            tau = prev + (val - k) / m
            break
        val, prev = nxt, t
        if j < p:
            m += 1  # v_i - 1 passed: the coordinate leaves the cap and starts decreasing
        else:
            m -= 1  # v_i passed: the coordinate reached 0
    else:
        tau = prev + ((val - k) / m if m > 0 else 0.0)
    for i in range(p):
        z[i] = min(max(v[i] - tau, 0.0), 1.0)
    return z


class ZSpace:
    """phi, its gradient and the bound for one node (squared loss, M = inf, mu = 0)."""

    def __init__(self, prob, state, budget):
        self.X, self.y, self.lam = prob.X, prob.y, prob.lambda2
        self.state, self.budget = state, budget
        self.free = np.flatnonzero(state == FREE)
        self.ins = np.flatnonzero(state == IN)
        self.n = self.X.shape[0]

    def full_z(self, zf: np.ndarray) -> np.ndarray:
        z = np.zeros(self.X.shape[1])
        z[self.ins] = 1.0
        z[self.free] = zf
        return z

    def project(self, vf: np.ndarray) -> np.ndarray:
        return project_capped(np.ascontiguousarray(vf, dtype=np.float64), float(self.budget))

    def evaluate(self, zf: np.ndarray):
        """``(phi, grad_free, alpha, c = X^T alpha)``; ``None`` if the solve fails."""
        z = self.full_z(zf)
        idx = np.flatnonzero(z > 0.0)
        XS = self.X[:, idx]
        K = (XS * (z[idx] / self.lam)) @ XS.T
        K[np.diag_indices_from(K)] += 1.0
        try:
            cf = scipy.linalg.cho_factor(K, check_finite=False)
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            return None
        alpha = scipy.linalg.cho_solve(cf, self.y, check_finite=False)
        c = self.X.T @ alpha
        phi = float(self.y @ alpha)
        grad = -(c[self.free] ** 2) / self.lam
        return phi, grad, alpha, c

    def bound(self, alpha: np.ndarray, c: np.ndarray) -> float:
        """``D(-2 alpha)`` (the Fenchel dual at zeta = -2 alpha)."""
        a = np.where(self.state != 0, c / self.lam, 0.0)
        return float(2.0 * (self.y @ alpha) - alpha @ alpha
                     - 2.0 * self.lam * gstar_node(a, self.state, self.budget, np.inf))

    def coef(self, zf: np.ndarray, c: np.ndarray) -> np.ndarray:
        return self.full_z(zf) * c / self.lam
