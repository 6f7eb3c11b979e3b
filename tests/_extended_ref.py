"""The brute-force reference of the extended problem, without the package: every support of
size <= k that holds the forced-in features and none of the excluded ones, each solved by
cvxpy (weighted losses, offsets, per-coefficient bounds), the best kept.

``min sum_i w_i f(x_i^T b + c + o_i; y_i) + lambda2 ||b||^2`` subject to ``lower <= b <=
upper`` (labels of the classification losses coded -1/+1 by the caller).
"""

from __future__ import annotations

import itertools

import numpy as np


def _cvx_loss(cp, loss: str, u, y: np.ndarray, delta: float = 1.0):
    """The per-sample losses as a cvxpy expression."""
    if loss == "squared":
        return cp.square(y - u)
    if loss == "logistic":
        return cp.logistic(-cp.multiply(y, u))
    if loss == "squared_hinge":
        return cp.square(cp.pos(1 - cp.multiply(y, u)))
    if loss == "poisson":
        return cp.exp(u) - cp.multiply(y, u)
    if loss == "huber":
        return cp.huber(y - u, delta)
    raise ValueError(loss)


def solve_support(X, y, S, loss, lambda2, *, w=None, o=None, lower=None, upper=None,
                  fit_intercept=False, delta=1.0) -> tuple[float, np.ndarray, float]:
    """Optimal objective, coefficients (length p) and intercept on the support ``S``."""
    import cvxpy as cp

    n, p = X.shape
    w = np.ones(n) if w is None else np.asarray(w, float)
    o = np.zeros(n) if o is None else np.asarray(o, float)
    S = list(S)
    b = cp.Variable(len(S)) if S else None
    c = cp.Variable() if fit_intercept else None
    u = o.copy() if not S else X[:, S] @ b + o
    if c is not None:
        u = u + c
    if b is None and c is None:
        vals = _numpy_loss(loss, o, y, delta)
        return float(w @ vals), np.zeros(p), 0.0
    obj = cp.sum(cp.multiply(w, _cvx_loss(cp, loss, u, y, delta)))
    cons = []
    if b is not None:
        obj = obj + lambda2 * cp.sum_squares(b)
        if lower is not None:
            lo, hi = np.asarray(lower, float)[S], np.asarray(upper, float)[S]
            cons += [b[i] >= lo[i] for i in range(len(S)) if np.isfinite(lo[i])]
            cons += [b[i] <= hi[i] for i in range(len(S)) if np.isfinite(hi[i])]
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL, prob.status
    coef = np.zeros(p)
    if b is not None:
        coef[S] = b.value
    icpt = float(c.value) if c is not None else 0.0
    # the objective re-evaluated in numpy at the solver's point (an upper bound on the optimum)
    uu = X @ coef + icpt + o
    return float(w @ _numpy_loss(loss, uu, y, delta) + lambda2 * coef @ coef), coef, icpt


def _numpy_loss(loss, u, y, delta=1.0):
    if loss == "squared":
        return (y - u) ** 2
    if loss == "logistic":
        return np.logaddexp(0, -y * u)
    if loss == "squared_hinge":
        return np.maximum(0, 1 - y * u) ** 2
    if loss == "poisson":
        return np.exp(u) - y * u
    if loss == "huber":
        r = np.abs(y - u)
        return np.where(r <= delta, r * r, 2 * delta * r - delta * delta)
    raise ValueError(loss)


def objective(X, y, coef, intercept, loss, lambda2, *, w=None, o=None, delta=1.0) -> float:
    """The extended objective of a given model (numpy)."""
    n = X.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, float)
    o = np.zeros(n) if o is None else np.asarray(o, float)
    coef = np.asarray(coef, float)
    return float(w @ _numpy_loss(loss, X @ coef + intercept + o, y, delta)
                 + lambda2 * coef @ coef)


def brute_force(X, y, k, loss, lambda2, *, always_select=(), exclude=(), **kw):
    """Best objective over the allowed supports, and its support."""
    p = X.shape[1]
    forced = sorted(always_select)
    free = [j for j in range(p) if j not in set(forced) | set(exclude)]
    best = (np.inf, ())
    for size in range(k - len(forced) + 1):
        for extra in itertools.combinations(free, size):
            S = tuple(sorted(forced + list(extra)))
            val = solve_support(X, y, S, loss, lambda2, **kw)[0]
            if val < best[0]:
                best = (val, S)
    return best
