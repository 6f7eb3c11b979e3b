r"""The perspective term with per-coefficient bounds ``lower_j <= b_j <= upper_j``: ``g``, ``g*``,
the relaxed indicators and the exact prox.

With ``lower_j <= 0 <= upper_j`` (``b_j = 0`` must stay feasible: a coefficient outside the
support is zero), the perspective of a node is

    g_node(b) = min_z { 1/2 sum_j b_j^2 / z_j : z_S1 = 1, z_S0 = 0, z_R in [0, 1],
                        sum_R z <= beta, lower_j z_j <= b_j <= upper_j z_j },

and its conjugate ``g*_node(a) = sum_{S1} H_j(a_j) + TopSum_beta(H_j(a_j), j in R)`` with

    H_j(t) = sup_{b in [lower_j, upper_j]} (t b - b^2/2)
           = t^2/2 on [lower_j, upper_j],  upper_j t - upper_j^2/2 above,
             lower_j t - lower_j^2/2 below                                   (H_j >= 0).

The symmetric box ``M`` is ``lower = -M``, ``upper = M``; a sign constraint is ``lower = 0``. On
either side of 0 a coordinate behaves like the symmetric box with the bound ``B_j`` of that side
(``upper_j`` for ``b_j >= 0``, ``-lower_j`` below), so the magnitudes ``|b_j|`` carry the
maths.

**g.** With ``a_j = |b_j|`` and ``B_j`` the bound of b_j's side, ``z_j >= a_j / B_j``; the minimum
over z of ``sum a_j^2 / (2 z_j)`` on ``sum z <= beta`` has ``z_j = clip(a_j / s, a_j / B_j, 1)``
for the ``s > 0`` with ``sum_j z_j(s) = beta`` (a Lagrange multiplier ``s^2 / 2``), a sum that
is piecewise of the form ``n_1 + A / s + L`` between the breakpoints ``s = a_j`` and ``s =
B_j``: one sort, one sweep.

**The prox.** ``prox_{tau g}(v) = v - tau prox_{g*/tau}(v / tau)`` (Moreau). For
``prox_{rho g*}(mu)`` on the free coordinates,
``TopSum_beta(h) = min_theta beta theta + sum_j (h_j - theta)_+``, so the prox is the minimum
over ``theta >= 0`` of ``rho beta theta + sum_j phi_j(theta)`` with
``phi_j(theta) = min_t 1/2 (t - m_j)^2 + rho (H_j(t) - theta)_+`` (``m_j = |mu_j|``, the
minimiser has mu_j's sign and magnitude ``t_j(theta)``): ``t_j = p_j`` (the prox of ``rho H_j``)
while ``H_j(p_j) > theta``, ``t_j = m_j`` once ``H_j(m_j) <= theta``, and in between ``t_j`` is
clamped to the level ``H_j(t_j) = theta``. The convex function of theta has the derivative
``rho beta - sum_j c_j(theta)`` with ``c_j = rho`` (prox regime), ``(m_j - t_j) / H_j'(t_j)``
(clamped: ``m_j / sqrt(2 theta) - 1`` on the quadratic piece,
``(m_j - B_j / 2) / B_j - theta / B_j^2`` on the linear one) or 0. Its zero is found by one sort
of the breakpoints ``H_j(p_j)``, ``B_j^2 / 2`` and ``H_j(m_j)`` and a sweep, then in its
interval: in closed form when only one kind of clamp is present, else as the root of the cubic
``B2 s^3 / 2 - K s - Q`` in ``s = sqrt(2 theta)`` (decreasing ``K + Q / s - B2 s^2 / 2``: Newton
steps kept inside the bracket by bisection, to the last bits). Sort ``O(p log p)``, sweep
``O(p)``.

When every free bound ``B_j`` of the coordinates' sides is 0 or one common ``M`` (the symmetric
box, a sign constraint with or without a box) the prox is the symmetric one's
(:func:`~sparsecert.solvers.perspective._prox.prox_gstar_sorted`, pool-adjacent-violators) on the
coordinates with a nonzero bound; the others are 0.

The kernels take the bounds as a :class:`CoefBounds` record; the solver passes ``None`` instead
when the problem has the symmetric box only, so that this code is compiled only for the runs
that use it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.extending import overload

from sparsecert.solvers.perspective._gfun import (
    FREE,
    IN,
    OUT,
    g_node,
    gstar_node,
    relaxed_z_into,
)
from sparsecert.solvers.perspective._order import argsort_desc, topk_sum
from sparsecert.solvers.perspective._prox import prox_gstar_sorted, prox_node

__all__ = ["CoefBounds", "coef_bounds", "h_bounded", "gstar_node_b", "g_node_b",
           "relaxed_z_b", "prox_node_b", "prox_gstar_b", "g_node_any", "gstar_node_any",
           "prox_node_any", "relaxed_z_any_into"]

#: relative tolerance on the bounds of b in g (as ``_gfun.DOMAIN_RTOL``)
DOMAIN_RTOL = 1e-9


class CoefBounds(NamedTuple):
    """Every coefficient's bounds, ``lower <= 0 <= upper`` (``-inf`` / ``inf`` for none)."""

    lower: np.ndarray
    upper: np.ndarray


