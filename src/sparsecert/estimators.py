"""scikit-learn estimators for certified k-sparse GLMs.

Each estimator solves::

    minimize_{b, c}  sum_i w_i f(x_i^T b + c + o_i, y_i) + lambda2 * ||b||_2^2
    subject to       ||b||_0 <= k,  |b_j| <= max_abs_coef,
                     lower_j <= b_j <= upper_j,
                     always_select in the support, exclude out of it

(``w_i = 1`` and ``o_i = 0`` unless ``fit`` is given ``sample_weight`` and ``offset``)

to *proven* optimality with :func:`sparsecert.api.certify` and keeps the certificate, so a
fitted model can be re-checked by the standalone verifier (:func:`sparsecert.api.verify`) on the
training data.

* :class:`KSparseLinearRegression` -- least squares ``f = (y - u)^2``;
* :class:`KSparsePoissonRegression` -- Poisson ``f = exp(u) - y u`` (log link);
* :class:`KSparseLogisticRegression` -- logistic ``f = log(1 + exp(-y u))``;
* :class:`KSparseHingeClassifier` -- squared hinge ``f = max(0, 1 - y u)^2``;
* :class:`KSparseHuberRegressor` -- robust regression, Huber ``f = h(y - u)`` (``h(r) = r^2``
  up to ``|r| = huber_delta``, linear beyond).

Classifiers accept any two labels (numbers or strings); ``classes_`` holds them sorted, and by
the package's label rule (user guide, "Labels") ``classes_[0]`` is coded ``-1`` and
``classes_[1]`` is coded ``+1`` before the certifier is called.

If ``k >= n_features`` the cardinality constraint is inactive (the problem is ridge-penalised
regression on all features); the certifier is then called with ``k = n_features``, which is the
same optimisation problem.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from sparsecert._checks import check_offset
from sparsecert._params import defaults, fill_parameters
from sparsecert._validation import check_exact_input, prepare
from sparsecert.api import certify_prepared, verify
from sparsecert.problem import ProblemSpec, SearchOptions, build_records
from sparsecert.solvers import losses as _losses
from sparsecert.solvers.losses import binary_codes, get_loss
from sparsecert.sparse import SCIPY_FORMATS as _SPARSE
from sparsecert.statuses import CERTIFIED, STATUS_HINTS

__all__ = [
    "KSparseLinearRegression",
    "KSparsePoissonRegression",
    "KSparseLogisticRegression",
    "KSparseHingeClassifier",
    "KSparseHuberRegressor",
]

_E = defaults("estimator")

_PARAMS_DOC = fill_parameters("""
    Parameters
    ----------
    k
        Values ``>= n_features`` leave the constraint inactive.
    lambda2, max_abs_coef, coef_bounds, positive, always_select, exclude, fit_intercept
    rel_gap
    time_limit
        A :class:`~sklearn.exceptions.ConvergenceWarning` then states the gap reached
        (``status_``).
    n_jobs, verbose
""", "estimator")

_ATTRS_DOC = """
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients; at most ``k`` non-zeros.
    intercept_ : float
        Intercept (0.0 when ``fit_intercept=False``).
    support_ : ndarray of int
        Sorted indices of the selected features.
    objective_ : float
        Objective of the fitted model on the training data (the certified upper bound).
    lower_bound_ : float
        Proven lower bound on the optimal objective.
    gap_ : float
        Relative gap ``(objective_ - lower_bound_) / max(1, |objective_|)``.
    status_ : str
        ``"optimal"`` when the gap is within ``rel_gap``, else the reason the search stopped
        (``"time_limit"``, ``"node_limit"``, ``"interrupted"``, ``"tree_exhausted"``).
    certificate_ : sparsecert.certificate.Certificate
        The certificate; ``certificate_.save(path)`` writes it, and
        :func:`sparsecert.api.verify` re-checks it against the training data (with the labels
        as coded for the certifier, see ``classes_`` for classifiers).
    result_ : sparsecert.api.CertifyResult
        The full record (search tree, progress history, timings).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of str
        Feature names seen during fit (only when ``X`` has string column names, e.g. a
        pandas DataFrame); passed on to the certifier (``result_.feature_names``, for display
        only).
"""


_CLASSES_DOC = """    classes_ : ndarray of shape (2,)
        The two labels, sorted; ``classes_[0]`` is coded -1, ``classes_[1]`` is coded +1.
