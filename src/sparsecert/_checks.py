"""One check per parameter of the certified-GLM wing (the parameter table's ``check`` column).

Each check converts the value it accepts (a float, an int, ``math.inf`` for "no box") and raises
:class:`TypeError` for a bad type, :class:`ValueError` for a bad value, with a message naming
the parameter and the value. The table (:mod:`sparsecert._params`) says which check is whose;
the records (:mod:`sparsecert.problem`) run them. Imports numpy and the loss registry only.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np

from sparsecert.solvers.losses import REGISTRY, get_loss

__all__ = [
    "check_k", "check_k_fits", "check_ks", "check_lambda2", "check_max_abs_coef", "check_bool",
    "check_fit_intercept", "check_eig_shift", "check_shift_value", "check_rel_gap",
    "check_abs_gap", "check_time_limit", "check_positive_int", "check_node_limit",
    "check_n_jobs", "check_verbose", "check_choice", "check_executor", "check_log",
]


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool | np.bool_)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


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


def check_k(k, n_features: int | None = None) -> int:
    """Check the sparsity level: an integer with ``1 <= k`` (``<= n_features`` when given)."""
    if not _is_int(k):
        raise TypeError(f"k must be an integer, got {type(k).__name__} {k!r}")
    k = int(k)
    if n_features is None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got k = {k}")
    else:
        check_k_fits(k, n_features)
    return k


def check_k_fits(k: int, n_features: int) -> None:
    """The bound the data put on a checked ``k``: ``k <= n_features``."""
    if k < 1 or k > n_features:
        raise ValueError(f"k must satisfy 1 <= k <= n_features = {n_features}, got k = {k}")


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


#: the largest ridge weight: 2 lambda2 and the relaxation's terms stay finite (lambda2 near the
#: largest float made the node solver's step search loop on inf - inf)
MAX_LAMBDA2 = 1e300


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


def check_max_abs_coef(M) -> float:
    """Check the box ``|b_j| <= M``: ``None`` or ``inf`` mean no box (returns ``math.inf``, the
    one encoding of "no bound" inside the package); else ``M > 0``."""
    if M is None:
        return math.inf
    if isinstance(M, bool) or not isinstance(M, numbers.Real):
        raise TypeError(f"max_abs_coef must be a positive number or None, got "
                        f"{type(M).__name__}")
    M = _exact_float(M, "max_abs_coef")
    if np.isnan(M) or M <= 0.0:
        raise ValueError(f"max_abs_coef must be > 0 (or None / inf for no box), got {M}")
    return M


def check_bool(value, name: str) -> bool:
    """A switch: a bool (numpy's included)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def check_fit_intercept(fit_intercept) -> bool:
    """Check the intercept switch (a bool)."""
    return check_bool(fit_intercept, "fit_intercept")


def check_shift_value(eig_shift) -> float | str | None:
    """None, "auto" or a finite number >= 0 (whatever the loss)."""
    if eig_shift is None:
        return None
    if isinstance(eig_shift, str):
        if eig_shift != "auto":
            raise ValueError(f"eig_shift must be None, a number or 'auto', got {eig_shift!r}")
        return "auto"
    if not _is_real(eig_shift):
        raise TypeError(f"eig_shift must be None, a number or 'auto', got "
                        f"{type(eig_shift).__name__}")
    mu = float(eig_shift)
    if not math.isfinite(mu) or mu < 0.0:
        raise ValueError(f"eig_shift must be a finite number >= 0, got {mu}")
    return mu


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


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    choices = sorted(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose from {choices}")
    return value


def check_executor(executor):
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(f"executor must be a concurrent.futures.Executor or None, got "
                        f"{type(executor).__name__}")
    return executor


def check_log(log):
    if log is not None and not callable(log):
        raise TypeError(f"log must be callable (it receives each progress line) or None, got "
                        f"{type(log).__name__}")
    return log
