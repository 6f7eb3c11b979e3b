"""The one validation path of the certified-GLM wing.

Every entry point -- :func:`sparsecert.certify`, :func:`sparsecert.certify_path`, the
estimators, the ``sparsecert certify`` command and the relaxation itself -- checks its inputs
with these functions, and the first three through one prepare step, :func:`prepare_problem`,
which runs every cheap check before any expensive setup (the Lipschitz constant, the eigenvalue
shift, the search).

Exception policy: :class:`TypeError` when an argument has the wrong type (``k=2.5``,
``lambda2="big"``, ``fit_intercept="yes"``), :class:`ValueError` when it has the right type
but a bad value (``k=0``, ``lambda2=-1``, NaN in ``X``, three labels for a classification loss).
Messages name the argument and the value. Nothing the user passed is modified: conversions
return new arrays.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from sparsecert.solvers.losses import LOSS_NAMES, SQUARED, check_loss, get_loss

__all__ = [
    "LOSSES",
    "PreparedProblem",
    "prepare_problem",
    "check_options",
    "check_hyperparameters",
    "check_array_2d",
    "check_exactly_float64",
    "check_exact_source",
    "check_exact_input",
    "check_vector",
    "check_X_y",
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
    "check_fixings",
    "check_index_set",
]

#: Loss names understood by the package (from the loss registry).
LOSSES = LOSS_NAMES


# ----------------------------------------------------------------------------------------------
# the prepare step
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PreparedProblem:
    """A certification problem after every cheap check, before any expensive setup.

    Attributes
    ----------
    X : numpy.ndarray of shape (n_samples, n_features)
        The data as float64 (C-contiguous).
    y : numpy.ndarray of shape (n_samples,)
        The targets as given, as a new float64 array.
    y_used : numpy.ndarray of shape (n_samples,)
        The targets as the loss uses them (classification labels coded -1/+1 by the label rule
        of :func:`sparsecert.solvers.losses.binary_codes`).
    labels : list of two floats or None
        ``[label coded -1, label coded +1]`` for a classification loss.
    loss : str
    lambda2 : float
    max_abs_coef : float or None
        The box as given (None: no box).
    fit_intercept : bool
    eig_shift : float, "auto" or None
        The eigenvalue-shift option, resolved for the loss (None unless least squares).
    """

    X: np.ndarray
    y: np.ndarray
    y_used: np.ndarray
    labels: list[float] | None
    loss: str
    lambda2: float
    max_abs_coef: float | None
    fit_intercept: bool
    eig_shift: float | str | None


def prepare_problem(X, y, lambda2, loss="squared", max_abs_coef=None, fit_intercept=True,
                    eig_shift="auto", strict_shift: bool = False) -> PreparedProblem:
    """Check a certification problem and code its targets; cheap (no factorisation).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    lambda2 : float
        Ridge weight, > 0.
    loss : str
        A name of the loss registry.
    max_abs_coef : float or None
        Box ``|b_j| <= M``, ``M > 0``; None for no box.
    fit_intercept : bool
    eig_shift : float, "auto" or None
        Least squares only ("auto" means None for the other losses, where there is no shift,
        unless ``strict_shift``).
    strict_shift : bool
        Refuse any shift, "auto" included, for a loss other than least squares.

    Returns
    -------
    PreparedProblem

    Raises
    ------
    TypeError, ValueError
        As the module's exception policy says.
    """
    loss = check_loss(loss)
    X, y = check_X_y(X, y)
    lam = check_lambda2(lambda2)
    M = check_max_abs_coef(max_abs_coef)
    fit_intercept = check_fit_intercept(fit_intercept)
    shift = check_eig_shift(eig_shift, loss, strict=strict_shift)
    y_used, labels = get_loss(loss).encode_target(y)
    return PreparedProblem(X=X, y=y, y_used=y_used, labels=labels, loss=loss, lambda2=lam,
                           max_abs_coef=None if math.isinf(M) else M,
                           fit_intercept=fit_intercept, eig_shift=shift)


def check_options(*, rel_gap=1e-4, abs_gap=0.0, time_limit=None, node_limit=None, n_jobs=1,
                  verbose=0) -> None:
    """Check the search options shared by every entry point (see the ``check_*`` functions)."""
    check_rel_gap(rel_gap)
    check_abs_gap(abs_gap)
    check_time_limit(time_limit)
    check_node_limit(node_limit)
    check_n_jobs(n_jobs)
    check_verbose(verbose)


def check_hyperparameters(estimator) -> None:
    """The hyper-parameters of a sparsecert estimator, checked at ``fit`` (never in
    ``__init__``); the message names the estimator."""
    try:
        check_k(estimator.k)
        check_lambda2(estimator.lambda2)
        check_max_abs_coef(estimator.max_abs_coef)
        check_fit_intercept(estimator.fit_intercept)
        check_options(rel_gap=estimator.rel_gap, time_limit=estimator.time_limit,
                      n_jobs=estimator.n_jobs, verbose=estimator.verbose)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{type(estimator).__name__}: {exc}") from None


# ----------------------------------------------------------------------------------------------
# one check per argument
# ----------------------------------------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def check_k(k, n_features: int | None = None) -> int:
    """Check the sparsity level: an integer with ``1 <= k`` (``<= n_features`` when given)."""
    if not _is_int(k):
        raise TypeError(f"k must be an integer, got {type(k).__name__} {k!r}")
    k = int(k)
    if n_features is None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got k = {k}")
    elif k < 1 or k > n_features:
        raise ValueError(f"k must satisfy 1 <= k <= n_features = {n_features}, got k = {k}")
    return k


def check_ks(ks, n_features: int | None) -> np.ndarray:
    """Distinct support sizes ``1 <= k <= n_features`` (an integer or an iterable of them),
    sorted increasing."""
    if _is_int(ks):
        ks = [ks]
    if isinstance(ks, str) or not isinstance(ks, Iterable):
        raise TypeError(f"ks must be an iterable of integers, got {type(ks).__name__}")
    vals = list(ks)
    for k in vals:
        if not _is_int(k):
            raise TypeError(f"ks must hold integers: k must be an integer, got "
                            f"{type(k).__name__} {k!r}")
        check_k(k, n_features)
    vals = [int(k) for k in vals]
    if not vals:
        raise ValueError("ks is empty: give at least one support size")
    if len(set(vals)) != len(vals):
        raise ValueError(f"ks holds repeated values: {sorted(vals)}")
    return np.asarray(sorted(vals), dtype=np.intp)


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


def _is_frame(X) -> bool:
    """Whether ``X`` looks like a pandas data frame (columns with their own dtypes)."""
    return (not isinstance(X, np.ndarray) and getattr(X, "dtypes", None) is not None
            and hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2)


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


def check_exactly_float64(raw: np.ndarray, converted: np.ndarray, name: str) -> None:
    """Refuse values that the conversion to float64 rounded (integers beyond 2^53, long
    doubles): the problem solved, and its certificate, would be about other data than the
    user's (the standalone verifier refuses such data too)."""
    where = _rounded_entry(raw, converted)
    if where is not None:
        _refuse_rounded(name, where, raw[where], converted[where])