def coef_bounds(lower, upper) -> CoefBounds:
    """The kernels' record of the bounds (float64, C-contiguous copies)."""
    return CoefBounds(np.ascontiguousarray(lower, dtype=np.float64),
                      np.ascontiguousarray(upper, dtype=np.float64))


@njit(cache=True, nogil=True, inline="always")
def _side(x, lo, hi):
    """The bound of x's side: ``hi`` for ``x >= 0``, ``-lo`` below."""
    return hi if x >= 0.0 else -lo


@njit(cache=True, nogil=True, inline="always")
def h_bounded(t, lo, hi):
    """``H(t) = sup_{b in [lo, hi]} (t b - b^2/2)`` (``lo <= 0 <= hi``, infinite ends allowed)."""
    if t > hi:
        return hi * t - 0.5 * hi * hi
    if t < lo:
        return lo * t - 0.5 * lo * lo
    return 0.5 * t * t


@njit(cache=True, nogil=True)
def gstar_node_b(a, state, budget, bounds):
    """``g*_node(a) = sum_{S1} H_j(a_j) + TopSum_budget(H_j(a_free))`` (S0 entries ignored)."""
    lo = bounds.lower
    hi = bounds.upper
    m = a.shape[0]
    h = np.empty(m)
    nf = np.int64(0)
    s_in = 0.0
    for j in range(m):
        st = state[j]
        if st == IN:
            s_in += h_bounded(a[j], lo[j], hi[j])
        elif st == FREE:
            h[nf] = h_bounded(a[j], lo[j], hi[j])
            nf += 1
    return s_in + topk_sum(h, budget, nf)


