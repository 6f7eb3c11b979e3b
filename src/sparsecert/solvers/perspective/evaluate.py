"""What every strategy ends with: the objective and the valid bound over all active columns,
and the result record.

Whatever a strategy iterated on (all columns, a working set, the indicators z), its answer is
judged here on the node's full problem: ``P`` at the final iterate, the bound there (kept only if
it beats the strategy's running maximum), the intercept mapped back to the user's coordinates,
and, with an unpenalised intercept, the dyadic zero-sum dual and the bound recomputed at it.
"""

from __future__ import annotations

import math
import time

import numpy as np

from sparsecert.solvers.perspective._bound import dual_value, point_values
from sparsecert.solvers.perspective._box_or_bounds import relaxed_z_any_into
from sparsecert.solvers.perspective._fista import fista_data
from sparsecert.solvers.perspective._linalg import xb
from sparsecert.solvers.perspective.result import RelaxationResult
from sparsecert.solvers.perspective.zero_sum import dyadic_zero_sum, icpt_bound

__all__ = ["objective", "full_bound", "finish"]


def objective(prob, state: np.ndarray, budget: int, b: np.ndarray, ub: np.ndarray,
              data=None) -> float:
    """``P(b)`` with ``ub = X b`` (plus the intercept); ``data``: ``fista_data(prob)`` if the
    caller has it."""
    zeta = np.empty(ub.shape[0])
    P, _ = point_values(fista_data(prob) if data is None else data, state, budget, b, ub, zeta,
                        False)
    return float(P)


def full_bound(prob, state: np.ndarray, budget: int, b: np.ndarray, ub: np.ndarray
               ) -> tuple[float, np.ndarray]:
    """The valid bound ``LB(b)`` over all active columns and its ``zeta = f'(X b)``."""
    zeta = np.empty(prob.n_samples)
    _, lb = point_values(fista_data(prob), state, budget, b, ub, zeta, True)
    return float(lb), zeta


def finish(node, limits, run, data=None) -> RelaxationResult:
    """Final objective and bound at the final iterate (both over all columns), the record.

    ``node`` (:class:`~.node.NodeProblem`), ``limits`` (:class:`~.node.Limits`), ``run``
    (:class:`~.node.Iterated`: the strategy's final iterate, its best bound with the point and
    dual vector that attained it, the intercept carried as a variable); ``data``:
    ``fista_data(prob)`` if the caller has it.
    """
    prob, state, budget, out = node.prob, node.state, node.budget, node.out
    best, bp, dual, c = run.best, run.bound_point, run.dual, run.c
    coef = np.where(out, 0.0, run.coef)
    ux = xb(prob.design, coef)
    if prob.icpt:
        ux += c
    zeta_end = np.empty(prob.n_samples)
    obj, lb_end = point_values(fista_data(prob) if data is None else data, state, budget, coef,
                               ux, zeta_end, not prob.icpt)
    z = np.empty(prob.n_features)
    relaxed_z_any_into(coef, state, budget, z, prob.coef_bounds)
    obj = float(obj)
    if prob.icpt:
        lb_end, zeta_end = icpt_bound(prob, state, budget, ux)
    if bp is None or not lb_end <= best:
        # a copy of coef, which is already zero on the columns fixed out
        best, bp, dual = lb_end, coef.copy(), zeta_end
    else:
        bp = np.where(out, 0.0, bp)
    if prob.icpt:
        # certify with a dual whose entries are dyadic and whose sum is exactly zero
        dual = dyadic_zero_sum(dual, prob.y, prob.loss_fn, prob.sample_weight)
        best = float(dual_value(prob.design, prob.y, prob.loss_spec, prob.lambda2, prob.M,
                                state, budget, dual, prob.coef_bounds))
    gap = (obj - best) / max(1.0, abs(obj)) if math.isfinite(obj) else math.inf
    status = run.status
    if status in ("max_iter", "time_limit"):
        if best >= limits.cutoff:
            status = "cutoff"
        elif gap <= limits.tol_at(obj):
            status = "converged"
    return RelaxationResult(
        coef=coef, intercept=prob.centring.user_intercept(coef, c), objective=obj,
        lower_bound=float(best), dual=dual, bound_point=bp, z=z,
        n_iter=int(run.n_iter), n_restarts=int(run.n_restarts), status=status,
        time=time.perf_counter() - limits.t0, eig_shift=float(prob.mu), gap=float(gap))
