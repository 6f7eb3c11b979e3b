"""A small WGAN-like min-max game whose training data live on the workers.

Real data in ``R^m``; worker ``k`` holds its own samples ``x ~ N(mu + delta_k, diag(sd^2))``
(``sum_k delta_k = 0``), generated from the worker's own seed, so a process that builds worker
``k`` never sees another worker's samples.

* Generator ``G(z) = a + b * z`` with ``z ~ N(0, I_m)`` (parameters ``a, b`` in ``R^m``).
* Critic ``D(x) = w . x + c . (x * x)`` (parameters ``w, c``), with an l2 penalty
  ``lam / 2 (||w||^2 + ||c||^2)`` standing in for the Lipschitz constraint of a WGAN.
* ``L(a, b; w, c) = E_data D(x) - E_z D(G(z)) - lam/2 ||(w, c)||^2`` is minimised over the
  generator and maximised over the critic: with the data moments ``m1 = E x``, ``m2 = E x^2``,
  ``L = w . (m1 - a) + c . (m2 - a^2 - b^2) - lam/2 ||(w, c)||^2``.
* The VI operator ``F = (dL/da, dL/db, -dL/dw, -dL/dc)`` is estimated by each worker on a
  minibatch of its own data and a minibatch of ``z``; the mean over workers is unbiased for
  ``F`` with the pooled moments.
* Equilibrium: ``w = c = 0``, ``a = m1``, ``b^2 = m2 - m1^2`` (``b > 0`` from ``b0 > 0``): the
  generator matches the first two moments of the pooled data. At the equilibrium the Jacobian
  of ``F`` is skew-symmetric plus ``lam`` on the critic block, so the game is monotone near it.

The quantizer's layers are the four parameter blocks ``[a, b, w, c]``, whose operator values
have very different scales (the ``c`` block scales like the second moments).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["WassersteinGame", "WGANWorker"]


def _check_pos_int(name: str, val) -> int:
    if isinstance(val, bool) or int(val) != val or val < 1:
        raise ValueError(f"{name} must be a positive integer, got {val!r}")
    return int(val)


class WGANWorker:
    """Worker ``k`` of :class:`WassersteinGame`: its samples and its stochastic oracle."""

    def __init__(self, data: np.ndarray, batch: int, lam: float) -> None:
        self.data = data
        self.batch = batch
        self.lam = lam
        self.m = data.shape[1]

    def __call__(self, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Minibatch estimate of ``F(z)`` from this worker's data."""
        m = self.m
        a, b, w, c = z[:m], z[m:2 * m], z[2 * m:3 * m], z[3 * m:]
        x = self.data[rng.integers(0, self.data.shape[0], self.batch)]
        e = rng.standard_normal((self.batch, m))
        g = a + b * e
        g_mean = g.mean(axis=0)
        return np.concatenate([
            -(w + 2.0 * c * g_mean),                       # dL/da
            -2.0 * c * (g * e).mean(axis=0),               # dL/db
            -(x.mean(axis=0) - g_mean) + self.lam * w,     # -dL/dw
            -((x * x).mean(axis=0) - (g * g).mean(axis=0)) + self.lam * c,  # -dL/dc
        ])

    def local_sums(self) -> np.ndarray:
        """``[sum x, sum x^2, n]`` over this worker's samples (for reductions)."""
        return np.concatenate([self.data.sum(axis=0), (self.data ** 2).sum(axis=0),
                               [float(self.data.shape[0])]])


