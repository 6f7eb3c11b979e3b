"""Exact refits of the k-sparse problem on a support: the heuristics' one source of
feasible models.

:class:`SupportRefitter` solves the problem restricted to a support exactly (a loss with a
closed-form refit, least squares: a Cholesky solve; other losses: damped (semismooth) Newton on
the loss's derivatives; bounds on the coefficients: projected Newton, else L-BFGS-B), with a
cache keyed by the support, and scores the coordinates that could join a support by the
second-order decrease ``grad_j^2 / (2 h_j)``. :class:`SparseSupportRefitter` does the same on
a sparse design without densifying it. Every model is feasible and its objective computed
exactly on the data (a valid upper bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import scipy.linalg

from sparsecert.solvers._ridge_refit import ridge_objective, ridge_refit
from sparsecert.solvers.losses import Loss, get_loss

if TYPE_CHECKING:
    from sparsecert.solvers.perspective._coef_bounds import CoefBounds

__all__ = ["SubsetModel", "SampleTerms", "SupportRefitter", "SparseSupportRefitter"]


class SampleTerms(NamedTuple):
    """The loss's per-sample weights and offsets, ``sum_i w_i f(x_i^T b + c + o_i; y_i)``
    (``None``: all weights 1, no offsets)."""

    weight: np.ndarray | None = None
    offset: np.ndarray | None = None


@dataclass(frozen=True)
class SubsetModel:
    """A feasible model restricted to a support.

    Attributes
    ----------
    support : tuple of int
        Sorted indices of the (allowed) non-zeros.
    coef : numpy.ndarray
        Coefficients on ``support`` (same order).
    intercept : float
        Unpenalised intercept (0 unless the refitter fits one).
    objective : float
        Exact objective ``sum_i f(x_i^T b + c, y_i) + lambda2 ||b||^2`` on the refitter's data.
    """

    support: tuple[int, ...]
    coef: np.ndarray
    intercept: float
    objective: float

    def dense(self, p: int) -> np.ndarray:
        """The full length-``p`` coefficient vector."""
        b = np.zeros(p)
        b[list(self.support)] = self.coef
        return b


def _damped_newton(full, hessian, w: np.ndarray, reg: np.ndarray, tol: float,
                   max_iter: int) -> np.ndarray:
    """Damped Newton from ``w``: ``full(w) -> (f, grad, h)`` (the objective, its gradient and
    the loss's per-sample second derivatives), ``hessian(h)`` the Hessian of the loss part
    (``reg`` on its diagonal is the penalty's, plus a tiny ridge); Armijo backtracking, stop
    when the Newton decrement is below ``tol`` relative to ``f``."""
    f, grad, h = full(w)
    for _ in range(max_iter):
        H = hessian(h)
        H[np.diag_indices_from(H)] += reg + 1e-12 * max(1.0, np.max(np.abs(np.diag(H))))
        step = scipy.linalg.solve(H, grad, assume_a="sym")
        dec = float(grad @ step)
        if dec <= tol * max(1.0, abs(f)):
            break
        t = 1.0
        while True:
            f_new, grad_new, h_new = full(w - t * step)
            if f_new <= f - 0.25 * t * dec or t < 1e-12:
                break
            t *= 0.5
        w, f, grad, h = w - t * step, f_new, grad_new, h_new
    return w


class SupportRefitter:
    """Exact refits of the k-sparse objective on given supports, with a cache.

    Parameters
    ----------
    X : numpy.ndarray of shape (n, p)
        Data as used by the solver (for least squares with an intercept: already centred, and
        ``fit_intercept`` False here).
    y : numpy.ndarray of shape (n,)
        Targets (labels in {-1, +1} for classification losses).
    loss : Loss or str
        The loss (with its parameters), or a name of the registry
        :data:`sparsecert.solvers.losses.LOSS_NAMES` (its default parameters).
    lambda2 : float
        Ridge weight (> 0).
    max_abs_coef : float
        Box ``M`` (``np.inf`` for none).
    fit_intercept : bool
        Fit an unpenalised intercept (a loss without a closed-form refit; least squares is
        centred instead).
    samples : SampleTerms, optional
        Per-sample weights and offsets: the loss is ``sum_i w_i f(x_i^T b + c + o_i; y_i)``
        (weights > 0, as the solver keeps only the samples of positive weight; for least
        squares the solver folds them into its data instead, see
        :class:`~sparsecert.solvers.perspective.RelaxationProblem`).
    bounds : CoefBounds, optional
        Every coefficient's bounds (``lower_j <= 0 <= upper_j``; any record with ``lower``
        and ``upper`` arrays of shape (p,)), with the box.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, loss: Loss | str, lambda2: float,
                 max_abs_coef: float = np.inf, fit_intercept: bool = False, *,
                 samples: SampleTerms | None = None, bounds: CoefBounds | None = None) -> None:
        self.X = X
        self._XT: np.ndarray | None = None  # X.T C-contiguous, built on first use
        self.y = y
        self._loss = get_loss(loss) if isinstance(loss, str) else loss
        self.loss = self._loss.name
        samples = samples if samples is not None else SampleTerms()
        self.w = None if samples.weight is None else np.asarray(samples.weight, dtype=np.float64)
        self.o = None if samples.offset is None else np.asarray(samples.offset, dtype=np.float64)
        # least squares: ridge refits in closed form, in a compiled kernel
        self._ridge = self._loss.has_closed_form_refit and self.w is None and self.o is None
        self.lambda2 = float(lambda2)
        self.M = float(max_abs_coef)
        self.n, self.p = self._dims(X)
        self.lower = np.full(self.p, -self.M)
        self.upper = np.full(self.p, self.M)
        if bounds is not None:
            self.lower = np.maximum(self.lower, bounds.lower)
            self.upper = np.minimum(self.upper, bounds.upper)
        self._boxed = bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())
        self.fit_intercept = bool(fit_intercept)
        self._cache: dict[tuple[int, ...], SubsetModel] = {}
        self._col_sq = self._column_sq_norms(X)
        self.n_fits = 0

    @staticmethod
    def _dims(X) -> tuple[int, int]:
        return X.shape

    @staticmethod
    def _column_sq_norms(X) -> np.ndarray:
        return np.einsum("ij,ij->j", X, X)

    @classmethod
    def for_problem(cls, problem) -> SupportRefitter:
        """The refitter of a prepared :class:`~sparsecert.solvers.perspective.RelaxationProblem`
        (its data as used internally; an intercept variable for a loss without a closed-form
        refit, least squares being centred instead)."""
        kind = SparseSupportRefitter if problem.sparse else cls
        refitter = kind(problem.design if problem.sparse else problem.X, problem.y,
                        problem.loss_fn, problem.lambda2, problem.M,
                        fit_intercept=problem.icpt,
                        samples=SampleTerms(getattr(problem, "sample_weight", None),
                                            getattr(problem, "offset", None)),
                        bounds=getattr(problem, "coef_bounds", None))
        if not problem.sparse:
            refitter._XT = problem.XT  # least-squares refits run over its rows
        return refitter

    # -- the loss with the weights and offsets -----------------------------------------------
    def _derivatives(self, u: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """``(sum_i w_i f(u_i + o_i), w f'(u + o), w f''(u + o))``."""
        if self.o is not None:
            u = u + self.o
        val, g1, g2 = self._loss.derivatives(u, self.y)
        if self.w is None:
            return val, g1, g2
        w = self.w
        val = float(np.sum(w * self._terms(u)))
        return val, w * g1, w * g2

    def _terms(self, u: np.ndarray) -> np.ndarray:
        """The per-sample losses ``f(u_i; y_i)``."""
        return self._loss.terms(u, self.y)

    def _value(self, u: np.ndarray) -> float:
        """``sum_i w_i f(u_i + o_i; y_i)``."""
        if self.o is not None:
            u = u + self.o
        if self.w is None:
            return self._loss.value(u, self.y)
        return float(np.sum(self.w * self._terms(u)))

    def _outside(self, key: tuple[int, ...], coef: np.ndarray) -> bool:
        """Whether the coefficients on ``key`` leave their bounds."""
        if not self._boxed or not coef.size:
            return False
        idx = list(key)
        return bool(((coef < self.lower[idx]) | (coef > self.upper[idx])).any())

    # -- objective ---------------------------------------------------------------------------
    def objective(self, support: tuple[int, ...], coef: np.ndarray, intercept: float) -> float:
        """Exact objective of a restricted model."""
        if self._ridge and intercept == 0.0:  # the refit kernel's evaluation
            return float(ridge_objective(self._xt(), self.y, np.asarray(support, dtype=np.int64),
                                         self.lambda2, np.asarray(coef, dtype=np.float64)))
        u = self.X[:, list(support)] @ coef + intercept if support else np.full(self.n, intercept)
        val = self._value(u)
        return val + self.lambda2 * float(coef @ coef)

    # -- refits ------------------------------------------------------------------------------
    def fit(self, support) -> SubsetModel:
        """Optimal model on ``support`` (cached)."""
        key = tuple(sorted(map(int, support)))
        hit = self._cache.get(key)
        if hit is None:
            self.n_fits += 1
            hit = self._cache[key] = self._refit(key)
        return hit

    def _refit(self, key: tuple[int, ...]) -> SubsetModel:
        """The optimal model on the sorted support ``key`` (not cached)."""
        if self._ridge and not self.fit_intercept:
            coef, obj = self._fit_ridge_kernel(key)
            if obj is not None and not self._outside(key, coef):
                return SubsetModel(key, coef, 0.0, obj)
        XS = self.X[:, list(key)]
        if self._ridge and not self.fit_intercept:
            coef, c = self._fit_ridge(XS), 0.0
        else:
            coef, c = self._fit_newton(XS)
        if self._outside(key, coef):
            coef, c = self._fit_box(XS, coef, c, key)
        return SubsetModel(key, coef, float(c), self.objective(key, coef, c))

    def _xt(self) -> np.ndarray:
        if self._XT is None:
            self._XT = np.ascontiguousarray(self.X.T)
        return self._XT

    def _fit_ridge_kernel(self, key: tuple[int, ...]) -> tuple[np.ndarray, float | None]:
        """Ridge refit and objective in one GIL-free kernel (``None``: use LAPACK instead)."""
        coef = np.zeros(len(key))
        XT = self._XT if self._XT is not None else self._xt()
        obj, ok = ridge_refit(XT, self.y, np.array(key, dtype=np.int64), self.lambda2, coef)
        obj = float(obj)
        return coef, (obj if ok and math.isfinite(obj) else None)

    def _fit_ridge(self, XS: np.ndarray) -> np.ndarray:
        if XS.shape[1] == 0:
            return np.zeros(0)
        A = XS.T @ XS
        A[np.diag_indices_from(A)] += self.lambda2
        return scipy.linalg.solve(A, XS.T @ self.y, assume_a="pos")

    def _fit_newton(self, XS: np.ndarray, tol: float = 1e-11,
                    max_iter: int = 100) -> tuple[np.ndarray, float]:
        s = XS.shape[1]
        Z = np.hstack([XS, np.ones((self.n, 1))]) if self.fit_intercept else XS
        d = Z.shape[1]
        if d == 0:
            return np.zeros(0), 0.0
        reg = np.full(d, 2.0 * self.lambda2)
        if self.fit_intercept:
            reg[-1] = 0.0

        def full(w):
            val, g1, g2 = self._derivatives(Z @ w)
            return val + 0.5 * float(reg @ (w * w)), Z.T @ g1 + reg * w, g2

        w = _damped_newton(full, lambda h: (Z * h[:, None]).T @ Z, np.zeros(d), reg, tol,
                           max_iter)
        return (w[:s], float(w[s])) if self.fit_intercept else (w, 0.0)

    def _fit_box(self, XS: np.ndarray, coef0: np.ndarray, c0: float,
                 key: tuple[int, ...]) -> tuple[np.ndarray, float]:
        """The optimum on ``key`` within the bounds: projected Newton (a few steps on these
        small, smooth problems), else scipy's L-BFGS-B from where it stopped."""
        w, done = self._fit_box_newton(XS, coef0, c0, key)
        s = XS.shape[1]
        if done:
            return w[:s], (float(w[s]) if self.fit_intercept else 0.0)
        return self._fit_box_lbfgs(XS, w[:s], float(w[s]) if self.fit_intercept else 0.0, key)

    def _fit_box_newton(self, XS: np.ndarray, coef0: np.ndarray, c0: float,
                        key: tuple[int, ...], tol: float = 1e-11,
                        max_iter: int = 100) -> tuple[np.ndarray, bool]:
        """Bertsekas' projected Newton method on the bounded refit: the coordinates at a bound
        whose gradient points outward stay there, a Newton step on the others, an Armijo
        search along the projection arc. Returns the point and whether it converged (the
        Newton decrement on the free coordinates below ``tol`` and no bound left to free)."""
        fi = self.fit_intercept
        Z = np.hstack([XS, np.ones((self.n, 1))]) if fi else XS
        lo = np.append(self.lower[list(key)], -np.inf) if fi else self.lower[list(key)]
        hi = np.append(self.upper[list(key)], np.inf) if fi else self.upper[list(key)]
        reg = np.full(Z.shape[1], 2.0 * self.lambda2)
        if fi:
            reg[-1] = 0.0
        w = np.clip(np.append(coef0, c0) if fi else np.asarray(coef0, dtype=float), lo, hi)

        def full(w):
            val, g1, g2 = self._derivatives(Z @ w)
            return val + 0.5 * float(reg @ (w * w)), Z.T @ g1 + reg * w, g2

        f, grad, h = full(w)
        for _ in range(max_iter):
            bound = ((w <= lo) & (grad > 0)) | ((w >= hi) & (grad < 0))
            free = ~bound
            step = np.zeros_like(w)
            if free.any():
                Zf = Z[:, free]
                H = (Zf * h[:, None]).T @ Zf
                H[np.diag_indices_from(H)] += reg[free] + 1e-12 * max(1.0, np.max(np.abs(
                    np.diag(H))))
                try:
                    step[free] = scipy.linalg.solve(H, grad[free], assume_a="sym")
                except (np.linalg.LinAlgError, ValueError):
                    return w, False
            dec = float(grad @ step)
            if not math.isfinite(dec):
                return w, False
            if dec <= tol * max(1.0, abs(f)):
                return w, True
            t = 1.0
            while True:
                w_new = np.clip(w - t * step, lo, hi)
                f_new, grad_new, h_new = full(w_new)
                if f_new <= f - 1e-4 * float(grad @ (w - w_new)) or t < 1e-12:
                    break
                t *= 0.5
            if not f_new < f:
                return w, False
            w, f, grad, h = w_new, f_new, grad_new, h_new
        return w, False

    def _fit_box_lbfgs(self, XS, coef0: np.ndarray, c0: float, key: tuple[int, ...],
                       fi: bool | None = None) -> tuple[np.ndarray, float]:
        """The bounded refit by L-BFGS-B (``XS`` dense or sparse; ``fi``: with an intercept
        variable, the problem's ``fit_intercept`` when None)."""
        s = XS.shape[1]
        fi = self.fit_intercept if fi is None else fi
        lo, hi = self.lower[list(key)], self.upper[list(key)]

        def fun(w):
            b = w[:s]
            c = w[s] if fi else 0.0
            val, g1, _ = self._derivatives(XS @ b + c)
            g = np.empty_like(w)
            g[:s] = XS.T @ g1 + 2.0 * self.lambda2 * b
            if fi:
                g[s] = g1.sum()
            return val + self.lambda2 * float(b @ b), g

        w0 = np.append(np.clip(coef0, lo, hi), c0) if fi else np.clip(coef0, lo, hi)
        bounds = [(None if not np.isfinite(a) else float(a),
                   None if not np.isfinite(b) else float(b)) for a, b in zip(lo, hi, strict=True)]
        bounds += [(None, None)] if fi else []
        import scipy.optimize  # only boxed refits: a third of the search's import time

        res = scipy.optimize.minimize(fun, w0, jac=True, method="L-BFGS-B", bounds=bounds,
                                      options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000})
        w = np.clip(res.x[:s], lo, hi)
        return w, (float(res.x[s]) if fi else 0.0)

    # -- screening ---------------------------------------------------------------------------
    def screening_scores(self, model: SubsetModel) -> np.ndarray:
        """Second-order estimate of the decrease from adding each coordinate to ``model``."""
        u = self.X[:, list(model.support)] @ model.coef + model.intercept
        _, g1, g2 = self._derivatives(u)
        grad = self.X.T @ g1
        curv = 2.0 * self._col_sq if self._ridge else (self.X * self.X).T @ g2  # ridge: f'' = 2
        return self._scores(grad, curv, model.support)

    def _scores(self, grad: np.ndarray, curv: np.ndarray,
                support: tuple[int, ...]) -> np.ndarray:
        """The decrease of the one-coordinate quadratic model ``grad_j t + (curv_j / 2 +
        lambda2) t^2`` at its minimum (inside the bounds); ``-inf`` on ``support``."""
        h = curv + 2.0 * self.lambda2
        if self._boxed:  # the step -grad / h, clipped into the bounds: its decrease
            step = np.clip(-grad / h, self.lower, self.upper)
            scores = -(grad * step + 0.5 * h * step * step)
        else:
            scores = grad * grad / (2.0 * h)
        scores[list(support)] = -np.inf
        return scores