def _rounded_entry(raw: np.ndarray, converted: np.ndarray) -> tuple | None:
    """Index of an entry of the array ``raw`` that its float64 ``converted`` changed, or None."""
    if raw.dtype.kind in "iu" and raw.dtype.itemsize >= 8:
        for idx in map(tuple, np.argwhere((raw > 2 ** 53) | (raw < -(2 ** 53)))):
            if int(converted[idx]) != int(raw[idx]):
                return idx
    elif raw.dtype.kind == "f" and raw.dtype.itemsize > 8:
        diff = np.argwhere(converted.astype(raw.dtype) != raw)
        if diff.size:
            return tuple(diff[0])
    return None


def _refuse_rounded(name: str, where: tuple, value, rounded) -> None:
    at = ", ".join(str(int(i)) for i in where)
    raise ValueError(f"{name}[{at}] = {_show(value)} is not exactly a float64 (it would become "
                     f"{float(rounded)!r}); convert the data to float64 yourself if that "
                     "rounding is intended")


def _show(value) -> str:
    """A number as the user gave it, every digit of a long double, at most about 40 characters."""
    text = (np.format_float_positional(value, unique=True) if isinstance(value, np.floating)
            else str(value))
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text)} characters)"


def _exactly(value, rounded: float) -> bool:
    """Whether the real number ``value`` equals the Python float ``rounded`` exactly (Python
    compares an int, a Fraction or a Decimal with a float exactly; numpy integers are made
    Python ints first, numpy would compare them after converting to float64; a long double
    compares in long double)."""
    if type(value) is float:
        return True
    if isinstance(value, numbers.Integral):
        return int(value) == rounded
    return bool(value == rounded)


