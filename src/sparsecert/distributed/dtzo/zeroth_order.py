"""Two-point Gaussian-smoothing zeroth-order estimators (values only).

For a function ``f: R^d -> R`` and smoothing radius ``mu > 0`` the Gaussian smoothing is
``f_mu(x) = E_u[f(x + mu u)]`` with ``u ~ N(0, I_d)``; it is differentiable with

    grad f_mu(x) = E_u[(f(x + mu u) - f(x)) u] / mu = E_u[(f(x + mu u) - f(x - mu u)) u] / (2 mu).

The estimators below average ``q`` such two-point differences:

* ``scheme="forward"``:  ``g = (1/q) sum_i (f(x + mu u_i) - f(x)) / mu * u_i``  (q + 1 queries),
* ``scheme="central"``:  ``g = (1/q) sum_i (f(x + mu u_i) - f(x - mu u_i)) / (2 mu) * u_i``
  (2 q queries).

Directions are either i.i.d. standard Gaussian (``directions="gaussian"``) or a Haar-random
orthonormal frame of ``q <= d`` unit vectors (``directions="orthogonal"``), weighted by ``d / q``
so that ``E[(d/q) sum_i u_i u_i^T] = I`` in both cases. With ``q = d`` orthogonal directions the
weighted sum ``sum_i u_i u_i^T`` is exactly the identity, so the central estimator returns the
exact gradient of a quadratic (its central difference is the exact directional derivative).

Facts on a quadratic ``f(x) = x^T A x / 2 + b^T x`` (tested in
``tests/distributed/test_zeroth_order.py``):

* central difference: ``(f(x + mu u) - f(x - mu u)) / (2 mu) = grad f(x)^T u`` exactly;
* forward difference: ``(f(x + mu u) - f(x)) / mu = grad f(x)^T u + (mu / 2) u^T A u``, so the
  forward estimator is the central one plus the *offset* ``(mu / 2q) sum_i (u_i^T A u_i) u_i``,
  whose mean is zero for Gaussian directions (odd moment) but whose variance grows like ``mu^2``;
* the smoothed value carries the known offset ``f_mu(x) = f(x) + (mu^2 / 2) tr(A)``.

All estimators work on *batches*: the function takes an ``(m, d)`` array of points and returns
``m`` values, and every query is counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sparsecert.distributed.options import check_settings

__all__ = [
    "ZOConfig",
    "sample_directions",
    "direction_weight",
    "perturbation_points",
    "combine_differences",
    "zo_gradient",
    "zo_rows",
    "zo_jacobian",
]

BatchFunction = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ZOConfig:
    """Settings of a two-point estimator.

    Parameters
    ----------
    q : int or None
        Number of directions (``None`` means ``d``, the dimension of the perturbed block).
    mu : float
        Smoothing radius (> 0).
    scheme : {"central", "forward"}
        Two-point difference.
    directions : {"gaussian", "orthogonal"}
        I.i.d. Gaussian directions or a random orthonormal frame (needs ``q <= d``).
    """

    q: int | None = None
    mu: float = 1e-4
    scheme: str = "central"
    directions: str = "gaussian"

    def __post_init__(self) -> None:
        check_settings(self, ints=None if self.q is None else {"q": 1}, positive=("mu",),
                       choices={"scheme": ("central", "forward"),
                                "directions": ("gaussian", "orthogonal")})

    def n_dirs(self, d: int) -> int:
        """Number of directions used for a block of dimension ``d``."""
        q = d if self.q is None else int(self.q)
        if self.directions == "orthogonal" and q > d:
            raise ValueError(f"orthogonal directions need q <= d, got q={q} > d={d}")
        return q

    def queries_per_point(self, d: int) -> int:
        """Function queries one gradient estimate costs."""
        q = self.n_dirs(d)
        return 2 * q if self.scheme == "central" else q + 1


def sample_directions(rng: np.random.Generator, d: int, q: int, kind: str) -> np.ndarray:
    """Draw ``q`` directions in ``R^d`` (rows of the returned ``(q, d)`` array).

    ``kind="gaussian"``: i.i.d. ``N(0, I)`` rows. ``kind="orthogonal"``: ``q <= d`` orthonormal
    rows of a Haar-random orthogonal matrix (QR of a Gaussian matrix with sign correction).
    """
    if d < 1 or q < 1:
        raise ValueError(f"need d >= 1 and q >= 1, got d={d}, q={q}")
    g = rng.standard_normal((d, q))
    if kind == "gaussian":
        return g.T.copy()
    if kind == "orthogonal":
        if q > d:
            raise ValueError(f"orthogonal directions need q <= d, got q={q} > d={d}")
        qm, r = np.linalg.qr(g)
        return (qm * np.sign(np.diag(r))).T.copy()
    raise ValueError(f"unknown direction kind {kind!r}")


def direction_weight(d: int, q: int, kind: str) -> float:
    """Weight ``w`` such that ``E[w * sum_i u_i u_i^T] = I`` for the given directions."""
    return 1.0 / q if kind == "gaussian" else d / q


def perturbation_points(x: np.ndarray, U: np.ndarray, mu: float, scheme: str) -> np.ndarray:
    """Points to query for estimates at each row of ``x`` along directions ``U``.

    Parameters
    ----------
    x : (m, d) array
        Base points.
    U : (q, d) array
        Directions (common to every base point: common random numbers).
    mu, scheme
        See :class:`ZOConfig`.

    Returns
    -------
    (m * n_q, d) array
        For ``central``: ``x + mu u_i`` then ``x - mu u_i`` for each point (``n_q = 2q``); for
        ``forward``: ``x`` then ``x + mu u_i`` (``n_q = q + 1``). Point-major order.
    """
    m, d = x.shape
    plus = x[:, None, :] + mu * U[None, :, :]
    if scheme == "central":
        minus = x[:, None, :] - mu * U[None, :, :]
        pts = np.concatenate([plus, minus], axis=1)
    else:
        pts = np.concatenate([x[:, None, :], plus], axis=1)
    return pts.reshape(-1, d)


def combine_differences(
    values: np.ndarray, U: np.ndarray, mu: float, scheme: str, weight: float
) -> np.ndarray:
    """Turn the values at :func:`perturbation_points` into gradient estimates ``(m, d)``.

    ``values`` may have trailing dimensions (a vector-valued map): shape ``(m * n_q, *k)``
    gives estimates of shape ``(m, *k, d)`` (Jacobians).
    """
    q, d = U.shape
    n_q = 2 * q if scheme == "central" else q + 1
    vals = np.asarray(values, dtype=np.float64)
    vals = vals.reshape(-1, n_q, *vals.shape[1:])
    if scheme == "central":
        diff = (vals[:, :q] - vals[:, q:]) / (2.0 * mu)
    else:
        diff = (vals[:, 1:] - vals[:, :1]) / mu
    # diff: (m, q, *k); estimate_k = weight * sum_i diff_i,k u_i
    return weight * np.einsum("mq...,qd->m...d", diff, U)


def zo_gradient(
    f: BatchFunction,
    x: np.ndarray,
    rng: np.random.Generator,
    cfg: ZOConfig,
) -> tuple[np.ndarray, int]:
    """Zeroth-order gradient estimate of ``f`` at one point or a batch of points.

    Parameters
    ----------
    f : callable
        Maps an ``(n, d)`` array of points to ``n`` values.
    x : (d,) or (m, d) array
        Point(s); a batch shares the same directions.
    rng : numpy.random.Generator
        Source of the directions.
    cfg : ZOConfig
        Estimator settings.

    Returns
    -------
    grad : array like ``x``
        The estimate(s).
    n_queries : int
        Number of function values requested.
    """
    x = np.asarray(x, dtype=np.float64)
    single = x.ndim == 1
    X = x[None, :] if single else x
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError("zo_gradient expects a finite (d,) or (m, d) array")
    g, n_queries = zo_rows(f, X, rng, cfg)
    return (g[0] if single else g), n_queries


def zo_rows(f: BatchFunction, X: np.ndarray, rng: np.random.Generator,
            cfg: ZOConfig) -> tuple[np.ndarray, int]:
    """:func:`zo_gradient` at the rows of ``X`` (``(m, d)``, one set of directions for all),
    without its check of ``X`` (for callers whose ``f`` checks the values and names the
    problem); returns ``(estimates (m, d), function values requested)``."""
    d = X.shape[1]
    q = cfg.n_dirs(d)
    U = sample_directions(rng, d, q, cfg.directions)
    pts = perturbation_points(X, U, cfg.mu, cfg.scheme)
    vals = np.asarray(f(pts), dtype=np.float64)
    if vals.shape != (pts.shape[0],):
        raise ValueError(f"f returned shape {vals.shape}, expected ({pts.shape[0]},)")
    g = combine_differences(vals, U, cfg.mu, cfg.scheme, direction_weight(d, q, cfg.directions))
    return g, int(pts.shape[0])


def zo_jacobian(
    F: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    U: np.ndarray,
    mu: float,
    kind: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Central-difference Jacobian estimate of a vector map along given directions.

    Parameters
    ----------
    F : callable
        Maps ``(n, d)`` points to ``(n, k)`` values.
    x : (d,) array
    U : (q, d) array
        Directions (``kind`` tells how to weight them, see :func:`direction_weight`).
    mu : float
    kind : {"gaussian", "orthogonal"}

    Returns
    -------
    value : (k,) array
        ``F(x)``.
    jac : (k, d) array
        ``w * sum_i (F(x + mu u_i) - F(x - mu u_i)) / (2 mu) u_i^T``; exact for an affine ``F``
        when ``U`` is a full orthonormal frame.
    """
    x = np.asarray(x, dtype=np.float64)
    q, d = U.shape
    pts = np.vstack([x[None, :], perturbation_points(x[None, :], U, mu, "central")])
    vals = np.asarray(F(pts), dtype=np.float64)
    jac = combine_differences(vals[1:], U, mu, "central", direction_weight(d, q, kind))[0]
    return vals[0], jac
