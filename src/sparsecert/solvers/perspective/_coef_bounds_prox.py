r"""The exact prox of the perspective term with per-coefficient bounds (the term and its
conjugate ``H_j``: :mod:`._coef_bounds`).

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
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from sparsecert.solvers.perspective._coef_bounds import push_event, side_bound
from sparsecert.solvers.perspective._order import argsort_desc
from sparsecert.solvers.perspective._prox import clip_in_collect_free, prox_gstar_by_order

__all__ = ["prox_gstar_b", "prox_node_b"]


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
        q = push_event(key, kind, who, q, t1[j], 0, j)
        kink = 0.5 * B[j] * B[j]
        if t1[j] < kink < t3[j]:
            q = push_event(key, kind, who, q, kink, 1, j)
        q = push_event(key, kind, who, q, t3[j], 2, j)
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
    out, idx, nf = clip_in_collect_free(v, state, tau, lo, hi)
    if nf == 0 or budget <= 0:
        return out
    B = np.empty(nf)
    common = -1.0  # the one nonzero side bound, if there is one (else -2)
    for i in range(nf):
        j = idx[i]
        bj = side_bound(v[j], lo[j], hi[j])
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
        order, a_sorted = prox_gstar_by_order(w, budget, 1.0 / tau, M)
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
