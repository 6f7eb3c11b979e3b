"""Compiling the node solver's kernels for a configuration, on a tiny problem of that kind.

A configuration is ``(loss, boxed, fit_intercept, shifted, n, p)``: the argument types of the
numba kernels depend on it (and the node strategy on the shape). The first run of a search
compiles in two processes (see :mod:`sparsecert.bnb.warmup`), which share their work through
numba's on-disk cache. The second process runs :func:`child_main`, which imports only this
module's dependencies (numpy, numba, the kernels): it compiles the kernels that both processes'
top-level kernels call (:func:`compile_shared`) and says so on its standard output; meanwhile
the first process compiles the other callees of the FISTA node kernel
(:func:`compile_node_callees`) and then closes the second process's standard input; the second
process then compiles the node kernel itself (:func:`compile_node_kernel`), loading all its
callees from the cache.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["tiny_problem", "compile_shared", "compile_node_callees", "compile_node_kernel",
           "child_main", "SHARED_DONE"]

#: the line the compiling process prints once the shared kernels are in numba's cache
SHARED_DONE = "shared-kernels-compiled"


def tiny_problem(loss: str, boxed: bool, fit_intercept: bool, shifted: bool, n: int, p: int):
    """A tiny problem of the given configuration (deterministic: the same in every process)."""
    from sparsecert.solvers.perspective.problem import RelaxationProblem

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


def compile_shared(config: tuple) -> None:
    """Compile the kernels that both the node kernel and the bound evaluation call.

    Called with the argument types those callers pass, so that either process finds them in
    numba's on-disk cache afterwards.
    """
    from sparsecert.solvers.loss_kernels import loss_value_grad
    from sparsecert.solvers.perspective._gfun import g_node, gstar_node
    from sparsecert.solvers.perspective._linalg import xt_dot

    prob = tiny_problem(*config)
    n, p = prob.n_samples, prob.n_features
    b, u, z = np.zeros(p), np.zeros(n), np.zeros(n)
    state = np.full(p, 2, dtype=np.int8)
    M = float(prob.M)
    g_node(b, state, 1, M)
    gstar_node(b, state, 1, M)
    loss_value_grad(int(prob.loss_id), u, prob.y, z)
    xt_dot(prob.X, z, b)


def compile_node_callees(prob) -> None:
    """Compile the node kernel's callees that the bound evaluation does not call (the proximal
    operator, the loss value, ``X b``, the polishing schedule; the intercept's dual when the
    problem carries one), with the argument types the node kernel passes for ``prob`` (a tiny
    problem of the configuration)."""
    from sparsecert.solvers.loss_kernels import conjugate_sum, loss_value
    from sparsecert.solvers.perspective._bound import icpt_grad_dual
    from sparsecert.solvers.perspective._fista import _polish_due, new_iterate
    from sparsecert.solvers.perspective._linalg import x_dot
    from sparsecert.solvers.perspective._prox import prox_node

    n, p = prob.n_samples, prob.n_features
    b, u = np.zeros(p), np.zeros(n)
    state = np.full(p, 2, dtype=np.int8)
    prox_node(b, state, 1, 1.0, float(prob.M))
    loss_value(int(prob.loss_id), u, prob.y)
    x_dot(prob.XT, b, u)
    it = new_iterate(b, u, 1.0, 0.0)
    it.set("pol_n", n)
    it.set("pol_active", p)
    _polish_due(it.x, it.sig, it.sc[0])
    if prob.icpt:
        icpt_grad_dual(prob.X, prob.y, int(prob.loss_id), u, prob.cls, prob.Xty, np.zeros(p),
                       np.zeros(n), np.zeros(p))
        conjugate_sum(int(prob.loss_id), u, prob.y)


def compile_node_kernel(config: tuple) -> None:
    """Compile the FISTA node kernel for the argument types of ``config``'s problems."""
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
    prox_node(np.zeros(p), state, 1, 1.0, float(prob.M))
    it = new_iterate(np.zeros(p), np.zeros(n), 1.0, 0.0)
    fista_chunk(fista_data(prob), intercept(prob), state, 1, it, 1e-6, 0, 1, np.inf, 1.0)


def child_main(argv: list[str]) -> None:
    """The compiling process: ``argv = [loss, boxed, fit_intercept, shifted, n, p]`` (0/1).

    After the shared kernels it waits for its standard input to reach its end (the other
    process closes it once the node kernel's other callees are in the cache; should that
    process end, the input ends too), then compiles the node kernel.
    """
    config = (argv[0], argv[1] == "1", argv[2] == "1", argv[3] == "1", int(argv[4]),
              int(argv[5]))
    compile_shared(config)
    print(SHARED_DONE, flush=True)
    try:
        sys.stdin.read()
    except (OSError, ValueError, AttributeError):
        pass
    compile_node_kernel(config)


if __name__ == "__main__":
    child_main(sys.argv[1:])
