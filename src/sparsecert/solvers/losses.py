r"""GLM losses: value, gradient, per-sample conjugate, dual-domain test, Lipschitz constant.

Convention: the objective is a **sum** of per-sample losses ``f(u_i, y_i)`` with ``u = X b``
(plus ``lambda2 ||b||^2`` elsewhere). Labels of the logistic and squared-hinge losses are in
``{-1, +1}`` here (conversion from ``{0, 1}`` is done by :mod:`sparsecert._validation`).

=============  =======================  =====================================  ===============
loss           f(u; y)                  f*(z; y)                               curvature c
=============  =======================  =====================================  ===============
squared        (y - u)^2                z^2/4 + y z                            2
logistic       log(1 + exp(-y u))       t log t + (1-t) log(1-t), t = -y z     1/4
                                        in [0, 1]
squared_hinge  max(0, 1 - y u)^2        y z + z^2/4 if y z <= 0 else +inf      2
poisson        exp(u) - y u             (z+y) log(z+y) - (z+y), z + y >= 0     none
=============  =======================  =====================================  ===============

The gradient of ``b -> sum_i f(x_i^T b)`` is Lipschitz with constant ``c ||X||_2^2``; the Poisson
loss has no global constant (solvers use backtracking).

The numba kernels (:func:`loss_value_grad`, :func:`loss_value`, :func:`conjugate_sum`) take an
integer loss id (:data:`LOSS_IDS`) so that one compiled solver serves every loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from sparsecert._validation import check_loss

__all__ = [
    "LOSS_IDS",
    "Loss",
    "get_loss",
    "loss_value",
    "loss_value_grad",
    "conjugate_sum",
    "spectral_norm_sq",
    "loss_hessian_diag",
]

SQUARED, LOGISTIC, SQUARED_HINGE, POISSON = 0, 1, 2, 3
#: integer ids used by the numba kernels
LOSS_IDS = {"squared": SQUARED, "logistic": LOGISTIC, "squared_hinge": SQUARED_HINGE,
            "poisson": POISSON}
_CURVATURE = {"squared": 2.0, "logistic": 0.25, "squared_hinge": 2.0, "poisson": None}


# ----------------------------------------------------------------------------------------------
# numba kernels (sums over samples, no Python loops)
# ----------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _log1pexp(m):
    """log(1 + exp(m)) without overflow."""
    if m > 0.0:
        return m + math.log1p(math.exp(-m))
    return math.log1p(math.exp(m))


@njit(cache=True, nogil=True)
def loss_value(loss_id, u, y):
    """Sum of the per-sample losses at ``u`` (float)."""
    n = u.shape[0]
    s = 0.0
    if loss_id == SQUARED:
        for i in range(n):
            r = y[i] - u[i]
            s += r * r
    elif loss_id == LOGISTIC:
        for i in range(n):
            s += _log1pexp(-y[i] * u[i])
    elif loss_id == SQUARED_HINGE:
        for i in range(n):
            r = 1.0 - y[i] * u[i]
            if r > 0.0:
                s += r * r
    else:
        for i in range(n):
            s += math.exp(u[i]) - y[i] * u[i]
    return s


@njit(cache=True, nogil=True)
def loss_value_grad(loss_id, u, y, grad):
    """Sum of the losses at ``u``; writes the per-sample derivatives ``f'(u_i)`` into ``grad``."""
    n = u.shape[0]
    s = 0.0
    if loss_id == SQUARED:
        for i in range(n):
            r = u[i] - y[i]
            s += r * r
            grad[i] = 2.0 * r
    elif loss_id == LOGISTIC:
        for i in range(n):
            m = -y[i] * u[i]
            s += _log1pexp(m)
            # sigmoid(m), computed stably
            if m >= 0.0:
                sg = 1.0 / (1.0 + math.exp(-m))
            else:
                e = math.exp(m)
                sg = e / (1.0 + e)
            grad[i] = -y[i] * sg
    elif loss_id == SQUARED_HINGE:
        for i in range(n):
            r = 1.0 - y[i] * u[i]
            if r > 0.0:
                s += r * r
                grad[i] = -2.0 * y[i] * r
            else:
                grad[i] = 0.0
    else:
        for i in range(n):
            e = math.exp(u[i])
            s += e - y[i] * u[i]
            grad[i] = e - y[i]
    return s


@njit(cache=True, nogil=True)
def _xlogx(t):
    if t <= 0.0:
        return 0.0
    return t * math.log(t)


@njit(cache=True, nogil=True)
def conjugate_sum(loss_id, z, y):
    """``sum_i f*(z_i; y_i)``; ``+inf`` if some ``z_i`` is outside the conjugate's domain."""
    n = z.shape[0]
    s = 0.0
    if loss_id == SQUARED:
        for i in range(n):
            s += 0.25 * z[i] * z[i] + y[i] * z[i]
    elif loss_id == LOGISTIC:
        for i in range(n):
            t = -y[i] * z[i]
            if t < 0.0 or t > 1.0:
                return np.inf
            s += _xlogx(t) + _xlogx(1.0 - t)
    elif loss_id == SQUARED_HINGE:
        for i in range(n):
            w = y[i] * z[i]
            if w > 0.0:
                return np.inf
            s += w + 0.25 * z[i] * z[i]
    else:
        for i in range(n):
            e = z[i] + y[i]
            if e < 0.0:
                return np.inf
            s += _xlogx(e) - e
    return s


