"""The first run: compile the kernels a search needs, once, on both cores, and say so.

numba compiles the node solver, the refit and the heuristics' kernels on their first call and
caches them on disk (next to the package), so only the first run of a configuration (loss,
box, intercept, eigen shift, node strategy) pays. :func:`needs_compiling` reads numba's cache
to tell; then :func:`warm_up` compiles what a search of that configuration uses, on a tiny
problem that takes the same code paths, so that the caller can announce the compilation and
time it.

numba compiles one function at a time per process, so :func:`warm_up` compiles the node
solver's kernel in a second process (it writes numba's on-disk cache) while this process
compiles the rest (the refit, the heuristics, the bound evaluation); the tiny search that
follows loads the node kernel from the cache. Should the second process fail, this process
compiles the kernel itself: only the time differs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

__all__ = ["needs_compiling", "warm_up", "tiny_config", "tiny_problem"]

#: the tiny problems' shapes, tried in this order until one takes the real problem's strategy
_SHAPES = ((8, 6), (8, 40), (120, 6), (120, 500))
#: seconds to wait for the compiling process before compiling here
_CHILD_TIMEOUT = 300.0


def needs_compiling(problem) -> bool:
    """True when numba's cache holds no node kernel for ``problem``'s argument types."""
    from sparsecert.solvers.perspective.compiled import node_kernels_cached

    return node_kernels_cached(problem) is False


def tiny_problem(loss: str, boxed: bool, fit_intercept: bool, shifted: bool, n: int, p: int):
    """A tiny problem of the given configuration (deterministic: the same in every process)."""
    from sparsecert.solvers.perspective import RelaxationProblem

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, p))
    u = X[:, 0] - X[:, 1]
    if loss == "squared":
        y = u + 0.5 * rng.standard_normal(n)
    elif loss == "poisson":
        y = rng.poisson(np.exp(0.3 * u)).astype(float)
    else:
        y = np.where(u + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
        y[:2] = (1.0, -1.0)
    return RelaxationProblem.from_data(X, y, 1.0, loss=loss, max_abs_coef=1.0 if boxed else None,
                                       eig_shift="auto" if shifted else None,
                                       fit_intercept=fit_intercept)


def _root_strategy(problem) -> str:
    from sparsecert.solvers.perspective.api import strategy

    p = problem.n_features
    return strategy(problem, p, p)


def tiny_config(problem) -> tuple:
    """``(loss, boxed, fit_intercept, shifted, n, p)`` of a tiny problem whose root node takes
    the same strategy (z-space, working set or full FISTA) as ``problem``'s."""
    base = (problem.loss, bool(problem.M < np.inf), bool(problem.fit_intercept),
            bool(problem.mu > 0.0))
    want = _root_strategy(problem)
    wide = problem.n_features >= 4 * problem.n_samples
    shapes = sorted(_SHAPES, key=lambda s: (s[1] >= 4 * s[0]) != wide)  # like-shaped first
    for n, p in shapes:
        if _root_strategy(tiny_problem(*base, n, p)) == want:
            return (*base, n, p)
    return (*base, *shapes[0])


def compile_node_kernel(config: tuple) -> None:
    """Compile the FISTA node kernel for the argument types of ``config``'s problems."""
    from sparsecert.solvers.loss_kernels import loss_value
    from sparsecert.solvers.perspective._fista import (
        fista_chunk,
        fista_data,
        intercept,
        new_iterate,
    )
    from sparsecert.solvers.perspective._prox import prox_node

    prob = tiny_problem(*config)
    n, p = prob.n_samples, prob.n_features
    state = np.full(p, 2, dtype=np.int8)
    # first what only the FISTA kernel calls (the other process compiles the bound's kernels
    # meanwhile; whichever process comes second to a shared callee loads it from the cache)
    prox_node(np.zeros(p), state, 1, 1.0, float(prob.M))
    loss_value(int(prob.loss_id), np.zeros(n), prob.y)
    it = new_iterate(np.zeros(p), np.zeros(n), 1.0, 0.0)
    fista_chunk(fista_data(prob), intercept(prob), state, 1, it, 1e-6, 0, 1, np.inf, 1.0)


def _spawn(config: tuple) -> subprocess.Popen | None:
    """Start a process that compiles the node kernel (``None`` if it cannot be started)."""
    code = ("import sys; from sparsecert.bnb.warmup import compile_node_kernel; "
            "a = sys.argv[1:]; compile_node_kernel((a[0], a[1] == '1', a[2] == '1', "
            "a[3] == '1', int(a[4]), int(a[5])))")
    loss, boxed, icpt, shifted, n, p = config
    args = [loss, *("1" if b else "0" for b in (boxed, icpt, shifted)), str(n), str(p)]
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([pkg_root, *filter(None, [env.get("PYTHONPATH")])])
    try:
        return subprocess.Popen([sys.executable, "-c", code, *args], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    except (OSError, ValueError):
        return None


def _compile_here(tiny) -> None:
    """What the search compiles besides the node kernel: the refit and heuristics, the bound."""
    from sparsecert.solvers.heuristics import SupportRefitter, beam_search, swap_search
    from sparsecert.solvers.perspective._linalg import xb
    from sparsecert.solvers.perspective.evaluate import full_bound, objective

    p = tiny.n_features
    state = np.full(p, 2, dtype=np.int8)
    b = np.zeros(p)
    ub = xb(tiny.XT, b)
    objective(tiny, state, 2, b, ub)  # first the callees the FISTA kernel shares
    full_bound(tiny, state, 2, b, ub)
    refitter = SupportRefitter.for_problem(tiny)
    swap_search(refitter, beam_search(refitter, 2), 2)


def warm_up(problem) -> float:
    """Compile what a search of ``problem``'s configuration uses, then run a silent search on a
    tiny problem like it; returns the seconds it took."""
    from sparsecert.bnb.search import BnBSettings, BranchAndBound

    t0 = time.perf_counter()
    config = tiny_config(problem)
    child = _spawn(config) if _root_strategy(problem) != "zspace" else None
    tiny = tiny_problem(*config)
    try:
        _compile_here(tiny)
    finally:
        if child is not None:
            try:
                child.wait(timeout=_CHILD_TIMEOUT)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    BranchAndBound(tiny, 2, BnBSettings(), verbose=0).run()
    return time.perf_counter() - t0
