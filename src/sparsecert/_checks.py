"""The checks of the certified-GLM wing's parameters (the parameter table's ``check`` column).

What each parameter accepts is data, :data:`CONSTRAINTS` (in the spirit of scikit-learn's
``_parameter_constraints``: a type, conditions with their messages, what None means), and one
function checks a value against it, :func:`check`; both live in the bottom layer,
:mod:`sparsecert._constraints`, which the loss registry imports too, and are re-exported here.
The ``check_*`` functions below name the table's entries (and complete those whose bound
depends on the data, ``k <= n_features``); the array-valued parameters (weights, offsets,
coefficient bounds, feature indices) have checks of their own. Each check converts the value it
accepts (a float, an int, ``math.inf`` for "no box") and raises :class:`TypeError` for a bad
type, :class:`ValueError` for a bad value, with a message naming the parameter and the value.
The table (:mod:`sparsecert._params`) says which check is whose; the records
(:mod:`sparsecert.problem`) run them. Imports numpy, the constraint table and the loss registry
only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from sparsecert._constraints import (
    BOOL,
    CONSTRAINTS,
    POSITIVE_INT,
    Constraint,
    Rule,
    _exact_float,
    _exactly,
    _is_int,
    _is_real,
    _show,
    check,
    k_fits,
)
from sparsecert.solvers.losses import REGISTRY, get_loss

__all__ = [
    "Rule", "Constraint", "CONSTRAINTS", "BOOL", "POSITIVE_INT", "check", "check_k",
    "check_k_fits", "check_ks", "check_lambda2", "check_max_abs_coef", "check_bool",
    "check_fit_intercept", "check_eig_shift", "check_shift_value", "check_rel_gap",
    "check_abs_gap", "check_time_limit", "check_positive_int", "check_batch_overlap",
    "check_node_limit",
    "check_n_jobs", "check_verbose", "check_choice", "check_executor", "check_log",
    "check_sample_weight", "check_offset", "check_coef_bounds", "check_positive",
    "check_feature_indices", "check_always_select", "check_exclude",
]


def check_k(k, n_features: int | None = None) -> int:
    """Check the sparsity level: an integer with ``1 <= k`` (``<= n_features`` when given)."""
    return check("k", k, CONSTRAINTS["k"] if n_features is None else k_fits(n_features))


def check_k_fits(k: int, n_features: int) -> None:
    """The bound the data put on a checked ``k``: ``k <= n_features``."""
    check("k", k, k_fits(n_features))


def check_ks(ks, n_features: int | None) -> np.ndarray:
    """Distinct support sizes ``1 <= k <= n_features`` (an integer or an iterable of them),
    sorted increasing."""
    ks_fit = CONSTRAINTS["ks"] if n_features is None else replace(CONSTRAINTS["ks"],
                                                                  each=k_fits(n_features))
    return check("ks", ks, ks_fit)


def check_lambda2(lambda2) -> float:
    """Check the ridge weight ``lambda2 > 0`` (finite)."""
    return check("lambda2", lambda2, CONSTRAINTS["lambda2"])


def check_max_abs_coef(M) -> float:
    """Check the box ``|b_j| <= M``: ``None`` or ``inf`` mean no box (returns ``math.inf``, the
    one encoding of "no bound" inside the package); else ``M > 0``."""
    return check("max_abs_coef", M, CONSTRAINTS["max_abs_coef"])


def check_bool(value, name: str) -> bool:
    """A switch: a bool (numpy's included)."""
    return check(name, value, BOOL)


def check_fit_intercept(fit_intercept) -> bool:
    """Check the intercept switch (a bool)."""
    return check_bool(fit_intercept, "fit_intercept")


def check_shift_value(eig_shift) -> float | str | None:
    """None, "auto" or a finite number >= 0 (whatever the loss)."""
    return check("eig_shift", eig_shift, CONSTRAINTS["eig_shift"])


def check_eig_shift(eig_shift, loss: str, strict: bool = False) -> float | str | None:
    """Check the eigenvalue-shift option (the Cholesky proof of a given shift comes later).

    None, "auto" or a finite number >= 0, for a loss that takes a shift (least squares); for
    the other losses "auto" means None, or is an error if ``strict``, and a number is an error.
    """
    shift = check_shift_value(eig_shift)
    if shift is None or get_loss(loss).takes_shift:
        return shift
    if shift == "auto" and not strict:
        return None
    takes = " or ".join(name for name, ls in REGISTRY.items() if ls.takes_shift)
    raise ValueError(f"eig_shift is only defined for the {takes} loss (got loss={loss!r})")


def check_rel_gap(rel_gap) -> float:
    """The relative-gap target ``(UB - LB) / max(1, |UB|)``: a number in [0, 1)."""
    return check("rel_gap", rel_gap, CONSTRAINTS["rel_gap"])


def check_abs_gap(abs_gap) -> float:
    """The absolute-gap target: a finite number >= 0."""
    return check("abs_gap", abs_gap, CONSTRAINTS["abs_gap"])


def check_time_limit(time_limit) -> float | None:
    """Seconds, > 0, or None for no limit."""
    return check("time_limit", time_limit, CONSTRAINTS["time_limit"])


def check_positive_int(value, name: str) -> int:
    """An integer >= 1 (``name`` is the argument's name, for the message)."""
    return check(name, value, POSITIVE_INT)


def check_batch_overlap(batch_overlap) -> int | None:
    """Outcomes still to be applied when the next batch is handed out, >= 0, or None (the
    default: a quarter of the batch size)."""
    return check("batch_overlap", batch_overlap, CONSTRAINTS["batch_overlap"])


def check_node_limit(node_limit) -> int | None:
    """Evaluated nodes, >= 1, or None for no limit."""
    return check("node_limit", node_limit, CONSTRAINTS["node_limit"])


def check_n_jobs(n_jobs) -> int:
    """Parallel node evaluations: a positive integer, or -1 for all cores."""
    return check("n_jobs", n_jobs, CONSTRAINTS["n_jobs"])


def check_verbose(verbose) -> int:
    """Verbosity: an integer >= 0 (``True`` counts as 1)."""
    return check("verbose", verbose, CONSTRAINTS["verbose"])


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    """One of ``choices`` (strings)."""
    return check(name, value, Constraint(choices=lambda: choices))


def check_executor(executor):
    """A ``concurrent.futures.Executor`` (anything with ``submit``) or None."""
    return check("executor", executor, CONSTRAINTS["executor"])


def check_log(log):
    """A callable receiving each progress line, or None."""
    return check("log", log, CONSTRAINTS["log"])


# ----------------------------------------------------------------------------------------------
# per-sample and per-feature parameters (their lengths are checked against the data by the
# prepare step, sparsecert._validation.prepare)
# ----------------------------------------------------------------------------------------------
def _frozen(arr: np.ndarray) -> np.ndarray:
    """A read-only float64 copy (a record's array cannot be changed behind its back)."""
    out = np.array(arr, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


def _real_vector(value, name: str) -> np.ndarray:
    """``value`` as a 1-D float64 array that is exactly the numbers given (the data's own
    checks: numeric, real, one-dimensional, no rounding in the conversion)."""
    if hasattr(value, "toarray") and not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a dense 1-D array, got a sparse matrix")
    arr = np.asarray(value)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got a complex array")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    conv = np.asarray(arr, dtype=np.float64)
    check_exactly_float64(arr, conv, name)
    check_exact_source(value, conv, name)
    return conv


def _finite_vector(value, name: str) -> np.ndarray:
    """:func:`_real_vector`, not empty, every entry finite (a per-sample parameter)."""
    vec = _real_vector(value, name)
    if vec.size == 0:
        raise ValueError(f"{name} is empty")
    bad = np.flatnonzero(~np.isfinite(vec))
    if bad.size:
        raise ValueError(f"{name}[{int(bad[0])}] = {float(vec[bad[0]])!r} is not finite")
    return vec


def check_sample_weight(sample_weight) -> np.ndarray | None:
    """Per-sample weights ``w_i >= 0`` (finite, not all zero), or None for unit weights.

    The objective is ``sum_i w_i f(x_i^T b + c, y_i) + lambda2 ||b||^2``; a zero weight drops
    its sample, an integer weight counts it that many times. Returns a read-only float64 copy.
    """
    if sample_weight is None:
        return None
    w = _finite_vector(sample_weight, "sample_weight")
    neg = np.flatnonzero(w < 0)
    if neg.size:
        raise ValueError(f"sample_weight[{int(neg[0])}] = {float(w[neg[0]])!r} is negative "
                         f"(weights must be >= 0; {neg.size} negative)")
    if not (w > 0).any():
        raise ValueError("sample_weight is zero everywhere: no sample is left to fit")
    return _frozen(w)


def check_offset(offset) -> np.ndarray | None:
    """A fixed per-sample offset ``o_i`` in the linear predictor ``x_i^T b + c + o_i`` (finite),
    or None. Returns a read-only float64 copy."""
    return None if offset is None else _frozen(_finite_vector(offset, "offset"))


def _bound_side(value, name: str, inf: float) -> float | np.ndarray:
    """One side of ``coef_bounds``: None (no bound: ``inf`` with its sign), a number, or a 1-D
    array (one bound per feature, infinities allowed)."""
    if value is None:
        return inf
    if _is_real(value) or (isinstance(value, np.ndarray) and value.ndim == 0):
        v = _exact_float(value if not isinstance(value, np.ndarray) else value[()], name)
        if math.isnan(v):
            raise ValueError(f"{name} is NaN")
        return v
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable | np.ndarray):
        raise TypeError(f"{name} must be None, a number or a 1-D array of numbers, got "
                        f"{type(value).__name__}")
    arr = np.asarray([inf if v is None else v for v in value], dtype=object) \
        if not isinstance(value, np.ndarray) else value
    if arr.dtype == object:
        arr = np.asarray(arr.tolist())
    vec = _real_vector(arr, name)
    nan = np.flatnonzero(np.isnan(vec))
    if nan.size:
        raise ValueError(f"{name}[{int(nan[0])}] is NaN")
    return _frozen(vec)


def check_coef_bounds(coef_bounds) -> tuple | None:
    """Per-coefficient bounds ``lower_j <= b_j <= upper_j`` as a pair ``(lower, upper)``, each
    None (no bound), a number (every coefficient) or one number per feature (``-inf`` / ``inf``
    for none); or None for no bounds.

    ``b_j = 0`` must be feasible (the cardinality constraint sets coefficients to zero), so
    ``lower_j <= 0 <= upper_j``. Returns ``(lower, upper)`` with floats or read-only arrays.
    """
    if coef_bounds is None:
        return None
    if isinstance(coef_bounds, (str, bytes)) or not isinstance(coef_bounds, Iterable):
        raise TypeError(f"coef_bounds must be a pair (lower, upper), got "
                        f"{type(coef_bounds).__name__}")
    pair = list(coef_bounds)
    if len(pair) != 2:
        raise ValueError(f"coef_bounds must be a pair (lower, upper), got {len(pair)} items")
    lower = _bound_side(pair[0], "coef_bounds lower", -math.inf)
    upper = _bound_side(pair[1], "coef_bounds upper", math.inf)
    lo, hi = np.broadcast_arrays(np.asarray(lower), np.asarray(upper)) \
        if np.ndim(lower) == 0 or np.ndim(upper) == 0 or np.size(lower) == np.size(upper) \
        else (None, None)
    if lo is None:
        raise ValueError(f"coef_bounds: lower has {np.size(lower)} entries and upper "
                         f"{np.size(upper)}; give one per feature for both")
    lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
    crossed = np.flatnonzero(lo > hi)
    if crossed.size:
        j = int(crossed[0])
        where = f"[{j}]" if np.ndim(lower) or np.ndim(upper) else ""
        raise ValueError(f"coef_bounds: lower{where} = {float(lo[j])!r} > upper{where} = "
                         f"{float(hi[j])!r}")
    for side, arr, wrong in (("lower", lo, lo > 0), ("upper", hi, hi < 0)):
        bad = np.flatnonzero(wrong)
        if bad.size:
            j = int(bad[0])
            where = f"[{j}]" if np.ndim(lower if side == "lower" else upper) else ""
            raise ValueError(
                f"coef_bounds: {side}{where} = {float(arr[j])!r} excludes b = 0; every bound must "
                f"allow a zero coefficient (lower <= 0 <= upper), since a coefficient outside "
                f"the support is zero (use always_select to keep a feature in the model)")
    return (lower, upper)


def check_positive(positive) -> bool:
    """The sign constraint ``b_j >= 0`` for every coefficient (a bool)."""
    return check_bool(positive, "positive")


def check_feature_indices(indices, name: str) -> tuple[int, ...]:
    """Feature indices (integers >= 0, none repeated) as a sorted tuple; None or an empty
    collection: none. Their range is checked against the data by the prepare step."""
    if indices is None:
        return ()
    if isinstance(indices, (str, bytes)) or not isinstance(indices, Iterable | np.ndarray):
        raise TypeError(f"{name} must be a collection of feature indices (integers), got "
                        f"{type(indices).__name__}")
    vals = list(np.asarray(indices).ravel().tolist()) if isinstance(indices, np.ndarray) \
        else list(indices)
    out = []
    for v in vals:
        if not _is_int(v):
            raise TypeError(f"{name} must hold integer feature indices, got "
                            f"{type(v).__name__} {v!r}")
        if v < 0:
            raise ValueError(f"{name} holds the negative index {v}")
        out.append(int(v))
    if len(set(out)) != len(out):
        dup = sorted({v for v in out if out.count(v) > 1})
        raise ValueError(f"{name} holds repeated indices: {dup[:5]}")
    return tuple(sorted(out))


def check_always_select(indices) -> tuple[int, ...]:
    """Features forced into the model (counted in ``k``)."""
    return check_feature_indices(indices, "always_select")


def check_exclude(indices) -> tuple[int, ...]:
    """Features kept out of the model."""
    return check_feature_indices(indices, "exclude")


# ---- exactness of array data: the conversion to float64 must not round ------------------
def _is_frame(X) -> bool:
    """Whether ``X`` looks like a pandas data frame (columns with their own dtypes)."""
    return (not isinstance(X, np.ndarray) and getattr(X, "dtypes", None) is not None
            and hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2)


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
