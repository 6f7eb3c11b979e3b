"""A certified path over the support size ``k``, and cross-validation of ``k``.

:func:`certify_path` solves the k-sparse problem for several ``k`` to certified optimality, each
point with its own certificate, and shares across the path what does not depend on ``k``:

* the prepared problem (validation, label coding, centring, Lipschitz constant, the eigenvalue
  shift of the stronger least-squares relaxation) is built once;
* one cache of exact support refits serves every ``k``, so the beam search at ``k + 1`` replays
  the supports it already refitted at ``k`` for free;
* the optimal model at the previous (smaller) ``k`` is feasible for the next one and is offered
  to the engine as an incumbent before the search starts, with a swap search started from it;
  so the certified objective is non-increasing along the path;
* the root relaxation starts from the previous point's root solution (2-3x fewer FISTA
  iterations at the root on correlated synthetic data, a few per cent of a whole path's
  iterations). Any start point is allowed: the bound is a weak-duality bound at whatever
  iterate the solver reaches.

Each point is then an ordinary branch-and-bound run whose certificate the standalone verifier
checks on its own; the warm incumbents only make pruning start earlier.

:class:`KSparseCV` picks ``k`` by cross-validation for any estimator of
:mod:`sparsecert.estimators`, computing one path per fold; :class:`KSparseLinearRegressionCV` is
the least-squares convenience version.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin, clone, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from sparsecert._checks import check_ks
from sparsecert._params import check_param, defaults, document
from sparsecert._validation import PreparedProblem, check_exact_input, prepare
from sparsecert.api import CertifyResult, run_info, search_and_assemble
from sparsecert.bnb import BnBSettings, BranchAndBound
from sparsecert.problem import ProblemSpec, SearchOptions, build_records
from sparsecert.sparse import SCIPY_FORMATS as _SPARSE
from sparsecert.statuses import INTERRUPTED

__all__ = ["certify_path", "solve_path", "PathResult", "KSparseCV",
           "KSparseLinearRegressionCV"]

_D = defaults("certify_path")
_E = defaults("estimator")


# ----------------------------------------------------------------------------------------------
# the path
# ----------------------------------------------------------------------------------------------
@dataclass
class PathResult:
    """Certified solutions for several ``k`` (one :class:`~sparsecert.api.CertifyResult` each).

    Behaves as a sequence of results in increasing ``k``.

    Attributes
    ----------
    ks : numpy.ndarray of int
        The support sizes, increasing.
    results : list of CertifyResult
        One certified result (with its own certificate) per ``k``.
    time : float
        Wall time of the whole path in seconds.
    """

    ks: np.ndarray
    results: list[CertifyResult] = field(repr=False)
    time: float = 0.0

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[CertifyResult]:
        return iter(self.results)

    def __getitem__(self, i: int) -> CertifyResult:
        return self.results[i]

    def result_for(self, k: int) -> CertifyResult:
        """The result at support size ``k``."""
        hits = np.flatnonzero(self.ks == int(k))
        if hits.size == 0:
            raise KeyError(f"k = {k} is not on the path (ks = {self.ks.tolist()})")
        return self.results[int(hits[0])]

    @property
    def objectives(self) -> np.ndarray:
        """Certified objectives (upper bounds), one per ``k``."""
        return np.array([r.objective for r in self.results])

    @property
    def lower_bounds(self) -> np.ndarray:
        """Proven lower bounds, one per ``k``."""
        return np.array([r.lower_bound for r in self.results])

    @property
    def gaps(self) -> np.ndarray:
        """Relative gaps, one per ``k``."""
        return np.array([r.gap for r in self.results])

    @property
    def statuses(self) -> list[str]:
        return [r.status for r in self.results]

    @property
    def supports(self) -> list[tuple[int, ...]]:
        return [tuple(r.support) for r in self.results]

    def plot(self, feature_names=None, rel_gap: float | None = None, max_features: int = 40,
             title: str | None = None):
        """Draw the path: certified objective and proven lower bound against ``k``, the gap
        against the tolerance, and the support map (features by ``k``, coloured by
        coefficient, with a colour bar). Needs matplotlib (imported here, on first use).
        See :func:`sparsecert.plotting.plot_path` for the parameters; returns the figure."""
        from sparsecert.plotting import plot_path

        return plot_path(self, feature_names=feature_names, rel_gap=rel_gap,
                         max_features=max_features, title=title)

    def summary(self) -> str:
        """A table: k, objective, lower bound, gap, status, nodes, time, support."""
        lines = [f"{'k':>4} {'objective':>15} {'lower bound':>15} {'gap':>10} {'status':>12} "
                 f"{'nodes':>7} {'time':>7}  support"]
        for k, r in zip(self.ks, self.results, strict=True):
            lines.append(f"{int(k):>4} {r.objective:>15.8g} {r.lower_bound:>15.8g} "
                         f"{r.gap:>10.2e} {r.status:>12} {r.n_nodes:>7} {r.time:>7.2f}  "
                         f"{list(r.support)}")
        return "\n".join(lines)


@document("certify_path")
def certify_path(X, y, ks, lambda2: float, *, loss: str = _D.loss,
                 loss_params: dict | None = _D.loss_params,
                 fit_intercept: bool = _D.fit_intercept,
                 max_abs_coef: float | None = _D.max_abs_coef,
                 eig_shift: float | str | None = _D.eig_shift, sample_weight=_D.sample_weight,
                 offset=_D.offset, coef_bounds=_D.coef_bounds, positive: bool = _D.positive,
                 always_select=_D.always_select, exclude=_D.exclude, rel_gap: float = _D.rel_gap,
                 abs_gap: float = _D.abs_gap, time_limit: float | None = _D.time_limit,
                 node_limit: int | None = _D.node_limit, n_jobs: int = _D.n_jobs,
                 batch_size: int = _D.batch_size, batch_overlap: int | None = _D.batch_overlap,
                 backend: str = _D.backend,
                 executor=_D.executor, node_selection: str = _D.node_selection,
                 branching: str = _D.branching, verbose: int = _D.verbose, log=_D.log,
                 warm_start: bool = _D.warm_start) -> PathResult:
    """Certify the k-sparse problem for every ``k`` in ``ks``, sharing work along the path.

    Each point solves the problem :func:`sparsecert.api.certify` solves for that ``k``, with
    the same settings and its own certificate; the data preparation and the exact refits are
    shared, and with ``warm_start`` the optimal model of the previous ``k`` is offered as an
    incumbent and the root relaxation starts from the previous root solution. With
    ``warm_start=False`` every certificate is identical to ``certify``'s (tested).

    Parameters
    ----------
    X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        As for :func:`~sparsecert.api.certify` (two numeric labels for the classification
        losses, coded by the label rule of the user guide; non-negative counts for Poisson).
    ks : iterable of int
        Distinct support sizes ``1 <= k <= n_features`` (any order; solved in increasing order).
    lambda2, loss, loss_params, fit_intercept, max_abs_coef, eig_shift
    sample_weight, offset, coef_bounds, positive, always_select, exclude, rel_gap, abs_gap
    time_limit
        The limit is *per point*.
    node_limit
        The limit is per point.
    n_jobs
        More than two want a larger ``batch_size`` too (see :func:`~sparsecert.api.certify`).
    batch_size, batch_overlap, backend, executor, node_selection, branching, verbose, log
    warm_start

    Returns
    -------
    PathResult
        ``.results[i]`` is the :class:`~sparsecert.api.CertifyResult` for ``.ks[i]``. Ctrl-C
        stops the whole path: the result holds the points done so far, the last one with the
        status ``"interrupted"`` and the certificate of the bound it reached.

    Examples
    --------
    >>> from sparsecert.datasets import make_synthetic
    >>> X, y, _ = make_synthetic(60, 12, 3, seed=0)
    >>> path = certify_path(X, y, [1, 2, 3], lambda2=1.0)
    >>> [r.status for r in path]
    ['optimal', 'optimal', 'optimal']
    """
    t0 = time.perf_counter()
    spec, options = build_records(locals())  # the keywords, checked by the parameter table
    warm_start = check_param("warm_start", warm_start)
    prepared = prepare(X, y, spec)
    ks_arr = check_ks(ks, prepared.n_features)
    for k in ks_arr:  # every point's problem is checked before the first is solved
        spec.with_k(int(k))
    return solve_path(prepared, ks_arr, options, warm_start=warm_start, t0=t0)


def solve_path(prepared: PreparedProblem, ks: np.ndarray, options: SearchOptions, *,
               warm_start: bool = True, t0: float | None = None) -> PathResult:
    """:func:`certify_path` of a problem already prepared (``prepared.spec.k`` unset) over
    checked support sizes ``ks`` (distinct, increasing, at most ``n_features``)."""
    from sparsecert.proof.producer import Annotations
    from sparsecert.proof.producer import start as start_proof
    from sparsecert.solvers.heuristics import SupportRefitter
    from sparsecert.solvers.perspective import RelaxationProblem

    t_path = time.perf_counter() if t0 is None else t0
    settings = BnBSettings.from_options(options)
    prob = RelaxationProblem.from_prepared(prepared)  # once for the path, after every check
    refitter = SupportRefitter.for_problem(prob)  # one cache of exact refits for the path
    results: list[CertifyResult] = []
    start: tuple[int, ...] | None = None  # the previous point's optimal support
    root_start: dict[str, np.ndarray] = {}

    def keep_root(node, res) -> None:
        if node.parent is None:
            root_start["coef"] = np.asarray(res.coef, dtype=float).copy()

    for k in ks:
        t_point = time.perf_counter()
        spec = prepared.spec.with_k(int(k))
        warm = warm_start and start is not None
        point = replace(prepared, spec=spec)  # the problem of this point: its k
        recorder = start_proof(prob, point)  # its proof, recorded as the nodes close
        engine = BranchAndBound(prob, spec.k, settings, refitter=refitter,
                                start_supports=[start] if warm else (),
                                root_warm_start=root_start.get("coef") if warm else None,
                                node_callback=keep_root, proof=recorder)
        info = Annotations(producer=run_info(options, path=True))
        # a first run says so and compiles, once for the path
        res, result = search_and_assemble(engine, point, options, t_point, info,
                                          first_run=not results)
        results.append(result)
        start = tuple(res.support)
        if res.status == INTERRUPTED:  # Ctrl-C stops the path, not only this point
            break
    return PathResult(ks=np.asarray(ks)[:len(results)], results=results,
                      time=time.perf_counter() - t_path)


# ----------------------------------------------------------------------------------------------
# cross-validation over k
# ----------------------------------------------------------------------------------------------
def _path_cv(base, records: tuple[ProblemSpec, SearchOptions], X: np.ndarray, y: np.ndarray,
             ks, cv, scoring):
    """Scores (n_splits, n_ks) of ``base`` (its problem and search ``records``) at every k,
    one certified path per fold."""
    from sparsecert.estimators import fitted_from_result

    spec, options = records
    spec = spec.with_k(None)  # each fold's path sets its own k
    p = X.shape[1]
    ks_arr = _candidate_ks(ks, p)
    classifier = is_classifier(base)
    splitter = check_cv(cv, y, classifier=classifier)
    scorer = check_scoring(base, scoring=scoring)
    classes = np.unique(y) if classifier else None
    scores = []
    for train, test in splitter.split(X, y):
        Xtr, ytr = X[train], y[train]
        if classifier:
            if np.unique(ytr).size != 2:
                raise ValueError("a training fold holds only one class; use fewer folds or a "
                                 "stratified splitter")
            ycode = np.where(ytr == classes[1], 1.0, -1.0)
        else:
            ycode = np.asarray(ytr, dtype=float)
        path = solve_path(prepare(Xtr, ycode, spec), ks_arr, options)
        if INTERRUPTED in path.statuses:  # Ctrl-C: no score of an interrupted model
            raise KeyboardInterrupt
        row = []
        for k, res in zip(path.ks, path, strict=True):
            est = clone(base).set_params(k=int(k))
            fitted_from_result(est, res, n_features=p, classes=classes)
            row.append(scorer(est, X[test], y[test]))
        scores.append(row)
    return ks_arr, np.asarray(scores, dtype=float)


def _candidate_ks(ks, p: int) -> np.ndarray:
    """CV candidates: ``None`` -> 1..min(10, p); values above ``p`` are the same problem as
    ``k = p`` (the constraint is inactive) and are merged with it."""
    if ks is None:
        return np.arange(1, min(10, p) + 1, dtype=np.intp)
    vals = check_ks(ks, None)
    return check_ks(sorted({min(int(k), p) for k in vals}), p)


def _has(method: str):
    """``available_if`` test: the (fitted, else configured) estimator has ``method``."""

    def check(self) -> bool:
        est = getattr(self, "best_estimator_", None)
        if est is None:
            est = self._base()
        return hasattr(est, method)

    return check


class KSparseCV(MetaEstimatorMixin, BaseEstimator):
    """Choose ``k`` by cross-validation for a sparsecert estimator, one certified path per fold.

    For every fold the certified path over ``ks`` is computed on the training part
    (:func:`certify_path`), each point is scored on the held-out part, and the ``k`` with the
    best mean score is refitted on all the data (with its certificate).

    Parameters
    ----------
    estimator : estimator from :mod:`sparsecert.estimators`, default=None
        The model whose ``k`` is chosen (its other parameters are used as they are);
        ``None`` means :class:`~sparsecert.estimators.KSparseLinearRegression`.
    ks : iterable of int, default=None
        Candidate support sizes (capped at ``n_features``); ``None`` means ``1..min(10, p)``.
    cv : int, cross-validation generator or iterable, default=5
        As in :func:`sklearn.model_selection.check_cv`.
    scoring : str or callable, default=None
        As in :func:`sklearn.metrics.check_scoring` (``None``: the estimator's ``score``).

    Attributes
    ----------
    k_ : int
        The chosen support size.
    ks_ : numpy.ndarray of int
        The candidates that were scored.
    cv_scores_ : numpy.ndarray of shape (n_splits, n_ks)
        Held-out scores.
    mean_scores_ : numpy.ndarray of shape (n_ks,)
    best_estimator_ : estimator
        The estimator with ``k = k_`` fitted on all the data.
    coef_, intercept_, support_, objective_, lower_bound_, gap_, status_, certificate_
        Those of ``best_estimator_``.
    classes_ : numpy.ndarray
        Classifiers only.
    n_features_in_, feature_names_in_
    """

    def __init__(self, estimator=None, ks=None, cv=5, scoring=None) -> None:
        self.estimator = estimator
        self.ks = ks
        self.cv = cv
        self.scoring = scoring

    def _base(self):
        from sparsecert.estimators import KSparseLinearRegression, estimator_loss

        base = KSparseLinearRegression() if self.estimator is None else self.estimator
        estimator_loss(base)  # TypeError unless a sparsecert estimator
        return base

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            base_tags = self._base().__sklearn_tags__()
        except TypeError:  # not a sparsecert estimator: fit will say so
            return tags
        tags.estimator_type = base_tags.estimator_type
        tags.classifier_tags = base_tags.classifier_tags
        tags.regressor_tags = base_tags.regressor_tags
        tags.target_tags = base_tags.target_tags
        tags.input_tags.sparse = base_tags.input_tags.sparse
        return tags

    def fit(self, X, y):
        """Cross-validate ``k`` along certified paths, then refit the best ``k`` on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        from sparsecert.estimators import estimator_records

        base = clone(self._base())
        records = estimator_records(base)  # checked once (a message names the estimator)
        classifier = is_classifier(base)
        X_given, y_given = X, y  # the refit sees them as given (feature names included)
        check_exact_input(X, "X")  # before scikit-learn's conversion rounds it silently
        if not classifier:
            check_exact_input(y, "y")
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=_SPARSE,
                             y_numeric=not classifier, ensure_min_samples=2)
        if classifier:
            from sklearn.utils.multiclass import check_classification_targets

            check_classification_targets(y)
            if np.unique(y).size != 2:
                raise ValueError(f"Only binary classification is supported; y has "
                                 f"{np.unique(y).size} classes")
        ks_arr, scores = _path_cv(base, records, X, y, self.ks, self.cv, self.scoring)
        mean = scores.mean(axis=0)
        best = int(np.argmax(mean))  # ties -> the smallest k
        self.ks_ = ks_arr
        self.cv_scores_ = scores
        self.mean_scores_ = mean
        self.k_ = int(ks_arr[best])
        self.best_estimator_ = clone(base).set_params(k=self.k_).fit(X_given, y_given)
        b = self.best_estimator_
        for name in ("coef_", "intercept_", "support_", "objective_", "lower_bound_", "gap_",
                     "status_", "certificate_", "result_"):
            setattr(self, name, getattr(b, name))
        if classifier:
            self.classes_ = b.classes_
        return self

    def _delegate(self, method: str, X):
        # as scikit-learn's search estimators do: the refitted estimator checks X (number of
        # features, feature names) against what it was fitted on, which is what we saw
        check_is_fitted(self)
        return getattr(self.best_estimator_, method)(X)

    def predict(self, X) -> np.ndarray:
        """Predictions of ``best_estimator_``."""
        return self._delegate("predict", X)

    @available_if(_has("decision_function"))
    def decision_function(self, X) -> np.ndarray:
        """``best_estimator_.decision_function`` (classifiers)."""
        return self._delegate("decision_function", X)

    @available_if(_has("predict_proba"))
    def predict_proba(self, X) -> np.ndarray:
        """``best_estimator_.predict_proba`` (logistic)."""
        return self._delegate("predict_proba", X)

    @available_if(_has("predict_log_proba"))
    def predict_log_proba(self, X) -> np.ndarray:
        """``best_estimator_.predict_log_proba`` (logistic)."""
        return self._delegate("predict_log_proba", X)

    def score(self, X, y, sample_weight=None) -> float:
        """``best_estimator_.score`` on ``(X, y)``."""
        check_is_fitted(self)
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)


