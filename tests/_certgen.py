"""Genuine certificates for tiny problems, built WITHOUT the package's solver.

The tree is a full enumeration: branch on the variables in order 0, 1, 2, ... until a node has
``|free| <= budget`` or ``budget == 0``; each such leaf is solved exactly (closed-form ridge,
bounded least squares, or a damped Newton method) and its witness is the loss gradient there
(``"dual"``, made to sum to exactly zero with an intercept) or, for the squared loss with an
eigenvalue shift, the leaf's exact solution (``"shifted"``). The incumbent is the best leaf; the
claims leave a relative slack (default 1e-9) for the verifier's rigorous rounding bounds.

The brute-force reference (``brute_force_optimum``) is the tests' one enumerator
(``_bruteforce.brute_force``), which uses other solvers (``numpy.linalg.lstsq`` on the augmented
system, scipy's L-BFGS-B).
"""

from __future__ import annotations

import math

import numpy as np
from _bruteforce import brute_force
from scipy.optimize import lsq_linear

from sparsecert.certificate import Certificate
from sparsecert.certificate.verify import dual_domain_bounds

# ------------------------------------------------------------------------------ data


def make_data(loss: str, n: int = 30, p: int = 6, seed: int = 0, labels=(-1.0, 1.0)):
    """Small correlated design and a target / labels generated from a 3-sparse model."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + 0.3 * rng.standard_normal((n, 1))
    beta = np.zeros(p)
    beta[[0, 2, p - 1]] = [1.5, -1.0, 0.8]
    u = X @ beta
    if loss == "squared":
        y = u + 0.5 * rng.standard_normal(n) + 2.0
    elif loss in ("logistic", "squared_hinge"):
        pos = rng.random(n) < 1.0 / (1.0 + np.exp(-u))
        y = np.where(pos, labels[1], labels[0]).astype(np.float64)
    elif loss == "poisson":
        y = rng.poisson(np.exp(0.3 * u)).astype(np.float64)
    else:
        raise ValueError(loss)
    return X, y


def map_labels(y, loss):
    """The package's label rule: the smaller of two values -> -1, the larger -> +1."""
    if loss in ("logistic", "squared_hinge"):
        vals = np.unique(y)
        assert vals.size == 2
        return np.where(y == vals[1], 1.0, -1.0)
    return np.asarray(y, float)


def zero_sum(zeta, lower=None, upper=None):
    """A vector near ``zeta`` whose exact sum is 0 (``math.fsum == 0``), inside [lower, upper]:
    the entries are moved to a power-of-two grid on which every partial sum is exact, the mean is
    removed and the integer remainder spread over entries with room."""
    z = np.asarray(zeta, dtype=np.float64)
    n = z.size
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, float)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, float)
    z = np.clip(z - z.mean(), lo, hi)
    scale = max(float(np.abs(z).max(initial=0.0)), 1e-300,
                float(np.abs(lo[np.isfinite(lo)]).max(initial=0.0)),
                float(np.abs(hi[np.isfinite(hi)]).max(initial=0.0)))
    q = math.ldexp(1.0, math.frexp(scale)[1] + math.ceil(math.log2(n + 1)) + 1 - 52)
    lo_u = np.ceil(np.clip(lo / q, -2.0**52, 2.0**52)).astype(np.int64)
    hi_u = np.floor(np.clip(hi / q, -2.0**52, 2.0**52)).astype(np.int64)
    units = np.clip(np.rint(z / q).astype(np.int64), lo_u, hi_u)
    r = int(units.sum())
    for i in np.argsort(-((units - lo_u) if r > 0 else (hi_u - units)), kind="stable"):
        if r == 0:
            break
        room = int(units[i] - lo_u[i]) if r > 0 else int(hi_u[i] - units[i])
        d = min(room, abs(r))
        units[i] -= d if r > 0 else -d
        r += -d if r > 0 else d
    assert r == 0
    out = units.astype(np.float64) * q
    assert math.fsum(out.tolist()) == 0.0
    return out


# ------------------------------------------------------------------------------ loss pieces


def _f(loss, u, y):
    if loss == "squared":
        return (y - u) ** 2
    if loss == "logistic":
        return np.logaddexp(0.0, -y * u)
    if loss == "squared_hinge":
        return np.maximum(0.0, 1.0 - y * u) ** 2
    return np.exp(u) - y * u


def _df(loss, u, y):
    if loss == "squared":
        return 2.0 * (u - y)
    if loss == "logistic":
        return -y / (1.0 + np.exp(y * u))
    if loss == "squared_hinge":
        return -2.0 * y * np.maximum(0.0, 1.0 - y * u)
    return np.exp(u) - y


def _d2f(loss, u, y):
    if loss == "squared":
        return np.full_like(u, 2.0)
    if loss == "logistic":
        s = 1.0 / (1.0 + np.exp(-y * u))
        return s * (1.0 - s)
    if loss == "squared_hinge":
        return 2.0 * (1.0 - y * u > 0)
    return np.exp(u)


def objective(X, y, loss, lam, b, c=0.0):
    """F(b, c) = sum f(Xb + c, y) + lam ||b||^2 with y already mapped to -1/+1."""
    return float(_f(loss, X @ b + c, y).sum() + lam * b @ b)


# ------------------------------------------------------------------------------ leaf solvers


