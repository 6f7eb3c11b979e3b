"""Test problems for Safe-EF: distributed, non-smooth, constrained, with known optima.

* :func:`neyman_pearson` (P1): Neyman-Pearson hinge classification on scikit-learn's bundled
  breast-cancer data; ``f*`` from an LP (scipy HiGHS).
* :func:`l1_regression` (P2): l1 regression with an l1-ball constraint, heterogeneous workers,
  heavy-tailed noise; reference optimum from an LP (scipy HiGHS).
* :func:`worst_case` (P3): identical workers with a dense optimum whose entries all have the
  same size: compression cannot save bits; optimum in closed form.

Each builder returns a :class:`SafeEFProblem` whose ``workers`` implement
:class:`~sparsecert.distributed.safe_ef.algorithm.Worker` (and, for P1 and P2,
:class:`~sparsecert.distributed.safe_ef.algorithm.StochasticWorker`), with ``f = mean_i f_i`` and
``g = mean_i g_i``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from sparsecert.distributed.safe_ef.fairness import fair_logistic
from sparsecert.distributed.safe_ef.problem import SafeEFProblem

__all__ = [
    "SafeEFProblem",
    "HingeNPWorker",
    "L1RegressionWorker",
    "IsotropicL1Worker",
    "neyman_pearson",
    "neyman_pearson_lp",
    "l1_regression",
    "l1_regression_lp",
    "worst_case",
    "PROBLEMS",
]


def _hinge_sub(margin_arg: np.ndarray) -> np.ndarray:
    """Indicator of the active pieces of ``max(0, margin_arg)``."""
    return (margin_arg > 0).astype(np.float64)


# --------------------------------------------------------------------------- P1


class HingeNPWorker:
    """Worker of the Neyman-Pearson problem; ``x = (w, b)`` with intercept ``b`` last.

    ``f_i(x) = wpos * sum_{j in pos_i} max(0, 1 - (a_j^T w + b)) + lam1 ||w||_1``
    ``g_i(x) = wneg * sum_{j in neg_i} max(0, 1 + (a_j^T w + b)) - alpha``
    """

    def __init__(
        self,
        a_pos: np.ndarray,
        a_neg: np.ndarray,
        wpos: float,
        wneg: float,
        lam1: float,
        alpha: float,
    ) -> None:
        self.a_pos = np.ascontiguousarray(a_pos, dtype=np.float64)
        self.a_neg = np.ascontiguousarray(a_neg, dtype=np.float64)
        self.wpos, self.wneg = float(wpos), float(wneg)
        self.lam1, self.alpha = float(lam1), float(alpha)
        self.p = self.a_pos.shape[1] if self.a_pos.size else self.a_neg.shape[1]

    def f(self, x: np.ndarray) -> float:
        w, b = x[:-1], x[-1]
        loss = np.maximum(0.0, 1.0 - (self.a_pos @ w + b)).sum() if len(self.a_pos) else 0.0
        return float(self.wpos * loss + self.lam1 * np.abs(w).sum())

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        w, b = x[:-1], x[-1]
        out = np.zeros(self.p + 1)
        if len(self.a_pos):
            act = _hinge_sub(1.0 - (self.a_pos @ w + b))
            out[:-1] = -self.wpos * (act @ self.a_pos)
            out[-1] = -self.wpos * act.sum()
        out[:-1] += self.lam1 * np.sign(w)
        return out

    def g(self, x: np.ndarray) -> float:
        w, b = x[:-1], x[-1]
        loss = np.maximum(0.0, 1.0 + (self.a_neg @ w + b)).sum() if len(self.a_neg) else 0.0
        return float(self.wneg * loss - self.alpha)

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        w, b = x[:-1], x[-1]
        out = np.zeros(self.p + 1)
        if len(self.a_neg):
            act = _hinge_sub(1.0 + (self.a_neg @ w + b))
            out[:-1] = self.wneg * (act @ self.a_neg)
            out[-1] = self.wneg * act.sum()
        return out

    def minibatch(self, rng: np.random.Generator, batch_size: int) -> HingeNPWorker:
        """Unbiased minibatch view: ``batch_size`` samples with replacement from each class."""
        mp, mn = len(self.a_pos), len(self.a_neg)
        ip = rng.integers(0, mp, batch_size) if mp else np.zeros(0, dtype=np.int64)
        ineg = rng.integers(0, mn, batch_size) if mn else np.zeros(0, dtype=np.int64)
        return HingeNPWorker(
            self.a_pos[ip].reshape(-1, self.p),
            self.a_neg[ineg].reshape(-1, self.p),
            self.wpos * mp / batch_size,
            self.wneg * mn / batch_size,
            self.lam1,
            self.alpha,
        )


def neyman_pearson_lp(
    a_pos: np.ndarray, a_neg: np.ndarray, lam1: float, alpha: float
) -> tuple[float, np.ndarray]:
    """Optimum of ``min mean_pos hinge + lam1 ||w||_1 s.t. mean_neg hinge(-) <= alpha`` by LP.

    Variables ``(w+, w-, b, s_pos, s_neg)``; solved with scipy's HiGHS. Returns
    ``(f*, x*)`` with ``x* = (w, b)``.
    """
    npos, p = a_pos.shape
    nneg = a_neg.shape[0]
    nv = 2 * p + 1 + npos + nneg
    cost = np.zeros(nv)
    cost[: 2 * p] = lam1
    cost[2 * p + 1 : 2 * p + 1 + npos] = 1.0 / npos
    # -A w - b - s_pos <= -1 ;  A w + b - s_neg <= -1 ; mean s_neg <= alpha
    ap, an = sparse.csr_matrix(a_pos), sparse.csr_matrix(a_neg)
    rows_pos = sparse.hstack(
        [-ap, ap, -np.ones((npos, 1)), -sparse.identity(npos), sparse.csr_matrix((npos, nneg))]
    )
    rows_neg = sparse.hstack(
        [an, -an, np.ones((nneg, 1)), sparse.csr_matrix((nneg, npos)), -sparse.identity(nneg)]
    )
    budget = np.zeros((1, nv))
    budget[0, 2 * p + 1 + npos :] = 1.0 / nneg
    a_ub = sparse.vstack([rows_pos, rows_neg, sparse.csr_matrix(budget)]).tocsc()
    b_ub = np.concatenate([-np.ones(npos + nneg), [alpha]])
    bounds = [(0, None)] * (2 * p) + [(None, None)] + [(0, None)] * (npos + nneg)
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"Neyman-Pearson LP failed: {res.message}")
    z = res.x
    x = np.concatenate([z[:p] - z[p : 2 * p], [z[2 * p]]])
    return float(res.fun), x


def neyman_pearson(
    n_workers: int = 10,
    lam1: float = 0.02,
    alpha: float = 0.10,
    split_feature: int = 0,
    seed: int | None = None,
    x0_scale: float = 0.1,
) -> SafeEFProblem:
    """P1: distributed Neyman-Pearson classification on the breast-cancer data.

    Malignant tumours are the positive class (its hinge loss is the objective, plus
    ``lam1 ||w||_1``); the mean hinge loss of the benign class, a surrogate of the false
    positive rate, must stay below ``alpha``. Features are standardised; an intercept is
    appended (``d = 31``). Samples are sorted by feature ``split_feature`` ("mean radius")
    and cut into ``n_workers`` contiguous blocks, so workers are strongly heterogeneous
    (some hold almost only one class). Worker weights make ``f = mean_i f_i`` exactly.

    Parameters
    ----------
    n_workers : int
        Number of workers.
    lam1 : float
        l1 weight.
    alpha : float
        Constraint budget.
    split_feature : int
        Feature used for the heterogeneous split.
    seed : int or None
        None starts from ``x0 = 0``; an integer draws ``x0 ~ N(0, x0_scale^2 I)`` (the data
        and the split do not depend on it).
    x0_scale : float
        Scale of the random start.
    """
    from sklearn.datasets import load_breast_cancer

    if int(n_workers) != n_workers or n_workers < 1:
        raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
    if lam1 < 0 or alpha <= 0:
        raise ValueError(f"need lam1 >= 0 and alpha > 0, got lam1={lam1}, alpha={alpha}")
    data = load_breast_cancer()
    a = np.asarray(data.data, dtype=np.float64)
    if not 0 <= split_feature < a.shape[1]:
        raise ValueError(f"split_feature must be in [0, {a.shape[1]}), got {split_feature}")
    a = (a - a.mean(axis=0)) / a.std(axis=0)
    pos = np.asarray(data.target) == 0  # malignant
    order = np.argsort(a[:, split_feature], kind="stable")
    blocks = np.array_split(order, n_workers)
    npos, nneg = int(pos.sum()), int((~pos).sum())
    n, p = n_workers, a.shape[1]
    workers = [
        HingeNPWorker(
            a[blk[pos[blk]]], a[blk[~pos[blk]]], n / npos, n / nneg, lam1, alpha
        )
        for blk in blocks
    ]
    a_pos, a_neg = a[pos], a[~pos]
    f_star, x_star = neyman_pearson_lp(a_pos, a_neg, lam1, alpha)

    def monitor(x: np.ndarray) -> tuple[float, float]:
        w, b = x[:-1], x[-1]
        f = np.maximum(0.0, 1.0 - (a_pos @ w + b)).mean() + lam1 * np.abs(w).sum()
        g = np.maximum(0.0, 1.0 + (a_neg @ w + b)).mean() - alpha
        return float(f), float(g)

    if seed is None:
        x0 = np.zeros(p + 1)
    else:
        x0 = np.random.default_rng(seed).normal(scale=x0_scale, size=p + 1)
    return SafeEFProblem(
        "P1", workers, x0, f_star, x_star, monitor, monitor(x0)[0] - f_star,
        {"d": p + 1, "n_samples": a.shape[0], "n_pos": npos, "n_neg": nneg,
         "lam1": lam1, "alpha": alpha, "n_workers": n_workers,
         "pos_per_worker": [len(w.a_pos) for w in workers]},
    )


# --------------------------------------------------------------------------- P2


class L1RegressionWorker:
    """``f_i(x) = mean_{j in i} |a_j^T x - b_j|``, ``g_i(x) = ||x||_1 - radius``."""

    def __init__(self, a: np.ndarray, b: np.ndarray, radius: float) -> None:
        self.a = np.ascontiguousarray(a, dtype=np.float64)
        self.b = np.asarray(b, dtype=np.float64)
        self.radius = float(radius)

    def f(self, x: np.ndarray) -> float:
        return float(np.abs(self.a @ x - self.b).mean())

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        return (np.sign(self.a @ x - self.b) @ self.a) / len(self.b)

    def g(self, x: np.ndarray) -> float:
        return float(np.abs(x).sum() - self.radius)

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        return np.sign(x)

    def minibatch(self, rng: np.random.Generator, batch_size: int) -> L1RegressionWorker:
        """Unbiased minibatch view (``batch_size`` samples with replacement)."""
        idx = rng.integers(0, len(self.b), batch_size)
        return L1RegressionWorker(self.a[idx], self.b[idx], self.radius)


def l1_regression_lp(a: np.ndarray, b: np.ndarray, radius: float) -> tuple[float, np.ndarray]:
    """``min mean |a x - b| s.t. ||x||_1 <= radius`` as an LP (scipy HiGHS).

    Variables ``(x+, x-, s)``: ``-s <= a x - b <= s``. Solved with HiGHS' interior point
    method with crossover (``highs-ipm``; about 3x faster than dual simplex at ``1000 x 200``).
    Returns ``(f*, x*)``.
    """
    m, d = a.shape
    cost = np.concatenate([np.zeros(2 * d), np.full(m, 1.0 / m)])
    asp = sparse.csr_matrix(a)
    eye = sparse.identity(m)
    a_ub = sparse.vstack(
        [
            sparse.hstack([asp, -asp, -eye]),
            sparse.hstack([-asp, asp, -eye]),
            sparse.hstack([np.ones((1, 2 * d)), sparse.csr_matrix((1, m))]),
        ]
    ).tocsc()
    b_ub = np.concatenate([b, -b, [radius]])
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs-ipm")
    if res.status != 0:
        raise RuntimeError(f"l1-regression LP failed: {res.message}")
    return float(res.fun), res.x[:d] - res.x[d : 2 * d]


def l1_regression(
    d: int = 200,
    n_workers: int = 10,
    m_per_worker: int = 100,
    sparsity: int = 10,
    radius_frac: float = 0.5,
    df: float = 1.5,
    noise: float = 0.5,
    seed: int = 0,
) -> SafeEFProblem:
    """P2: l1 regression with an l1-ball constraint on heterogeneous workers.

    Worker ``i`` draws its design rows from ``N(mu_i, s_i^2 I)`` with its own mean
    ``mu_i ~ N(0, 0.5^2 I)`` and scale ``s_i`` in ``[0.5, 2]`` (heterogeneous); responses are
    ``a^T x_true + noise * t_df`` (Student t: heavy tails). ``x_true`` has ``sparsity``
    entries of size 1 and the ball radius is ``radius_frac * ||x_true||_1`` (active).
    Starts at ``x0 = 0``.
    """
    if int(d) != d or d < 1 or int(n_workers) != n_workers or n_workers < 1:
        raise ValueError("d and n_workers must be positive integers")
    if not 0 < sparsity <= d or not 0 < radius_frac:
        raise ValueError("need 0 < sparsity <= d and radius_frac > 0")
    rng = np.random.default_rng(seed)
    x_true = np.zeros(d)
    supp = rng.choice(d, size=sparsity, replace=False)
    x_true[supp] = rng.choice([-1.0, 1.0], size=sparsity)
    radius = radius_frac * np.abs(x_true).sum()
    scales = np.linspace(0.5, 2.0, n_workers)
    blocks_a, blocks_b = [], []
    for i in range(n_workers):
        mu = rng.normal(scale=0.5, size=d)
        ai = mu + scales[i] * rng.normal(size=(m_per_worker, d))
        bi = ai @ x_true + noise * rng.standard_t(df, size=m_per_worker)
        blocks_a.append(ai)
        blocks_b.append(bi)
    workers = [
        L1RegressionWorker(ai, bi, radius) for ai, bi in zip(blocks_a, blocks_b, strict=True)
    ]
    a_all, b_all = np.vstack(blocks_a), np.concatenate(blocks_b)
    f_star, x_star = l1_regression_lp(a_all, b_all, radius)

    def monitor(x: np.ndarray) -> tuple[float, float]:
        return float(np.abs(a_all @ x - b_all).mean()), float(np.abs(x).sum() - radius)

    x0 = np.zeros(d)
    return SafeEFProblem(
        "P2", workers, x0, f_star, x_star, monitor, monitor(x0)[0] - f_star,
        {"d": d, "n_workers": n_workers, "m_per_worker": m_per_worker, "radius": radius,
         "df": df, "noise": noise, "seed": seed},
    )


# --------------------------------------------------------------------------- P3


class IsotropicL1Worker:
    """``f_i(x) = ||x - a_i||_1 / d``, ``g_i(x) = ||x||_inf - radius``.

    Every coordinate of every subgradient of ``f_i`` has magnitude ``1/d`` (away from
    kinks): no coordinate is more informative than another, so sparsification only delays.
    """

    def __init__(self, a: np.ndarray, radius: float) -> None:
        self.a = np.asarray(a, dtype=np.float64)
        self.radius = float(radius)

    def f(self, x: np.ndarray) -> float:
        return float(np.abs(x - self.a).sum() / self.a.size)

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        return np.sign(x - self.a) / self.a.size

    def g(self, x: np.ndarray) -> float:
        return float(np.abs(x).max() - self.radius)

    def g_subgrad(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros(self.a.size)
        j = int(np.argmax(np.abs(x)))
        out[j] = np.sign(x[j])
        return out


def worst_case(d: int = 50, n_workers: int = 10, radius: float = 2.0, seed: int = 0
               ) -> SafeEFProblem:
    """P3: the honest negative control, an instance on which compression cannot save bits.

    Every worker holds the *same* ``f_i(x) = ||x - a||_1 / d`` with ``a_j = +-1`` (random
    signs) and ``g_i(x) = ||x||_inf - radius``, so ``x* = a`` (dense, all entries of equal
    size), ``f* = 0`` and ``f(0) = 1``. Nothing is sparse and the workers have no diversity:
    a top-k round moves at most ``k`` coordinates (the same ones on every worker), so a top-k
    method needs at least ``(1 - eps) d / k`` rounds to reach a relative gap ``eps``, i.e. at
    least ``(1 - eps) d (32 + ceil(log2 d))`` uplink bits, more than the ``32 d`` bits of one
    dense round of the right step. Starts at ``x0 = 0``.
    """
    if int(d) != d or d < 1 or int(n_workers) != n_workers or n_workers < 1:
        raise ValueError("d and n_workers must be positive integers")
    if radius < 1:
        raise ValueError(f"radius must be >= 1 so that x* = a is feasible, got {radius}")
    rng = np.random.default_rng(seed)
    a = rng.choice([-1.0, 1.0], size=d)
    workers = [IsotropicL1Worker(a, radius) for _ in range(n_workers)]
    x_star = a.copy()

    def monitor(x: np.ndarray) -> tuple[float, float]:
        return float(np.abs(x - a).sum() / d), float(np.abs(x).max() - radius)

    f_star = monitor(x_star)[0]
    x0 = np.zeros(d)
    return SafeEFProblem(
        "P3", workers, x0, f_star, x_star, monitor, monitor(x0)[0] - f_star,
        {"d": d, "n_workers": n_workers, "radius": radius, "seed": seed},
    )


PROBLEMS: dict[str, Callable[..., SafeEFProblem]] = {
    "P1": neyman_pearson,
    "P2": l1_regression,
    "P3": worst_case,
    "fair": fair_logistic,
}
"""Name -> builder of the shipped problems."""