"""


def _classifier_doc(title: str, loss: str) -> str:
    """The docstring of a classifier minimising ``sum_i loss + lambda2 ||b||^2``."""
    return (f"{title}\n\n    Minimises ``sum_i {loss} + lambda2 ||b||^2`` with labels ``s_i`` "
            "coded -1/+1 (the label rule) and ``u_i = x_i^T b + c``, subject to "
            "``||b||_0 <= k``.\n" + _PARAMS_DOC + _ATTRS_DOC + _CLASSES_DOC)


def estimator_loss(estimator) -> str:
    """The name (in the loss registry) of the loss a sparsecert estimator fits.

    Raises
    ------
    TypeError
        ``estimator`` is not one of this module's estimators.
    """
    if not isinstance(estimator, _KSparseBase):
        raise TypeError(f"estimator must be a sparsecert estimator (KSparseLinearRegression, "
                        f"KSparseLogisticRegression, ...), got {type(estimator).__name__}")
    return estimator._loss


def estimator_records(estimator) -> tuple[ProblemSpec, SearchOptions]:
    """The problem and the search options of a sparsecert estimator's hyper-parameters
    (:mod:`sparsecert.problem`), checked by the parameter table; the message of a bad value
    names the estimator.

    Raises
    ------
    TypeError, ValueError
        ``estimator`` is not one of this module's estimators, or a hyper-parameter is bad.
    """
    estimator_loss(estimator)  # a sparsecert estimator
    return estimator._records()


def fitted_from_result(estimator, result, n_features: int, classes=None):
    """``estimator`` fitted from a :class:`~sparsecert.api.CertifyResult` solved elsewhere
    (for example one ``k`` of :func:`sparsecert.path.certify_path`), as if by ``fit``.

    ``classes`` (classifiers): the two labels, sorted; ``result`` was solved with
    ``classes[0]`` coded -1 and ``classes[1]`` coded +1. Returns ``estimator``.
    """
    estimator_loss(estimator)  # a sparsecert estimator
    return estimator._set_result(result, n_features=n_features, classes=classes)


def _with_sample_data(estimator, spec: ProblemSpec, n_samples: int, sample_weight,
                      offset) -> ProblemSpec:
    """``spec`` with the per-sample weights and offsets given to ``fit`` (checked by the
    parameter table, the message naming the estimator). As in scikit-learn, a number for
    ``sample_weight`` weighs every sample alike; weights that are all 1 are the unweighted
    problem (the same problem, the same certificate)."""
    if sample_weight is None and offset is None:
        return spec
    try:
        for name, v in (("sample_weight", sample_weight), ("offset", offset)):
            if v is not None:
                check_exact_input(v, name)  # before the conversion to an array rounds it
        if sample_weight is not None and not isinstance(sample_weight, (str, bytes)):
            sample_weight = np.asarray(sample_weight)  # also array-likes (a pandas Series)
            if sample_weight.ndim == 0:
                sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
        if offset is not None and not isinstance(offset, (str, bytes)):
            offset = np.asarray(offset)
        for name, v in (("sample_weight", sample_weight), ("offset", offset)):
            if isinstance(v, np.ndarray) and v.ndim == 1 and v.shape != (n_samples,):
                raise ValueError(f"{name} has {v.shape[0]} entries, X has {n_samples} samples")
        spec = replace(spec, sample_weight=sample_weight, offset=offset)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{type(estimator).__name__}: {exc}") from None
    if spec.sample_weight is not None and np.all(spec.sample_weight == 1.0):
        spec = replace(spec, sample_weight=None)
    return spec


class _KSparseBase(BaseEstimator):
    """Shared fit logic: validate, certify (as :func:`sparsecert.api.certify`), store the
    record."""

    _loss: str  #: a name of the loss registry, set by each estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # a scipy.sparse X (CSR / CSC), never densified
        return tags

    def __init__(self, k: int = _E.k, lambda2: float = _E.lambda2,
                 max_abs_coef: float | None = _E.max_abs_coef, coef_bounds=_E.coef_bounds,
                 positive: bool = _E.positive, always_select=_E.always_select,
                 exclude=_E.exclude, fit_intercept: bool = _E.fit_intercept,
                 rel_gap: float = _E.rel_gap, time_limit: float | None = _E.time_limit,
                 n_jobs: int = _E.n_jobs, verbose: int = _E.verbose) -> None:
        self.k = k
        self.lambda2 = lambda2
        self.max_abs_coef = max_abs_coef
        self.coef_bounds = coef_bounds
        self.positive = positive
        self.always_select = always_select
        self.exclude = exclude
        self.fit_intercept = fit_intercept
        self.rel_gap = rel_gap
        self.time_limit = time_limit
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _loss_params(self) -> dict:
        """The loss's parameters: this estimator's attributes of the loss's parameter names
        (a loss without any: empty; checked with the other hyper-parameters)."""
        return {par.name: getattr(self, par.name) for par in get_loss(self._loss).parameters}

    # -- the certified fit -----------------------------------------------------------------
    def _records(self) -> tuple[ProblemSpec, SearchOptions]:
        """The problem and the search options of the hyper-parameters, checked (at ``fit``,
        never in ``__init__``) by the parameter table; the message names the estimator."""
        try:
            return build_records({**self.get_params(deep=False), "loss": self._loss,
                                  "loss_params": self._loss_params()})
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{type(self).__name__}: {exc}") from None

    def _certify(self, X: np.ndarray, y: np.ndarray, records, sample_weight=None,
                 offset=None):
        spec, options = records
        if spec.k > X.shape[1]:  # the constraint is inactive: the problem of k = n_features
            spec = spec.with_k(X.shape[1])
        spec = _with_sample_data(self, spec, X.shape[0], sample_weight, offset)
        res = certify_prepared(prepare(X, y, spec), options,
                               feature_names=getattr(self, "feature_names_in_", None))
        return self._set_result(res)

    def _set_result(self, res, n_features: int | None = None, classes=None):
        """Store a :class:`~sparsecert.api.CertifyResult` as the fitted state."""
        if n_features is not None:
            self.n_features_in_ = int(n_features)
        if classes is not None:
            self.classes_ = np.asarray(classes)
        self.result_ = res
        self.coef_ = np.asarray(res.coef, dtype=np.float64).copy()
        self.intercept_ = float(res.intercept)
        self.support_ = np.asarray(sorted(res.support), dtype=np.intp)
        self.objective_ = float(res.objective)
        self.lower_bound_ = float(res.lower_bound)
        self.gap_ = float(res.gap)
        self.status_ = str(res.status)
        self.certificate_ = res.certificate
        if res.status not in CERTIFIED:
            hint = STATUS_HINTS.get(res.status, "")
            warnings.warn(
                f"{type(self).__name__}: the search stopped ({res.status}) before certifying "
                f"optimality: relative gap {res.gap:.3e} (objective {res.objective:.8g}, "
                f"proven lower bound {res.lower_bound:.8g}, target rel_gap {self.rel_gap:g}). "
                f"The model is the best found and is usable; {hint}.", ConvergenceWarning,
                stacklevel=4)
        return self

    def _target_as_certified(self, y) -> np.ndarray:
        return np.asarray(y, dtype=np.float64)

    def verify_certificate(self, X, y, rel_gap: float | None = None, sample_weight=None,
                           offset=None):
        """Re-check ``certificate_`` on ``(X, y)`` with the standalone verifier, for this
        estimator's problem and model.

        Pass the training data as given to :meth:`fit` (for classifiers, the original labels:
        they are coded as for the certifier here), with its ``sample_weight`` and ``offset``.
        The problem is this estimator's (its loss, ``k``, ``lambda2``, ``max_abs_coef``,
        ``coef_bounds``, ``positive``, ``always_select``, ``exclude`` and ``fit_intercept``),
        not the one the certificate states, so a certificate of another problem fails; one
        more check, ``estimator_model``, requires the certificate's incumbent to be ``coef_``
        and ``intercept_``.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        rel_gap : float, optional
            Gap tolerance to judge against (default: this estimator's ``rel_gap``).
        sample_weight, offset : array-like of shape (n_samples,), optional
            As given to :meth:`fit`.

        Returns
        -------
        sparsecert.certificate.VerificationReport
            ``.ok``, ``.exit_code``, ``.checks``, ``.failures``.
        """
        check_is_fitted(self)
        spec, options = self._records()
        X = validate_data(self, X, reset=False, dtype=np.float64,
                          accept_sparse=_SPARSE)
        data = _with_sample_data(self, spec.with_k(None), X.shape[0], sample_weight, offset)
        cert = self.certificate_
        report = verify(cert, X, self._target_as_certified(y), loss=spec.loss,
                        k=min(spec.k, self.n_features_in_), lambda2=spec.lambda2,
                        max_abs_coef=spec.max_abs_coef, fit_intercept=spec.fit_intercept,
                        rel_gap=options.rel_gap if rel_gap is None else rel_gap,
                        loss_params=spec.loss_params, sample_weight=data.sample_weight,
                        offset=data.offset, coef_bounds=spec.coef_bounds,
                        positive=spec.positive, always_select=spec.always_select,
                        exclude=spec.exclude)
        if not report.input_error:
            report.add("estimator_model", *self._is_certified_model(cert))
        return report

    def _is_certified_model(self, cert) -> tuple[bool, str]:
        """Whether ``coef_`` and ``intercept_`` are the certificate's incumbent."""
        try:
            inc = cert.incumbent
            coef = np.asarray(inc["coef"], dtype=np.float64)
            icpt = 0.0 if inc.get("intercept") is None else float(inc["intercept"])
        except (KeyError, TypeError, ValueError, AttributeError):
            return False, "the certificate's incumbent cannot be read"
        if coef.shape == self.coef_.shape and np.array_equal(coef, self.coef_) \
                and icpt == self.intercept_:
            return True, "coef_ and intercept_ are the certificate's incumbent"
        return False, ("coef_ or intercept_ differ from the certificate's incumbent: the "
                       "certificate does not prove this model")

    @staticmethod
    def _min_samples(records) -> int:
        # with an intercept, a single sample leaves nothing to fit once it is centred out
        return 2 if records[0].fit_intercept else 1

    def _linear(self, X, offset=None) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64,
                          accept_sparse=_SPARSE)
        u = X @ self.coef_ + self.intercept_
        if offset is None:
            return u
        o = check_offset(offset)
        if o.shape != u.shape:
            raise ValueError(f"offset has {o.shape[0]} entries, X has {u.shape[0]} samples")
        return u + o


