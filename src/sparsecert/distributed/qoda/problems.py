"""Test problems for QODA: distributed monotone variational inequalities with known solutions.

* :class:`QuadraticGame` (P1): a heterogeneous strongly monotone affine game
  ``A_k(x) = M_k x - b_k`` (``M_k = mu I + PSD + skew``: potential and bilinear parts) whose
  coordinates form layers of very different scales; closed-form solution and exact restricted
  gap over a ball (a trust-region subproblem solved through an eigendecomposition).
* :class:`RobustLeastSquares` (P2): the convex-concave saddle point
  ``min_x max_{||y|| <= rho} 1/2||Ax - c||^2 + y^T (Ax - c) + mu/2 ||x||^2``
  (= ``1/2||r||^2 + rho ||r|| + mu/2||x||^2``), rows split over the workers; solution by a
  one-dimensional root search, exact duality gap.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import brentq

__all__ = ["GameOracle", "QuadraticGame", "RobustLeastSquares", "trust_region_max"]


def trust_region_max(g: np.ndarray, evals: np.ndarray, evecs: np.ndarray, radius: float,
                     rest: float | None = None) -> tuple[float, np.ndarray]:
    """``max_{||w|| <= radius} g^T w - w^T S w`` for a positive definite ``S``.

    ``S = evecs diag(evals) evecs^T`` (``evecs`` orthonormal columns); if ``evecs`` spans only a
    subspace, ``rest`` is the eigenvalue of ``S`` on its orthogonal complement. The maximiser
    is ``w = (2S + lam I)^{-1} g`` with ``lam = 0`` if that is inside the ball, else the
    ``lam > 0`` with ``||w|| = radius`` (a monotone scalar equation, bracketed and solved).
    """
    if np.any(evals <= 0) or (rest is not None and rest <= 0):
        raise ValueError("trust_region_max needs a positive definite S")
    g = np.asarray(g, dtype=np.float64)
    gp = evecs.T @ g
    g_perp = g - evecs @ gp if rest is not None else np.zeros_like(g)
    if rest is not None:
        gp = np.append(gp, np.linalg.norm(g_perp))
        evals = np.append(evals, rest)

    def norm_w(lam: float) -> float:
        return float(np.sqrt(np.sum((gp / (2 * evals + lam)) ** 2)))

    if norm_w(0.0) <= radius:
        lam = 0.0
    else:
        hi = max(1.0, float(np.linalg.norm(gp)) / radius)
        while norm_w(hi) > radius:
            hi *= 2.0
        lam = brentq(lambda t: norm_w(t) - radius, 0.0, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    wp = gp / (2 * evals + lam)
    value = float(gp @ wp - np.sum(evals * wp * wp))
    if rest is None:
        return value, evecs @ wp
    return value, evecs @ wp[:-1] + g_perp / (2 * rest + lam)


def _layer_vector(sizes: Sequence[int], values: Sequence[float]) -> np.ndarray:
    return np.repeat(np.asarray(values, dtype=np.float64), sizes)


class GameOracle:
    """Worker ``k`` of :class:`QuadraticGame`: ``V_k(x) = M_k x - b_k + noise`` with
    ``M_k = mu I + U C U^T`` in factored form (``O(d rank)`` per call).

    The noise is Gaussian with per-coordinate standard deviations ``sigma``, multiplied by
    ``||A_k(x)|| / ||A_k(x0)||`` in the relative-noise model (it vanishes where the worker's
    own operator does).
    """

    def __init__(self, mu: float, u: np.ndarray, c: np.ndarray, b: np.ndarray,
                 sigma: np.ndarray, relative: bool, x0: np.ndarray) -> None:
        self.mu, self.u, self.c, self.b, self.sigma = mu, u, c, b, sigma
        self._ut = np.ascontiguousarray(u.T)  # rows of U^T: both products read it in order
        self.relative = bool(relative)
        self._scale0 = float(np.linalg.norm(self.mean_part(x0))) if relative else 1.0

    def mean_part(self, x: np.ndarray) -> np.ndarray:
        """The noiseless ``A_k(x) = M_k x - b_k``."""
        val = (self.c @ (self._ut @ x)) @ self._ut
        val += self.mu * x
        val -= self.b
        return val

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        val = self.mean_part(x)
        z = rng.standard_normal(val.size)
        z *= self.sigma
        if self.relative:
            z *= np.linalg.norm(val) / self._scale0
        z += val
        return z


class QuadraticGame:
    """P1: heterogeneous distributed strongly monotone affine game with multi-scale layers.

    Worker ``k`` holds ``A_k(x) = M_k x - b_k`` with ``M_k = mu I + G_k diag(lam_k) G_k^T +
    beta (H_k E_k^T - E_k H_k^T)`` (orthonormal ``G_k`` and ``[E_k, H_k]`` of ``rank`` columns
    each; stored in factored form, so a worker's oracle costs ``O(d rank)``,
    ``lam_k ~ U(0, 1)``), so ``A = mean_k A_k`` is ``mu``-strongly monotone with a bilinear
    (skew) part. The oracle adds Gaussian noise with standard deviation ``noise_scales[l]`` on
    layer ``l`` (``noise="absolute"``) or ``noise_scales[l] * ||A_k(x)|| / ||A_k(x0)||``
    (``noise="relative"``, vanishing at the solution).

    With ``noise="absolute"`` the workers are heterogeneous at the solution:
    ``b_k = b + h_k`` with ``sum_k h_k = 0`` and ``h_k`` of scale ``heterogeneity *
    layer_scales[l]``. With ``noise="relative"`` every worker shares the solution
    (``b_k = M_k x*``) so that all oracle noise, and the quantization noise, vanish at ``x*``.

    Parameters
    ----------
    sizes : sequence of int
        Layer sizes.
    noise_scales : sequence of float
        Noise standard deviation of each layer.
    layer_scales : sequence of float, optional
        Scale of ``b`` and of the heterogeneity per layer (default: ``noise_scales``).
    n_workers : int
    noise : {"absolute", "relative"}
    mu, beta : float
        Strong monotonicity and bilinear strength.
    rank : int
        Rank of each worker's PSD and skew parts.
    heterogeneity : float
    gap_radius : float, optional
        Radius of the ball (centred at ``x0 = 0``) of the restricted gap; default
        ``2 ||x*||``.
    seed : int
    """

    def __init__(self, sizes: Sequence[int] = (1024, 128, 16),
                 noise_scales: Sequence[float] = (0.02, 0.3, 3.0),
                 layer_scales: Sequence[float] | None = None, n_workers: int = 4,
                 noise: str = "absolute", mu: float = 1.0, beta: float = 1.0, rank: int = 8,
                 heterogeneity: float = 1.0, gap_radius: float | None = None, seed: int = 0):
        sizes = tuple(int(s) for s in sizes)
        if len(sizes) == 0 or any(s < 1 for s in sizes):
            raise ValueError(f"sizes must be positive integers, got {sizes}")
        if len(noise_scales) != len(sizes):
            raise ValueError(f"{len(noise_scales)} noise scales for {len(sizes)} layers")
        if any(not np.isfinite(s) or s < 0 for s in noise_scales):
            raise ValueError("noise scales must be finite and >= 0")
        layer_scales = noise_scales if layer_scales is None else layer_scales
        if len(layer_scales) != len(sizes):
            raise ValueError(f"{len(layer_scales)} layer scales for {len(sizes)} layers")
        if noise not in ("absolute", "relative"):
            raise ValueError(f"noise must be 'absolute' or 'relative', got {noise!r}")
        if int(n_workers) != n_workers or n_workers < 1:
            raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
        if not mu > 0:
            raise ValueError(f"mu must be > 0, got {mu}")
        d = sum(sizes)
        if int(rank) != rank or not 1 <= rank <= d:
            raise ValueError(f"rank must be an integer in [1, {d}], got {rank!r}")
        self.sizes, self.d, self.n_workers, self.noise = sizes, d, int(n_workers), noise
        self.sigma = _layer_vector(sizes, noise_scales)
        rng = np.random.default_rng(seed)
        # M_k = mu I + U_k C_k U_k^T with U_k = [G, E, H] (d x 3r) and
        # C_k = blockdiag(diag(lam), [[0, -beta I], [beta I, 0]]) (PSD part + skew part)
        self.mu = float(mu)
        us, cs = [], []
        for _ in range(self.n_workers):
            g, _ = np.linalg.qr(rng.standard_normal((d, rank)))
            h, _ = np.linalg.qr(rng.standard_normal((d, 2 * rank)))
            lam = rng.uniform(0.0, 1.0, rank)
            core = np.zeros((3 * rank, 3 * rank))
            core[:rank, :rank] = np.diag(lam)
            core[rank:2 * rank, 2 * rank:] = -beta * np.eye(rank)
            core[2 * rank:, rank:2 * rank] = beta * np.eye(rank)
            us.append(np.concatenate([g, h], axis=1))
            cs.append(core)
        self.U_k, self.C_k = np.stack(us), np.stack(cs)
        # the mean operator in the same factored form: M = mu I + U C U^T
        self._U = np.concatenate(us, axis=1)
        self._C = np.zeros((self._U.shape[1],) * 2)
        for k, c in enumerate(cs):
            sl = slice(3 * rank * k, 3 * rank * (k + 1))
            self._C[sl, sl] = c / self.n_workers
        scale = _layer_vector(sizes, layer_scales)
        b = rng.standard_normal(d) * scale
        self.x_star = self._solve_mean(b)
        if noise == "absolute":
            h = rng.standard_normal((self.n_workers, d)) * scale * heterogeneity
            h -= h.mean(axis=0)
            self.b_k = b + h
        else:
            self.b_k = np.stack([self._mk_dot(k, self.x_star) for k in range(self.n_workers)])
        self.b = self.b_k.mean(axis=0)
        self.x0 = np.zeros(d)
        self.gap_center = self.x0
        self.gap_radius = (2.0 * float(np.linalg.norm(self.x_star)) if gap_radius is None
                           else float(gap_radius))
        self._eig: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def layers(self) -> tuple[int, ...]:
        return self.sizes

    def _solve_mean(self, b: np.ndarray) -> np.ndarray:
        """``M^{-1} b`` in closed form: with ``q = U^T x``, ``(mu I + U^T U C) q = U^T b`` and
        ``x = (b - U C q) / mu``."""
        U, C = self._U, self._C
        q = np.linalg.solve(self.mu * np.eye(C.shape[0]) + U.T @ U @ C, U.T @ b)
        return (b - U @ (C @ q)) / self.mu

    def _mean_dot(self, x: np.ndarray, transpose: bool = False) -> np.ndarray:
        C = self._C.T if transpose else self._C
        return self.mu * x + self._U @ (C @ (self._U.T @ x))

    def mean_matrix(self) -> np.ndarray:
        """Dense ``M = mean_k M_k`` (for checks)."""
        return self.mu * np.eye(self.d) + self._U @ self._C @ self._U.T

    def _mk_dot(self, k: int, x: np.ndarray) -> np.ndarray:
        u = self.U_k[k]
        return self.mu * x + u @ (self.C_k[k] @ (u.T @ x))

    def worker_matrix(self, k: int) -> np.ndarray:
        """Dense ``M_k`` (for checks)."""
        u = self.U_k[k]
        return self.mu * np.eye(self.d) + u @ self.C_k[k] @ u.T

    def operator(self, x: np.ndarray) -> np.ndarray:
        """The exact mean operator ``A(x) = M x - b``."""
        return self._mean_dot(np.asarray(x, dtype=np.float64)) - self.b

    def worker(self, k: int) -> GameOracle:
        """Worker ``k``'s stochastic oracle (holds only worker ``k``'s factors)."""
        if not 0 <= int(k) < self.n_workers:
            raise ValueError(f"no worker {k!r} (n_workers = {self.n_workers})")
        k = int(k)
        return GameOracle(self.mu, self.U_k[k], self.C_k[k], self.b_k[k], self.sigma,
                          self.noise == "relative", self.x0)

    def operators(self) -> list[GameOracle]:
        """The workers' stochastic oracles ``V_k(x, rng)``."""
        return [self.worker(k) for k in range(self.n_workers)]

    def reduced_monitor(self):
        """Metrics from the workers' local sums: the residual ``||A(x)||`` from the reduced
        ``sum_k A_k(x)``; the restricted gap and the distance to ``x*`` from the closed-form
        ground truth this generator knows."""
        from sparsecert.distributed.qoda.algorithm import ReducedMonitor

        def finish(total: np.ndarray, x: np.ndarray) -> dict[str, float]:
            return {"residual": float(np.linalg.norm(total / self.n_workers)),
                    "gap": self.restricted_gap(x), "dist": self.distance(x)}

        return ReducedMonitor(local=lambda op, x: op.mean_part(x), finish=finish)

    def residual(self, x: np.ndarray) -> float:
        """``||A(x)||``."""
        return float(np.linalg.norm(self.operator(x)))

    def distance(self, x: np.ndarray) -> float:
        return float(np.linalg.norm(x - self.x_star))

    def restricted_gap(self, x: np.ndarray) -> float:
        """``max_{||z - c|| <= R} <A(z), x - z>`` (exact; ``c = x0``, ``R = gap_radius``).

        With ``w = z - c``, ``e = x - c`` and ``a0 = A(c)`` the objective is
        ``(M^T e - a0)^T w - w^T S w + a0^T e`` with ``S = (M + M^T)/2``, a concave
        trust-region problem.
        """
        if self._eig is None:
            # S = mu I + W W^T (the skew parts cancel): eigenvectors from a thin SVD of W
            csym = 0.5 * (self._C + self._C.T)
            ev, vec = np.linalg.eigh(csym)
            keep = ev > 1e-14 * max(1.0, float(ev.max(initial=0.0)))
            w = self._U @ (vec[:, keep] * np.sqrt(ev[keep]))
            q, sv, _ = np.linalg.svd(w, full_matrices=False)
            self._eig = (self.mu + sv**2, q)
        e = np.asarray(x, dtype=np.float64) - self.gap_center
        a0 = self.operator(self.gap_center)
        g = self._mean_dot(e, transpose=True) - a0
        val, _ = trust_region_max(g, *self._eig, self.gap_radius, rest=self.mu)
        return val + float(a0 @ e)

    def monitor(self, x: np.ndarray) -> dict[str, float]:
        return {"residual": self.residual(x), "gap": self.restricted_gap(x),
                "dist": self.distance(x)}


