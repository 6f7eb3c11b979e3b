"""Small sparse GLM data sets for the tests (one maker instead of one per file)."""

from __future__ import annotations

import numpy as np


def sparse_glm_data(loss: str, n: int, p: int, seed: int = 0, *, rho: float = 0.0,
                    support=(0, 3, -1), coef=(1.0, -0.7, 0.5), noise: float = 0.5,
                    offset: float = 0.0, poisson_scale: float = 0.3):
    """``X`` with AR(1) correlation ``rho`` between columns, a sparse linear signal
    ``u = X[:, support] @ coef``, and a target for ``loss``: ``u + noise + offset``
    (squared), ``Poisson(exp(poisson_scale * u))`` (poisson) or ``sign(u + noise)`` in {-1, +1}
    (the classification losses)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    if rho:
        cov = rho ** np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
        X = X @ np.linalg.cholesky(cov).T
    cols = [j % p for j in support]
    u = X[:, cols] @ np.asarray(coef, dtype=float)
    if loss == "squared":
        y = u + noise * rng.normal(size=n) + offset
    elif loss == "poisson":
        y = rng.poisson(np.exp(poisson_scale * u)).astype(float)
    else:
        y = np.where(u + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y
