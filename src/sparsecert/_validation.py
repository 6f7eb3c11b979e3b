"""Shared input checks.

Every public entry point of the package validates its inputs through these helpers, so that bad
input always produces the same clear :class:`ValueError` / :class:`TypeError` naming the problem.
None of them modifies what the user passed: whenever a conversion is needed a new float64 array
is returned.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

from sparsecert.solvers.losses import LOSS_NAMES, check_loss, get_loss

__all__ = [
    "LOSSES",
    "check_array_2d",
    "check_vector",
    "check_X_y",
    "check_k",
    "check_lambda2",
    "check_max_abs_coef",
    "check_loss",
    "check_labels_pm1",
    "check_poisson_counts",
    "check_fixings",
    "check_index_set",
]

#: Loss names understood by the package (from the loss registry).
LOSSES = LOSS_NAMES


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
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


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
    arr = np.array(arr, dtype=np.float64, copy=True)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_X_y(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Validate a design matrix and a response vector of matching length.

    Returns float64 arrays (``X`` C-contiguous; ``y`` always a fresh copy).
    """
    X = check_array_2d(X, "X")
    y = check_vector(y, "y")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X and y have inconsistent numbers of samples: X has {X.shape[0]} rows, "
                         f"y has length {y.shape[0]}")
    return X, y


def check_k(k, n_features: int) -> int:
    """Check the sparsity level ``1 <= k <= n_features`` (an integer)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an integer, got {type(k).__name__} {k!r}")
    k = int(k)
    if k < 1 or k > n_features:
        raise ValueError(f"k must satisfy 1 <= k <= n_features = {n_features}, got k = {k}")
    return k


def check_lambda2(lambda2) -> float:
    """Check the ridge weight ``lambda2 > 0`` (finite)."""
    if isinstance(lambda2, bool) or not isinstance(lambda2, numbers.Real):
        raise TypeError(f"lambda2 must be a real number, got {type(lambda2).__name__}")
    lam = float(lambda2)
    if not np.isfinite(lam):
        raise ValueError(f"lambda2 must be finite, got {lam}")
    if lam <= 0.0:
        raise ValueError(f"lambda2 must be > 0 (the perspective bound needs a ridge term), "
                         f"got {lam}")
    return lam


def check_max_abs_coef(M) -> float:
    """Check the box ``|b_j| <= M``: ``None`` means no box (returns ``np.inf``); else ``M > 0``."""
    if M is None:
        return float(np.inf)
    if isinstance(M, bool) or not isinstance(M, numbers.Real):
        raise TypeError(f"max_abs_coef must be a positive number or None, got "
                        f"{type(M).__name__}")
    M = float(M)
    if np.isnan(M) or M <= 0.0:
        raise ValueError(f"max_abs_coef must be > 0 (or None / inf for no box), got {M}")
    return M


def check_labels_pm1(y: np.ndarray, loss: str = "logistic") -> np.ndarray:
    """Classification labels coded -1/+1 by the label rule (:func:`~sparsecert.solvers.losses.
    binary_codes`: exactly two values, the smaller coded -1); a new float64 array."""
    return get_loss(loss).encode_target(np.asarray(y, dtype=np.float64))[0]


def check_poisson_counts(y: np.ndarray) -> np.ndarray:
    """Check that Poisson responses are non-negative (returns a float64 copy)."""
    return get_loss("poisson").encode_target(y)[0]


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