class RobustLeastSquares:
    """P2: robust least squares as a distributed convex-concave saddle point.

    ``f(x, y) = 1/2 ||A x - c||^2 + y^T (A x - c) + mu/2 ||x||^2`` over ``x in R^n`` and
    ``||y|| <= rho``; rows (and the matching entries of ``y``) are split evenly over the
    workers. The VI operator is ``F(x, y) = (A^T (A x - c + y) + mu x, -(A x - c))``;
    worker ``k`` holds ``F_k`` built from its rows, scaled by ``K`` so that ``F = mean_k F_k``.
    Layers: ``[n, m]`` (the x block and the y block).

    The solution solves ``min_x 1/2||r||^2 + rho ||r|| + mu/2 ||x||^2`` (``r = Ax - c``):
    ``x = (alpha A^T A + mu I)^{-1} alpha A^T c`` with ``alpha = 1 + rho/||r||``, a scalar
    fixed point found by a bracketing root search; ``y* = rho r / ||r||``.
    """

    def __init__(self, n_features: int = 32, rows_per_worker: int = 32, n_workers: int = 4,
                 rho: float = 1.0, mu: float = 0.1, noise_x: float = 0.1, noise_y: float = 0.01,
                 seed: int = 0) -> None:
        for name, val in (("n_features", n_features), ("rows_per_worker", rows_per_worker),
                          ("n_workers", n_workers)):
            if int(val) != val or val < 1:
                raise ValueError(f"{name} must be a positive integer, got {val!r}")
        if not rho > 0 or not mu > 0:
            raise ValueError("rho and mu must be > 0")
        rng = np.random.default_rng(seed)
        n, mk, K = int(n_features), int(rows_per_worker), int(n_workers)
        m = mk * K
        # heterogeneous workers: each has its own feature scaling
        A = np.concatenate([rng.standard_normal((mk, n)) * rng.uniform(0.5, 1.5, n)
                            for _ in range(K)]) / np.sqrt(m)
        x_true = rng.standard_normal(n)
        c = A @ x_true + 0.5 * rng.standard_normal(m) / np.sqrt(m)
        self.A, self.c, self.rho, self.mu = A, c, float(rho), float(mu)
        self.n, self.m, self.n_workers, self.rows_per_worker = n, m, K, mk
        self.d = n + m
        self.sigma = np.concatenate([np.full(n, noise_x), np.full(m, noise_y)])
        self.x_star, self.y_star = self._solve()
        self.z_star = np.concatenate([self.x_star, self.y_star])
        self.x0 = np.zeros(self.d)

    @property
    def layers(self) -> tuple[int, int]:
        return (self.n, self.m)

    def _solve(self) -> tuple[np.ndarray, np.ndarray]:
        A, c, rho, mu = self.A, self.c, self.rho, self.mu
        evals, evecs = np.linalg.eigh(A.T @ A)
        atc = evecs.T @ (A.T @ c)

        def x_of(alpha: float) -> np.ndarray:
            return evecs @ (alpha * atc / (alpha * evals + mu))

        def h(alpha: float) -> float:
            return alpha - 1.0 - rho / np.linalg.norm(A @ x_of(alpha) - c)

        hi = 2.0
        while h(hi) < 0:
            hi *= 2.0
            if hi > 1e12:
                raise RuntimeError("robust least squares: the residual vanishes (rho too large)")
        alpha = brentq(h, 1.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
        x = x_of(alpha)
        r = A @ x - c
        return x, rho * r / np.linalg.norm(r)

    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return z[: self.n], z[self.n:]

    def operator(self, z: np.ndarray) -> np.ndarray:
        x, y = self.split(z)
        r = self.A @ x - self.c
        return np.concatenate([self.A.T @ (r + y) + self.mu * x, -r])

    def operators(self) -> list:
        def make(k: int):
            rows = slice(k * self.rows_per_worker, (k + 1) * self.rows_per_worker)
            Ak, ck, K, n = self.A[rows], self.c[rows], self.n_workers, self.n

            def v(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
                x, yk = z[:n], z[n:][rows]
                r = Ak @ x - ck
                out = np.zeros(self.d)
                out[:n] = K * (Ak.T @ (r + yk)) + self.mu * x
                out[n:][rows] = -K * r
                return out + rng.standard_normal(self.d) * self.sigma
            return v
        return [make(k) for k in range(self.n_workers)]

    def projection(self, z: np.ndarray) -> np.ndarray:
        """Projection onto ``R^n x {||y|| <= rho}``."""
        out = np.array(z, dtype=np.float64)
        ny = np.linalg.norm(out[self.n:])
        if ny > self.rho:
            out[self.n:] *= self.rho / ny
        return out

    def residual(self, z: np.ndarray) -> float:
        """Natural residual ``||z - P(z - F(z))||``."""
        return float(np.linalg.norm(z - self.projection(z - self.operator(z))))

    def distance(self, z: np.ndarray) -> float:
        return float(np.linalg.norm(z - self.z_star))

    def duality_gap(self, z: np.ndarray) -> float:
        """``max_{||y||<=rho} f(x, y) - min_x f(x, y_bar)`` at ``z = (x, y_bar)`` (exact)."""
        x, y = self.split(self.projection(z))
        r = self.A @ x - self.c
        primal = 0.5 * r @ r + self.rho * np.linalg.norm(r) + 0.5 * self.mu * x @ x
        xm = np.linalg.solve(self.A.T @ self.A + self.mu * np.eye(self.n), self.A.T @ (self.c - y))
        rm = self.A @ xm - self.c
        dual = 0.5 * rm @ rm + y @ rm + 0.5 * self.mu * xm @ xm
        return float(primal - dual)

    def monitor(self, z: np.ndarray) -> dict[str, float]:
        return {"residual": self.residual(z), "gap": self.duality_gap(z),
                "dist": self.distance(z)}