class SparseSupportRefitter(SupportRefitter):
    """:class:`SupportRefitter` on a sparse design, never densified.

    Parameters
    ----------
    D : sparsecert.solvers.perspective._linalg.Design
        The sparse design as the solver uses it (its implicit centre ``m``, when it has one,
        makes the columns ``X - 1 m^T``).
    y, loss, lambda2, max_abs_coef, fit_intercept, samples, bounds
        As for :class:`SupportRefitter`.

    A support's columns are taken as a small scipy CSC matrix of their entries (``O(their
    nnz)``), and every refit is Newton's method (one step for least squares) or, with a box,
    L-BFGS-B on them. On centred columns the model is fitted on the raw columns with an
    intercept variable: ``(X - 1 m^T) b + c = X b + (c - m^T b)``, so both have the same
    optimum ``b`` (a centred least-squares problem's own intercept is then ``0``: its response
    is centred too).
    """

    def __init__(self, D, y: np.ndarray, loss: Loss | str, lambda2: float,
                 max_abs_coef: float = np.inf, fit_intercept: bool = False, *,
                 samples: SampleTerms | None = None, bounds: CoefBounds | None = None) -> None:
        super().__init__(D, y, loss, lambda2, max_abs_coef, fit_intercept, samples=samples,
                         bounds=bounds)
        self._centred = D.centre.shape[0] > 0

    @staticmethod
    def _dims(D) -> tuple[int, int]:
        return int(D.n), int(D.p)

    @staticmethod
    def _column_sq_norms(D) -> np.ndarray:
        from sparsecert.solvers.perspective._linalg import design_sq_norms

        return design_sq_norms(D)

    def _columns(self, key: tuple[int, ...]):
        """The raw columns ``key`` as a scipy CSC matrix (n, len(key)) and their centre."""
        import scipy.sparse

        from sparsecert.solvers.perspective._linalg import sub_design

        cols = np.asarray(key, dtype=np.int64)
        sd = sub_design(self.X, cols)
        XS = scipy.sparse.csc_matrix((sd.values, sd.indices, sd.indptr),
                                     shape=(self.n, cols.size))
        m = self.X.centre[cols] if self._centred else np.zeros(cols.size)
        return XS, m

    def _lin(self, key: tuple[int, ...], coef: np.ndarray, intercept: float) -> np.ndarray:
        """``(X_S - 1 m_S^T) coef + intercept`` on the solver's data."""
        if not key:
            return np.full(self.n, float(intercept))
        XS, m = self._columns(key)
        return XS @ coef + (float(intercept) - float(m @ coef))

    def objective(self, support: tuple[int, ...], coef: np.ndarray, intercept: float) -> float:
        """Exact objective of a restricted model."""
        coef = np.asarray(coef, dtype=np.float64)
        u = self._lin(tuple(support), coef, intercept)
        return self._value(u) + self.lambda2 * float(coef @ coef)

    def _refit(self, key: tuple[int, ...]) -> SubsetModel:
        """The optimal model on the sorted support ``key`` (not cached)."""
        XS, m = self._columns(key)
        icpt = self.fit_intercept or self._centred  # an intercept variable on the raw columns
        coef, c = self._newton(XS, icpt)
        if self._outside(key, coef):
            coef, c = self._fit_box_lbfgs(XS, coef, c, key, icpt)
        # the intercept on the solver's (centred) data; none for a centred closed-form loss
        c = float(c + m @ coef) if self.fit_intercept else 0.0
        return SubsetModel(key, coef, c, self.objective(key, coef, c))

    def _newton(self, XS, icpt: bool, tol: float = 1e-15,
                max_iter: int = 100) -> tuple[np.ndarray, float]:
        s = XS.shape[1]
        d = s + int(icpt)
        if d == 0:
            return np.zeros(0), 0.0
        reg = np.full(d, 2.0 * self.lambda2)
        if icpt:
            reg[-1] = 0.0
        w = np.zeros(d)
        if icpt:
            w[-1] = self._loss.initial_intercept(self.y) if not self._ridge else float(
                np.mean(self.y))

        def full(w):
            b = w[:s]
            u = XS @ b + (w[s] if icpt else 0.0)
            val, g1, g2 = self._derivatives(u)
            g = np.empty(d)
            g[:s] = XS.T @ g1
            if icpt:
                g[s] = g1.sum()
            return val + 0.5 * float(reg @ (w * w)), g + reg * w, g2

        def hessian(h):
            H = np.empty((d, d))
            XSh = XS.multiply(h[:, None]).tocsc()
            H[:s, :s] = (XS.T @ XSh).toarray()
            if icpt:
                col = np.asarray(XSh.sum(axis=0)).ravel()
                H[:s, s] = col
                H[s, :s] = col
                H[s, s] = h.sum()
            return H

        w = _damped_newton(full, hessian, w, reg, tol, max_iter)
        return (w[:s], float(w[s])) if icpt else (w, 0.0)

    def screening_scores(self, model: SubsetModel) -> np.ndarray:
        """Second-order estimate of the decrease from adding each coordinate to ``model``."""
        from sparsecert.solvers.perspective._linalg import rmatvec_sq, xtz

        u = self._lin(model.support, model.coef, model.intercept)
        _, g1, g2 = self._derivatives(u)
        grad = xtz(self.X, g1)
        curv = 2.0 * self._col_sq if self._ridge else rmatvec_sq(self.X, g2)  # ridge: f'' = 2
        return self._scores(grad, curv, model.support)