@njit(cache=True, nogil=True)
def _g_free(a, B, budget, z_out):
    """``min sum a_j^2 / (2 z_j)`` over ``a_j / B_j <= z_j <= 1``, ``sum z <= budget`` (``a >= 0``
    with a nonzero entry, ``a_j <= B_j``); writes the minimising z into ``z_out`` and returns
    the value (``+inf`` when the lower bounds of z exceed the budget)."""
    m = a.shape[0]
    low = 0.0
    nnz = 0
    for j in range(m):
        if a[j] > 0.0:
            nnz += 1
            low += a[j] / B[j]
    if low > budget * (1.0 + DOMAIN_RTOL):
        return np.inf
    if nnz <= budget:
        val = 0.0
        for j in range(m):
            if a[j] > 0.0:
                z_out[j] = 1.0
                val += 0.5 * a[j] * a[j]
            else:
                z_out[j] = 0.0
        return val
    # breakpoints of s: a_j (z_j leaves 1) and B_j (z_j reaches its lower bound a_j / B_j);
    # sum z(s) = n1 + amid / s + lsum, nonincreasing in s
    key = np.empty(2 * nnz)
    kind = np.empty(2 * nnz, dtype=np.int64)
    who = np.empty(2 * nnz, dtype=np.int64)
    q = 0
    for j in range(m):
        if a[j] > 0.0:
            key[q] = a[j]
            kind[q] = 0
            who[q] = j
            q += 1
            key[q] = B[j]
            kind[q] = 1
            who[q] = j
            q += 1
    order = argsort_desc(key)  # decreasing; sweep from the end (increasing s)
    n1 = float(nnz)
    amid = 0.0
    lsum = 0.0
    s_root = -1.0
    prev = 0.0
    for r in range(2 * nnz - 1, -1, -1):
        e = order[r]
        s_e = key[e]
        # on (prev, s_e] the regimes are fixed and the sum is n1 + amid / s + lsum: when it is
        # at most the budget at s_e, the root is in this interval
        tot = n1 + lsum + (amid / s_e if s_e < np.inf else 0.0)
        if tot <= budget:
            rest = budget - n1 - lsum
            s_root = amid / rest if (amid > 0.0 and rest > 0.0) else prev
            if s_root < prev:
                s_root = prev
            if s_root > s_e:
                s_root = s_e
            break
        j = who[e]
        if kind[e] == 0:  # z_j = 1 -> a_j / s
            n1 -= 1.0
            amid += a[j]
        else:  # a_j / s -> a_j / B_j
            amid -= a[j]
            lsum += a[j] / B[j]
        prev = s_e
    degenerate = s_root < 0.0
    if degenerate:  # the lower bounds fill the budget (up to the tolerance): z at them
        s_root = np.inf
    amax = 0.0
    for j in range(m):
        if a[j] > amax:
            amax = a[j]
    val = 0.0
    for j in range(m):
        if a[j] > 0.0:
            zj = a[j] / s_root if s_root > 0.0 else 1.0
            lb = a[j] / B[j]
            if zj < lb:
                zj = lb
            if zj > 1.0:
                zj = 1.0
            z_out[j] = zj
            if not zj > 0.0:
                # no room left for a coordinate of an unbounded side: rounding noise (the
                # prox's exact zeros off by an ulp) counts as 0 within the tolerance
                if degenerate and a[j] <= DOMAIN_RTOL * amax:
                    continue
                return np.inf
            val += 0.5 * a[j] * a[j] / zj
        else:
            z_out[j] = 0.0
    return val


@njit(cache=True, nogil=True)
def _node_parts(b, state, bounds):
    """The free magnitudes and their side bounds, the S1 part of g (``-1`` flags a
    violation)."""
    lo = bounds.lower
    hi = bounds.upper
    m = b.shape[0]
    a = np.empty(m)
    B = np.empty(m)
    nf = 0
    s_in = 0.0
    for j in range(m):
        st = state[j]
        x = b[j]
        if st == OUT:
            if x != 0.0:
                return a[:0], B[:0], -1.0
        else:
            bj = _side(x, lo[j], hi[j])
            if abs(x) > bj * (1.0 + DOMAIN_RTOL) and abs(x) > 0.0:
                return a[:0], B[:0], -1.0
            if st == IN:
                s_in += 0.5 * x * x
            else:
                a[nf] = abs(x)
                B[nf] = bj if bj > 0.0 else 1.0  # (a_j = 0 there: no constraint)
                if bj < abs(x):
                    B[nf] = abs(x)  # (within the tolerance)
                nf += 1
    return a[:nf], B[:nf], s_in


@njit(cache=True, nogil=True)
def g_node_b(b, state, budget, bounds):
    """``g_node(b)`` with the bounds; ``+inf`` if ``b`` violates the node (S0 nonzero, a bound,
    the budget's domain)."""
    a, B, s_in = _node_parts(b, state, bounds)
    if s_in < 0.0:
        return np.inf
    nnz = 0
    for j in range(a.shape[0]):
        if a[j] > 0.0:
            nnz += 1
    if nnz == 0:
        return s_in
    if budget <= 0:
        return np.inf
    z = np.empty(a.shape[0])
    return s_in + _g_free(a, B, budget, z)


@njit(cache=True, nogil=True)
def relaxed_z_b(b, state, budget, bounds):
    """The minimising ``z`` of ``g_node`` at ``b`` (1 on S1, 0 on S0)."""
    m = b.shape[0]
    z = np.zeros(m)
    lo = bounds.lower
    hi = bounds.upper
    idx = np.empty(m, dtype=np.int64)
    a = np.empty(m)
    B = np.empty(m)
    nf = 0
    for j in range(m):
        if state[j] == IN:
            z[j] = 1.0
        elif state[j] == FREE:
            idx[nf] = j
            a[nf] = abs(b[j])
            bj = _side(b[j], lo[j], hi[j])
            B[nf] = bj if bj >= a[nf] and bj > 0.0 else (a[nf] if a[nf] > 0.0 else 1.0)
            nf += 1
    if nf == 0 or budget <= 0:
        return z
    zf = np.empty(nf)
    val = _g_free(a[:nf], B[:nf], budget, zf)
    if val < np.inf:
        for i in range(nf):
            z[idx[i]] = zf[i]
    return z