@document("estimator")
class KSparseLinearRegressionCV(RegressorMixin, KSparseCV):
    """Certified k-sparse least squares with ``k`` chosen by cross-validation.

    Same as ``KSparseCV(KSparseLinearRegression(lambda2=..., ...), ks=..., cv=...)``.

    Parameters
    ----------
    ks : iterable of int, default=None
        Candidate support sizes; ``None`` means ``1..min(10, n_features)``.
    lambda2, max_abs_coef, fit_intercept, rel_gap
    time_limit
        The limit is per path point.
    n_jobs, verbose
    cv : int, cross-validation generator or iterable, default=5
    scoring : str or callable, default=None
        ``None``: R^2.

    Attributes
    ----------
    k_, ks_, cv_scores_, mean_scores_, best_estimator_, coef_, intercept_, support_,
    objective_, lower_bound_, gap_, status_, certificate_, n_features_in_, feature_names_in_
        As for :class:`KSparseCV`.
    """

    def __init__(self, ks=None, lambda2: float = _E.lambda2,
                 max_abs_coef: float | None = _E.max_abs_coef,
                 fit_intercept: bool = _E.fit_intercept, rel_gap: float = _E.rel_gap,
                 time_limit: float | None = _E.time_limit, n_jobs: int = _E.n_jobs,
                 verbose: int = _E.verbose, cv=5, scoring=None) -> None:
        self.ks = ks
        self.lambda2 = lambda2
        self.max_abs_coef = max_abs_coef
        self.fit_intercept = fit_intercept
        self.rel_gap = rel_gap
        self.time_limit = time_limit
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.cv = cv
        self.scoring = scoring

    def _base(self):
        from sparsecert.estimators import KSparseLinearRegression

        return KSparseLinearRegression(lambda2=self.lambda2, max_abs_coef=self.max_abs_coef,
                                       fit_intercept=self.fit_intercept, rel_gap=self.rel_gap,
                                       time_limit=self.time_limit, n_jobs=self.n_jobs,
                                       verbose=self.verbose)
