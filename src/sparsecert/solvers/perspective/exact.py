"""Strategy: the closed-form leaf. A node without free features is a plain ridge problem.

Applies when no feature is free (every feature fixed, or no more free features than budget, see
``node``), with the squared loss and no box: then the relaxation is ``min ||y - X_I b||^2 +
lambda2 ||b||^2`` on the fixed-in columns ``I``, solved by one linear solve (the primal normal
equations when ``|I| <= n``, the dual ones otherwise). The caller evaluates the objective and the
valid bound at the solution, which then agree to rounding. (With an eigen shift the shifted
objective has the same minimiser: the shift cancels on fixed-in coordinates.)
"""

from __future__ import annotations

import math

import numpy as np

from sparsecert.solvers.perspective._gfun import IN
from sparsecert.solvers.perspective._linalg import dense_columns
from sparsecert.solvers.perspective.evaluate import finish
from sparsecert.solvers.perspective.node import Iterated

__all__ = ["exact_ridge", "ExactLeaf", "EXACT_LEAF"]


class ExactLeaf:
    """The closed-form leaf strategy (see the module's docstring)."""

    name = "exact"

    def applies(self, node) -> bool:
        """No free feature, a loss with a closed-form refit (least squares) and no box (nor
        other coefficient bounds)."""
        prob = node.prob
        return (node.n_free == 0 and prob.loss_fn.has_closed_form_refit and prob.M == math.inf
                and prob.coef_bounds is None)

    def solve(self, node, start, limits):
        """One linear solve; the bound is evaluated at the solution (it meets the objective)."""
        coef = exact_ridge(node.prob, node.state)
        return finish(node, limits, Iterated(coef, status="converged"))


#: the strategy's one instance
EXACT_LEAF = ExactLeaf()


def exact_ridge(prob, state: np.ndarray) -> np.ndarray:
    """The ridge solution on the fixed-in columns (zeros elsewhere)."""
    p = prob.n_features
    coef = np.zeros(p)
    idx = np.flatnonzero(state == IN)
    if idx.size == 0:
        return coef
    XI = dense_columns(prob.design, idx)  # (at most k columns)
    n = XI.shape[0]
    if idx.size <= n:
        G = XI.T @ XI
        G[np.diag_indices_from(G)] += prob.lambda2
        coef[idx] = np.linalg.solve(G, XI.T @ prob.y)
    else:  # dual form: b = X^T (X X^T + lam I)^{-1} y
        K = XI @ XI.T
        K[np.diag_indices_from(K)] += prob.lambda2
        coef[idx] = XI.T @ np.linalg.solve(K, prob.y)
    return coef
