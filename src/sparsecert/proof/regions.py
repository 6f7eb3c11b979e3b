"""Region bounds: the bounds of the regions ``z_j = 1`` and ``z_j = 0`` of a node, from one sort
of its witness's terms (``docs/certificate-format.md``, section 4.5).

A witness (a dual vector zeta, or a point of the shifted relaxation) bounds every node by

    bound(S1, S0) = K - 2 lam g*_node(a),   g*_node(a) = sum_{S1} h_j + (sum of the beta largest
                                                         h_j over the free set R),

with per-variable terms ``h_j = H_M(a_j) >= 0`` and ``beta = k - |S1|`` (the constant K and the
terms depend on the witness only). Forcing one free variable in or out changes only the top-beta
sum, so the bounds of the two regions of every free j come from one sort of the terms. With the
free terms in decreasing order, ``T_m`` the sum of the m largest and r the rank of j:

* region ``z_j = 1`` (j joins S1, the budget drops to beta - 1):
  ``g* = sum_{S1} h + (T_beta if r <= beta - 1 else h_j + T_{beta-1})``;
* region ``z_j = 0`` (j joins S0):
  ``g* = sum_{S1} h + (T_{beta+1} - h_j if r <= beta - 1 else T_beta)``.

The search uses these bounds to decide its reduced-cost fixings (:mod:`sparsecert.bnb.fixing`);
the producer claims them for the regions a node's fixings cut off (:func:`fixing_regions`). The
safe values come from the witness's safe parts (``k_lo`` a lower bound of K, ``h_hi`` upper
bounds of the terms; :mod:`sparsecert.proof.bounds`), every sum rounded upward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sparsecert.proof.rounding import dn, pos_sum_hi, up

__all__ = ["TermBound", "Regions", "region_bounds", "fixing_regions"]


class TermBound(Protocol):
    """What a region bound needs from a witness (:class:`sparsecert.proof.bounds.WitnessBound`).

    ``k_mid``/``k_lo``: the computed and a safe lower value of K; ``lam``: the weight; ``h_mid``/
    ``h_hi``: the computed and safe upper Huber terms (length p, nonnegative).
    """

    k_mid: float
    k_lo: float
    lam: float
    h_mid: np.ndarray
    h_hi: np.ndarray


@dataclass
class Regions:
    """Bounds of the two regions of every free variable of one node.

    ``free`` are the free variables in decreasing order of their terms; ``in_value``/
    ``in_lower`` the computed and safe bounds of the regions ``z_j = 1`` (j forced in),
    ``out_value``/``out_lower`` those of ``z_j = 0``, aligned with ``free``; ``beta`` the budget.
    """

    free: np.ndarray
    beta: int
    in_value: np.ndarray
    in_lower: np.ndarray
    out_value: np.ndarray
    out_lower: np.ndarray


def _sum_hi(v: np.ndarray) -> float:
    return float(pos_sum_hi(v))


def _region_conjugates(h: np.ndarray, base: float, beta: int, upper: bool
                       ) -> tuple[np.ndarray, np.ndarray]:
    """g* of the regions z_j = 1 and z_j = 0 for sorted free terms ``h`` (decreasing).

    With ``upper`` the sums are upper bounds of the exact ones (every rounding upward).
    """
    m = h.size
    add = (lambda a, b: up(a + b)) if upper else (lambda a, b: a + b)
    sub = (lambda a, b: up(a - b)) if upper else (lambda a, b: a - b)
    tsum = _sum_hi if upper else (lambda v: float(v.sum()))
    t_bm1 = tsum(h[:beta - 1]) if beta >= 1 else 0.0
    t_b = tsum(h[:beta])
    t_bp1 = tsum(h[:beta + 1])
    top = np.arange(m) <= beta - 1
    g_in = np.where(top, t_b, add(h, t_bm1))
    g_out = np.where(top, np.maximum(sub(t_bp1, h), 0.0), t_b)
    return add(base, g_in), add(base, g_out)


def region_bounds(wb: TermBound, fixed_in: np.ndarray, fixed_out: np.ndarray, k: int
                  ) -> Regions | None:
    """The computed and safe bounds of both regions of every free variable (``None`` when the
    node has no cardinality coupling: budget 0 or every free variable fits it)."""
    free = np.flatnonzero(~(fixed_in | fixed_out))
    beta = k - int(fixed_in.sum())
    if beta <= 0 or free.size <= beta:
        return None
    order_mid = free[np.argsort(-wb.h_mid[free], kind="stable")]
    order_hi = free[np.argsort(-wb.h_hi[free], kind="stable")]
    base_mid = float(wb.h_mid[fixed_in].sum())
    base_hi = _sum_hi(wb.h_hi[fixed_in])
    gi_mid, go_mid = _region_conjugates(wb.h_mid[order_mid], base_mid, beta, upper=False)
    gi_hi, go_hi = _region_conjugates(wb.h_hi[order_hi], base_hi, beta, upper=True)
    # align the safe values with the computed order
    pos = np.empty(wb.h_hi.size, dtype=np.int64)
    pos[order_hi] = np.arange(order_hi.size)
    gi_hi, go_hi = gi_hi[pos[order_mid]], go_hi[pos[order_mid]]
    lam2 = 2.0 * wb.lam
    with np.errstate(over="ignore", invalid="ignore"):
        in_value = wb.k_mid - lam2 * gi_mid
        out_value = wb.k_mid - lam2 * go_mid
        in_lower = dn(wb.k_lo - up(lam2 * gi_hi))
        out_lower = dn(wb.k_lo - up(lam2 * go_hi))
    bad_in = ~(np.isfinite(in_value) & np.isfinite(in_lower))
    bad_out = ~(np.isfinite(out_value) & np.isfinite(out_lower))
    in_value[bad_in] = in_lower[bad_in] = -np.inf
    out_value[bad_out] = out_lower[bad_out] = -np.inf
    return Regions(order_mid, beta, in_value, in_lower, out_value, out_lower)


def fixing_regions(wb: TermBound, base_in: np.ndarray, base_out: np.ndarray, k: int,
                   fixings) -> tuple[np.ndarray, np.ndarray]:
    """``(computed values, safe lower bounds)``, one entry per bound fixing ``(j, v)`` of a
    node, of the region it cuts off (``z_j = 1 - v`` with the node's base fixings), from one
    sort; ``-inf`` where there is no region (the variable is not free at the node: the
    verifier rejects such a fixing)."""
    fx = np.asarray(fixings, dtype=np.int64).reshape(-1, 2)
    values = np.full(fx.shape[0], -math.inf)
    lowers = np.full(fx.shape[0], -math.inf)
    reg = region_bounds(wb, base_in, base_out, k)
    if reg is None or fx.shape[0] == 0:
        return values, lowers
    pos = np.full(wb.h_hi.size, -1, dtype=np.int64)
    pos[reg.free] = np.arange(reg.free.size)
    j, v = fx[:, 0], fx[:, 1]
    inside = (j >= 0) & (j < pos.size)
    i = np.where(inside, pos[np.where(inside, j, 0)], -1)
    cut_in = (i >= 0) & (v == 0)  # region z_j = 1
    cut_out = (i >= 0) & (v != 0)  # region z_j = 0
    values[cut_in] = reg.in_value[i[cut_in]]
    lowers[cut_in] = reg.in_lower[i[cut_in]]
    values[cut_out] = reg.out_value[i[cut_out]]
    lowers[cut_out] = reg.out_lower[i[cut_out]]
    return values, lowers
