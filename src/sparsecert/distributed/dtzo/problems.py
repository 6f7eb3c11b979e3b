r"""Trilevel test problems with known solutions for the DTZO-style solvers.

Both problems implement :class:`sparsecert.distributed.dtzo.trilevel.TrilevelProblem` (batched
values and gradients of every worker's level objectives) and carry an *oracle*: the exact
trilevel solution and the true optimality residuals, used only to judge the solvers (never by them).

P1: quadratic trilevel problem
------------------------------
Worker ``j`` of ``N`` holds ``f_{l,j}(z) = 1/2 ||S_{l,j} (z - a_{l,j})||^2`` for ``l = 1, 2, 3``
with ``z = (x1, x2, x3)``. Write ``f_l = sum_j f_{l,j} = 1/2 z^T H_l z - g_l^T z + const`` with
``H_l = sum_j S_{l,j}^T S_{l,j}`` and ``g_l = sum_j S_{l,j}^T S_{l,j} a_{l,j}``; blocks of
``H_l`` are written ``H_l[a, b]`` for ``a, b in {1, 2, 3}`` (and ``{12}`` for ``(x1, x2)``).

*Level 3.* ``f_3`` is strongly convex in ``x3`` (``H_3[3,3] > 0``); setting its ``x3``-gradient to
zero gives the affine map ::

    x3*(x12) = P x12 + p,   P = -H_3[3,3]^{-1} H_3[3,12],   p = H_3[3,3]^{-1} g_3[3].

*Level 2.* Substituting, ``z = L2 x12 + l2`` with ``L2 = [I; P]`` and ``l2 = (0, p)``; the reduced
level-2 objective ``phi_2(x12) = f_2(L2 x12 + l2)`` is quadratic with Hessian
``M = L2^T H_2 L2`` and linear term ``m = L2^T (g_2 - H_2 l2)``. ``H_2`` positive definite and
``L2`` of full column rank make ``M[2,2] > 0`` and ::

    x2*(x1) = R x1 + s,   R = -M[2,2]^{-1} M[2,1],   s = M[2,2]^{-1} m[2].

*Level 1.* Then ``z = L1 x1 + l1`` with ``L1 = L2 [I; R]``, ``l1 = L2 (0, s) + l2``, and ::

    x1* = (L1^T H_1 L1)^{-1} L1^T (g_1 - H_1 l1),   x2* = R x1* + s,   x3* = P (x1*, x2*) + p.

The hypergradient of ``V(x1) = f_1(L1 x1 + l1)`` is ``L1^T (H_1 (L1 x1 + l1) - g_1)``; the true
level-3 residual is ``||grad_{x3} f_3(z)||`` and the true level-2 residual is the norm of the
``x2``-gradient of ``phi_2`` (total derivative through ``x3*``) at ``(x1, x2)``.

P2: robust ridge hyperparameter tuning
--------------------------------------
Standardised data ``(X, y)`` of scikit-learn's diabetes set, split into a training part
``(X_t, y_t)`` and a validation part ``(X_v, y_v)``, both sharded over the workers. Variables:
``x1 = theta / s`` with ``theta = log lambda`` and a fixed scale ``s`` (1), ``x2 = w`` (ridge
weights, p), ``x3 = delta`` (an adversarial perturbation of the weights, p). Per worker
(sums over its rows)::

    f_{1,j} = 1/2 ||y_{v,j} - X_{v,j} w||^2                              (validation error)
    f_{2,j} = 1/2 ||y_{t,j} - X_{t,j}(w + delta)||^2 + e^theta/(2N) ||w||^2   (robust ridge)
    f_{3,j} = -1/2 ||y_{t,j} - X_{t,j}(w + delta)||^2 + gamma/(2N) ||delta||^2 (adversary)

Level 3 maximises the training loss of the perturbed weights minus a strongly concave penalty:
with ``G = X_t^T X_t`` and ``gamma > lambda_max(G)``, ``f_3`` is strongly convex in ``delta`` and,
with ``e = y_t - X_t w``, ::

    delta*(w) = -(gamma I - G)^{-1} X_t^T e,    y_t - X_t (w + delta*) = M e,
    M = I + X_t (gamma I - G)^{-1} X_t^T   (symmetric positive definite).

Level 2 then minimises ``1/2 ||M (y_t - X_t w)||^2 + lambda/2 ||w||^2``, so ::

    w*(lambda) = (X_t^T M^2 X_t + lambda I)^{-1} X_t^T M^2 y_t.

Level 1 minimises the one-dimensional ``V(theta) = 1/2 ||y_v - X_v w*(e^theta)||^2``: the oracle
is a bounded scalar minimisation of this closed form (checked against a grid). The training
size is chosen small (``n_train = 30``) so that regularisation pays off and ``theta*`` is
interior; :func:`make_p2` reports the margin to the search interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from sparsecert.distributed.dtzo.trilevel import BoundWorker

__all__ = ["SolvedTrilevel", "QuadraticTrilevel", "RobustRidgeTrilevel", "make_p1", "make_p2"]


def _check_Z(Z: np.ndarray, d: int) -> np.ndarray:
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[1] != d:
        raise ValueError(f"expected points of shape (m, {d}), got {Z.shape}")
    return Z


def _check_level_worker(level: int, worker: int, n_workers: int) -> None:
    if level not in (1, 2, 3):
        raise ValueError(f"level must be 1, 2 or 3, got {level!r}")
    if not 0 <= worker < n_workers:
        raise ValueError(f"worker must be in [0, {n_workers}), got {worker!r}")


def check_instance(n_workers: int, dims: tuple[int, int, int], heterogeneity: float) -> None:
    """The arguments every random instance maker takes (``ValueError`` naming the bad one)."""
    if isinstance(n_workers, bool) or int(n_workers) != n_workers or n_workers < 1:
        raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
    if len(dims) != 3 or min(dims) < 1 or any(int(v) != v for v in dims):
        raise ValueError(f"dims must be three positive integers, got {dims}")
    if not (np.isfinite(heterogeneity) and heterogeneity >= 0):
        raise ValueError(f"heterogeneity must be >= 0, got {heterogeneity!r}")


def residual_report(r3: np.ndarray, r2: np.ndarray, hypergrad: float) -> dict[str, float]:
    """What :meth:`SolvedTrilevel.residuals` returns: the norms of the true level-3 and
    level-2 residuals and the hypergradient's norm."""
    return {"res3": float(np.linalg.norm(r3)), "res2": float(np.linalg.norm(r2)),
            "hypergrad": float(hypergrad)}


