"""Is the node solver already compiled for a problem? (numba's on-disk cache, read-only)

The first run of the package compiles its numba kernels (several seconds) and caches them on
disk; later runs load them. :func:`node_kernels_cached` tells the two apart before any
compilation, from numba's cache index, for the exact argument types a node solve of the
problem will use, so that the caller can say once that kernels are being compiled. This reads
numba's private dispatcher cache (guarded: any surprise means "cannot tell").
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_cached", "node_kernels_cached", "zspace_applies"]


def is_cached(dispatcher, args: tuple) -> bool | None:
    """Does ``dispatcher`` hold a compiled version for ``args``, in memory or in its cache?

    ``None`` when it cannot be told (caching disabled, an unknown numba version, the JIT off).
    """
    try:
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        if sig in dispatcher.overloads:
            return True
        cache = dispatcher._cache  # numba's FunctionCache (private API: guarded)
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 - any failure means "unknown", never an error
        return None


def zspace_applies(prob) -> bool:
    """Can the problem's nodes be solved in z-space (then its search races both node
    kernels, see ``solvers.perspective.strategies.race``)?"""
    from sparsecert.solvers.perspective.zspace import applies

    return applies(prob, 1)


def node_kernels_cached(prob) -> bool | None:
    """Are the node kernels a search of ``prob`` uses compiled (or cached) for its argument
    types? The FISTA kernel and the step-size estimate of a working set, and the z-space loop
    too when z-space applies to the problem."""
    from sparsecert.firstrun.precompile import zspace_calls
    from sparsecert.solvers.perspective._fista import (
        fista_chunk,
        fista_data,
        intercept,
        new_iterate,
    )

    n, p = prob.n_samples, prob.n_features
    state = np.full(p, 2, dtype=np.int8)
    it = new_iterate(np.zeros(p), np.zeros(n), 1.0, 0.0)
    args = (fista_data(prob), intercept(prob), state, 1, it, 1e-6, 1, np.inf, 1e-6)
    from sparsecert.solvers.perspective._linalg import _lanczos_top

    answers = [is_cached(fista_chunk, args), is_cached(_lanczos_top, (prob.design, 1, 0))]
    if zspace_applies(prob):
        answers += [is_cached(kernel, a) for kernel, a in zspace_calls(prob)]
    if False in answers:
        return False
    return None if None in answers else True
