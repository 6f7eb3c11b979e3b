"""The certified gap of any model: how far a given k-sparse model is from the optimum.

:func:`certified_gap` takes a model from anywhere (a Lasso refit, a greedy or swap heuristic,
another package's best-subset fit) and returns a proven lower bound on the optimum of the
problem it is judged on, the model's own objective, the gap between them and a certificate
that the standalone verifier re-checks: the certificate's incumbent is the given model, so a
verified certificate proves "this model is within this gap of the best k-sparse model". The
bound is the root relaxation's at least; the branch and bound tightens it while the time
budget lasts.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsecert._checks import _real_vector
from sparsecert._params import defaults, document
from sparsecert._validation import prepare
from sparsecert.problem import ProblemSpec, build_records

__all__ = ["certified_gap", "GapResult"]

_D = defaults("certify")

#: The default time budget of :func:`certified_gap`, in seconds.
DEFAULT_TIME_BUDGET = 10.0


@dataclass
class GapResult:
    """The certified gap of a given model.

    Attributes
    ----------
    objective : float
        The given model's objective ``sum_i w_i loss_i + lambda2 ||coef||^2`` on the data
        (computed in floating point; ``objective_upper`` is a rigorous upper bound of it).
    objective_upper : float
    lower_bound : float
        Proven lower bound on the optimum of the problem (every model that satisfies its
        constraints has an objective at least this).
    gap : float
        Relative gap ``(objective_upper - lower_bound) / max(1, |objective_upper|)``: the
        given model is proven to be at most this far from optimal.
    absolute_gap : float
    status : str
        ``"optimal"``: the given model is proven optimal within ``rel_gap`` (or ``abs_gap``);
        ``"time_limit"`` / ``"node_limit"`` / ``"interrupted"``: the search stopped before its
        bound was final; ``"tree_exhausted"``: the search ended on its own and the gap stays
        open (a better model exists: ``best_objective``); ``"precision_limited"``: rounding
        keeps the provable gap open.
    best_objective : float
        The objective of the best model the search found (at most ``objective``, up to
        rounding); ``best_coef`` and ``best_intercept`` are that model.
    best_coef : numpy.ndarray
    best_intercept : float
    n_nodes : int
    time : float
        Wall time in seconds (search and certificate).
    certificate : sparsecert.certificate.Certificate
        Its incumbent is the given model; :func:`sparsecert.verify` re-checks it.
    search : sparsecert.bnb.SearchResult
    """

    objective: float
    objective_upper: float
    lower_bound: float
    gap: float
    absolute_gap: float
    status: str
    best_objective: float
    best_coef: np.ndarray
    best_intercept: float
    n_nodes: int
    time: float
    certificate: Any = field(repr=False)
    search: Any = field(repr=False)

    def summary(self) -> str:
        """A few human-readable lines."""
        return (f"status: {self.status}\nmodel's objective: {self.objective:.10g}\n"
                f"proven lower bound on the optimum: {self.lower_bound:.10g}\n"
                f"certified gap: {self.gap:.3e} relative, {self.absolute_gap:.6g} absolute\n"
                f"best objective found: {self.best_objective:.10g}\n"
                f"nodes: {self.n_nodes}\ntime: {self.time:.2f} s")


def _check_model(coef, intercept, spec: ProblemSpec, p: int) -> tuple[np.ndarray, float]:
    """The given model as float64, checked against the problem it is judged on (its length,
    finiteness, an intercept only with ``fit_intercept``, the problem's constraints)."""
    b = np.array(_real_vector(coef, "coef"), dtype=np.float64)
    if b.shape != (p,):
        raise ValueError(f"coef has {b.shape[0]} entries, X has {p} features")
    bad = np.flatnonzero(~np.isfinite(b))
    if bad.size:
        raise ValueError(f"coef[{int(bad[0])}] = {float(b[bad[0]])!r} is not finite")
    if isinstance(intercept, bool) or not isinstance(intercept, (int, float, np.integer,
                                                                 np.floating)):
        raise TypeError(f"intercept must be a number, got {type(intercept).__name__}")
    c = float(intercept)
    if not math.isfinite(c):
        raise ValueError(f"intercept = {c!r} is not finite")
    if c != 0.0 and not spec.fit_intercept:
        raise ValueError(f"intercept = {c!r} but fit_intercept=False (the problem has no "
                         "intercept): pass intercept=0 or fit_intercept=True")
    support = set(np.flatnonzero(b).tolist())
    if len(support | set(spec.always_select)) > spec.k:
        raise ValueError(f"coef has {len(support)} non-zeros"
                         + (f" (with always_select, {len(support | set(spec.always_select))})"
                            if spec.always_select else "") + f", more than k = {spec.k}")
    out = sorted(support & set(spec.exclude))
    if out:
        raise ValueError(f"coef is non-zero on the excluded feature(s) {out[:5]}")
    lo, hi = spec.coef_limits(p)
    bad = np.flatnonzero((b < lo) | (b > hi))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"coef[{j}] = {b[j]!r} is outside its bounds [{lo[j]!r}, {hi[j]!r}] "
                         "(max_abs_coef, coef_bounds, positive)")
    return b, c


