r"""z-space: the relaxation in the space of the indicators z (least squares, p >> n).

Applies to the squared loss without a box, an eigen shift or an intercept carried as a variable
(a centred intercept is fine), with free features; ``solve_node(solver="auto")`` uses it when
the active columns are at least ``ZSPACE_RATIO`` times the samples and ``n <= ZSPACE_MAX_N``,
or ``n <= ZSPACE_SMALL_N`` (an iteration costs at most an n x n factorisation),
``solver="zspace"`` forces it. There FISTA on b is slow because its step is ``1 / ||X||^2``
(riboflavin: ``||X||^2 = 1.8e7``), while the conditioning of X enters z-space only through
small solves.

For least squares without a box the inner minimisation over b is a weighted ridge with a
closed form in the n x n "kernel" space:

    phi(z) = min_b ||y - X b||^2 + lambda2 sum_j b_j^2 / z_j = y^T alpha,
    alpha  = (I + X diag(z) X^T / lambda2)^{-1} y,   b(z) = diag(z) X^T alpha / lambda2,

and the relaxation is ``min { phi(z) : z in Z_node }`` (Z_node: z = 1 on S1, 0 on S0, the free
entries in [0, 1] with sum <= k - |S1|). ``phi`` is convex and smooth, with gradient
``-(X_j^T alpha)^2 / lambda2``: accelerated projected gradient (FISTA with backtracking and
function-value restart) on ``z``, with the exact projection of ``_zspace.project_capped``.

The bound at any z is the Fenchel dual at ``zeta = -2 alpha`` (which is ``f'(X b(z))``):

    D(-2 alpha) = 2 y^T alpha - ||alpha||^2 - 2 lambda2 g*_node(X^T alpha / lambda2),

valid for every alpha (it is exactly phi(z) + min_{z' in Z} grad phi(z)^T (z' - z), the
Frank-Wolfe gap bound). ``b(z)`` is primal feasible with ``P(b(z)) <= phi(z)``.

The whole loop is compiled (``_zspace.zspace_chunk``, no Python per iteration) and works on the
active columns only (after reduced-cost fixing, a few dozen of riboflavin's 4088). ``alpha``
comes from the smaller of two systems: with ``s`` columns of positive ``z`` and
``B = diag(z / lambda2)^{1/2} X_S^T``, Woodbury's ``alpha = y - B^T (I + B B^T)^{-1} B y`` (an
s x s factorisation: the relaxed solutions of riboflavin's nodes have s of about 15 < n = 71),
else ``(I + B^T B)^{-1} y`` (n x n).
"""

from __future__ import annotations

import time

import numpy as np

from sparsecert.solvers.perspective._gfun import FREE, OUT, relaxed_z
from sparsecert.solvers.perspective._zspace import (
    CONVERGED,
    CUTOFF,
    FAILED,
    MAX_ITER,
    RUNNING,
    S_BEST,
    S_IT,
    S_REST,
    project_capped,
    zspace_chunk,
)
from sparsecert.solvers.perspective.evaluate import finish

__all__ = ["solve_zspace", "applies", "ZSpaceFailed", "CHUNK"]

#: iterations per call of the compiled loop (the deadline is checked between calls)
CHUNK = 100
_STATUS = {CONVERGED: "converged", CUTOFF: "cutoff", MAX_ITER: "max_iter"}


def applies(prob, n_free: int) -> bool:
    """Can the node be solved in z-space (a loss with a closed-form refit, least squares; no
    box, no shift, no carried intercept, some free feature)?"""
    return (prob.loss_fn.has_closed_form_refit and prob.M == np.inf and prob.mu == 0.0
            and not prob.icpt and n_free > 0)


class ZSpaceFailed(ArithmeticError):
    """The z-space solve lost positive definiteness to rounding; the caller uses FISTA."""


def solve_zspace(prob, state, budget, x0, rel_tol, max_iter, cut, deadline, t0):
    """Accelerated projected gradient on z from ``x0``'s relaxed indicators (or, from zero, the
    ``budget`` free columns most correlated with y); the bound is ``D(-2 alpha)``.

    The loop runs in the compiled :func:`~sparsecert.solvers.perspective._zspace.zspace_chunk`
    on the active (not fixed-out) columns only; :class:`ZSpaceFailed` when its n x n (or
    Woodbury) system is lost to rounding.
    """
    p = prob.n_features
    act = np.flatnonzero(state != OUT)
    stA = np.ascontiguousarray(state[act])
    freeA = np.flatnonzero(stA == FREE)
    free = act[freeA]
    if act.size == p:
        XA, XTA = np.ascontiguousarray(prob.X), prob.XT
    else:
        XA, XTA = np.ascontiguousarray(prob.X[:, act]), np.ascontiguousarray(prob.XT[act])
    if np.any(x0 != 0.0):
        zf = relaxed_z(x0, state, budget)[free]
    else:  # the budget free columns most correlated with y
        c0 = np.abs(XTA[freeA] @ prob.y)
        zf = np.zeros(free.size)
        zf[np.argsort(-c0)[:budget]] = 1.0
    zf = project_capped(np.ascontiguousarray(zf, dtype=np.float64), float(budget))
    norms = np.einsum("ij,ij->i", XTA, XTA)
    zp = np.empty(free.size)
    scal = np.array([1.0, 1.0, np.nan, -np.inf, 0.0, 0.0])
    bpA = np.zeros(act.size)
    dual = np.zeros(prob.n_samples)
    c_last = np.zeros(act.size)
    while True:
        code = zspace_chunk(XA, XTA, prob.y, float(prob.lambda2), stA, freeA, int(budget), norms,
                            zf, zp, scal, bpA, dual, c_last, float(rel_tol), int(max_iter),
                            CHUNK, float(cut))
        if code == FAILED:
            raise ZSpaceFailed("the n x n system of the z-space solve is not numerically "
                               "positive definite")
        if code != RUNNING:
            status = _STATUS[code]
            break
        if deadline is not None and time.perf_counter() >= deadline:
            status = "time_limit"
            break
    best = float(scal[S_BEST])
    bp = None
    if best > -np.inf:
        bp = np.zeros(p)
        bp[act] = bpA
    else:
        dual = None
    zA = np.where(stA == FREE, 0.0, 1.0)
    zA[freeA] = zf
    coef = np.zeros(p)
    coef[act] = zA * c_last / prob.lambda2
    return finish(prob, state, budget, coef, best, bp, dual, int(scal[S_IT]),
                  int(scal[S_REST]), status, t0, rel_tol, cut)