# ---------------------------------------------------------------------------------------------
# the prox of rho g* on the free coordinates, with per-coordinate side bounds
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _h_side(t, B):
    """The one-sided term of a magnitude t >= 0 with the side bound B >= 0."""
    if t <= B:
        return 0.5 * t * t
    return B * t - 0.5 * B * B


@njit(cache=True, nogil=True, inline="always")
def _p_side(m, rho, B):
    """The prox of ``rho H`` at the magnitude m (the symmetric box's phi)."""
    if m <= B * (1.0 + rho):
        return m / (1.0 + rho)
    return m - rho * B


@njit(cache=True, nogil=True, inline="always")
def _level(theta, B):
    """The magnitude t with ``H(t) = theta`` on the side bound B > 0."""
    if theta <= 0.5 * B * B:
        return math.sqrt(2.0 * theta)
    return theta / B + 0.5 * B


@njit(cache=True, nogil=True)
def _theta_root(K, Q, B2, s_lo, s_hi):
    """The s in [s_lo, s_hi] with ``K + Q / s - B2 s^2 / 2 = 0`` (Q > 0, B2 > 0: decreasing in
    s), by Newton steps kept inside the bracket (bisection when a step leaves it)."""
    lo = s_lo
    hi = s_hi
    if not hi < np.inf:  # an unbounded last interval: find an upper end
        hi = max(lo, 1.0)
        while K + Q / hi - 0.5 * B2 * hi * hi > 0.0:
            hi *= 2.0
    s = 0.5 * (lo + hi) if lo > 0.0 else 0.5 * hi
    for _ in range(200):
        f = K + Q / s - 0.5 * B2 * s * s
        if f > 0.0:
            lo = s
        else:
            hi = s
        if f == 0.0 or hi - lo <= 4e-16 * hi:
            break
        d = -Q / (s * s) - B2 * s
        step = s - f / d
        if step <= lo or step >= hi or not step == step:
            step = 0.5 * (lo + hi)
        s = step
    return s


