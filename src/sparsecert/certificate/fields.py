"""Checked conversions of a certificate's fields (numbers, indices, producer metadata).

numpy and the standard library only, like the rest of the writer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["finite", "integer", "jsonable", "is_sparse_design"]


def finite(v: Any, what: str) -> float:
    """``v`` as a finite float; ``TypeError``/``ValueError`` naming ``what`` otherwise."""
    if isinstance(v, bool):
        raise TypeError(f"{what} must be a number, got a bool")
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{what} must be a number, got {type(v).__name__}") from None
    if not math.isfinite(f):
        raise ValueError(f"{what} must be finite, got {f}")
    return f


def integer(v: Any, what: str) -> int:
    """``v`` as an int (a bool refused); ``TypeError`` naming ``what`` otherwise."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {v!r}")
    return int(v)


def jsonable(v: Any) -> Any:
    """Producer metadata to plain JSON (numpy scalars, tuples; non-finite floats as strings)."""
    if isinstance(v, Mapping):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else str(f)
    if v is None or isinstance(v, str):
        return v
    return str(v)


def is_sparse_design(X) -> bool:
    """``X`` is a :class:`~sparsecert.sparse.SparseDesign` (hashed by its CSC arrays)."""
    from sparsecert.sparse import SparseDesign

    return isinstance(X, SparseDesign)