# ----------------------------------------------------------------------------------------------
# Python API
# ----------------------------------------------------------------------------------------------
def spectral_norm_sq(X: np.ndarray, n_iter: int = 300, tol: float = 1e-8,
                     seed: int = 0, XT: np.ndarray | None = None) -> float:
    """``||X||_2^2``: exact SVD for small matrices, else Lanczos (``scipy.sparse.linalg.eigsh``) on
    ``X^T X`` or ``X X^T`` (the smaller), with power iteration as a fallback.

    Lanczos estimates converge from below; callers that need an upper bound multiply by a small
    safety factor (the solvers also backtrack, so an underestimate only costs extra iterations).
    ``XT`` (a C-contiguous ``X.T``), when given, enables the single-threaded mat-vec kernels.
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    if min(n, p) <= 64:
        return float(np.linalg.norm(X, 2) ** 2)
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    m = min(n, p)
    if XT is not None and X.flags.c_contiguous and XT.flags.c_contiguous:
        from sparsecert.solvers.perspective._linalg import x_dot, xt_dot

        def mv(v):
            v = np.ascontiguousarray(v, dtype=np.float64).ravel()
            u = np.empty(n)
            x_dot(XT, v, u)
            w = np.empty(p)
            xt_dot(X, u, w)
            return w

        op = LinearOperator((p, p), matvec=mv, dtype=np.float64)
        m = p
    elif p <= n:
        op = LinearOperator((p, p), matvec=lambda v: X.T @ (X @ v), dtype=np.float64)
    else:
        op = LinearOperator((n, n), matvec=lambda v: X @ (X.T @ v), dtype=np.float64)
    rng = np.random.default_rng(seed)
    try:
        val = eigsh(op, k=1, which="LA", tol=tol, maxiter=n_iter * 10,
                    v0=rng.standard_normal(m), return_eigenvectors=False)
        return float(val[0])
    except ArpackNoConvergence:  # pragma: no cover - fallback
        pass
    v = rng.standard_normal(p)
    v /= np.linalg.norm(v)
    lam = 0.0
    for _ in range(n_iter):
        w = X.T @ (X @ v)
        lam = float(np.linalg.norm(w))
        if lam == 0.0:
            return 0.0
        v = w / lam
    return lam


@dataclass(frozen=True)
class Loss:
    """A GLM loss ``sum_i f(u_i; y_i)`` (labels in ``{-1, +1}`` for logistic / squared hinge).

    Attributes
    ----------
    name : str
        One of ``"squared"``, ``"logistic"``, ``"squared_hinge"``, ``"poisson"``.
    loss_id : int
        The integer id used by the numba kernels.
    curvature : float or None
        Upper bound on ``f''``; ``None`` when there is none (Poisson).
    """

    name: str
    loss_id: int
    curvature: float | None

    def value(self, u, y) -> float:
        """``sum_i f(u_i; y_i)``."""
        u, y = _as_pair(u, y)
        return float(loss_value(self.loss_id, u, y))

    def gradient(self, u, y) -> np.ndarray:
        """Per-sample derivatives ``f'(u_i; y_i)`` (the gradient of the sum w.r.t. ``u``)."""
        u, y = _as_pair(u, y)
        g = np.empty_like(u)
        loss_value_grad(self.loss_id, u, y, g)
        return g

    def conjugate(self, z, y) -> np.ndarray:
        """Per-sample conjugates ``f*(z_i; y_i)`` (``+inf`` outside the domain)."""
        z, y = _as_pair(z, y)
        out = np.empty_like(z)
        for i in range(z.shape[0]):  # small helper, not a hot path
            out[i] = conjugate_sum(self.loss_id, z[i:i + 1], y[i:i + 1])
        return out

    def conjugate_sum(self, z, y) -> float:
        """``sum_i f*(z_i; y_i)`` (``+inf`` if any ``z_i`` is outside the domain)."""
        z, y = _as_pair(z, y)
        return float(conjugate_sum(self.loss_id, z, y))

    def in_dual_domain(self, z, y) -> np.ndarray:
        """Boolean mask: is ``z_i`` in the domain of ``f*(.; y_i)``?"""
        z, y = _as_pair(z, y)
        if self.name == "squared":
            return np.ones(z.shape, dtype=bool)
        if self.name == "logistic":
            t = -y * z
            return (t >= 0.0) & (t <= 1.0)
        if self.name == "squared_hinge":
            return y * z <= 0.0
        return z + y >= 0.0

    def lipschitz(self, X) -> float | None:
        """Lipschitz constant ``c ||X||_2^2`` of ``b -> grad sum_i f(x_i^T b)`` (None: Poisson)."""
        if self.curvature is None:
            return None
        return self.curvature * spectral_norm_sq(X)


def _as_pair(a, y):
    a = np.ascontiguousarray(a, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != y.shape:
        raise ValueError(f"expected two 1-D arrays of equal length, got shapes {a.shape} and "
                         f"{y.shape}")
    return a, y


def get_loss(name: str) -> Loss:
    """Return the :class:`Loss` called ``name``."""
    name = check_loss(name)
    return Loss(name=name, loss_id=LOSS_IDS[name], curvature=_CURVATURE[name])


def loss_hessian_diag(loss_id: int, u: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample second derivatives ``f''(u_i; y_i)`` (a generalised one for the squared hinge)."""
    if loss_id == SQUARED:
        return np.full(u.shape, 2.0)
    if loss_id == LOGISTIC:
        s = 1.0 / (1.0 + np.exp(-np.clip(y * u, -700, 700)))
        return s * (1.0 - s)
    if loss_id == SQUARED_HINGE:
        return np.where(1.0 - y * u > 0.0, 2.0, 0.0)
    return np.exp(np.minimum(u, 700.0))
