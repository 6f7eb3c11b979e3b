"""Status demotion and the proven gap: what the claims allow the certificate to say.

The search's status says why it stopped; the certificate's status must hold for the *claimed*
bounds, which carry the margins of the proof's rounding. ``optimal`` is kept only when the
claimed gap, rounded up, is within a tolerance; when rounding alone keeps the gap open, the
status is ``precision_limited`` (the data are too ill-conditioned for the tolerance asked).
"""

from __future__ import annotations

import math

import numpy as np

from sparsecert.statuses import OPTIMAL, PRECISION_LIMITED

__all__ = ["certified_lower", "proven_gaps", "demote"]

#: the lower bound written when no region has a finite bound (the format wants a number)
NO_BOUND = -1e300


def certified_lower(region_claims: list[float], upper: float) -> float:
    """The lower bound to claim: the least region claim, at most the upper bound, and a finite
    number (``-1e300``, or below the upper bound, when nothing better is proven)."""
    lower = min(min(region_claims, default=-math.inf), upper)
    if not math.isfinite(lower):
        lower = NO_BOUND if not math.isfinite(upper) else min(upper, NO_BOUND)
    return lower


def proven_gaps(upper: float, lower: float) -> tuple[float, float]:
    """``(absolute gap, relative gap)`` of the claims, both rounded up."""
    abs_gap = max(0.0, float(np.nextafter(upper - lower, np.inf)))
    return abs_gap, float(np.nextafter(abs_gap / max(1.0, abs(upper)), np.inf))


def demote(status: str, abs_gap: float, rel_gap: float, abs_tol: float, rel_tol: float) -> str:
    """The certificate's status: the search's, except an ``optimal`` search whose claimed gaps
    are above both tolerances becomes ``precision_limited``."""
    if status == OPTIMAL and not (rel_gap <= rel_tol or abs_gap <= abs_tol):
        return PRECISION_LIMITED
    return status
