"""Is the node solver already compiled for a problem? (numba's on-disk cache, read-only)

The first run of the package compiles its numba kernels (several seconds) and caches them on
disk; later runs load them. :func:`node_kernels_cached` tells the two apart before any
compilation, from numba's cache index, for the exact argument types a node solve of the
problem will use, so that the caller can say once that kernels are being compiled. This reads
numba's private dispatcher cache (guarded: any surprise means "cannot tell").
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_cached", "node_kernels_cached"]


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


def node_kernels_cached(prob) -> bool | None:
    """Is the node kernel compiled (or cached) for the argument types of ``prob``'s nodes?

    The z-space loop for a problem whose root is solved in z-space (its nodes never call the
    FISTA kernel), the FISTA kernel otherwise.
    """
    from sparsecert.solvers.perspective.api import strategy

    p = prob.n_features
    if strategy(prob, p, p) == "zspace":
        return _zspace_cached(prob)
    from sparsecert.solvers.perspective._fista import (
        fista_chunk,
        fista_data,
        intercept,
        new_iterate,
    )

    n, p = prob.n_samples, prob.n_features
    state = np.full(p, 2, dtype=np.int8)
    it = new_iterate(np.zeros(p), np.zeros(n), 1.0, 0.0)
    args = (fista_data(prob), intercept(prob), state, 1, it, 1e-6, 1, np.inf)
    return is_cached(fista_chunk, args)


def _zspace_cached(prob) -> bool | None:
    """Is the z-space loop compiled (or cached) for the argument types the z-space strategy
    passes for ``prob``?"""
    from sparsecert.solvers.perspective._fista import fista_data
    from sparsecert.solvers.perspective._zspace import ZColumns, new_ziterate, zspace_chunk

    n, m = prob.n_samples, 2
    XA = np.ascontiguousarray(prob.X[:, :m])
    XTA = np.ascontiguousarray(prob.XT[:m])
    state = np.full(m, 2, dtype=np.int8)
    cols = ZColumns(np.flatnonzero(state == 2), np.ones(m))
    it = new_ziterate(np.zeros(m), n, m)
    args = (fista_data(prob, XA, XTA), cols, state, 1, it, 1e-6, 1, np.inf)
    return is_cached(zspace_chunk, args)