def _newton(X, y, loss, lam, fit_intercept, iters=200):
    """Damped Newton on (b, c) for a smooth(ish) loss; exact to machine precision."""
    n, q = X.shape
    Z = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    pen = np.r_[np.full(q, lam), [0.0] * fit_intercept]
    w = np.zeros(Z.shape[1])

    def val(w):
        return float(_f(loss, Z @ w, y).sum() + (pen * w * w).sum())

    for _ in range(iters):
        u = Z @ w
        g = Z.T @ _df(loss, u, y) + 2 * pen * w
        H = Z.T @ (Z * _d2f(loss, u, y)[:, None]) + np.diag(2 * pen) + 1e-14 * np.eye(len(w))
        step = np.linalg.solve(H, g)
        t, v0 = 1.0, val(w)
        while val(w - t * step) > v0 + 1e-16 * abs(v0) and t > 1e-12:
            t *= 0.5
        w = w - t * step
        if np.abs(g).max() < 1e-12 * max(1.0, abs(v0)):
            break
    return (w[:q], float(w[q])) if fit_intercept else (w, 0.0)


def solve_restricted(X, y, loss, lam, A, M=None, fit_intercept=False):
    """Exact minimiser of F over b supported on A (|b_j| <= M). Returns (b, c, zeta).

    ``y`` is mapped. For the squared loss with an intercept the centred problem is solved and
    ``zeta`` is the gradient of the centred loss; otherwise zeta = f'(Xb + c).
    """
    n, p = X.shape
    A = list(A)
    b = np.zeros(p)
    if loss == "squared":
        Xd, yd = (X - X.mean(0), y - y.mean()) if fit_intercept else (X, y)
        if A:
            XA = Xd[:, A]
            if M is None:
                b[A] = np.linalg.solve(XA.T @ XA + lam * np.eye(len(A)), XA.T @ yd)
            else:
                aug = np.vstack([XA, np.sqrt(lam) * np.eye(len(A))])
                res = lsq_linear(aug, np.r_[yd, np.zeros(len(A))], bounds=(-M, M),
                                 method="bvls", tol=1e-15)
                b[A] = res.x
        c = float(y.mean() - X.mean(0) @ b) if fit_intercept else 0.0
        zeta = 2.0 * (Xd @ b - yd)
        return b, c, zeta
    if M is not None:
        raise NotImplementedError("box constraints only for the squared loss here")
    bA, c = _newton(X[:, A], y, loss, lam, fit_intercept) if A else (
        _newton(np.zeros((n, 0)), y, loss, lam, fit_intercept))
    b[A] = bA
    return b, c, _df(loss, X @ b + c, y)


# ------------------------------------------------------------------------------ certificate


def enumeration_certificate(
    X, y, loss, k, lambda2, *, M=None, fit_intercept=False, witness="dual", eig_shift=0.0,
    status="optimal", rel_gap_tol=1e-4, slack=1e-9,
):
    """A genuine certificate from the full enumeration tree. Returns (Certificate, info).

    ``y`` holds raw labels (mapped by the package's rule). ``witness``: "dual" or "shifted"
    (squared loss with ``eig_shift > 0``). The claimed bounds are the best leaf's objective and
    the worst leaf's, widened by ``slack * max(1, |value|)``.
    """
    n, p = X.shape
    ym = map_labels(y, loss)
    nodes, leaves = [], []

    def visit(parent, bvar, bval, fin, fout, depth):
        nid = len(nodes)
        rec = dict(id=nid, parent=parent, branch_var=bvar, branch_value=bval, status="branched",
                   bound=None, witness=None)
        nodes.append(rec)
        free = [j for j in range(depth, p)]
        budget = k - len(fin)
        if len(free) <= budget or budget == 0:
            A = sorted(fin + (free if budget > 0 else []))
            b, c, zeta = solve_restricted(X, ym, loss, lambda2, A, M, fit_intercept)
            obj = objective(X, ym, loss, lambda2, b, c)
            if witness == "shifted":
                rec["witness"] = ("shifted", b)
            else:
                if fit_intercept:
                    lo, hi = dual_domain_bounds(loss, ym)
                    zeta = zero_sum(zeta, lo, hi)
                rec["witness"] = ("dual", zeta)
            rec.update(status="solved", bound=obj)
            leaves.append((obj, nid, b, c))
            return
        visit(nid, depth, 0, fin, fout + [depth], depth + 1)
        visit(nid, depth, 1, fin + [depth], fout, depth + 1)

    visit(None, None, None, [], [], 0)
    best = min(leaves, key=lambda t: t[0])
    obj, _, b, c = best
    lb = min(t[0] for t in leaves)
    cert = Certificate.build(
        X, y,
        problem=dict(loss=loss, k=k, lambda2=lambda2, max_abs_coef=M,
                     fit_intercept=fit_intercept),
        incumbent=dict(coef=b, intercept=c, objective=obj),
        bounds=dict(lower_bound=lb - slack * max(1.0, abs(lb)),
                    upper_bound=obj + slack * max(1.0, abs(obj)), status=status,
                    rel_gap_tol=rel_gap_tol, abs_gap_tol=0.0),
        eig_shift=eig_shift,
        nodes=nodes,
        producer=dict(settings=dict(generator="tests/_certgen.py enumeration"), elapsed=0.0,
                      n_jobs=1, executor="none"),
    )
    return cert, dict(optimum=obj, best_leaf=best[1], coef=b, intercept=c, n_leaves=len(leaves))


# ------------------------------------------------------------------------------ reference


def brute_force_optimum(X, y, loss, k, lambda2, *, M=None, fit_intercept=False):
    """min over all supports of size <= k by the tests' one brute-force reference
    (``_bruteforce``: other solvers than the leaf solvers here); raw labels."""
    ym = map_labels(y, loss)
    return brute_force(X, ym, min(k, X.shape[1]), loss, lambda2, M=M,
                       fit_intercept=fit_intercept)[0]
