"""Fairness-constrained federated logistic regression (an averaged-quantity constraint).

Each worker holds samples ``(a_j, y_j, z_j)``: features, a label in ``{-1, +1}`` and a
protected group ``z_j in {0, 1}``. The model scores ``s_j = a_j . w + b``; the objective is the
mean logistic loss plus ``(lam2 / 2) ||w||^2``; the **demographic-parity** constraint bounds
the gap between the groups' mean scores over *all* workers::

    | S_1 / N_1 - S_0 / N_0 | <= tau,
    S_z = sum_{j: z_j = z} s_j,  N_z = #{j: z_j = z}

This is not a mean of per-worker constraints (a ratio of global sums), so it is written as an
:class:`~sparsecert.distributed.safe_ef.workers.AveragedConstraint`: worker ``i`` sends
``q_i = (S_1^i, N_1^i, S_0^i, N_0^i)`` (affine in ``x``: the counts are constants) and the
server applies ``G(q) = |q_0 / q_1 - q_2 / q_3| - tau``. Along the affine image the
composition is ``|c . x| - tau`` (convex), and ``J_i^T s`` with the chain-rule ``s`` is a
subgradient of it (:func:`parity_constraint`).

Shards are generated per worker from ``SeedSequence(seed).spawn(n_workers)[i]``
(:func:`fair_shard`), so a process can build its own workers without ever touching another's
data (:func:`fair_worker` is a worker factory). :func:`fair_logistic` builds the whole problem
with a reference optimum (scipy SLSQP on the smooth problem with two linear constraints;
checked against cvxpy in the tests).
"""

from __future__ import annotations

import numpy as np

from sparsecert.distributed.safe_ef.problem import SafeEFProblem
from sparsecert.distributed.safe_ef.workers import AveragedConstraint

__all__ = [
    "ParityLogisticWorker",
    "parity_constraint",
    "fair_shard",
    "fair_worker",
    "fair_logistic",
    "fair_logistic_reference",
]


def _log1pexp(t: np.ndarray) -> np.ndarray:
    """``log(1 + exp(t))`` without overflow."""
    return np.logaddexp(0.0, t)


def _sigmoid(t: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-t))`` without overflow, one exponential per entry: with
    ``e = exp(-|t|) <= 1`` it is ``1 / (1 + e)`` for ``t >= 0`` and ``e / (1 + e)`` below."""
    e = np.exp(-np.abs(t))
    return np.where(t >= 0, 1.0, e) / (1.0 + e)


class ParityLogisticWorker:
    """One worker of the fair logistic problem; ``x = (w, b)`` with the intercept last.

    ``f_i(x) = weight * sum_j log(1 + exp(-y_j s_j)) + (lam2 / 2) ||w||^2`` and
    ``q_i(x) = (sum_{z_j = 1} s_j, #{z_j = 1}, sum_{z_j = 0} s_j, #{z_j = 0}) * scale``.
    """

    def __init__(self, a: np.ndarray, y: np.ndarray, z: np.ndarray, weight: float,
                 lam2: float, scale: float = 1.0) -> None:
        self.a = np.ascontiguousarray(a, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.z = np.asarray(z).astype(bool)
        if self.a.ndim != 2 or self.y.shape != (len(self.a),) or self.z.shape != self.y.shape:
            raise ValueError("a must be (m, p) and y, z of length m")
        self.weight, self.lam2, self.scale = float(weight), float(lam2), float(scale)
        self.p = self.a.shape[1]
        ones = np.ones((len(self.a), 1))
        self._a1 = np.hstack([self.a, ones])  # [a_j, 1]
        self._sum1 = self._a1[self.z].sum(axis=0)
        self._sum0 = self._a1[~self.z].sum(axis=0)

    def scores(self, x: np.ndarray) -> np.ndarray:
        return self._a1 @ x

    def f(self, x: np.ndarray) -> float:
        s = self.scores(x)
        return float(self.weight * _log1pexp(-self.y * s).sum()
                     + 0.5 * self.lam2 * x[:-1] @ x[:-1])

    def f_subgrad(self, x: np.ndarray) -> np.ndarray:
        s = self.scores(x)
        r = -self.y * _sigmoid(-self.y * s)
        out = self.weight * (r @ self._a1)
        out[:-1] += self.lam2 * x[:-1]
        return out

    def q(self, x: np.ndarray) -> np.ndarray:
        return self.scale * np.array([self._sum1 @ x, float(self.z.sum()),
                                      self._sum0 @ x, float((~self.z).sum())])

    def q_vjp(self, x: np.ndarray, s: np.ndarray) -> np.ndarray:
        # the counts (entries 1 and 3) do not depend on x
        return self.scale * (s[0] * self._sum1 + s[2] * self._sum0)

    def minibatch(self, rng: np.random.Generator, batch_size: int) -> ParityLogisticWorker:
        """Unbiased minibatch view (``batch_size`` samples with replacement): ``f`` and ``q``
        are unbiased (``g = G(mean q)`` is not, ``G`` being non-linear)."""
        m = len(self.y)
        idx = rng.integers(0, m, batch_size)
        return ParityLogisticWorker(self.a[idx], self.y[idx], self.z[idx],
                                    self.weight * m / batch_size, self.lam2,
                                    self.scale * m / batch_size)


def parity_constraint(tau: float) -> AveragedConstraint:
    """``G(q) = |q_0 / q_1 - q_2 / q_3| - tau`` for ``q = (S_1, N_1, S_0, N_0)`` (averaged)."""
    tau = float(tau)
    if not np.isfinite(tau) or tau < 0:
        raise ValueError(f"tau must be finite and >= 0, got {tau}")

    def _check(q: np.ndarray) -> None:
        if q[1] <= 0 or q[3] <= 0:
            raise ValueError("both groups need at least one sample over all workers")

    def value(q: np.ndarray) -> float:
        _check(q)
        return float(abs(q[0] / q[1] - q[2] / q[3]) - tau)

    def subgrad(q: np.ndarray) -> np.ndarray:
        _check(q)
        sg = 1.0 if q[0] / q[1] - q[2] / q[3] >= 0 else -1.0
        return sg * np.array([1.0 / q[1], -q[0] / q[1] ** 2, -1.0 / q[3], q[2] / q[3] ** 2])

    return AveragedConstraint(4, value, subgrad, f"|parity gap| - {tau:g}")


def fair_shard(i: int, n_workers: int, seed: int = 0, n_per_worker: int = 200,
               p: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Worker ``i``'s synthetic data ``(a, y, z)``, drawn from its own seed stream.

    Worker ``i``'s share of group 1 is ``0.2 + 0.6 i / (n_workers - 1)`` (heterogeneous);
    group 1's features are shifted and its positive rate is higher, so an unconstrained
    classifier scores the groups differently.
    """
    if not 0 <= i < n_workers:
        raise ValueError(f"worker id {i} out of range for {n_workers} workers")
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(n_workers)[i])
    frac = 0.2 + 0.6 * i / max(n_workers - 1, 1)
    z = rng.random(n_per_worker) < frac
    shift = np.linspace(0.8, -0.4, p)
    a = rng.normal(size=(n_per_worker, p)) + np.outer(z, shift)
    beta = np.linspace(1.0, -1.0, p) / np.sqrt(p)
    logit = a @ beta + 0.8 * z - 0.3 + 0.5 * rng.normal(size=n_per_worker)
    y = np.where(rng.random(n_per_worker) < 1.0 / (1.0 + np.exp(-logit)), 1.0, -1.0)
    return a, y, z