def check_exact_source(source, converted: np.ndarray, name: str) -> None:
    """Refuse an input that is not a numpy array (nested lists, a data frame, ...) when numpy's
    conversion rounded one of its entries: numpy converts a list that mixes floats and integers
    beyond 2^53, and pandas a data frame with such an integer column beside float columns, to
    float64 before :func:`check_exactly_float64` sees a dtype to check. A data frame is checked
    column by column (its float64 and narrower columns are exact), anything else entry by entry,
    each entry compared exactly with its float64 value."""
    if isinstance(source, np.ndarray) or converted.dtype != np.float64:
        return
    if _is_frame(source):
        for j in range(converted.shape[1]):
            column = np.asarray(source.iloc[:, j])
            if column.dtype.kind in "fb" and column.dtype.itemsize <= 8:
                continue
            if column.dtype != object:
                at = _rounded_entry(column, converted[:, j])
                if at is not None:
                    _refuse_rounded(name, (at[0], j), column[at], converted[at[0], j])
                continue
            for i, value in enumerate(column.tolist()):
                if not _exactly(value, float(converted[i, j])):
                    _refuse_rounded(name, (i, j), value, converted[i, j])
        return
    try:
        obj = np.asarray(source, dtype=object)
    except (TypeError, ValueError):  # pragma: no cover - numpy converted it just before
        return
    if obj.shape != converted.shape:
        return
    for i, (value, rounded) in enumerate(zip(obj.ravel().tolist(),
                                             converted.ravel().tolist(), strict=True)):
        if not _exactly(value, rounded):
            where = tuple(int(j) for j in np.unravel_index(i, converted.shape))
            _refuse_rounded(name, where, value, rounded)


def check_exact_input(X, name: str) -> None:
    """Refuse an array-like that the conversion to float64 would round (as
    :func:`check_exactly_float64` and :func:`check_exact_source`), and nothing else: for callers
    that hand the input to another validator (scikit-learn's) afterwards, which reports every
    other problem in its own words."""
    try:
        raw = np.asarray(X)
        if raw.dtype == object:
            return
        converted = raw if raw.dtype == np.float64 else raw.astype(np.float64)
    except (TypeError, ValueError):
        return
    check_exactly_float64(raw, converted, name)
    check_exact_source(X, converted, name)