@njit(cache=True, nogil=True)
def prox_gstar_b(mu, B, budget, rho, out):
    """``prox_{rho g*}`` on free coordinates with magnitudes' side bounds ``B >= 0`` (the side of
    each ``mu_j``), ``g* = TopSum_budget(H_j)``: writes the magnitudes ``|a_j|`` into ``out``,
    ``-1`` where ``a_j = mu_j`` (the penalty inactive: the primal coordinate is exactly 0)."""
    m = mu.shape[0]
    mag = np.empty(m)
    p = np.empty(m)
    t1 = np.empty(m)
    t3 = np.empty(m)
    n_act = 0
    for j in range(m):
        mj = abs(mu[j])
        mag[j] = mj
        p[j] = _p_side(mj, rho, B[j])
        t1[j] = _h_side(p[j], B[j])
        t3[j] = _h_side(mj, B[j])
        if t1[j] > 0.0:
            n_act += 1
    if n_act <= budget:  # theta = 0: every coordinate in its prox regime
        for j in range(m):
            out[j] = p[j]
        return
    # events: 0 = leaves the prox regime (H(p_j)), 1 = crosses the kink B^2 / 2, 2 = reaches
    # m_j (H(m_j)); the sweep goes through them in increasing theta
    key = np.empty(3 * m)
    kind = np.empty(3 * m, dtype=np.int64)
    who = np.empty(3 * m, dtype=np.int64)
    q = 0
    for j in range(m):
        if not t3[j] > 0.0:
            continue  # H_j(m_j) = 0: the coordinate never enters (c_j = 0)
        key[q] = t1[j]
        kind[q] = 0
        who[q] = j
        q += 1
        kink = 0.5 * B[j] * B[j]
        if t1[j] < kink < t3[j]:
            key[q] = kink
            kind[q] = 1
            who[q] = j
            q += 1
        key[q] = t3[j]
        kind[q] = 2
        who[q] = j
        q += 1
    order = argsort_desc(key[:q])
    target = rho * budget
    n_p = 0.0  # coordinates in the prox regime (theta < H(p_j)), each contributing rho
    for j in range(m):
        if t1[j] > 0.0:
            n_p += 1.0
    Qs = 0.0  # sum of m_j clamped on the quadratic piece
    nq = 0.0
    lc = 0.0  # sum of (m_j - B_j / 2) / B_j clamped on the linear piece
    l2 = 0.0  # sum of 1 / B_j^2 clamped on the linear piece
    prev = 0.0
    theta = -1.0
    for r in range(q - 1, -1, -1):
        e = order[r]
        th_e = key[e]
        # C(theta) = rho n_p + Qs / sqrt(2 theta) - nq + lc - theta l2 on (prev, th_e]
        c_end = rho * n_p - nq + lc - th_e * l2
        if Qs > 0.0:
            c_end += Qs / math.sqrt(2.0 * th_e) if th_e > 0.0 else np.inf
        if c_end <= target and th_e >= prev:
            K = rho * n_p - nq + lc - target
            if Qs > 0.0 and l2 > 0.0:
                s = _theta_root(K, Qs, l2, math.sqrt(2.0 * prev), math.sqrt(2.0 * th_e))
                theta = 0.5 * s * s
            elif Qs > 0.0:
                s = Qs / (-K) if K < 0.0 else np.inf
                theta = 0.5 * s * s
            elif l2 > 0.0:
                theta = K / l2
            else:
                theta = prev
            if theta < prev:
                theta = prev
            if theta > th_e:
                theta = th_e
            break
        j = who[e]
        k = kind[e]
        Bj = B[j]
        if k == 0:  # leaves the prox regime: clamped on the quadratic or the linear piece
            n_p -= 1.0
            if t1[j] < 0.5 * Bj * Bj:
                Qs += mag[j]
                nq += 1.0
            else:
                lc += (mag[j] - 0.5 * Bj) / Bj
                l2 += 1.0 / (Bj * Bj)
        elif k == 1:  # quadratic -> linear piece
            Qs -= mag[j]
            nq -= 1.0
            lc += (mag[j] - 0.5 * Bj) / Bj
            l2 += 1.0 / (Bj * Bj)
        else:  # reaches m_j: the penalty is inactive
            if t1[j] < 0.5 * Bj * Bj and not (0.5 * Bj * Bj < t3[j]):
                Qs -= mag[j]
                nq -= 1.0
            else:
                lc -= (mag[j] - 0.5 * Bj) / Bj
                l2 -= 1.0 / (Bj * Bj)
        prev = th_e
    if theta < 0.0:  # beyond every breakpoint: every coordinate at m_j (b = 0 exactly)
        for j in range(m):
            out[j] = -1.0
        return
    for j in range(m):
        if t1[j] > theta:
            out[j] = p[j]
        elif t3[j] <= theta:
            out[j] = -1.0  # the penalty is inactive: a_j = mu_j, so b_j = 0 exactly
        else:
            t = _level(theta, B[j])
            if t < p[j]:
                t = p[j]
            if t > mag[j]:
                t = mag[j]
            out[j] = t


