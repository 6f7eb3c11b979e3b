r"""P3: a trilevel problem whose three levels are not quadratic, with a closed-form solution.

On the quadratic problem P1 the level residuals are affine and central differences along a full
orthonormal frame return exact gradients, so the method's "zeroth-order" inner estimates are
exact and its cuts are exact models. P3 removes both crutches while keeping a reference one can
trust. Every level is a sum of tilted scalar terms of an affine map of ``z = (x1, x2, x3)``,

.. math::

    f_{l,j}(z) = \sum_i c_{l,j,i}\,\phi(a_{l,i}(z)) - b_{l,j,i}\,a_{l,i}(z),
    \qquad \phi(u) = \tfrac12 u^2 + \alpha \log\cosh u,

with positive weights ``c`` and real tilts ``b``; worker ``j`` holds row ``j`` and the workers
differ through their tilts, so no worker's own minimiser is the global one. ``phi'' = 1 +
alpha sech^2`` lies in ``[1, 1 + alpha]``: every level is strongly convex in its own variable
but its curvature changes by the factor ``1 + alpha`` across the domain, so central differences
are no longer exact (the third derivative of ``phi`` is not zero) and the residuals are not
affine. Write ``C_l = sum_j c_{l,j}``, ``B_l = sum_j b_{l,j}``. A level's gradient through its map
``a = W u + ...`` is ``W^T (C phi'(a) - B)``, which vanishes exactly when ``a = u*_l``, the
componentwise root of ``phi'(u) = B_l / C_l`` (``phi' = u + alpha tanh u`` is increasing from
``-inf`` to ``+inf``; the root is found by a safeguarded Newton iteration to machine precision).
The lower levels therefore have affine solution maps although their residuals are not affine.

*Level 3.* ``a_3 = W3 x3 - P x12 - p`` (``W3`` invertible), so ::

    x3*(x12) = G3 x12 + k3,   G3 = W3^{-1} P,   k3 = W3^{-1} (p + u*_3).

*Level 2.* ``a_2 = W2 x2 + Q x1 + E x3 - q``. With ``x3 = x3*(x12)`` and ``G3 = [G31, G32]``
(columns of ``x1`` and ``x2``), ``a_2 = Wt2 x2 + Qt x1 + k``, ``Wt2 = W2 + E G32``,
``Qt = Q + E G31``, ``k = E k3 - q``; the reduced level-2 objective is strongly convex in ``x2``
(``Wt2`` invertible) and ::

    x2*(x1) = Wt2^{-1} (u*_2 - Qt x1 - k).

*Level 1.* ``a_1 = F z - h`` with ``F`` of shape ``(d1, d)``. On the solution manifold
``z = L x1 + l`` (``L = [I; R; G3 [I; R]]`` with ``R = -Wt2^{-1} Qt``), ``a_1 = F L x1 + F l - h``
with ``F L`` square and invertible, so ::

    x1* = (F L)^{-1} (u*_1 - F l + h).

The true residuals reported by :meth:`NonQuadraticTrilevel.residuals` are
``||grad_{x3} f_3(z)||``, the norm of the total ``x2``-gradient of the reduced level-2 objective
at ``(x1, x2)`` and the hypergradient norm ``||grad V(x1)||``; all three are zero at the solution
to rounding (tested, together with nested scipy solves of the three levels).
"""

from __future__ import annotations

import numpy as np

from sparsecert.distributed.dtzo.problems import (
    SolvedTrilevel,
    _check_level_worker,
    _check_Z,
    check_instance,
    residual_report,
)

__all__ = ["NonQuadraticTrilevel", "make_p3", "phi", "phi_prime", "phi_prime_inverse"]


def _log_cosh(u: np.ndarray) -> np.ndarray:
    a = np.abs(u)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


def phi(u: np.ndarray, alpha: float) -> np.ndarray:
    """``u^2 / 2 + alpha log cosh u`` (evaluated without overflow)."""
    u = np.asarray(u, dtype=np.float64)
    return 0.5 * u * u + alpha * _log_cosh(u)