_FIT_SAMPLE_DOC = """        sample_weight : array-like of shape (n_samples,) or float, optional
            Per-sample weights ``w_i >= 0`` (not all zero) in the objective ``sum_i w_i
            loss_i``: a zero weight drops the sample, an integer weight repeats it. Part of the
            certified problem (:meth:`verify_certificate` needs them again).
        offset : array-like of shape (n_samples,), optional
            A fixed term added to each sample's linear predictor (for counts, ``log(exposure)``);
            give the new samples' offsets to ``predict`` too.
"""


class _KSparseRegressor(RegressorMixin, _KSparseBase):
    def fit(self, X, y, sample_weight=None, offset=None):
        """Fit the certified k-sparse model.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Real responses (non-negative counts or rates for the Poisson model).
""" + _FIT_SAMPLE_DOC + """
        Returns
        -------
        self
        """
        records = self._records()
        check_exact_input(X, "X")  # before scikit-learn's conversion rounds it silently
        check_exact_input(y, "y")
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=_SPARSE,
                             y_numeric=True, ensure_min_samples=self._min_samples(records))
        try:  # the loss's target rule (Poisson: y >= 0), from the loss registry
            get_loss(self._loss).encode_target(y)
        except ValueError as exc:
            raise ValueError(f"{type(self).__name__}: {exc}") from None
        return self._certify(X, np.asarray(y, dtype=np.float64), records, sample_weight,
                             offset)