@njit(cache=True, nogil=True)
def prox_node_b(v, state, budget, tau, bounds):
    """``prox_{tau g_node}(v)`` with the bounds: S0 -> 0, S1 -> clip(v/(1+tau), lower, upper),
    free -> by Moreau, ``v_j - tau a_j`` with ``a = prox_{g*/tau}(v / tau)`` (the symmetric
    pool-adjacent-violators when every side bound is 0 or one common M), clipped to the bounds."""
    lo = bounds.lower
    hi = bounds.upper
    m = v.shape[0]
    out = np.empty(m)
    idx = np.empty(m, dtype=np.int64)
    nf = np.int64(0)
    for j in range(m):
        out[j] = 0.0
        st = state[j]
        if st == IN:
            val = v[j] / (1.0 + tau)
            if val > hi[j]:
                val = hi[j]
            elif val < lo[j]:
                val = lo[j]
            out[j] = val
        elif st == FREE:
            idx[nf] = j
            nf += 1
    if nf == 0 or budget <= 0:
        return out
    B = np.empty(nf)
    common = -1.0  # the one nonzero side bound, if there is one (else -2)
    for i in range(nf):
        j = idx[i]
        bj = _side(v[j], lo[j], hi[j])
        B[i] = bj
        if bj > 0.0 and v[j] != 0.0:
            if common == -1.0:
                common = bj
            elif bj != common:
                common = -2.0
    mag = np.empty(nf)
    if common != -2.0:  # the symmetric prox on the coordinates whose side is open
        M = common if common > 0.0 else np.inf
        w = np.empty(nf)
        for i in range(nf):
            w[i] = abs(v[idx[i]]) / tau if B[i] > 0.0 else 0.0
        order = argsort_desc(w)
        ws = np.empty(nf)
        for i in range(nf):
            ws[i] = w[order[i]]
        a_sorted = np.empty(nf)
        prox_gstar_sorted(ws, budget, 1.0 / tau, M, a_sorted)
        for i in range(nf):
            mag[order[i]] = a_sorted[i]
    else:
        mu = np.empty(nf)
        for i in range(nf):
            mu[i] = v[idx[i]] / tau
        prox_gstar_b(mu, B, budget, 1.0 / tau, mag)
    for i in range(nf):
        j = idx[i]
        if B[i] <= 0.0 or mag[i] < 0.0:
            continue  # the side of v_j is closed, or a_j = v_j / tau: b_j = 0
        x = abs(v[j]) - tau * mag[i]
        if x < 0.0:
            x = 0.0
        if x > B[i]:
            x = B[i]
        out[j] = x if v[j] >= 0.0 else -x
    return out


# ---------------------------------------------------------------------------------------------
# one call for both: the symmetric box (``bounds`` None) or the per-coefficient bounds. Resolved
# when the caller is typed (numba overloads): a kernel compiled for ``bounds=None`` calls the
# box's kernel directly and contains none of this module's code.
# ---------------------------------------------------------------------------------------------
def g_node_any(b, state, budget, M, bounds):
    """``g_node`` with the box ``M`` (``bounds`` None) or with the per-coefficient bounds."""
    if bounds is None:
        return g_node(b, state, budget, M)
    return g_node_b(b, state, budget, bounds)


def gstar_node_any(a, state, budget, M, bounds):
    """``g*_node`` with the box ``M`` (``bounds`` None) or with the per-coefficient bounds."""
    if bounds is None:
        return gstar_node(a, state, budget, M)
    return gstar_node_b(a, state, budget, bounds)


def prox_node_any(v, state, budget, tau, M, bounds):
    """``prox_{tau g_node}`` with the box ``M`` (``bounds`` None) or with the bounds."""
    if bounds is None:
        return prox_node(v, state, budget, tau, M)
    return prox_node_b(v, state, budget, tau, bounds)


def relaxed_z_any_into(b, state, budget, z, bounds):
    """The minimising ``z`` of ``g_node`` at ``b`` into ``z`` (the box's, or the bounds')."""
    if bounds is None:
        relaxed_z_into(b, state, budget, z)
    else:
        z[:] = relaxed_z_b(b, state, budget, bounds)


@overload(g_node_any)
def _ol_g_node_any(b, state, budget, M, bounds):
    if isinstance(bounds, types.NoneType):
        def impl(b, state, budget, M, bounds):
            return g_node(b, state, budget, M)
    else:
        def impl(b, state, budget, M, bounds):
            return g_node_b(b, state, budget, bounds)
    return impl


@overload(gstar_node_any)
def _ol_gstar_node_any(a, state, budget, M, bounds):
    if isinstance(bounds, types.NoneType):
        def impl(a, state, budget, M, bounds):
            return gstar_node(a, state, budget, M)
    else:
        def impl(a, state, budget, M, bounds):
            return gstar_node_b(a, state, budget, bounds)
    return impl


@overload(prox_node_any)
def _ol_prox_node_any(v, state, budget, tau, M, bounds):
    if isinstance(bounds, types.NoneType):
        def impl(v, state, budget, tau, M, bounds):
            return prox_node(v, state, budget, tau, M)
    else:
        def impl(v, state, budget, tau, M, bounds):
            return prox_node_b(v, state, budget, tau, bounds)
    return impl