def phi_prime(u: np.ndarray, alpha: float) -> np.ndarray:
    """``u + alpha tanh u``."""
    u = np.asarray(u, dtype=np.float64)
    return u + alpha * np.tanh(u)


def phi_prime_inverse(t: np.ndarray, alpha: float) -> np.ndarray:
    """Componentwise root ``u`` of ``u + alpha tanh u = t`` (machine precision).

    The root lies between ``t / (1 + alpha)`` and ``t`` (``u <= u + alpha tanh u <= (1 + alpha) u``
    for ``u >= 0``, and symmetrically); Newton's method starts at ``t / (1 + alpha)`` and bisects
    the shrinking bracket whenever a step would leave it.
    """
    t = np.asarray(t, dtype=np.float64)
    lo = np.minimum(t / (1 + alpha), t)
    hi = np.maximum(t / (1 + alpha), t)
    u = t / (1 + alpha)
    for _ in range(200):
        g = phi_prime(u, alpha) - t
        lo = np.where(g < 0, u, lo)
        hi = np.where(g > 0, u, hi)
        step = g / (1 + alpha / np.cosh(u) ** 2)
        new = u - step
        bad = (new <= lo) | (new >= hi)
        new = np.where(bad & (hi > lo), 0.5 * (lo + hi), new)
        if np.all(np.abs(new - u) <= 4 * np.finfo(float).eps * (1 + np.abs(u))):
            return new
        u = new
    return u


