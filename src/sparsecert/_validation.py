"""The one validation path of the certified-GLM wing: the data, and the prepare step.

Every entry point -- :func:`sparsecert.certify`, :func:`sparsecert.certify_path`, the
estimators, the ``sparsecert certify`` command and the relaxation itself -- checks its
parameters by building the records of :mod:`sparsecert.problem` (the parameter table's checks,
:mod:`sparsecert._params`), and its data here, in one prepare step (:func:`prepare`) that runs
every cheap check before any expensive setup (the Lipschitz constant, the eigenvalue shift, the
search). The parameters' checks are importable from here too.

Exception policy: :class:`TypeError` when an argument has the wrong type (``k=2.5``,
``lambda2="big"``, ``fit_intercept="yes"``), :class:`ValueError` when it has the right type
but a bad value (``k=0``, ``lambda2=-1``, NaN in ``X``, three labels for a classification loss).
Messages name the argument and the value. Nothing the user passed is modified: conversions
return new arrays.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from sparsecert._checks import (
    _is_frame,
    _refuse_rounded,
    _rounded_entry,
    check_abs_gap,
    check_eig_shift,
    check_exact_source,
    check_exactly_float64,
    check_fit_intercept,
    check_k,
    check_k_fits,
    check_ks,
    check_lambda2,
    check_max_abs_coef,
    check_n_jobs,
    check_node_limit,
    check_positive_int,
    check_rel_gap,
    check_time_limit,
    check_verbose,
)
from sparsecert.problem import ProblemSpec
from sparsecert.solvers.losses import DEFAULT_LOSS, LOSS_NAMES, check_loss, get_loss
from sparsecert.sparse import SparseDesign, as_sparse_design, is_sparse

__all__ = [
    "LOSSES",
    "PreparedProblem",
    "prepare",
    "prepare_problem",
    "check_array_2d",
    "check_exactly_float64",
    "check_exact_source",
    "check_exact_input",
    "check_vector",
    "check_X_y",
    "check_fixings",
    "check_index_set",
    # the checks of the parameters live with the parameter table (sparsecert._params)
    "check_k",
    "check_ks",
    "check_lambda2",
    "check_max_abs_coef",
    "check_fit_intercept",
    "check_eig_shift",
    "check_rel_gap",
    "check_abs_gap",
    "check_time_limit",
    "check_node_limit",
    "check_positive_int",
    "check_n_jobs",
    "check_verbose",
    "check_loss",
]

#: Loss names understood by the package (from the loss registry).
LOSSES = LOSS_NAMES
#: The problem's fields a prepared problem reads through its record.
_SPEC_FIELDS = ("loss", "loss_params", "lambda2", "max_abs_coef", "fit_intercept",
                "eig_shift")


# ----------------------------------------------------------------------------------------------
# the prepare step
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PreparedProblem:
    """A certification problem after every cheap check, before any expensive setup.

    Attributes
    ----------
    X : numpy.ndarray of shape (n_samples, n_features), or SparseDesign
        The data as float64 (C-contiguous), or a scipy.sparse ``X`` in canonical compressed
        sparse column form (:class:`sparsecert.sparse.SparseDesign`, never densified).
    y : numpy.ndarray of shape (n_samples,)
        The targets as given, as a new float64 array.
    y_used : numpy.ndarray of shape (n_samples,)
        The targets as the loss uses them (classification labels coded -1/+1 by the label rule
        of :func:`sparsecert.solvers.losses.binary_codes`).
    labels : list of two floats or None
        ``[label coded -1, label coded +1]`` for a classification loss.
    spec : sparsecert.problem.ProblemSpec
        The problem (checked; ``spec.k``, when set, is at most the number of features).
    sample_weight, offset : numpy.ndarray of shape (n_samples,) or None
        The problem's weights and offsets, checked against the data's length (None: none).
    coef_lower, coef_upper : numpy.ndarray of shape (n_features,) or None
        Every coefficient's bounds (:meth:`sparsecert.problem.ProblemSpec.coef_limits`) when
        the problem has bounds other than the symmetric box (``coef_bounds`` or ``positive``);
        None otherwise (the box ``max_abs_coef`` alone).
    forced_in, forced_out : numpy.ndarray of bool of shape (n_features,)
        The features of ``always_select`` and of ``exclude`` (the root's fixings).

    The problem's fields are also read as attributes (``loss``, ``lambda2``, ``max_abs_coef``
    with ``inf`` for no box, ``fit_intercept``, ``eig_shift``: resolved for the loss).
    """

    X: np.ndarray | SparseDesign
    y: np.ndarray
    y_used: np.ndarray
    labels: list[float] | None
    spec: ProblemSpec
    sample_weight: np.ndarray | None = None
    offset: np.ndarray | None = None
    coef_lower: np.ndarray | None = None
    coef_upper: np.ndarray | None = None
    forced_in: np.ndarray | None = None
    forced_out: np.ndarray | None = None

    def __getattr__(self, name: str):
        if name in _SPEC_FIELDS:  # the problem's fields, read through the record
            return getattr(self.spec, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])


def prepare(X, y, spec: ProblemSpec) -> PreparedProblem:
    """Check the data of the problem ``spec`` and code its targets; cheap (no factorisation).

    ``spec`` was checked when it was built; here the data are (shape, finiteness, exactness,
    scale, the loss's target rule) and ``spec.k`` against their number of features.

    Raises
    ------
    TypeError, ValueError
        As the module's exception policy says.
    """
    X, y = check_X_y(X, y)
    n, p = X.shape
    if spec.k is not None:
        check_k_fits(spec.k, p)
    if isinstance(X, SparseDesign):
        check_sparse_shift(spec.eig_shift)
        if (spec.sample_weight is not None and spec.fit_intercept
                and get_loss(spec.loss).has_closed_form_refit):
            raise ValueError(f"sample_weight with a sparse X and an intercept is not supported "
                             f"for the {spec.loss} loss (its weighted centring would densify "
                             "X); pass X dense (X.toarray()) for this combination")
    for name in ("sample_weight", "offset"):
        v = getattr(spec, name)
        if v is not None and v.shape[0] != n:
            raise ValueError(f"{name} has length {v.shape[0]}, X has {n} samples")
    for name in ("always_select", "exclude"):
        out = [j for j in getattr(spec, name) if j >= p]
        if out:
            raise ValueError(f"{name} holds indices outside [0, {p - 1}]: {out[:5]}")
    lower = upper = None
    if spec.has_coef_bounds:
        lower, upper = spec.coef_limits(p)
    forced_in = np.zeros(p, dtype=bool)
    forced_in[list(spec.always_select)] = True
    forced_out = np.zeros(p, dtype=bool)
    forced_out[list(spec.exclude)] = True
    y_used, labels = get_loss(spec.loss).encode_target(y)
    return PreparedProblem(X=X, y=y, y_used=y_used, labels=labels, spec=spec,
                           sample_weight=spec.sample_weight, offset=spec.offset,
                           coef_lower=lower, coef_upper=upper, forced_in=forced_in,
                           forced_out=forced_out)


def prepare_problem(X, y, lambda2, loss=DEFAULT_LOSS, max_abs_coef=None, fit_intercept=True,
                    eig_shift="auto", strict_shift: bool = False) -> PreparedProblem:
    """:func:`prepare` of the problem given by its parameters, without ``k`` (the relaxation
    on its own).

    ``strict_shift``: refuse any shift, "auto" included, for a loss other than least squares.
    """
    if strict_shift:
        check_eig_shift(eig_shift, check_loss(loss), strict=True)
    spec = ProblemSpec(None, lambda2, loss=loss, fit_intercept=fit_intercept,
                       max_abs_coef=max_abs_coef, eig_shift=eig_shift)
    return prepare(X, y, spec)


# ----------------------------------------------------------------------------------------------
# the data
# ----------------------------------------------------------------------------------------------
def check_array_2d(X, name: str = "X") -> np.ndarray:
    """Return ``X`` as a C-contiguous float64 2-D array, checking shape and finiteness."""
    if X is None:
        raise TypeError(f"{name} must be an array, got None")
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise TypeError(f"{name}: sparse matrices are not supported; pass a dense array")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} could not be converted to a numpy array: {exc}") from exc
    if arr.dtype == object and _is_frame(X):
        arr = _frame_as_float64(X, name)  # pandas mixes bool and float columns into objects
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_
    ):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got a complex array")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_samples, n_features), got shape "
                         f"{arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one sample and one feature, got shape "
                         f"{arr.shape}")
    raw, arr = arr, np.ascontiguousarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    check_exactly_float64(raw, arr, name)
    check_exact_source(X, arr, name)
    return arr


def _frame_as_float64(X, name: str) -> np.ndarray:
    """A data frame of numeric and boolean columns as a float64 array, column by column (its
    own conversion gives objects when bool columns stand beside float ones); each column is
    checked for exactness as :func:`check_exactly_float64` does, and a column that is not
    numeric (text, categories) is named."""
    cols = []
    for j in range(X.shape[1]):
        raw = np.asarray(X.iloc[:, j])
        if raw.dtype == object or not (np.issubdtype(raw.dtype, np.number)
                                       or raw.dtype == np.bool_):
            raise TypeError(f"{name}: column {X.columns[j]!r} is not numeric (dtype "
                            f"{X.dtypes.iloc[j]})")
        if np.iscomplexobj(raw):
            raise TypeError(f"{name} must be real, column {X.columns[j]!r} is complex")
        col = raw.astype(np.float64)
        at = _rounded_entry(raw, col)
        if at is not None:
            _refuse_rounded(name, (at[0], j), raw[at], col[at])
        cols.append(col)
    return np.ascontiguousarray(np.column_stack(cols)) if cols else np.asarray(X)


def check_vector(v, name: str, length: int | None = None) -> np.ndarray:
    """Return ``v`` as a 1-D float64 array, checking length and finiteness."""
    if v is None:
        raise TypeError(f"{name} must be an array, got None")
    arr = np.asarray(v)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got a complex array")
    if arr.ndim == 2 and 1 in arr.shape:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape} "
                         f"(use .ravel() if this is what you meant)")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} has length {arr.shape[0]}, expected {length}")
    raw, arr = arr, np.array(arr, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    check_exactly_float64(raw, arr, name)
    check_exact_source(v, arr, name)
    return arr


def check_exact_input(X, name: str) -> None:
    """Refuse an array-like that the conversion to float64 would round (as
    :func:`check_exactly_float64` and :func:`check_exact_source`), and nothing else: for callers
    that hand the input to another validator (scikit-learn's) afterwards, which reports every
    other problem in its own words. A scipy.sparse ``X`` gets the checks of a sparse design
    (:func:`sparsecert.sparse.as_sparse_design`: NaN, inexact values, entries stored twice)."""
    if is_sparse(X):
        as_sparse_design(X, name)
        return
    try:
        raw = np.asarray(X)
        if raw.dtype == object or np.iscomplexobj(raw):  # the other validator refuses complex
            return  # data before converting them (the cast would warn and drop the imaginary part)
        converted = raw if raw.dtype == np.float64 else raw.astype(np.float64)
    except (TypeError, ValueError):
        return
    check_exactly_float64(raw, converted, name)
    check_exact_source(X, converted, name)


def check_X_y(X, y) -> tuple[np.ndarray | SparseDesign, np.ndarray]:
    """Validate a design matrix and a response vector of matching length.

    Returns float64 arrays (``X`` C-contiguous; ``y`` always a fresh copy); a scipy.sparse
    ``X`` is returned in canonical compressed sparse column form
    (:func:`sparsecert.sparse.as_sparse_design`: checked, never densified).
    """
    sparse = is_sparse(X)
    X = as_sparse_design(X, "X") if sparse else check_array_2d(X, "X")
    y = check_vector(y, "y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X and y have inconsistent numbers of samples: X has {X.shape[0]} rows, "
                         f"y has length {y.shape[0]}")
    if sparse:  # (X's columns were checked by the conversion)
        check_scale(np.zeros((1, 1)), y)
    else:
        check_scale(X, y)
    return X, y


def check_sparse_shift(eig_shift) -> None:
    """Refuse a positive eigenvalue shift with a sparse X (its proof would form the dense p x p
    matrix X^T X); ``"auto"`` and ``None`` mean no shift there."""
    if eig_shift is not None and eig_shift != "auto" and float(eig_shift) > 0.0:
        raise ValueError(f"eig_shift = {eig_shift!r} needs a dense X (its proof forms the p x p "
                         "matrix X^T X); with a sparse X use eig_shift='auto' (no shift) or None")


#: the largest sum of squares of a column of X or of y: the Gram matrix, the losses and the
#: rigorous error bounds all stay well inside float64's range (overflow at about 1.8e308)
MAX_SUM_OF_SQUARES = 1e300


def check_scale(X: np.ndarray, y: np.ndarray) -> None:
    """Refuse data whose column sums of squares leave float64's range (one line, not a failure
    deep inside a factorisation)."""
    with np.errstate(over="ignore"):
        col = np.einsum("ij,ij->j", X, X)
        yy = float(np.dot(y, y))
    worst = float(np.max(col))
    if not worst <= MAX_SUM_OF_SQUARES:
        j = int(np.argmax(np.where(np.isfinite(col), col, np.inf)))
        raise ValueError(f"X is too large for float64 arithmetic: the sum of squares of column "
                         f"{j} is {worst:.3g} (at most {MAX_SUM_OF_SQUARES:g}); rescale X")
    if not yy <= MAX_SUM_OF_SQUARES:
        raise ValueError(f"y is too large for float64 arithmetic: its sum of squares is "
                         f"{yy:.3g} (at most {MAX_SUM_OF_SQUARES:g}); rescale y")


def check_index_set(idx, n_features: int, name: str) -> np.ndarray:
    """Convert an index collection (ints) or a boolean mask of length p to a boolean mask."""
    if idx is None:
        return np.zeros(n_features, dtype=bool)
    arr = np.asarray(list(idx) if isinstance(idx, Iterable) and not isinstance(idx, np.ndarray)
                     else idx)
    if arr.size == 0:
        return np.zeros(n_features, dtype=bool)
    if arr.dtype == np.bool_:
        if arr.shape != (n_features,):
            raise ValueError(f"{name} as a boolean mask must have shape ({n_features},), got "
                             f"{arr.shape}")
        return arr.copy()
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integer feature indices (or be a boolean mask), got "
                        f"dtype {arr.dtype}")
    arr = arr.ravel()
    if np.any(arr < 0) or np.any(arr >= n_features):
        raise ValueError(f"{name} holds indices outside [0, {n_features - 1}]: "
                         f"{arr[(arr < 0) | (arr >= n_features)][:5].tolist()}")
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} holds repeated indices")
    mask = np.zeros(n_features, dtype=bool)
    mask[arr] = True
    return mask


def check_fixings(fixed_in, fixed_out, k: int, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Check branch-and-bound fixings; return two boolean masks of length ``n_features``.

    ``fixed_in`` (z_j = 1) and ``fixed_out`` (z_j = 0) may be index collections or boolean masks.
    They must be disjoint and ``|fixed_in| <= k``.
    """
    s1 = check_index_set(fixed_in, n_features, "fixed_in")
    s0 = check_index_set(fixed_out, n_features, "fixed_out")
    both = np.flatnonzero(s1 & s0)
    if both.size:
        raise ValueError(f"fixed_in and fixed_out overlap on feature(s) {both[:5].tolist()}")
    n_in = int(s1.sum())
    if n_in > k:
        raise ValueError(f"|fixed_in| = {n_in} exceeds k = {k}")
    return s1, s0
