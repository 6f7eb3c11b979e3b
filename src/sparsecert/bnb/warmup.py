"""The first run: compile the kernels a search needs, once, and say so.

numba compiles the node solver, the refit and the heuristics' kernels on their first call and
caches them on disk (next to the package), so only the first run of a configuration (loss,
box, intercept, wide or not) pays. :func:`needs_compiling` reads numba's cache to tell; then
:func:`warm_up` compiles everything by running a complete search on a tiny problem of the same
configuration, so that the caller can announce the compilation and time it.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["needs_compiling", "warm_up"]


def needs_compiling(problem) -> bool:
    """True when numba's cache holds no node kernel for ``problem``'s argument types."""
    from sparsecert.solvers.perspective.compiled import node_kernels_cached

    return node_kernels_cached(problem) is False


def _tiny_like(problem):
    """A tiny problem that takes the same code paths (and argument types) as ``problem``."""
    from sparsecert.solvers.perspective import RelaxationProblem

    rng = np.random.default_rng(0)
    n = 8
    wide = problem.n_features >= 4 * problem.n_samples
    p = 40 if wide else 6
    X = rng.standard_normal((n, p))
    u = X[:, 0] - X[:, 1]
    if problem.loss == "squared":
        y = u + 0.5 * rng.standard_normal(n)
    elif problem.loss == "poisson":
        y = rng.poisson(np.exp(0.3 * u)).astype(float)
    else:
        y = np.where(u + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
        y[:2] = (1.0, -1.0)
    M = None if problem.M == np.inf else 1.0
    return RelaxationProblem.from_data(X, y, 1.0, loss=problem.loss, max_abs_coef=M,
                                       fit_intercept=problem.fit_intercept)


def warm_up(problem) -> float:
    """Run a silent search on a tiny problem like ``problem``; returns the seconds it took."""
    from sparsecert.bnb.search import BnBSettings, BranchAndBound

    t0 = time.perf_counter()
    BranchAndBound(_tiny_like(problem), 2, BnBSettings(), verbose=0).run()
    return time.perf_counter() - t0
