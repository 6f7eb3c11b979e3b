"""The one brute-force reference of the tests: enumerate every support, solve each without the
package (least squares without a box: ``numpy.linalg.lstsq`` on the augmented system; otherwise
scipy's L-BFGS-B from two starts), keep the best."""

from __future__ import annotations

import itertools

import numpy as np
import scipy.optimize


def _loss(loss: str, u: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    if loss == "squared":
        r = u - y
        return float(r @ r), 2 * r
    if loss == "logistic":
        m = -y * u
        return float(np.logaddexp(0, m).sum()), -y * scipy.special.expit(m)
    if loss == "squared_hinge":
        r = np.maximum(0, 1 - y * u)
        return float(r @ r), -2 * y * r
    if loss == "poisson":
        e = np.exp(u)
        return float((e - y * u).sum()), e - y
    raise ValueError(loss)


def solve_support(X, y, S, loss, lambda2, M=None, fit_intercept=False):
    """Optimal objective and (coef, intercept) on support ``S``."""
    S = list(S)
    s = len(S)
    XS = X[:, S]
    d = s + int(fit_intercept)
    if d == 0:
        val, _ = _loss(loss, np.zeros(len(y)), y)
        return val, np.zeros(0), 0.0
    if loss == "squared" and M is None:
        return _ridge(XS, y, lambda2, fit_intercept)

    def fun(w):
        b = w[:s]
        c = w[s] if fit_intercept else 0.0
        val, g = _loss(loss, XS @ b + c, y)
        grad = np.concatenate([XS.T @ g + 2 * lambda2 * b, [g.sum()] if fit_intercept else []])
        return val + lambda2 * b @ b, grad

    bounds = [(-M, M) if M is not None else (None, None)] * s + [(None, None)] * fit_intercept
    best = None
    for w0 in (np.zeros(d), np.full(d, 0.1)):
        r = scipy.optimize.minimize(fun, w0, jac=True, method="L-BFGS-B", bounds=bounds,
                                    options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 20000})
        if best is None or r.fun < best.fun:
            best = r
    return float(best.fun), best.x[:s], (float(best.x[s]) if fit_intercept else 0.0)


def _ridge(XS, y, lambda2, fit_intercept):
    """Exact ridge least squares on the columns ``XS`` (unpenalised intercept optional)."""
    n, s = XS.shape
    Z = np.hstack([XS, np.ones((n, 1))]) if fit_intercept else XS
    reg = np.sqrt(lambda2) * np.eye(Z.shape[1])
    if fit_intercept:
        reg[-1, -1] = 0.0
    w = np.linalg.lstsq(np.vstack([Z, reg]), np.r_[y, np.zeros(Z.shape[1])], rcond=None)[0]
    b, c = (w[:s], float(w[s])) if fit_intercept else (w, 0.0)
    r = y - XS @ b - c
    return float(r @ r + lambda2 * b @ b), b, c


def brute_force(X, y, k, loss, lambda2, M=None, fit_intercept=False):
    """Best objective over all supports of size <= k, and its support."""
    p = X.shape[1]
    best = (np.inf, ())
    for size in range(k + 1):
        for S in itertools.combinations(range(p), size):
            val = solve_support(X, y, S, loss, lambda2, M, fit_intercept)[0]
            if val < best[0]:
                best = (val, S)
    return best
