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
from sparsecert.proof.rounding import sums_to_zero

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
    z = np.asarray(zeta, dtype=np.float64)
    n = z.size
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, dtype=np.float64)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=np.float64)
    z = np.clip(z - z.mean(), lo, hi)
    scale = max(float(np.abs(z).max(initial=0.0)),
                float(np.abs(lo[np.isfinite(lo)]).max(initial=0.0)),
                float(np.abs(hi[np.isfinite(hi)]).max(initial=0.0)), 1e-300)
    e = math.frexp(scale)[1]  # scale < 2**e
    q = math.ldexp(1.0, e + math.ceil(math.log2(n + 1)) + 1 - 52)
    big = float(2 ** 52)
    lo_u = np.ceil(np.clip(lo / q, -big, big)).astype(np.int64)
    hi_u = np.floor(np.clip(hi / q, -big, big)).astype(np.int64)
    units = np.clip(np.rint(z / q).astype(np.int64), lo_u, hi_u)
    r = int(units.sum())  # entries are < 2**(52 - log2 n): the int64 sum is exact
    if r != 0:
        room = (units - lo_u) if r > 0 else (hi_u - units)
        order = np.argsort(-room, kind="stable")
        need = abs(r)
        take = np.minimum(room[order], need)
        cum = np.cumsum(take)
        take = np.where(cum <= need, take, np.maximum(0, need - (cum - take)))
        if int(take.sum()) != need:
            raise ValueError("the box [lower, upper] leaves no room for an exact zero sum")
        units[order] -= np.sign(r) * take
    out = units.astype(np.float64) * q
    if math.fsum(out.tolist()) != 0.0:  # cannot happen: all entries lie on the grid q
        raise RuntimeError("exact_zero_sum: internal error, the sum is not exactly zero")
    return out


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
    return relaxation.loss_fn.gradient(relaxation.X @ b, relaxation.y)


def raw_dual(relaxation, zeta: np.ndarray) -> np.ndarray:
    """An engine's dual point on the user's samples (the engine may keep only the samples of
    positive weight, and fold the weights of least squares into its data)."""
    fn = getattr(relaxation, "raw_dual", None)
    return np.asarray(zeta, dtype=np.float64) if fn is None else fn(zeta)


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
