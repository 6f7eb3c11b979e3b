"""The claim margins: what the producer claims from a value it computed and its safe bound.

The verifier proves ``exact >= v' - r'`` with its own value ``v'`` and radius ``r'`` for the same
exact quantity; since ``|v' - exact| <= r'`` and ``exact >= v - r`` (our value ``v``, radius
``r``), it proves ``v' - r' >= v - r - 2 r'``, which is ``>= v - 4 r`` as long as ``r' <= 1.5
r``: both radii come from the same a priori bounds evaluated on floats that agree to a few ulps,
so they agree far better than that. Hence a claim is ``value -/+ CLAIM_FACTOR * radius``.
"""

from __future__ import annotations

import math

import numpy as np

from sparsecert.proof.rounding import dn, up

__all__ = ["CLAIM_FACTOR", "claim_lower", "claim_lower_array", "claim_upper"]

#: A claim is ``value -/+ CLAIM_FACTOR * radius`` (see the module's docstring).
CLAIM_FACTOR = 4.0


def claim_lower(value: float, lower: float) -> float:
    """The lower bound to claim from a computed value and its safe lower bound."""
    if not (math.isfinite(value) and math.isfinite(lower)):
        return -math.inf
    r = max(value - lower, 0.0)
    return float(dn(value - float(up(CLAIM_FACTOR * r))))


def claim_lower_array(values: np.ndarray, lowers: np.ndarray, factor: float = CLAIM_FACTOR
                      ) -> np.ndarray:
    """:func:`claim_lower` elementwise (the same roundings, entry by entry), with another
    ``factor`` if given (the search decides its fixings on a larger one); ``-inf`` where a value
    or its bound is not finite."""
    values = np.asarray(values, dtype=np.float64)
    lowers = np.asarray(lowers, dtype=np.float64)
    ok = np.isfinite(values) & np.isfinite(lowers)
    v = np.where(ok, values, 0.0)
    r = np.maximum(v - np.where(ok, lowers, 0.0), 0.0)
    return np.where(ok, dn(v - up(factor * r)), -np.inf)


def claim_upper(value: float, upper: float) -> float:
    """The upper bound to claim from a computed value and its safe upper bound."""
    if not (math.isfinite(value) and math.isfinite(upper)):
        return math.inf
    r = max(upper - value, 0.0)
    return float(up(value + float(up(CLAIM_FACTOR * r))))