def fair_worker(i: int, n_workers: int, seed: int = 0, n_per_worker: int = 200, p: int = 8,
                lam2: float = 1e-2) -> ParityLogisticWorker:
    """Worker factory: build worker ``i`` from its own shard only."""
    a, y, z = fair_shard(i, n_workers, seed, n_per_worker, p)
    return ParityLogisticWorker(a, y, z, 1.0 / n_per_worker, lam2)


def fair_logistic_reference(workers: list[ParityLogisticWorker], tau: float
                            ) -> tuple[float, np.ndarray]:
    """``(f*, x*)`` of ``min mean_i f_i s.t. |parity gap| <= tau`` over all workers' data
    (scipy SLSQP, tight tolerances; the gap is linear in ``x``)."""
    from scipy.optimize import LinearConstraint, minimize

    n = len(workers)
    d = workers[0].p + 1
    s1 = sum(w._sum1 for w in workers)
    s0 = sum(w._sum0 for w in workers)
    n1 = sum(int(w.z.sum()) for w in workers)
    n0 = sum(int((~w.z).sum()) for w in workers)
    c = s1 / n1 - s0 / n0

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        return (sum(w.f(x) for w in workers) / n,
                sum(w.f_subgrad(x) for w in workers) / n)

    res = minimize(fun, np.zeros(d), jac=True, method="SLSQP",
                   constraints=[LinearConstraint(c[None, :], -tau, tau)],
                   options={"ftol": 1e-15, "maxiter": 1000})
    if not res.success:
        raise RuntimeError(f"fair logistic reference solve failed: {res.message}")
    return float(res.fun), np.asarray(res.x)


def fair_logistic(n_workers: int = 6, n_per_worker: int = 200, p: int = 8, tau: float = 0.05,
                  lam2: float = 1e-2, seed: int = 0) -> SafeEFProblem:
    """The fair logistic problem with all workers built and its reference optimum.

    Returns a :class:`~sparsecert.distributed.safe_ef.problems.SafeEFProblem` whose
    ``constraint`` is :func:`parity_constraint` (pass it to the methods) and whose monitor
    returns ``(f(x), |gap(x)| - tau)``. Starts at ``x0 = 0`` (gap 0: feasible).
    """
    if isinstance(n_workers, bool) or int(n_workers) != n_workers or n_workers < 2:
        raise ValueError(f"n_workers must be an integer >= 2, got {n_workers!r}")
    workers = [fair_worker(i, n_workers, seed, n_per_worker, p, lam2) for i in range(n_workers)]
    con = parity_constraint(tau)
    f_star, x_star = fair_logistic_reference(workers, tau)

    def monitor(x: np.ndarray) -> tuple[float, float]:
        qbar = sum(w.q(x) for w in workers) / n_workers
        return float(sum(w.f(x) for w in workers) / n_workers), con.value(qbar)

    x0 = np.zeros(p + 1)
    gap_free = fair_logistic_reference(workers, 1e6)[1]
    return SafeEFProblem(
        "fair", workers, x0, f_star, x_star, monitor, monitor(x0)[0] - f_star,
        {"d": p + 1, "n_workers": n_workers, "n_per_worker": n_per_worker, "tau": tau,
         "lam2": lam2, "seed": seed,
         "unconstrained_gap": monitor(gap_free)[1] + tau},
        constraint=con,
    )