class KSparseLinearRegression(_KSparseRegressor):
    __doc__ = ("Certified k-sparse ridge-penalised least squares.\n\n"
               "    Minimises ``sum_i (y_i - x_i^T b - c)^2 + lambda2 ||b||^2`` subject to "
               "``||b||_0 <= k``.\n" + _PARAMS_DOC + _ATTRS_DOC)
    _loss = _losses.SquaredLoss.name  # the registry's name

    def predict(self, X, offset=None) -> np.ndarray:
        """``X @ coef_ + intercept_`` (``+ offset`` if given)."""
        return self._linear(X, offset)


class KSparsePoissonRegression(_KSparseRegressor):
    __doc__ = ("Certified k-sparse Poisson regression (log link).\n\n"
               "    Minimises ``sum_i (exp(u_i) - y_i u_i) + lambda2 ||b||^2`` with "
               "``u_i = x_i^T b + c``, subject to ``||b||_0 <= k``; ``y`` must be non-negative."
               "\n" + _PARAMS_DOC + _ATTRS_DOC)
    _loss = _losses.PoissonLoss.name  # the registry's name

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True
        return tags

    def predict(self, X, offset=None) -> np.ndarray:
        """Predicted mean ``exp(X @ coef_ + intercept_ + offset)`` (``offset``: the new
        samples' offsets, e.g. ``log(exposure)``; none if not given)."""
        return np.exp(self._linear(X, offset))


