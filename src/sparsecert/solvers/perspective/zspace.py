r"""Strategy: the relaxation in the space of the indicators z (least squares, p >> n).

Applies to the squared loss without a box, an eigen shift or an intercept carried as a variable
(a centred intercept is fine), with free features, on a dense design;
``solve_node(solver="auto")`` uses it when its expected cost on the node is below FISTA's
(``cost``: an iteration costs a product with the active columns and a factorisation of the
smaller of ``s x s`` and ``n x n``, ``s`` the positive entries of z), ``solver="zspace"``
forces it. There FISTA on b is slow because its
step is ``1 / ||X||^2`` (riboflavin: ``||X||^2 = 1.8e7``), while the conditioning of X enters
z-space only through small solves.

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

import numpy as np

from sparsecert.solvers.perspective._fista import fista_data
from sparsecert.solvers.perspective._gfun import FREE, relaxed_z
from sparsecert.solvers.perspective._linalg import sub_design
from sparsecert.solvers.perspective._zspace import (
    ST_FAILED,
    ZColumns,
    new_ziterate,
    project_capped,
    zspace_chunk,
)
from sparsecert.solvers.perspective.cost import zspace_cost
from sparsecert.solvers.perspective.evaluate import finish
from sparsecert.solvers.perspective.node import Iterated
from sparsecert.solvers.perspective.runner import Runner

__all__ = ["ZSpace", "ZSPACE", "applies", "ZSpaceFailed", "CHUNK"]

#: iterations per call of the compiled loop (the deadline is checked between calls)
CHUNK = 100


def applies(prob, n_free: int) -> bool:
    """Can the node be solved in z-space (a loss with a closed-form refit, least squares; no
    box nor other coefficient bounds, no shift, no carried intercept, some free feature; a
    dense design: the loop reads the active columns densely)?"""
    return (prob.loss_fn.has_closed_form_refit and prob.M == np.inf and prob.mu == 0.0
            and prob.coef_bounds is None and not prob.icpt and n_free > 0 and not prob.sparse)


class ZSpaceFailed(ArithmeticError):
    """The z-space solve lost positive definiteness to rounding; the caller uses FISTA."""


class ZSpace:
    """The z-space strategy (see the module's docstring)."""

    name = "zspace"

    def applies(self, node) -> bool:
        """Squared loss, no box, no eigen shift, no carried intercept, some free feature."""
        return applies(node.prob, node.n_free)

    def expected_cost(self, node, s: int, iterations) -> float:
        """The node's expected cost with ``s`` positive indicators and ``iterations``
        (:class:`~.cost.Iterations`) (:func:`~.cost.zspace_cost`)."""
        prob = node.prob
        return zspace_cost(prob.n_samples, node.n_active, prob.n_features, s, iterations.zspace)

    def solve(self, node, start, limits):
        """Accelerated projected gradient on z from the relaxed indicators of ``start.x`` (or,
        from zero, the ``budget`` free columns most correlated with y); the bound is
        ``D(-2 alpha)``.

        The loop runs in the compiled :func:`~sparsecert.solvers.perspective._zspace.zspace_chunk`
        on the active (not fixed-out) columns only; :class:`ZSpaceFailed` when its n x n (or
        Woodbury) system is lost to rounding.
        """
        prob, state, budget, act = node.prob, node.state, node.budget, node.active
        p = prob.n_features
        stA = np.ascontiguousarray(state[act])
        freeA = np.flatnonzero(stA == FREE)
        free = act[freeA]
        if act.size == p:
            DA = prob.design
        else:
            DA = sub_design(prob.design, act)
        XTA = DA.XT
        if not start.is_zero:
            zf = relaxed_z(start.x, state, budget)[free]
        else:  # the budget free columns most correlated with y
            c0 = np.abs(XTA[freeA] @ prob.y)
            zf = np.zeros(free.size)
            zf[np.argsort(-c0)[:budget]] = 1.0
        zf = project_capped(np.ascontiguousarray(zf, dtype=np.float64), float(budget))
        data = fista_data(prob, DA, act)
        cols = ZColumns(freeA, np.einsum("ij,ij->i", XTA, XTA))
        it = new_ziterate(zf, prob.n_samples, act.size)
        runner = Runner(limits.deadline, max_chunk=CHUNK)
        status, n_it = runner.run(lambda m: zspace_chunk(data, cols, stA, int(budget), it,
                                                         float(limits.rel_tol), m,
                                                         float(limits.cutoff),
                                                         float(limits.open_tol)),
                                  limits.max_iter)
        if status == ST_FAILED:
            raise ZSpaceFailed("the n x n system of the z-space solve is not numerically "
                               "positive definite")
        best = it.get("best")
        bp = dual = None
        if best > -np.inf:
            bp = np.zeros(p)
            bp[act] = it.bound_point
            dual = it.dual
        zA = np.where(stA == FREE, 0.0, 1.0)
        zA[freeA] = it.z
        coef = np.zeros(p)
        coef[act] = zA * it.c / prob.lambda2
        return finish(node, limits, Iterated(coef, 0.0, best, bp, dual, n_it,
                                             int(it.get("n_restart")),
                                             runner.status_name(status)))


#: the strategy's one instance
ZSPACE = ZSpace()