def relative_errors(z: np.ndarray, d1: int, x1_star: np.ndarray,
                    z_star: np.ndarray) -> dict[str, float]:
    """The relative errors of ``x1 = z[:d1]`` and of ``z`` against a known solution."""
    return {"err_x1": float(np.linalg.norm(z[:d1] - x1_star)
                            / max(np.linalg.norm(x1_star), 1e-12)),
            "err_z": float(np.linalg.norm(z - z_star) / max(np.linalg.norm(z_star), 1e-12))}


class SolvedTrilevel:
    """What the test problems with a known solution share: the protocol's gradient flag, worker
    views and start, the exact level-2 map ``x2*(x1) = R x1 + s`` and the oracle diagnostics.

    A subclass sets ``dims``, ``n_workers``, ``z0``, ``R``, ``s``, ``x1_star``, ``z_star`` and
    defines ``residuals(z)``.
    """

    dims: tuple[int, int, int]
    n_workers: int
    z0: np.ndarray
    R: np.ndarray
    s: np.ndarray
    x1_star: np.ndarray
    z_star: np.ndarray

    def has_gradient(self, level: int) -> bool:
        return True

    def worker(self, j: int) -> BoundWorker:
        """Worker ``j``'s view (this test problem holds every worker's data)."""
        _check_level_worker(1, j, self.n_workers)
        return BoundWorker(self, j)

    def initial_point(self) -> np.ndarray:
        return self.z0.copy()

    def x2_map(self, x1: np.ndarray) -> np.ndarray:
        """Exact level-2 solution ``x2*(x1)``."""
        return self.R @ x1 + self.s

    def residuals(self, z: np.ndarray) -> dict[str, float]:
        """True level-3 and level-2 residuals and the hypergradient norm at ``z``."""
        raise NotImplementedError  # pragma: no cover - interface

    def metrics(self, z: np.ndarray) -> dict[str, float]:
        """Oracle diagnostics: relative error of ``x1`` and of ``z``, residuals, hypergradient."""
        z = np.asarray(z, dtype=np.float64)
        return {**relative_errors(z, self.dims[0], self.x1_star, self.z_star),
                **self.residuals(z)}