class _KSparseClassifier(ClassifierMixin, _KSparseBase):
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X, y, sample_weight=None, offset=None):
        """Fit the certified k-sparse binary classifier.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two distinct labels (numbers or strings); ``classes_[1]`` is the positive class.
""" + _FIT_SAMPLE_DOC + """
        Returns
        -------
        self
        """
        records = self._records()
        check_exact_input(X, "X")  # before scikit-learn's conversion rounds it silently
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=_SPARSE,
                             ensure_min_samples=self._min_samples(records))
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        classes = np.unique(y)
        if y_type != "binary" or classes.size != 2:
            raise ValueError(f"Only binary classification is supported. {type(self).__name__} "
                             f"needs exactly 2 classes in y; the type of the target is "
                             f"{y_type!r} with {classes.size} class(es) {classes[:5].tolist()}")
        y_pm, self.classes_ = binary_codes(y)  # the label rule: classes_[0] -> -1
        return self._certify(X, y_pm, records, sample_weight, offset)

    def _target_as_certified(self, y) -> np.ndarray:
        y = np.asarray(y)
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(f"y holds labels not seen in fit: {np.unique(y[unknown])[:5].tolist()}"
                             f" (classes_ = {self.classes_.tolist()})")
        return np.where(y == self.classes_[1], 1.0, -1.0)

    def decision_function(self, X, offset=None) -> np.ndarray:
        """Signed score ``X @ coef_ + intercept_`` (``+ offset`` if given); positive means
        ``classes_[1]``."""
        return self._linear(X, offset)

    def predict(self, X, offset=None) -> np.ndarray:
        """Class labels: ``classes_[1]`` where the decision function is positive."""
        d = self.decision_function(X, offset)
        return self.classes_[(d > 0).astype(np.intp)]


class KSparseLogisticRegression(_KSparseClassifier):
    __doc__ = _classifier_doc("Certified k-sparse logistic regression.",
                              "log(1 + exp(-s_i u_i))")
    _loss = _losses.LogisticLoss.name  # the registry's name

    def predict_proba(self, X, offset=None) -> np.ndarray:
        """Probabilities of ``classes_[0]`` and ``classes_[1]`` (columns in that order)."""
        d = self.decision_function(X, offset)
        p1 = np.empty_like(d)
        pos = d >= 0
        p1[pos] = 1.0 / (1.0 + np.exp(-d[pos]))
        e = np.exp(d[~pos])
        p1[~pos] = e / (1.0 + e)
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X, offset=None) -> np.ndarray:
        """Logarithm of :meth:`predict_proba` (computed stably)."""
        d = self.decision_function(X, offset)
        return np.column_stack([-np.logaddexp(0.0, d), -np.logaddexp(0.0, -d)])


class KSparseHingeClassifier(_KSparseClassifier):
    __doc__ = _classifier_doc("Certified k-sparse linear classifier with the squared hinge loss.",
                              "max(0, 1 - s_i u_i)^2")
    _loss = _losses.SquaredHingeLoss.name  # the registry's name


class KSparseHuberRegressor(_KSparseRegressor):
    __doc__ = ("Certified k-sparse robust regression with the Huber loss.\n\n"
               "    Minimises ``sum_i h(y_i - x_i^T b - c) + lambda2 ||b||^2`` subject to "
               "``||b||_0 <= k``, with ``h(r) = r^2`` for ``|r| <= huber_delta`` and "
               "``2 huber_delta |r| - huber_delta^2`` beyond (cvxpy's ``huber``: least squares "
               "on small residuals, linear on outliers). ``huber_delta`` is fixed and in the "
               "units of ``y`` (e.g. 1.345 times a robust estimate of the noise's standard "
               "deviation).\n"
               + _PARAMS_DOC.replace("    max_abs_coef : ", "    huber_delta : float, default=1.0\n"
                                     "        The Huber threshold (> 0), part of the certified "
                                     "problem.\n    max_abs_coef : ", 1) + _ATTRS_DOC)
    _loss = _losses.HuberLoss.name  # the registry's name

    def __init__(self, k: int = _E.k, lambda2: float = _E.lambda2, huber_delta: float = 1.0,
                 max_abs_coef: float | None = _E.max_abs_coef, coef_bounds=_E.coef_bounds,
                 positive: bool = _E.positive, always_select=_E.always_select,
                 exclude=_E.exclude, fit_intercept: bool = _E.fit_intercept,
                 rel_gap: float = _E.rel_gap, time_limit: float | None = _E.time_limit,
                 n_jobs: int = _E.n_jobs, verbose: int = _E.verbose) -> None:
        super().__init__(k=k, lambda2=lambda2, max_abs_coef=max_abs_coef,
                         coef_bounds=coef_bounds, positive=positive,
                         always_select=always_select, exclude=exclude,
                         fit_intercept=fit_intercept, rel_gap=rel_gap, time_limit=time_limit,
                         n_jobs=n_jobs, verbose=verbose)
        self.huber_delta = huber_delta

    def predict(self, X, offset=None) -> np.ndarray:
        """``X @ coef_ + intercept_`` (``+ offset`` if given)."""
        return self._linear(X, offset)
