"""Witness translation: the engine's witnesses become the certificate's, each with its safe terms.

The engine keeps, for a node, a :class:`sparsecert.bnb.node.Witness`: a small record with a
stable id (the order the search kept it), a kind and a vector. A child inherits its parent's
record, so the id says which nodes share a witness. The certificate's witness of each is:

* a point ``b~`` of the shifted relaxation (``mu > 0``): the *shifted* witness ``b~``;
* a point ``b~`` of the plain relaxation: the *dual* witness ``zeta = f'(X b~)`` on the engine's
  data (the dual point of the relaxation at ``b~``);
* a dual point ``zeta`` (an intercept carried as a variable): the *dual* witness ``zeta``;

a dual witness clipped into the conjugate's domain and, with an intercept, moved to an exactly
zero sum (:func:`exact_zero_sum`). The proof recorder (:mod:`sparsecert.proof.recorder`)
translates each witness once, when the first node that needs it closes, and writes it to the
proof file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sparsecert.proof.bounds import SafeEvaluator
from sparsecert.proof.rounding import exact_sum, sums_to_zero

__all__ = ["ZERO_ID", "ZeroWitness", "certificate_witness", "dual_witness", "exact_zero_sum",
           "point_dual", "raw_dual"]

#: the id of the producer's zero witness (the engine numbers its witnesses from 0)
ZERO_ID = -1


@dataclass(eq=False)
class ZeroWitness:
    """The dual point ``zeta = 0``: in every loss's domain, zero-sum, so its bound is weak but
    proven. A leaf the search never bounded (a root a Ctrl-C stopped) gets it. ``cert`` is set
    by the proof recorder once it is written (see :class:`sparsecert.bnb.node.Witness`)."""

    vector: np.ndarray
    id: int = ZERO_ID
    kind: str = "dual"
    cert: tuple[int, int] | None = None


def exact_zero_sum(zeta: np.ndarray, lower: np.ndarray | None = None,
                   upper: np.ndarray | None = None) -> np.ndarray:
    """A vector close to ``zeta`` whose exact sum is zero (``math.fsum(out) == 0.0``), inside
    ``[lower, upper]``.

    The entries are moved to a common power-of-two grid ``q`` fine enough that every partial sum
    is exact, the mean is removed, and the remaining integer number of grid units is spread over
    the entries with room inside the box.

    Raises
    ------
    ValueError
        If the box leaves no room to reach a zero sum.
    """
    # (the n-vectors are made one after the other and released early: a witness of a large
    # problem costs a few copies of itself, not a dozen)
    z = np.asarray(zeta, dtype=np.float64)
    n = z.size
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, dtype=np.float64)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=np.float64)
    z = z - z.mean()
    np.clip(z, lo, hi, out=z)
    scale = max(_abs_max(z), _abs_max(lo[np.isfinite(lo)]), _abs_max(hi[np.isfinite(hi)]),
                1e-300)
    e = math.frexp(scale)[1]  # scale < 2**e
    q = math.ldexp(1.0, e + math.ceil(math.log2(n + 1)) + 1 - 52)
    big = float(2 ** 52)
    z /= q
    np.rint(z, out=z)
    units = z.astype(np.int64)
    del z
    np.minimum(units, _grid_units(hi, q, big, np.floor), out=units)
    np.maximum(units, _grid_units(lo, q, big, np.ceil), out=units)
    r = int(units.sum())  # entries are < 2**(52 - log2 n): the int64 sum is exact
    if r != 0:
        # the |r| grid units are taken from the entries with the most room, in decreasing
        # order of room (ties: the first entry first)
        if r > 0:
            room = units - _grid_units(lo, q, big, np.ceil)
        else:
            room = _grid_units(hi, q, big, np.floor) - units
        need = abs(r)
        first = int(np.argmax(room))
        if int(room[first]) >= need:  # (the usual case: one entry has room for all of it)
            del room
            units[first] -= np.sign(r) * need
        else:
            order = np.argsort(-room, kind="stable")
            take = room[order]
            del room
            np.minimum(take, need, out=take)
            cum = np.cumsum(take)
            take = np.where(cum <= need, take, np.maximum(0, need - (cum - take)))
            del cum
            if int(take.sum()) != need:
                raise ValueError("the box [lower, upper] leaves no room for an exact zero sum")
            units[order] -= np.sign(r) * take
    out = units.astype(np.float64)
    del units
    out *= q
    if exact_sum(out) != 0.0:  # cannot happen: all entries lie on the grid q
        raise RuntimeError("exact_zero_sum: internal error, the sum is not exactly zero")
    return out


def _abs_max(a: np.ndarray) -> float:
    """max |a_i| (0 for an empty array), without a temporary of |a|."""
    return float(max(a.max(), -a.min())) if a.size else 0.0


def _grid_units(bound: np.ndarray, q: float, big: float, rounding) -> np.ndarray:
    """``rounding(clip(bound / q, -big, big))`` as int64 (a bound on the grid of step q)."""
    t = bound / q
    np.clip(t, -big, big, out=t)
    rounding(t, out=t)
    return t.astype(np.int64)


def dual_witness(ev: SafeEvaluator, zeta: np.ndarray) -> np.ndarray:
    """A dual witness the verifier accepts, from an (approximate) dual point: clipped into the
    domain and, with an intercept, rounded to an exactly zero sum."""
    lo, hi = ev.dual_domain()
    z = np.clip(np.asarray(zeta, dtype=np.float64), lo, hi)
    if ev.fit_intercept and not sums_to_zero(z):
        z = exact_zero_sum(z, lo, hi)
    return z


def point_dual(relaxation, b: np.ndarray) -> np.ndarray:
    """The dual point of the relaxation at ``b``, on the user's samples: the gradient of the
    (weighted) loss at ``X b`` (the engine's data), mapped back by :func:`raw_dual`."""
    fn = getattr(relaxation, "dual_of_point", None)
    if fn is not None:
        return fn(b)
    return relaxation.loss_fn.gradient(_xb(relaxation, b), relaxation.y)


def raw_dual(relaxation, zeta: np.ndarray) -> np.ndarray:
    """An engine's dual point on the user's samples (the engine may keep only the samples of
    positive weight, and fold the weights of least squares into its data)."""
    fn = getattr(relaxation, "raw_dual", None)
    return np.asarray(zeta, dtype=np.float64) if fn is None else fn(zeta)


def _xb(rx, vec: np.ndarray) -> np.ndarray:
    """``X b~`` on the engine's data (a sparse design through its kernels, centred as the
    engine centres it)."""
    if getattr(rx, "sparse", False):
        from sparsecert.solvers.perspective._linalg import xb

        return xb(rx.design, vec)
    return rx.X @ vec


def certificate_witness(ev: SafeEvaluator, relaxation, witness) -> tuple[str, np.ndarray]:
    """The certificate's witness ``(kind, vector)`` of an engine witness (see the module's
    docstring): a shifted point with a proven shift, else a dual point inside the domain, on
    the user's samples."""
    vec = np.asarray(witness.vector, dtype=np.float64)
    if witness.kind == "point" and relaxation.mu > 0:
        return "shifted", vec
    if witness.kind == "point":  # the dual point of the unshifted relaxation at b~
        return "dual", dual_witness(ev, point_dual(relaxation, vec))
    if witness.id == ZERO_ID:  # the producer's own, on the user's samples already
        return "dual", dual_witness(ev, vec)
    return "dual", dual_witness(ev, raw_dual(relaxation, vec))