class NonQuadraticTrilevel(SolvedTrilevel):
    """P3: tilted ``phi`` levels with affine maps (see the module docstring).

    Parameters
    ----------
    dims : (d1, d2, d3)
    W3 : (d3, d3) array
        Invertible.
    P : (d3, d1 + d2) array
    p : (d3,) array
    W2 : (d2, d2) array
    Q : (d2, d1) array
    E : (d2, d3) array
    q : (d2,) array
    F : (d1, d) array
    h : (d1,) array
    c, b : lists of three arrays of shapes ``(N, d1)``, ``(N, d2)``, ``(N, d3)``
        Weights (> 0) and tilts of levels 1, 2, 3.
    alpha : float
        Weight of the log-cosh part of ``phi`` (>= 0; 0 gives a quadratic problem).
    z0 : (d,) array
        Starting point of the solvers.
    """

    def __init__(self, dims: tuple[int, int, int], W3: np.ndarray, P: np.ndarray,
                 p: np.ndarray, W2: np.ndarray, Q: np.ndarray, E: np.ndarray, q: np.ndarray,
                 F: np.ndarray, h: np.ndarray, c: list[np.ndarray], b: list[np.ndarray],
                 alpha: float, z0: np.ndarray) -> None:
        d1, d2, d3 = (int(v) for v in dims)
        if min(d1, d2, d3) < 1:
            raise ValueError(f"dims must be three positive integers, got {dims}")
        self.dims = (d1, d2, d3)
        self.d = d1 + d2 + d3
        d12 = d1 + d2
        arr = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
        self.W3, self.P, self.p = arr(W3), arr(P), arr(p)
        self.W2, self.Q, self.E, self.q = arr(W2), arr(Q), arr(E), arr(q)
        self.F, self.h = arr(F), arr(h)
        self.c = [arr(v) for v in c]
        self.b = [arr(v) for v in b]
        self.z0 = arr(z0)
        if not (np.isfinite(alpha) and alpha >= 0):
            raise ValueError(f"alpha must be >= 0, got {alpha!r}")
        self.alpha = float(alpha)
        shapes = {"W3": (d3, d3), "P": (d3, d12), "p": (d3,), "W2": (d2, d2), "Q": (d2, d1),
                  "E": (d2, d3), "q": (d2,), "F": (d1, self.d), "h": (d1,), "z0": (self.d,)}
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {getattr(self, name).shape}")
        if len(self.c) != 3 or len(self.b) != 3:
            raise ValueError("c and b must hold one array per level")
        self.n_workers = int(self.c[0].shape[0])
        for lev, m in enumerate((d1, d2, d3)):
            want = (self.n_workers, m)
            if self.c[lev].shape != want or self.b[lev].shape != want:
                raise ValueError(f"c[{lev}] and b[{lev}] must have shape {want}")
            if not np.all(self.c[lev] > 0):
                raise ValueError("the weights c must be positive")
        self.C = [v.sum(axis=0) for v in self.c]
        self.B = [v.sum(axis=0) for v in self.b]
        self.u_star = [phi_prime_inverse(B / C, self.alpha)
                       for B, C in zip(self.B, self.C, strict=True)]
        self._solve()

    # -- the affine maps of each level ---------------------------------------------------------
    def _args(self, level: int, Z: np.ndarray) -> np.ndarray:
        d1, d2, _ = self.dims
        d12 = d1 + d2
        if level == 3:
            return Z[:, d12:] @ self.W3.T - Z[:, :d12] @ self.P.T - self.p
        if level == 2:
            return (Z[:, d1:d12] @ self.W2.T + Z[:, :d1] @ self.Q.T + Z[:, d12:] @ self.E.T
                    - self.q)
        return Z @ self.F.T - self.h

    def _arg_matrix(self, level: int) -> np.ndarray:
        """Jacobian of the level's affine map in ``z``."""
        if level == 3:
            return np.hstack([-self.P, self.W3])
        if level == 2:
            return np.hstack([self.Q, self.W2, self.E])
        return self.F

    # -- protocol ------------------------------------------------------------------------------
    def value(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        _check_level_worker(level, worker, self.n_workers)
        A = self._args(level, _check_Z(Z, self.d))
        c, b = self.c[level - 1][worker], self.b[level - 1][worker]
        return phi(A, self.alpha) @ c - A @ b

    def gradient(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        _check_level_worker(level, worker, self.n_workers)
        A = self._args(level, _check_Z(Z, self.d))
        c, b = self.c[level - 1][worker], self.b[level - 1][worker]
        return (phi_prime(A, self.alpha) * c - b) @ self._arg_matrix(level)

    # -- oracle --------------------------------------------------------------------------------
    def _solve(self) -> None:
        d1, d2, _ = self.dims
        self.G3 = np.linalg.solve(self.W3, self.P)
        self.k3 = np.linalg.solve(self.W3, self.p + self.u_star[2])
        self.Wt2 = self.W2 + self.E @ self.G3[:, d1:]
        self.Qt = self.Q + self.E @ self.G3[:, :d1]
        self.k2 = self.E @ self.k3 - self.q
        self.R = -np.linalg.solve(self.Wt2, self.Qt)
        self.s = np.linalg.solve(self.Wt2, self.u_star[1] - self.k2)
        L12 = np.vstack([np.eye(d1), self.R])
        l12 = np.concatenate([np.zeros(d1), self.s])
        self._L = np.vstack([L12, self.G3 @ L12])
        self._l = np.concatenate([l12, self.G3 @ l12 + self.k3])
        self._FL = self.F @ self._L
        self.x1_star = np.linalg.solve(self._FL, self.u_star[0] - self.F @ self._l + self.h)
        self.z_star = self._L @ self.x1_star + self._l

    def hypergradient(self, x1: np.ndarray) -> np.ndarray:
        """``grad V(x1)`` with ``V(x1) = f_1(x1, x2*(x1), x3*(x1, x2*(x1)))``."""
        a = self._FL @ np.asarray(x1, dtype=np.float64) + self.F @ self._l - self.h
        return self._FL.T @ (self.C[0] * phi_prime(a, self.alpha) - self.B[0])

    def value_function(self, x1: np.ndarray) -> float:
        """``V(x1)``."""
        a = self._FL @ np.asarray(x1, dtype=np.float64) + self.F @ self._l - self.h
        return float(phi(a, self.alpha) @ self.C[0] - a @ self.B[0])

    def x3_map(self, x12: np.ndarray) -> np.ndarray:
        """Exact level-3 solution ``x3*(x1, x2)``."""
        return self.G3 @ x12 + self.k3

    def residuals(self, z: np.ndarray) -> dict[str, float]:
        """True level-3 and level-2 residuals and the hypergradient norm at ``z``."""
        d1, d2, _ = self.dims
        d12 = d1 + d2
        z = np.asarray(z, dtype=np.float64)
        a3 = self._args(3, z[None, :])[0]
        r3 = self.W3.T @ (self.C[2] * phi_prime(a3, self.alpha) - self.B[2])
        a2 = self.Wt2 @ z[d1:d12] + self.Qt @ z[:d1] + self.k2
        r2 = self.Wt2.T @ (self.C[1] * phi_prime(a2, self.alpha) - self.B[1])
        return residual_report(r3, r2, np.linalg.norm(self.hypergradient(z[:d1])))


def _scaled(rng: np.random.Generator, m: int, n: int, size: float) -> np.ndarray:
    """A Gaussian ``(m, n)`` matrix scaled to spectral norm about ``size`` whatever its shape
    (``||G|| ~ sqrt(m) + sqrt(n)``), so that the instances stay comparably conditioned across
    dimensions."""
    return size / (np.sqrt(m) + np.sqrt(n)) * rng.standard_normal((m, n))


def make_p3(n_workers: int = 3, dims: tuple[int, int, int] = (2, 2, 2), seed: int = 0,
            alpha: float = 1.0, heterogeneity: float = 1.0,
            coupling: float = 0.5) -> NonQuadraticTrilevel:
    """A random instance of P3.

    Parameters
    ----------
    n_workers : int
    dims : (d1, d2, d3)
    seed : int
    alpha : float
        Weight of the log-cosh part (curvature of ``phi`` between 1 and ``1 + alpha``).
    heterogeneity : float
        Spread (>= 0) of the workers' relative tilts ``b_{l,j,i} / c_{l,j,i}`` around their
        common value; the totals do not change, so neither does the solution.
    coupling : float
        Spectral size of the cross-level maps ``P``, ``Q``, ``E`` and of ``F`` outside ``x1``
        (the maps ``W`` are the identity plus a perturbation of spectral size about 0.3).
    """
    check_instance(n_workers, dims, heterogeneity)
    if not (np.isfinite(coupling) and coupling >= 0):
        raise ValueError(f"coupling must be >= 0, got {coupling!r}")
    rng = np.random.default_rng(seed)
    d1, d2, d3 = (int(v) for v in dims)
    d12, d = d1 + d2, d1 + d2 + d3
    N = int(n_workers)

    def g(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape)

    W3 = np.eye(d3) + _scaled(rng, d3, d3, 0.3)
    P = _scaled(rng, d3, d12, coupling)
    p = 2.0 * g(d3)
    W2 = np.eye(d2) + _scaled(rng, d2, d2, 0.3)
    Q = _scaled(rng, d2, d1, coupling)
    E = _scaled(rng, d2, d3, coupling)
    q = 2.0 * g(d2)
    F = np.hstack([np.eye(d1) + _scaled(rng, d1, d1, 0.3), _scaled(rng, d1, d - d1, coupling)])
    h = 2.0 * g(d1)
    c, b = [], []
    for m in (d1, d2, d3):
        t = 2.0 * g(m)  # common relative tilt B / C (targets phi'(u*) = t)
        w = rng.uniform(0.5, 1.5, (N, m)) / N  # each worker's weight
        u = rng.uniform(-1.0, 1.0, (N, m))
        u -= (u * w).sum(axis=0) / w.sum(axis=0)  # weighted mean zero: totals B = t * C
        c.append(w)
        b.append((t + heterogeneity * u) * w)
    return NonQuadraticTrilevel((d1, d2, d3), W3, P, p, W2, Q, E, q, F, h, c, b, alpha,
                                np.zeros(d))