@dataclass
class QuadraticTrilevel(SolvedTrilevel):
    """P1: ``f_{l,j}(z) = 1/2 ||S[l][j] (z - a[l][j])||^2`` (see the module docstring).

    Parameters
    ----------
    dims : tuple of int
    S : list of three arrays of shape (N, r, d)
    a : list of three arrays of shape (N, d)
    z0 : array of shape (d,)
    """

    dims: tuple[int, int, int]
    S: list[np.ndarray]
    a: list[np.ndarray]
    z0: np.ndarray

    def __post_init__(self) -> None:
        self.d = int(sum(self.dims))
        self.n_workers = int(self.S[0].shape[0])
        for lev in range(3):
            if self.S[lev].ndim != 3 or self.S[lev].shape[0] != self.n_workers \
                    or self.S[lev].shape[2] != self.d:
                raise ValueError(f"S[{lev}] must have shape (N, r, {self.d})")
            if self.a[lev].shape != (self.n_workers, self.d):
                raise ValueError(f"a[{lev}] must have shape ({self.n_workers}, {self.d})")
        self.H = [np.einsum("jrd,jre->de", S, S) for S in self.S]
        self.g = [np.einsum("jrd,jre,je->d", S, S, a) for S, a in zip(self.S, self.a, strict=True)]
        self._solve()

    # -- protocol ------------------------------------------------------------------------------
    def value(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        _check_level_worker(level, worker, self.n_workers)
        Z = _check_Z(Z, self.d)
        R = (Z - self.a[level - 1][worker]) @ self.S[level - 1][worker].T
        return 0.5 * np.einsum("mr,mr->m", R, R)

    def gradient(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        _check_level_worker(level, worker, self.n_workers)
        Z = _check_Z(Z, self.d)
        S = self.S[level - 1][worker]
        return (Z - self.a[level - 1][worker]) @ (S.T @ S)

    # -- oracle --------------------------------------------------------------------------------
    def _solve(self) -> None:
        d1, d2, d3 = self.dims
        d12 = d1 + d2
        H1, H2, H3 = self.H
        g1, g2, g3 = self.g
        H33 = H3[d12:, d12:]
        self.P = -np.linalg.solve(H33, H3[d12:, :d12])
        self.p = np.linalg.solve(H33, g3[d12:])
        L2 = np.vstack([np.eye(d12), self.P])
        l2 = np.concatenate([np.zeros(d12), self.p])
        M = L2.T @ H2 @ L2
        m = L2.T @ (g2 - H2 @ l2)
        self.R = -np.linalg.solve(M[d1:, d1:], M[d1:, :d1])
        self.s = np.linalg.solve(M[d1:, d1:], m[d1:])
        self._L2, self._l2, self._M, self._m = L2, l2, M, m
        L1 = L2 @ np.vstack([np.eye(d1), self.R])
        l1 = L2 @ np.concatenate([np.zeros(d1), self.s]) + l2
        self._L1, self._l1 = L1, l1
        self.x1_star = np.linalg.solve(L1.T @ H1 @ L1, L1.T @ (g1 - H1 @ l1))
        self.z_star = L1 @ self.x1_star + l1

    def x3_map(self, x12: np.ndarray) -> np.ndarray:
        """Exact level-3 solution ``x3*(x1, x2)``."""
        return self.P @ x12 + self.p

    def residuals(self, z: np.ndarray) -> dict[str, float]:
        """True level-3 and level-2 residuals and the hypergradient norm at ``z``."""
        d1, d2, _ = self.dims
        d12 = d1 + d2
        z = np.asarray(z, dtype=np.float64)
        r3 = (self.H[2] @ z - self.g[2])[d12:]
        x12 = z[:d12]
        r2 = (self._M @ x12 - self._m)[d1:]
        hyper = self._L1.T @ (self.H[0] @ (self._L1 @ z[:d1] + self._l1) - self.g[0])
        return residual_report(r3, r2, np.linalg.norm(hyper))


def make_p1(n_workers: int = 3, dims: tuple[int, int, int] = (2, 2, 2), seed: int = 0,
            heterogeneity: float = 1.0) -> QuadraticTrilevel:
    """A random instance of P1 (well conditioned: ``S`` near a scaled identity plus noise).

    Parameters
    ----------
    n_workers : int
    dims : (d1, d2, d3)
    seed : int
    heterogeneity : float
        Spread of the workers' centres ``a_{l,j}`` (>= 0).
    """
    check_instance(n_workers, dims, heterogeneity)
    rng = np.random.default_rng(seed)
    d = int(sum(dims))
    scale = 1.0 / np.sqrt(n_workers)
    S, a = [], []
    for _ in range(3):
        S.append(scale * (np.eye(d)[None] + 0.4 * rng.standard_normal((n_workers, d, d))))
        a.append(rng.standard_normal(d)[None] + heterogeneity * rng.standard_normal((n_workers, d)))
    return QuadraticTrilevel(tuple(int(v) for v in dims), S, a, np.zeros(d))


class RobustRidgeTrilevel:
    """P2: robust ridge hyperparameter tuning (see the module docstring).

    Parameters
    ----------
    X_train, y_train, X_val, y_val : arrays
        Standardised data (rows are samples).
    n_workers : int
        Rows are dealt to workers round robin.
    gamma_factor : float
        ``gamma = gamma_factor * lambda_max(X_train^T X_train)`` (> 1 for strong concavity).
    theta_bounds : (float, float)
        Interval of ``log lambda`` searched by the oracle.
    theta0 : float
        Starting ``log lambda`` of the solvers (weights and perturbation start at zero).
    theta_scale : float
        The level-1 variable is ``x1 = theta / theta_scale`` (a reparametrisation that changes
        the Euclidean geometry of the consensus and penalty steps). Reported errors are in
        ``theta = log lambda`` units.
    """

    def __init__(self, X_train: np.ndarray, y_train: np.ndarray, X_val: np.ndarray,
                 y_val: np.ndarray, n_workers: int = 3, gamma_factor: float = 2.0,
                 theta_bounds: tuple[float, float] = (-4.0, 8.0), theta0: float = 6.0,
                 theta_scale: float = 1.0) -> None:
        arrs = [np.asarray(v, dtype=np.float64) for v in (X_train, y_train, X_val, y_val)]
        Xt, yt, Xv, yv = arrs
        if Xt.ndim != 2 or Xv.ndim != 2 or Xt.shape[1] != Xv.shape[1]:
            raise ValueError("X_train and X_val must be 2-D with the same number of columns")
        if yt.shape != (Xt.shape[0],) or yv.shape != (Xv.shape[0],):
            raise ValueError("y_train / y_val must be 1-D and match the rows of X")
        if not all(np.all(np.isfinite(v)) for v in arrs):
            raise ValueError("data contain NaN or inf")
        if int(n_workers) != n_workers or not 1 <= n_workers <= min(len(yt), len(yv)):
            raise ValueError(f"n_workers must be an integer in [1, n_samples], got {n_workers!r}")
        if not gamma_factor > 1.0:
            raise ValueError(f"gamma_factor must exceed 1 (strong concavity), got {gamma_factor}")
        self.n_workers = int(n_workers)
        self.p = Xt.shape[1]
        self.dims = (1, self.p, self.p)
        self.d = 1 + 2 * self.p
        self.Xt, self.yt, self.Xv, self.yv = Xt, yt, Xv, yv
        G = Xt.T @ Xt
        self.gamma = float(gamma_factor * np.linalg.eigvalsh(G)[-1])
        self.theta_bounds = (float(theta_bounds[0]), float(theta_bounds[1]))
        if not np.isfinite(theta0):
            raise ValueError(f"theta0 must be finite, got {theta0!r}")
        self.theta0 = float(theta0)
        if not (np.isfinite(theta_scale) and theta_scale > 0):
            raise ValueError(f"theta_scale must be positive, got {theta_scale!r}")
        self.theta_scale = float(theta_scale)
        self._tr = [np.arange(j, len(yt), self.n_workers) for j in range(self.n_workers)]
        self._va = [np.arange(j, len(yv), self.n_workers) for j in range(self.n_workers)]
        Minv = np.linalg.inv(self.gamma * np.eye(self.p) - G)
        self._Minv = Minv
        self.M = np.eye(len(yt)) + Xt @ Minv @ Xt.T
        M2 = self.M @ self.M
        self._A = Xt.T @ M2 @ Xt
        self._c = Xt.T @ M2 @ yt
        self._solve_oracle()

    # -- protocol ------------------------------------------------------------------------------
    def _split(self, Z: np.ndarray):
        Z = _check_Z(Z, self.d)
        return self.theta_scale * Z[:, 0], Z[:, 1:1 + self.p], Z[:, 1 + self.p:]

    def value(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        _check_level_worker(level, worker, self.n_workers)
        th, w, dl = self._split(Z)
        if level == 1:
            i = self._va[worker]
            e = self.yv[i][None, :] - w @ self.Xv[i].T
            return 0.5 * np.einsum("mn,mn->m", e, e)
        i = self._tr[worker]
        e = self.yt[i][None, :] - (w + dl) @ self.Xt[i].T
        loss = 0.5 * np.einsum("mn,mn->m", e, e)
        if level == 2:
            return loss + np.exp(th) / (2 * self.n_workers) * np.einsum("mp,mp->m", w, w)
        return -loss + self.gamma / (2 * self.n_workers) * np.einsum("mp,mp->m", dl, dl)

    def has_gradient(self, level: int) -> bool:
        return True

    def gradient(self, level: int, worker: int, Z: np.ndarray) -> np.ndarray:
        _check_level_worker(level, worker, self.n_workers)
        th, w, dl = self._split(Z)
        out = np.zeros((Z.shape[0], self.d))
        N = self.n_workers
        if level == 1:
            i = self._va[worker]
            e = self.yv[i][None, :] - w @ self.Xv[i].T
            out[:, 1:1 + self.p] = -e @ self.Xv[i]
            return out
        i = self._tr[worker]
        e = self.yt[i][None, :] - (w + dl) @ self.Xt[i].T
        gl = -e @ self.Xt[i]
        if level == 2:
            out[:, 0] = self.theta_scale * np.exp(th) / (2 * N) * np.einsum("mp,mp->m", w, w)
            out[:, 1:1 + self.p] = gl + np.exp(th)[:, None] / N * w
            out[:, 1 + self.p:] = gl
        else:
            out[:, 1:1 + self.p] = -gl
            out[:, 1 + self.p:] = -gl + self.gamma / N * dl
        return out

    def worker(self, j: int) -> BoundWorker:
        """Worker ``j``'s view (this test problem holds every worker's data)."""
        _check_level_worker(1, j, self.n_workers)
        return BoundWorker(self, j)

    def initial_point(self) -> np.ndarray:
        z0 = np.zeros(self.d)
        z0[0] = self.theta0 / self.theta_scale
        return z0

    # -- oracle --------------------------------------------------------------------------------
    def w_star(self, theta: float) -> np.ndarray:
        """Closed-form level-2 solution ``w*(e^theta)`` (level 3 eliminated)."""
        return np.linalg.solve(self._A + np.exp(theta) * np.eye(self.p), self._c)

    def delta_star(self, w: np.ndarray) -> np.ndarray:
        """Closed-form level-3 solution ``delta*(w)``."""
        return -self._Minv @ (self.Xt.T @ (self.yt - self.Xt @ w))

    def val_error(self, theta: float) -> float:
        """``V(theta)``: validation error of ``w*(e^theta)``."""
        e = self.yv - self.Xv @ self.w_star(theta)
        return 0.5 * float(e @ e)

    def _solve_oracle(self) -> None:
        lo, hi = self.theta_bounds
        grid = np.linspace(lo, hi, 241)
        vals = np.array([self.val_error(t) for t in grid])
        k = int(np.argmin(vals))
        a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
        res = minimize_scalar(self.val_error, bounds=(a, b), method="bounded",
                              options={"xatol": 1e-10})
        self.theta_star = float(res.x)
        self.V_star = float(res.fun)
        self.V_bounds = (float(vals[0]), float(vals[-1]))
        w = self.w_star(self.theta_star)
        self.z_star = np.concatenate([[self.theta_star / self.theta_scale], w, self.delta_star(w)])

    def residuals(self, z: np.ndarray) -> dict[str, float]:
        """True residuals: ``||grad_delta f_3||``, ``||d phi_2 / d w||`` and ``|V'(theta)|``."""
        th, w, dl = self.theta_scale * z[0], z[1:1 + self.p], z[1 + self.p:]
        r3 = self.Xt.T @ (self.yt - self.Xt @ (w + dl)) + self.gamma * dl
        r2 = self._A @ w - self._c + np.exp(th) * w
        h = 1e-5
        hyper = (self.val_error(th + h) - self.val_error(th - h)) / (2 * h)
        return residual_report(r3, r2, abs(hyper))

    def metrics(self, z: np.ndarray) -> dict[str, float]:
        """Oracle diagnostics, including the validation error of the current ``w`` relative to
        the oracle's (``val_rel = V(w) / V* - 1``)."""
        z = np.asarray(z, dtype=np.float64)
        e = self.yv - self.Xv @ z[1:1 + self.p]
        th = self.theta_scale * z[0]
        out = {"theta": th, "err_theta": float(abs(th - self.theta_star)),
               "err_x1": float(abs(th - self.theta_star) / max(abs(self.theta_star), 1e-12)),
               "val_rel": float(0.5 * e @ e / self.V_star - 1.0),
               "val_rel_wstar": float(self.val_error(th) / self.V_star - 1.0)}
        out.update(self.residuals(z))
        return out


def make_p2(n_train: int = 30, n_workers: int = 3, seed: int = 0, gamma_factor: float = 2.0,
            theta_scale: float = 3.0) -> RobustRidgeTrilevel:
    """P2 on scikit-learn's diabetes data (442 x 10).

    ``n_train`` rows (random, ``seed``) form the training set, the rest the validation set;
    features and target are standardised with the training statistics.
    """
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    if int(n_train) != n_train or not 2 * n_workers <= n_train < len(y) - n_workers:
        raise ValueError(
            f"n_train must be an integer in [2 n_workers, n - n_workers), got {n_train}"
        )
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    tr, va = perm[:n_train], perm[n_train:]
    mx, sx = X[tr].mean(0), X[tr].std(0)
    my, sy = y[tr].mean(), y[tr].std()
    Xs, ys = (X - mx) / sx, (y - my) / sy
    return RobustRidgeTrilevel(Xs[tr], ys[tr], Xs[va], ys[va], n_workers=n_workers,
                               gamma_factor=gamma_factor, theta_scale=theta_scale)