class WassersteinGame:
    """The game's description; workers are built one at a time by :meth:`worker`.

    Parameters
    ----------
    n_features : int
        Data dimension ``m`` (the parameter vector has ``4 m`` coordinates).
    n_workers : int
    samples_per_worker : int
    batch : int
        Minibatch size of the data and of ``z`` in each oracle call.
    lam : float
        Critic penalty (> 0).
    scales : (float, float)
        The data standard deviations are log-spaced between these values.
    heterogeneity : float
        Scale of the workers' mean shifts ``delta_k``.
    seed : int
    """

    def __init__(self, n_features: int = 16, n_workers: int = 4, samples_per_worker: int = 500,
                 batch: int = 32, lam: float = 1.0, scales: Sequence[float] = (0.1, 3.0),
                 heterogeneity: float = 0.5, seed: int = 0) -> None:
        self.m = _check_pos_int("n_features", n_features)
        self.n_workers = _check_pos_int("n_workers", n_workers)
        self.samples_per_worker = _check_pos_int("samples_per_worker", samples_per_worker)
        self.batch = _check_pos_int("batch", batch)
        if not (np.isfinite(lam) and lam > 0):
            raise ValueError(f"lam must be positive and finite, got {lam!r}")
        lo, hi = (float(s) for s in scales)
        if not 0 < lo <= hi < np.inf:
            raise ValueError(f"scales must satisfy 0 < low <= high, got {scales!r}")
        self.lam, self.heterogeneity, self.seed = float(lam), float(heterogeneity), int(seed)
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 0]))
        self.sd = np.geomspace(lo, hi, self.m)
        self.mu = rng.standard_normal(self.m) * self.sd
        self.d = 4 * self.m
        self.x0 = np.concatenate([np.zeros(self.m), np.ones(self.m), np.zeros(2 * self.m)])

    @property
    def layers(self) -> tuple[int, int, int, int]:
        """The parameter blocks ``[a, b, w, c]``."""
        return (self.m,) * 4

    def _shift(self, k: int) -> np.ndarray:
        g = np.random.default_rng(np.random.SeedSequence([self.seed, 1, k])).standard_normal(
            self.m)
        return self.heterogeneity * self.sd * g

    def worker(self, k: int) -> WGANWorker:
        """Worker ``k`` with its own samples (drawn from its own seed; ``delta_k`` is the
        difference of two public shift vectors, so the shifts sum to zero)."""
        if isinstance(k, bool) or int(k) != k or not 0 <= k < self.n_workers:
            raise ValueError(f"no worker {k!r} (n_workers = {self.n_workers})")
        k = int(k)
        delta = self._shift(k) - self._shift((k + 1) % self.n_workers)
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 2, k]))
        data = self.mu + delta + rng.standard_normal((self.samples_per_worker, self.m)) * self.sd
        return WGANWorker(data, self.batch, self.lam)

    # -- the expected game, from the pooled moments
    def operator(self, z: np.ndarray, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The exact (expected) ``F(z)`` for data moments ``m1 = E x``, ``m2 = E x^2``."""
        m = self.m
        a, b, w, c = z[:m], z[m:2 * m], z[2 * m:3 * m], z[3 * m:]
        return np.concatenate([-(w + 2.0 * c * a), -2.0 * c * b,
                               a - m1 + self.lam * w, a * a + b * b - m2 + self.lam * c])

    def value(self, z: np.ndarray, m1: np.ndarray, m2: np.ndarray) -> float:
        """``L(z)`` for data moments ``m1, m2``."""
        m = self.m
        a, b, w, c = z[:m], z[m:2 * m], z[2 * m:3 * m], z[3 * m:]
        return float(w @ (m1 - a) + c @ (m2 - a * a - b * b)
                     - 0.5 * self.lam * (w @ w + c @ c))

    def equilibrium(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """``(a, b, w, c) = (m1, sqrt(m2 - m1^2), 0, 0)``."""
        return np.concatenate([m1, np.sqrt(np.maximum(m2 - m1 * m1, 0.0)),
                               np.zeros(2 * self.m)])

    def moments(self, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pooled ``m1, m2`` from the sum of the workers' :meth:`WGANWorker.local_sums`."""
        n = sums[-1]
        return sums[:self.m] / n, sums[self.m:2 * self.m] / n

    def reduced_monitor(self):
        """Metrics from reductions of the workers' local sums: the residual ``||F(z)||`` of
        the expected game, the generator's moment errors ``||a - m1||``, ``||b - sd||`` and
        the critic norm ``||(w, c)||``."""
        from sparsecert.distributed.qoda.algorithm import ReducedMonitor

        def finish(total: np.ndarray, z: np.ndarray) -> dict[str, float]:
            m1, m2 = self.moments(total)
            star = self.equilibrium(m1, m2)
            m = self.m
            return {"residual": float(np.linalg.norm(self.operator(z, m1, m2))),
                    "mean_err": float(np.linalg.norm(z[:m] - star[:m])),
                    "sd_err": float(np.linalg.norm(z[m:2 * m] - star[m:2 * m])),
                    "critic": float(np.linalg.norm(z[2 * m:]))}

        return ReducedMonitor(local=lambda worker, z: worker.local_sums(), finish=finish)