def check_X_y(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Validate a design matrix and a response vector of matching length.

    Returns float64 arrays (``X`` C-contiguous; ``y`` always a fresh copy).
    """
    X = check_array_2d(X, "X")
    y = check_vector(y, "y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X and y have inconsistent numbers of samples: X has {X.shape[0]} rows, "
                         f"y has length {y.shape[0]}")
    check_scale(X, y)
    return X, y


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


def _exact_float(value, name: str) -> float:
    """``float(value)`` for a real number that float64 holds exactly; a ValueError naming
    ``name`` otherwise (an integer beyond 2^53, a Fraction such as 1/3, a long double): the
    problem solved, and its certificate, would have another parameter than the user's."""
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(f"{name} = {_show(value)} is too large for float64") from None
    if not (math.isnan(f) or _exactly(value, f)):
        raise ValueError(f"{name} = {_show(value)} is not exactly a float64 (it would become "
                         f"{f!r}); pass a float if that rounding is intended")
    return f


def check_lambda2(lambda2) -> float:
    """Check the ridge weight ``lambda2 > 0`` (finite)."""
    if isinstance(lambda2, bool) or not isinstance(lambda2, numbers.Real):
        raise TypeError(f"lambda2 must be a real number, got {type(lambda2).__name__}")
    lam = _exact_float(lambda2, "lambda2")
    if not np.isfinite(lam):
        raise ValueError(f"lambda2 must be finite, got {lam}")
    if lam <= 0.0:
        raise ValueError(f"lambda2 must be > 0 (the perspective bound needs a ridge term), "
                         f"got {lam}")
    if lam > MAX_LAMBDA2:
        raise ValueError(f"lambda2 must be at most {MAX_LAMBDA2:g} (larger values overflow "
                         f"float64 arithmetic in the relaxation), got {lam:g}")
    return lam


#: the largest ridge weight: 2 lambda2 and the relaxation's terms stay finite (lambda2 near the
#: largest float made the node solver's step search loop on inf - inf)
MAX_LAMBDA2 = 1e300


def check_max_abs_coef(M) -> float:
    """Check the box ``|b_j| <= M``: ``None`` means no box (returns ``np.inf``); else ``M > 0``."""
    if M is None:
        return float(np.inf)
    if isinstance(M, bool) or not isinstance(M, numbers.Real):
        raise TypeError(f"max_abs_coef must be a positive number or None, got "
                        f"{type(M).__name__}")
    M = _exact_float(M, "max_abs_coef")
    if np.isnan(M) or M <= 0.0:
        raise ValueError(f"max_abs_coef must be > 0 (or None / inf for no box), got {M}")
    return M


def check_fit_intercept(fit_intercept) -> bool:
    """Check the intercept switch (a bool)."""
    if not isinstance(fit_intercept, bool | np.bool_):
        raise TypeError(f"fit_intercept must be a bool, got {type(fit_intercept).__name__}")
    return bool(fit_intercept)


def check_eig_shift(eig_shift, loss: str, strict: bool = False) -> float | str | None:
    """Check the eigenvalue-shift option (the Cholesky proof of a given shift comes later).

    None, "auto" or a finite number >= 0, for least squares; for the other losses (they have no
    shift) "auto" means None, or is an error if ``strict``, and a number is an error.
    """
    if eig_shift is None:
        return None
    if isinstance(eig_shift, str):
        if eig_shift != "auto":
            raise ValueError(f"eig_shift must be None, a number or 'auto', got {eig_shift!r}")
        if get_loss(loss).loss_id == SQUARED:
            return "auto"
        if strict:
            raise ValueError(f"eig_shift is only defined for the squared loss (got "
                             f"loss={loss!r})")
        return None
    if not _is_real(eig_shift):
        raise TypeError(f"eig_shift must be None, a number or 'auto', got "
                        f"{type(eig_shift).__name__}")
    mu = float(eig_shift)
    if not math.isfinite(mu) or mu < 0.0:
        raise ValueError(f"eig_shift must be a finite number >= 0, got {mu}")
    if get_loss(loss).loss_id != SQUARED:
        raise ValueError(f"eig_shift is only defined for the squared loss (got loss={loss!r})")
    return mu


def check_rel_gap(rel_gap) -> float:
    """The relative-gap target ``(UB - LB) / max(1, |UB|)``: a number in [0, 1)."""
    if not _is_real(rel_gap):
        raise TypeError(f"rel_gap must be a number, got {type(rel_gap).__name__}")
    if not 0.0 <= rel_gap < 1.0:
        raise ValueError(f"rel_gap must be in [0, 1), got {rel_gap}")
    return float(rel_gap)


def check_abs_gap(abs_gap) -> float:
    """The absolute-gap target: a finite number >= 0."""
    if not _is_real(abs_gap):
        raise TypeError(f"abs_gap must be a number, got {type(abs_gap).__name__}")
    if not (math.isfinite(abs_gap) and abs_gap >= 0.0):
        raise ValueError(f"abs_gap must be a finite number >= 0, got {abs_gap}")
    return float(abs_gap)


def check_time_limit(time_limit) -> float | None:
    """Seconds, > 0, or None for no limit."""
    if time_limit is None:
        return None
    if not _is_real(time_limit):
        raise TypeError(f"time_limit must be a number or None, got {type(time_limit).__name__}")
    if not time_limit > 0:
        raise ValueError(f"time_limit must be > 0 (or None for no limit), got {time_limit}")
    return float(time_limit)


def check_positive_int(value, name: str) -> int:
    """An integer >= 1 (``name`` is the argument's name, for the message)."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def check_node_limit(node_limit) -> int | None:
    """Evaluated nodes, >= 1, or None for no limit."""
    return None if node_limit is None else check_positive_int(node_limit, "node_limit")


def check_n_jobs(n_jobs) -> int:
    """Parallel node evaluations: a positive integer, or -1 for all cores."""
    if not _is_int(n_jobs):
        raise TypeError(f"n_jobs must be an integer, got {type(n_jobs).__name__} {n_jobs!r}")
    if n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs}")
    return int(n_jobs)


def check_verbose(verbose) -> int:
    """Verbosity: an integer >= 0 (``True`` counts as 1)."""
    if not isinstance(verbose, numbers.Integral):
        raise TypeError(f"verbose must be an integer, got {type(verbose).__name__} {verbose!r}")
    if verbose < 0:
        raise ValueError(f"verbose must be >= 0, got {verbose}")
    return int(verbose)


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