@document()
def certified_gap(X, y, coef, intercept: float = 0.0, *, k: int | None = None,
                  lambda2: float, loss: str = _D.loss, loss_params: dict | None = _D.loss_params,
                  fit_intercept: bool = _D.fit_intercept,
                  max_abs_coef: float | None = _D.max_abs_coef,
                  eig_shift: float | str | None = _D.eig_shift, sample_weight=_D.sample_weight,
                  offset=_D.offset, coef_bounds=_D.coef_bounds, positive: bool = _D.positive,
                  always_select=_D.always_select, exclude=_D.exclude,
                  time_limit: float | None = DEFAULT_TIME_BUDGET, rel_gap: float = _D.rel_gap,
                  abs_gap: float = _D.abs_gap, node_limit: int | None = _D.node_limit,
                  n_jobs: int = _D.n_jobs, batch_size: int = _D.batch_size,
                  batch_overlap: int | None = _D.batch_overlap,
                  backend: str = _D.backend, executor: cf.Executor | None = _D.executor,
                  node_selection: str = _D.node_selection, branching: str = _D.branching,
                  verbose: int = 0, log: Callable[[str], None] | None = _D.log,
                  feature_names=None) -> GapResult:
    """The certified gap of a given model: a proven lower bound on the optimum, the model's
    objective, the gap and a certificate, within a time budget.

    The problem is :func:`sparsecert.certify`'s (``min sum_i w_i loss(y_i, x_i^T b + c + o_i) +
    lambda2 ||b||^2`` subject to ``||b||_0 <= k`` and the other constraints given); the model
    ``(coef, intercept)`` must satisfy its constraints. The root relaxation's bound is computed
    first, always; the branch and bound then tightens it until the model is proven optimal
    within ``rel_gap``, the search ends, or ``time_limit`` seconds have passed. The
    certificate's incumbent is the given model, so :func:`sparsecert.verify` re-checks that
    this model is within the returned gap of the optimum.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Targets, as for :func:`sparsecert.certify` (classification labels by the label rule).
    coef : array-like of shape (n_features,)
        The model's coefficients (from anywhere: a Lasso refit, a greedy heuristic, another
        package). Exact zeros are outside its support.
    intercept : float
        The model's intercept (0 when the problem has none).
    k : int, optional
        The sparsity level the model is judged at (default: its number of non-zeros, with the
        features of ``always_select``).
    lambda2 : float
        The ridge penalty of the objective (required: it is part of the problem).
    loss, loss_params, fit_intercept, max_abs_coef, eig_shift, sample_weight, offset
    coef_bounds, positive, always_select, exclude
    time_limit : float or None, default=10.0
        Seconds of search after the root bound (which is always computed; None: until the
        search ends).
    rel_gap, abs_gap, node_limit, n_jobs, batch_size, batch_overlap, backend, executor
    node_selection, branching, log
    verbose : int, default=0
        1: the search's progress log.
    feature_names : sequence of str, optional
        Names of the columns of ``X`` (kept in the certificate for display only).

    Returns
    -------
    GapResult

    Raises
    ------
    TypeError, ValueError
        A bad argument, or a model that breaks the problem's constraints (more than ``k``
        non-zeros, an excluded feature, a coefficient outside its bounds), one line each.
    """
    from sparsecert.api import _feature_names, run_info
    from sparsecert.bnb import BranchAndBound
    from sparsecert.firstrun import compile_first_run
    from sparsecert.proof.bounds import SafeEvaluator, SampleAndBounds
    from sparsecert.proof.producer import Annotations, produce, user_model
    from sparsecert.solvers.perspective import RelaxationProblem

    t0 = time.perf_counter()
    params = {name: value for name, value in locals().items()
              if name not in ("X", "y", "coef", "intercept", "feature_names", "t0")}
    spec, options = build_records(params)  # the keywords, checked by the parameter table
    if spec.k is None:  # the model's own sparsity, with the forced-in features (at least 1)
        nz = set(np.flatnonzero(_real_vector(coef, "coef")).tolist())
        spec = spec.with_k(max(1, len(nz | set(spec.always_select))))
    prepared = prepare(X, y, spec)
    b, c = _check_model(coef, intercept, spec, prepared.X.shape[1])
    names = _feature_names(X, feature_names)

    prob = RelaxationProblem.from_prepared(prepared)
    support = [int(j) for j in np.flatnonzero(b)]
    engine = BranchAndBound(prob, spec.k, options, start_supports=[support])
    engine.announce()
    engine.compile_time = compile_first_run(prob, engine.progress)
    res = engine.run()
    with engine.after_search("certificate") as note:
        info = Annotations(producer=run_info(options), feature_names=names)
        proof = produce(res, prob, prepared, options, annotations=info, note=note,
                        model=(b, c))
    best_b, best_c = user_model(res, prob)
    if not spec.fit_intercept:
        best_c = 0.0
    box = None if math.isinf(spec.max_abs_coef) else spec.max_abs_coef
    ev = SafeEvaluator(prepared.X, prepared.y_used, prob.loss_fn, spec.lambda2, box,
                       spec.fit_intercept, float(prob.mu), extras=SampleAndBounds.of(prepared))
    best_value = ev.objective(best_b, best_c)[0]
    return GapResult(objective=proof.objective, objective_upper=proof.upper_bound,
                     lower_bound=proof.lower_bound, gap=proof.gap,
                     absolute_gap=proof.absolute_gap, status=str(proof.status),
                     best_objective=float(best_value), best_coef=best_b,
                     best_intercept=float(best_c), n_nodes=res.n_nodes,
                     time=time.perf_counter() - t0, certificate=proof.certificate, search=res)
