"""Kernels of the z-space strategy (see ``zspace``): the exact capped-simplex projection and the
whole accelerated projected-gradient loop on the indicators (no Python per iteration).

The loop follows the FISTA kernel's convention (``_fista``): it reads a
:class:`~sparsecert.solvers.perspective._fista.FistaData` (on the node's active columns) and a
small record of its own (:class:`ZColumns`), advances a state record in place
(:class:`ZIterate`, its scalars in a one-element structured array of dtype :data:`ZSCALARS`),
runs at most ``max_iter`` iterations per call and returns ``(status, iterations done)`` with the
status codes of ``_fista`` (plus :data:`ST_FAILED`), so that one runner drives both kernels.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from sparsecert.solvers._ridge_refit import cholesky_solve
from sparsecert.solvers.perspective._fista import ST_CONVERGED, ST_CUTOFF, ST_RUNNING
from sparsecert.solvers.perspective._gfun import gstar_node
from sparsecert.solvers.perspective._order import argsort_desc, top_heap

__all__ = ["project_capped", "ZColumns", "ZIterate", "ZWork", "ZPoint", "ZSCALARS",
           "new_ziterate", "zspace_work", "zspace_eval", "zspace_bound", "zspace_chunk",
           "ST_FAILED", "TRACE_LIMIT"]


@njit(cache=True, nogil=True)
def project_capped(v: np.ndarray, k: float) -> np.ndarray:
    """Euclidean projection onto ``{0 <= z <= 1, sum z <= k}`` (exact, O(p log K + c log c)).

    If ``clip(v, 0, 1)`` already sums to at most ``k`` it is the projection; otherwise the
    projection is ``clip(v - tau, 0, 1)`` with the ``tau > 0`` at which the sum equals ``k``.
    ``s(tau) = sum_i clip(v_i - tau, 0, 1)`` is piecewise linear and non-increasing with
    breakpoints ``v_i - 1`` (coordinate i leaves the cap) and ``v_i`` (it reaches 0): a sweep over
    the sorted breakpoints finds ``tau`` exactly. Only the ``c`` coordinates above
    ``tau0 = max(0, v_(K) - 1)`` take part (``v_(K)`` the K-th largest entry, ``K = floor(k) + 1``):
    ``s(tau) >= #{v_i >= tau + 1}``, so at the solution fewer than K entries reach ``tau + 1``,
    i.e. ``tau > v_(K) - 1``, and the sweep starts at ``tau0`` (the others are 0 there and beyond).
    """
    p = v.shape[0]
    z = np.empty(p)
    total = 0.0
    for i in range(p):
        zi = min(max(v[i], 0.0), 1.0)
        z[i] = zi
        total += zi
    if total <= k:
        return z
    # total > k >= 0 implies p >= floor(k) + 1
    K = np.int64(np.floor(k)) + 1
    tau0 = max(top_heap(v, K, p)[0] - 1.0, 0.0)
    idx = np.empty(p, dtype=np.int64)
    c = 0
    val = 0.0
    m = 0  # slope magnitude at tau0+: coordinates strictly inside (0, 1) after the shift
    for i in range(p):
        if v[i] > tau0:
            idx[c] = i
            c += 1
            val += min(v[i] - tau0, 1.0)
            if v[i] - 1.0 <= tau0:
                m += 1
    tau = tau0
    if val > k:
        bp = np.empty(2 * c)
        neg = np.empty(2 * c)
        for r in range(c):
            bp[r] = v[idx[r]] - 1.0
            bp[c + r] = v[idx[r]]
        for r in range(2 * c):
            neg[r] = -bp[r]
        order = argsort_desc(neg)  # the breakpoints in increasing order (stable)
        prev = tau0
        for r in range(2 * c):
            j = order[r]
            t = bp[j]
            if t <= tau0:
                continue
            nxt = val - m * (t - prev)
            if nxt <= k:
                tau = prev + (val - k) / m
                break
            val, prev = nxt, t
            if j < c:
                m += 1  # v_i - 1 passed: the coordinate leaves the cap and starts decreasing
            else:
                m -= 1  # v_i passed: the coordinate reached 0
        else:
            tau = prev + ((val - k) / m if m > 0 else 0.0)
    for i in range(p):
        z[i] = min(max(v[i] - tau, 0.0), 1.0)
    return z


#: the status of a z-space call whose system was lost to rounding (the caller falls back)
ST_FAILED = 4
#: the system is declared lost to rounding when ``sum_j z_j ||x_j||^2 / lambda2`` (the trace
#: of ``X diag(z) X^T / lambda2``) reaches this: its identity part is then below about 1/16 of
#: the rounding error of its largest entries (the n x n factorisation would fail there too)
TRACE_LIMIT = 2.0 ** 48

#: the scalar state of a z-space run
ZSCALARS = np.dtype([
    ("t", np.float64),            # momentum parameter
    ("L", np.float64),            # current Lipschitz estimate of grad phi (step 1/L)
    ("f", np.float64),            # phi at the current iterate (NaN before the first call)
    ("best", np.float64),         # running maximum of the valid bound
    ("n_restart", np.int64),
], align=True)


class ZColumns(NamedTuple):
    """What the z-space kernel reads besides its :class:`~._fista.FistaData` (whose ``X`` and
    ``XT`` hold the node's active columns): the positions of the free columns among them
    (int64) and the squared norms of all of them."""

    free: np.ndarray
    norms: np.ndarray


class ZIterate(NamedTuple):
    """The state the z-space kernel advances in place.

    ``z, z_prev`` the free indicators (current and previous iterate), ``c = X_A^T alpha`` at
    ``z``, ``bound_point`` (``b(z)`` on the active columns) and ``dual`` (``-2 alpha``) where the
    best bound was attained, ``sc`` the scalars (one element of dtype :data:`ZSCALARS`).
    """

    z: np.ndarray
    z_prev: np.ndarray
    c: np.ndarray
    bound_point: np.ndarray
    dual: np.ndarray
    sc: np.ndarray

    def get(self, name: str) -> float:
        """A scalar of the state by name (Python side)."""
        return self.sc[0][name].item()


class ZWork(NamedTuple):
    """Work space of one evaluation of ``phi``: ``B`` (at least ``(max(m_A, n), n)``), ``G``
    (n x n) and ``u`` (n)."""

    B: np.ndarray
    G: np.ndarray
    u: np.ndarray


class ZPoint(NamedTuple):
    """What an evaluation of ``phi`` at ``z`` writes: ``alpha`` (n), ``c = X_A^T alpha`` (m_A)
    and the gradient on the free indicators, ``grad_j = -c_j^2 / lambda2``."""

    alpha: np.ndarray
    c: np.ndarray
    grad: np.ndarray


def new_ziterate(z0: np.ndarray, n: int, m: int) -> ZIterate:
    """A fresh state at the free indicators ``z0`` (``n`` samples, ``m`` active columns)."""
    sc = np.zeros(1, dtype=ZSCALARS)
    s = sc[0]
    s["t"] = 1.0
    s["L"] = 1.0
    s["f"] = np.nan
    s["best"] = -np.inf
    return ZIterate(z0.copy(), np.empty(z0.shape[0]), np.zeros(m), np.zeros(m), np.zeros(n), sc)


@njit(cache=True, nogil=True)
def zspace_work(n, m):
    """The :class:`ZWork` of an evaluation with ``n`` samples and ``m`` active columns."""
    return ZWork(np.empty((max(m, n), n)), np.empty((n, n)), np.empty(n))


@njit(cache=True, nogil=True)
def _eye_plus_gram(B, rows, dim, G):
    """The lower triangle of ``G[:dim, :dim] = I + sum_{r < rows} B[r, :dim] B[r, :dim]^T``, by
    four rank-one updates per sweep of ``G`` (vectorises without fastmath)."""
    for a in range(dim):
        ga = G[a]
        for b in range(a + 1):
            ga[b] = 0.0
    r4 = rows - rows % 4
    for r in range(0, r4, 4):
        b0 = B[r]
        b1 = B[r + 1]
        b2 = B[r + 2]
        b3 = B[r + 3]
        for a in range(dim):
            c0 = b0[a]
            c1 = b1[a]
            c2 = b2[a]
            c3 = b3[a]
            ga = G[a]
            for b in range(a + 1):
                ga[b] += c0 * b0[b] + c1 * b1[b] + c2 * b2[b] + c3 * b3[b]
    for r in range(r4, rows):
        br = B[r]
        for a in range(dim):
            bra = br[a]
            ga = G[a]
            for b in range(a + 1):
                ga[b] += bra * br[b]
    for a in range(dim):
        G[a, a] += 1.0


@njit(cache=True, nogil=True)
def _cholesky(G, m):
    """In place: the lower Cholesky factor of ``G[:m, :m]`` (lower triangle read); False when a
    pivot is not positive and finite."""
    for j in range(m):
        rj = G[j]
        d = rj[j]
        for q in range(j):
            d -= rj[q] * rj[q]
        if not (d > 0.0 and d < np.inf):
            return False
        d = np.sqrt(d)
        rj[j] = d
        for i in range(j + 1, m):
            ri = G[i]
            s = ri[j]
            for q in range(j):
                s -= ri[q] * rj[q]
            ri[j] = s / d
    return True


@njit(cache=True, nogil=True)
def zspace_eval(data, cols, state, zf, work, point):
    """``phi(z)`` at the free indicators ``zf``, with ``point`` (:class:`ZPoint`: ``alpha``,
    ``c = X_A^T alpha`` and the free gradient) written; NaN when the system is lost to rounding.

    ``data.D`` holds the active columns (a dense design: ``X`` C-contiguous ``(n, m_A)`` and
    ``XT`` its C-contiguous transpose), ``state`` their states (1 in, 2 free), ``cols`` the
    positions of the free ones and the squared norms (:class:`ZColumns`), ``work`` the work space
    (:class:`ZWork`). With the ``s`` columns of positive ``z`` scaled to ``sqrt(z_r / lambda2)
    x_r`` (the rows of ``B``, s x n), ``alpha = (I + B^T B)^{-1} y`` is computed from the smaller
    of the two systems: for ``s <= n`` by Woodbury, ``alpha = y - B^T (I + B B^T)^{-1} B y``
    (s x s, with ``B^T`` formed in ``B``'s first n rows), else directly (n x n, ``B`` in
    ``B``'s rows). Every product is a sweep of row updates (no floating-point reduction to
    reorder: they vectorise without fastmath).
    """
    XA = data.D.X
    XTA = data.D.XT
    y = data.y
    lam = data.lam
    norms = cols.norms
    freeA = cols.free
    B = work.B
    G = work.G
    u = work.u
    alpha = point.alpha
    c = point.c
    grad = point.grad
    mA, n = XTA.shape
    nf = freeA.shape[0]
    # the positive entries of z on the active columns (1 in, zf free), scaled by sqrt(z / lam)
    s = 0
    trace = 0.0
    fi = 0
    pos = np.empty(mA, dtype=np.int64)
    dsc = np.empty(mA)
    for r in range(mA):
        if state[r] == 1:
            zr = 1.0
        else:
            zr = zf[fi]
            fi += 1
        if zr > 0.0:
            w = zr / lam
            trace += w * norms[r]
            pos[s] = r
            dsc[s] = np.sqrt(w)
            s += 1
    if not trace < TRACE_LIMIT:
        return np.nan
    if s <= n:
        # B^T (n x s) in B's first n rows; the lower triangle of I + B B^T in G
        for i in range(n):
            src = XA[i]
            bt = B[i]
            for a in range(s):
                bt[a] = dsc[a] * src[pos[a]]
        for a in range(s):
            u[a] = 0.0
        for i in range(n):
            bt = B[i]
            yi = y[i]
            for a in range(s):
                u[a] += bt[a] * yi
        _eye_plus_gram(B, n, s, G)
        if not _cholesky(G, s):
            return np.nan
        cholesky_solve(G, s, u, 1.0, u)  # in place
        for i in range(n):
            bt = B[i]
            acc = y[i]
            for a in range(s):
                acc -= bt[a] * u[a]
            alpha[i] = acc
    else:
        for q in range(s):
            d = dsc[q]
            src = XTA[pos[q]]
            dst = B[q]
            for i in range(n):
                dst[i] = d * src[i]
        _eye_plus_gram(B, s, n, G)
        for a in range(n):
            alpha[a] = y[a]
        if not _cholesky(G, n):
            return np.nan
        cholesky_solve(G, n, alpha, 1.0, alpha)  # in place
    phi = 0.0
    for i in range(n):
        phi += y[i] * alpha[i]
    for r in range(mA):
        c[r] = 0.0
    for i in range(n):
        ai = alpha[i]
        src = XA[i]
        for r in range(mA):
            c[r] += ai * src[r]
    for q in range(nf):
        cq = c[freeA[q]]
        grad[q] = -(cq * cq) / lam
    return phi


@njit(cache=True, nogil=True)
def zspace_bound(data, state, budget, point, a):
    """``D(-2 alpha) = 2 y^T alpha - ||alpha||^2 - 2 lambda2 g*_node(c / lambda2)`` (the Fenchel
    dual at ``zeta = -2 alpha``; ``alpha`` and ``c = X_A^T alpha`` from ``point``, on the
    active columns; ``a`` work space)."""
    y = data.y
    lam = data.lam
    alpha = point.alpha
    c = point.c
    ya = 0.0
    aa = 0.0
    for i in range(y.shape[0]):
        ya += y[i] * alpha[i]
        aa += alpha[i] * alpha[i]
    for r in range(c.shape[0]):
        a[r] = c[r] / lam
    return 2.0 * ya - aa - 2.0 * lam * gstar_node(a, state, budget, np.inf)


@njit(cache=True, nogil=True)
def _coef_into(state, zf, c, lam, out):
    """``b(z) = z * c / lambda2`` on the active columns."""
    fi = 0
    for r in range(state.shape[0]):
        if state[r] == 1:
            zr = 1.0
        else:
            zr = zf[fi]
            fi += 1
        out[r] = zr * c[r] / lam


@njit(cache=True, nogil=True)
def zspace_chunk(data, cols, state, budget, it, rel_tol, max_iter, cutoff, open_tol):
    """Run at most ``max_iter`` iterations of accelerated projected gradient on the free
    indicators (FISTA with backtracking and function-value restart, see ``zspace``); returns
    ``(status, n_iter_done)`` (the codes of ``_fista``, :data:`ST_FAILED` when the system is
    lost to rounding).

    ``data`` (a ``FistaData`` on the active columns) and ``cols`` (:class:`ZColumns`) are
    read, ``it`` (:class:`ZIterate`) advanced in place; ``state`` / ``budget``: the active
    columns' states (1 in, 2 free) and the budget of the free ones. Stops on
    ``phi - best <= tol * max(1, |phi|)`` (``tol``: ``open_tol`` once ``phi < cutoff``, when
    the node's bound can no longer reach the cutoff, else ``rel_tol``) or ``best >= cutoff``.
    """
    lam = data.lam
    mA, n = data.D.XT.shape
    nf = cols.free.shape[0]
    zf = it.z
    zp = it.z_prev
    sc = it.sc[0]
    at_y = ZPoint(np.empty(n), np.empty(mA), np.empty(nf))
    at_n = ZPoint(np.empty(n), np.empty(mA), np.empty(nf))
    work = zspace_work(n, mA)
    a = np.empty(mA)
    v = np.empty(nf)
    fb = float(budget)
    if sc["f"] != sc["f"]:  # first call: phi at the start
        f0 = zspace_eval(data, cols, state, zf, work, ZPoint(at_n.alpha, it.c, at_n.grad))
        if f0 != f0:
            return ST_FAILED, 0
        sc["f"] = f0
        for q in range(nf):
            zp[q] = zf[q]
    t = sc["t"]
    L = sc["L"]
    f = sc["f"]
    best = sc["best"]
    n_rest = sc["n_restart"]
    status = ST_RUNNING
    n_it = 0
    while n_it < max_iter:
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        mom = (t - 1.0) / tn
        for q in range(nf):
            v[q] = zf[q] + mom * (zf[q] - zp[q])
        yf = project_capped(v, fb)
        fy = zspace_eval(data, cols, state, yf, work, at_y)
        if fy != fy:
            status = ST_FAILED
            break
        lb = zspace_bound(data, state, budget, at_y, a)
        if lb > best:
            best = lb
            _coef_into(state, yf, at_y.c, lam, it.bound_point)
            for i in range(n):
                it.dual[i] = -2.0 * at_y.alpha[i]
        n_it += 1
        if best >= cutoff:
            status = ST_CUTOFF
            break
        gy = at_y.grad
        while True:
            for q in range(nf):
                v[q] = yf[q] - gy[q] / L
            zn = project_capped(v, fb)
            fn = zspace_eval(data, cols, state, zn, work, at_n)
            if fn != fn:
                break
            gd = 0.0
            dd = 0.0
            for q in range(nf):
                d = zn[q] - yf[q]
                gd += gy[q] * d
                dd += d * d
            if fn <= fy + gd + 0.5 * L * dd + 1e-12 * max(1.0, abs(fy)) or L > 1e300:
                break
            L *= 2.0
        if fn != fn:
            status = ST_FAILED
            break
        if fn > f:
            t = 1.0
            n_rest += 1
            for q in range(nf):
                zp[q] = zn[q]
        else:
            for q in range(nf):
                zp[q] = zf[q]
            t = tn
        for q in range(nf):
            zf[q] = zn[q]
        for r in range(mA):
            it.c[r] = at_n.c[r]
        f = fn
        L *= 0.9
        if f - best <= (open_tol if f < cutoff else rel_tol) * max(1.0, abs(f)):
            status = ST_CONVERGED
            break
    sc["t"] = t
    sc["L"] = L
    sc["f"] = f
    sc["best"] = best
    sc["n_restart"] = n_rest
    return status, n_it
