"""Synthetic data used by the benchmarks, examples and tests.

The family of the benchmarks: rows of ``X`` are ``N(0, Sigma)`` with ``Sigma_ij = rho^|i-j|``;
``beta*`` has ``k`` equally spaced ones; least squares ``y = X beta* + noise`` at the given
signal-to-noise ratio ``Var(X beta*) / Var(noise)``; logistic labels ``sign(X beta* + noise)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_synthetic", "true_support"]


def true_support(p: int, k: int) -> np.ndarray:
    """The ``k`` equally spaced indices carrying the signal."""
    if not 1 <= k <= p:
        raise ValueError(f"need 1 <= k <= p, got k={k}, p={p}")
    return np.unique(np.linspace(0, p - 1, k).round().astype(int))


def make_synthetic(n: int, p: int, k: int, *, rho: float = 0.5, snr: float = 5.0,
                   loss: str = "squared", seed: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """Draw ``(X, y, beta*)`` from the benchmark family.

    Parameters
    ----------
    n, p, k : int
        Samples, features, true support size.
    rho : float
        Correlation decay, ``|rho| < 1``.
    snr : float
        Signal-to-noise ratio (> 0).
    loss : {"squared", "logistic"}
        Continuous response, or labels in {-1, +1}.
    seed : int

    Returns
    -------
    X : numpy.ndarray of shape (n, p)
    y : numpy.ndarray of shape (n,)
    beta : numpy.ndarray of shape (p,)
    """
    if not (abs(rho) < 1):
        raise ValueError(f"rho must satisfy |rho| < 1, got {rho}")
    if not snr > 0:
        raise ValueError(f"snr must be positive, got {snr}")
    rng = np.random.default_rng(seed)
    # AR(1) rows: x_j = rho x_{j-1} + sqrt(1 - rho^2) e_j has exactly Sigma_ij = rho^|i-j|
    E = rng.standard_normal((n, p))
    X = np.empty((n, p))
    X[:, 0] = E[:, 0]
    s = np.sqrt(1.0 - rho * rho)
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + s * E[:, j]
    beta = np.zeros(p)
    beta[true_support(p, k)] = 1.0
    signal = X @ beta
    sigma = np.sqrt(np.var(signal) / snr) if np.var(signal) > 0 else 1.0
    noisy = signal + sigma * rng.standard_normal(n)
    if loss == "squared":
        y = noisy
    elif loss == "logistic":
        y = np.where(noisy > 0, 1.0, -1.0)
    else:
        raise ValueError(f"loss must be 'squared' or 'logistic', got {loss!r}")
    return X, y, beta
