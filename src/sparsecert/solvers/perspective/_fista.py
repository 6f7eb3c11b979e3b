r"""The FISTA kernel: accelerated proximal gradient on the composite relaxation, with the bound
at every iterate.

Minimises ``P(b) = F(b) + 2 lam' g_node(b)`` with ``F(b) = sum_i f(x_i^T b) - mu ||b||^2``
(``mu`` is the eigenvalue shift, 0 except for shifted least squares; ``lam' = lambda2 + mu``).
At the extrapolated point ``b~`` of every iteration FISTA has ``X b~``, ``zeta = f'(X b~)`` and
the gradient, so the kernel evaluates the valid bound there (see ``_bound``) and keeps its
running maximum, the point that attained it and its ``zeta``.

Restart schemes (``restart``): 0 none, 1 function value (``P`` increased), 2 gap (the gap has
halved since the last restart), 3 both. The step is ``1/L``; ``L`` is increased by backtracking
whenever the descent-lemma test fails (needed for Poisson, a safeguard otherwise).

The kernel works in chunks (``max_iter`` per call) so that the caller can read a clock between
calls; without a clock one call runs the node to its end. It also runs the polishing schedule
(see ``polish``): every ``pol_every`` iterations it compares the signs of the iterate with the
last check's and, when the support has been stable long enough, returns ``ST_POLISH`` so that
the caller polishes the iterate. The schedule is counted in iterations (and a deterministic
flop model), so the run does not depend on how it was cut into chunks.

Its inputs are two small records (plain named tuples of arrays and scalars, so that the
compiled kernel is cached): :class:`FistaData`, what it reads, and :class:`FistaIterate`, the
state it advances in place, whose scalars live in a one-element structured array ``sc`` with
the named fields of :data:`SCALARS`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from sparsecert.solvers.loss_kernels import conjugate_sum, loss_value, loss_value_grad
from sparsecert.solvers.losses import LossSpec
from sparsecert.solvers.perspective._bound import icpt_grad_dual, sq_norm
from sparsecert.solvers.perspective._box_or_bounds import g_node_any, gstar_node_any, prox_node_any
from sparsecert.solvers.perspective._coef_bounds import CoefBounds
from sparsecert.solvers.perspective._linalg import Design, copy_into, matvec, rmatvec

__all__ = ["FistaData", "Intercept", "intercept", "FistaIterate", "SCALARS", "fista_data",
           "new_iterate", "fista_chunk", "prox_grad_step", "ST_RUNNING", "ST_CONVERGED",
           "ST_CUTOFF", "ST_POLISH", "POLISH_BLAS_SPEEDUP", "RESTART_NONE", "RESTART_FUNCTION",
           "RESTART_GAP", "RESTART_BOTH"]

ST_RUNNING, ST_CONVERGED, ST_CUTOFF, ST_POLISH = 0, 1, 2, 3

#: BLAS is counted this many times faster per flop than the memory-bound mat-vecs of an
#: iteration in the polishing schedule
POLISH_BLAS_SPEEDUP = 15.0

RESTART_NONE, RESTART_FUNCTION, RESTART_GAP, RESTART_BOTH = 0, 1, 2, 3

#: the scalar state of a FISTA run
SCALARS = np.dtype([
    ("t", np.float64),            # momentum parameter
    ("L", np.float64),            # current Lipschitz estimate (step 1/L)
    ("best", np.float64),         # running maximum of the valid bound
    ("px", np.float64),           # P at the current iterate
    ("gap_ref", np.float64),      # gap at the last restart (gap restart)
    ("restart", np.int64),        # the restart scheme (RESTART_*)
    ("l_down", np.float64),       # L is multiplied by it before each step (then backtracked)
    ("n_restart", np.int64),
    ("n_backtrack", np.int64),
    ("c", np.float64),            # intercept: current, previous, at the bound point
    ("c_prev", np.float64),
    ("c_bp", np.float64),
    # the polishing schedule (``pol_every = 0``: no polishing)
    ("pol_every", np.int64),      # iterations between two checks of the signs
    ("pol_count", np.int64),      # iterations since the last check
    ("pol_since", np.int64),      # iterations since the last polish
    ("pol_stable", np.int64),     # iterations the signs have been nearly stable
    ("pol_fail", np.int64),       # polishes that did not help
    ("pol_has_sig", np.int64),    # 1 once ``sig`` holds the signs of a check
    ("pol_n", np.int64),          # the samples and active columns (the flop model)
    ("pol_active", np.int64),
], align=True)


class FistaData(NamedTuple):
    """What the kernel reads: the (possibly working-set) design and the problem's scalars.

    ``D`` is the design, dense or sparse (a ``_linalg.Design``). ``bounds``: the columns'
    per-coefficient bounds (``_coef_bounds.CoefBounds``), or None for the box ``M`` alone (the
    bounds' code is then not compiled).
    """

    D: Design
    y: np.ndarray
    loss: LossSpec
    lam: float
    mu: float
    M: float
    bounds: CoefBounds | None = None


class Intercept(NamedTuple):
    """An unpenalised intercept carried as an extra variable (a loss without a closed-form
    refit; ``mu`` is 0 then): ``Xty = X^T y``, used by the zero-sum dual of a loss whose dual
    is ``e - y`` (``loss_kernels.zero_sum_parts``; only on the full design: the working set is
    not used with this intercept).

    The kernels take it as an argument that is ``None`` without an intercept, so that the
    intercept's code is not even compiled for a run that does not need it.
    """

    Xty: np.ndarray


class FistaIterate(NamedTuple):
    """The state FISTA advances in place.

    ``x, x_prev`` the iterates, ``ux, ux_prev`` their images ``X x`` (plus the intercept),
    ``bound_point`` and ``dual`` where the best bound was attained, ``sc`` the scalars (a
    one-element array of dtype :data:`SCALARS`), ``sig`` the signs of ``x`` at the last check
    of the polishing schedule.
    """

    x: np.ndarray
    x_prev: np.ndarray
    ux: np.ndarray
    ux_prev: np.ndarray
    bound_point: np.ndarray
    dual: np.ndarray
    sc: np.ndarray
    sig: np.ndarray

    def get(self, name: str) -> float:
        """A scalar of the state by name (Python side)."""
        return self.sc[0][name].item()

    def set(self, name: str, value: float) -> None:
        """Set a scalar of the state by name (Python side)."""
        self.sc[0][name] = value


def fista_data(prob, D: Design | None = None, cols: np.ndarray | None = None) -> FistaData:
    """The kernel's data for ``prob`` (a ``RelaxationProblem``), on its own design or on ``D``
    (the columns ``cols`` of the problem's: their bounds).

    Every scalar is converted to one fixed type, so the kernel is compiled once.
    """
    bounds = getattr(prob, "coef_bounds", None)
    if bounds is not None and cols is not None:
        bounds = CoefBounds(np.ascontiguousarray(bounds.lower[cols]),
                            np.ascontiguousarray(bounds.upper[cols]))
    return FistaData(prob.design if D is None else D, prob.y, prob.loss_spec,
                     float(prob.lam_eff), float(prob.mu), float(prob.M), bounds)


def intercept(prob) -> Intercept | None:
    """The kernels' intercept argument for ``prob`` (``None`` when none is carried)."""
    return Intercept(prob.Xty) if prob.icpt else None


def new_iterate(x0: np.ndarray, ux0: np.ndarray, L: float, px: float, c0: float = 0.0,
                best: float = -np.inf, bound_point: np.ndarray | None = None,
                dual: np.ndarray | None = None) -> FistaIterate:
    """A fresh state at ``x0`` (``ux0 = X x0 + c0``) with step ``1/L`` and objective ``px``
    (function-value restart and ``l_down = 1``: set ``restart`` and ``l_down`` to change them).
    """
    sc = np.zeros(1, dtype=SCALARS)
    s = sc[0]
    s["t"] = 1.0
    s["L"] = L
    s["best"] = best
    s["px"] = px
    s["gap_ref"] = np.inf
    s["restart"] = RESTART_FUNCTION
    s["l_down"] = 1.0
    s["c"] = s["c_prev"] = s["c_bp"] = c0
    bp = np.zeros(x0.shape[0]) if bound_point is None else bound_point.copy()
    du = np.zeros(ux0.shape[0]) if dual is None else dual.copy()
    return FistaIterate(x0.copy(), x0.copy(), ux0.copy(), ux0.copy(), bp, du, sc,
                        np.zeros(x0.shape[0], dtype=np.int8))


@njit(cache=True, nogil=True)
def _polish_due(x, sig, sc):
    """One check of the polishing schedule after ``pol_every`` iterations (updates ``sig`` and
    the schedule's scalars); True when a polish is due.

    The signs are nearly stable when only a few tiny coordinates enter or leave; a polish
    costs a Gram matrix of the support, so it waits for a number of iterations that keeps it
    below about a third of the time by a flop model (BLAS ``POLISH_BLAS_SPEEDUP`` x faster per
    flop than the memory-bound mat-vecs of an iteration).
    """
    # (plain comparisons instead of max() and ** : each builtin costs compile time)
    every = sc["pol_every"]
    sc["pol_since"] += every
    changed = 0
    nnz = 0
    for j in range(x.shape[0]):
        s = 0
        if x[j] > 0.0:
            s = 1
        elif x[j] < 0.0:
            s = -1
        if s != sig[j]:
            changed += 1
        if s != 0:
            nnz += 1
        sig[j] = s
    if sc["pol_has_sig"] != 0:
        allowed = nnz // 100
        if allowed < 2:
            allowed = 2
        if changed <= allowed:
            sc["pol_stable"] += every
        else:
            sc["pol_stable"] = 0
    sc["pol_has_sig"] = 1
    n = float(sc["pol_n"])
    m = float(nnz)
    per_iter = n * (float(sc["pol_active"]) + m)
    wait = 2.0 * (n * m * m + m * m * m / 3.0) / (POLISH_BLAS_SPEEDUP * per_iter)
    if wait < 30.0:
        wait = 30.0
    if sc["pol_fail"] >= 6 or sc["pol_stable"] < 20 or float(sc["pol_since"]) < wait:
        return False
    sc["pol_since"] = 0
    return True


@njit(cache=True, nogil=True)
def fista_chunk(data, icpt, state, budget, it, rel_tol, max_iter, cutoff, open_tol):
    """Run at most ``max_iter`` FISTA iterations; returns ``(status, n_iter_done)``.

    ``data`` (:class:`FistaData`) is read, ``it`` (:class:`FistaIterate`) advanced in place,
    ``icpt`` is an :class:`Intercept` or ``None``.
    ``state`` / ``budget``: the node (0 out / 1 in / 2 free, budget of the free coordinates).
    Stops on ``(P - best) <= tol * max(1, |P|)`` (status 1; ``tol`` is ``open_tol`` once
    ``P < cutoff``, when the node's bound can no longer reach the cutoff, else ``rel_tol``;
    ``open_tol = rel_tol`` for one tolerance), ``best >= cutoff`` (status 2),
    when a polish is due (status 3, see :func:`_polish_due`; only with ``pol_every > 0``) or
    after ``max_iter`` iterations (status 0). The restart scheme and ``l_down`` (``L`` is
    multiplied by it before each step, then backtracked) are scalars of ``it``.

    With an intercept, ``ux`` holds ``X x + c`` and the bound is the Fenchel
    dual at the zero-sum projection of ``zeta`` (``icpt_grad_dual``), valid whatever ``c``.
    """
    D = data.D
    y = data.y
    loss = data.loss
    lam = data.lam
    mu = data.mu
    M = data.M
    bounds = data.bounds
    x = it.x
    x_prev = it.x_prev
    ux = it.ux
    ux_prev = it.ux_prev
    bound_point = it.bound_point
    dual = it.dual
    sc = it.sc[0]
    n = D.n
    p = D.p
    t = sc["t"]
    L = sc["L"]
    best = sc["best"]
    Px = sc["px"]
    gap_ref = sc["gap_ref"]
    nrest = sc["n_restart"]
    nback = sc["n_backtrack"]
    c = sc["c"]
    c_prev = sc["c_prev"]
    c_bp = sc["c_bp"]
    pol_every = sc["pol_every"]
    restart = sc["restart"]
    l_down = sc["l_down"]
    twolam = 2.0 * lam
    zeta = np.empty(n)
    yv = np.empty(p)
    uy = np.empty(n)
    a = np.empty(p)
    v = np.empty(p)
    grad = np.empty(p)
    uxn = np.empty(n)
    zproj = np.empty(n)
    gproj = np.empty(p)
    status = ST_RUNNING
    n_it = 0
    while n_it < max_iter:
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        beta = (t - 1.0) / t_next
        for j in range(p):
            yv[j] = x[j] + beta * (x[j] - x_prev[j])
        for i in range(n):
            uy[i] = ux[i] + beta * (ux[i] - ux_prev[i])
        Fy = loss_value_grad(loss, uy, y, zeta)
        cy = c + beta * (c - c_prev)
        gc = 0.0
        if icpt is not None:
            gc = icpt_grad_dual(D, y, loss, zeta, icpt.Xty, grad, zproj, gproj)
            for j in range(p):
                a[j] = -gproj[j] / twolam if state[j] != 0 else 0.0
            lb = -conjugate_sum(loss, zproj, y) - twolam * gstar_node_any(a, state, budget, M,
                                                                          bounds)
            if lb > best:
                best = lb
                copy_into(bound_point, yv)
                copy_into(dual, zproj)
                c_bp = cy
        else:
            rmatvec(D, zeta, grad)
            if mu != 0.0:
                Fy -= mu * sq_norm(yv)
                for j in range(p):
                    grad[j] -= 2.0 * mu * yv[j]
            # ---- the bound at the extrapolated point (valid for any point: F is convex) ----
            gy = 0.0
            for j in range(p):
                if state[j] != 0:
                    a[j] = -grad[j] / twolam
                    gy += grad[j] * yv[j]
                else:
                    a[j] = 0.0
            lb = Fy - gy - twolam * gstar_node_any(a, state, budget, M, bounds)
            if lb > best:
                best = lb
                copy_into(bound_point, yv)
                copy_into(dual, zeta)
        n_it += 1
        if best >= cutoff:
            status = ST_CUTOFF
            break
        # ---- proximal gradient step with backtracking on L (first try a smaller L) ----
        L *= l_down
        while True:
            inv = 1.0 / L
            for j in range(p):
                v[j] = yv[j] - inv * grad[j]
            xn = prox_node_any(v, state, budget, twolam * inv, M, bounds)
            matvec(D, xn, uxn)
            cn = cy - inv * gc
            if icpt is not None:
                for i in range(n):
                    uxn[i] += cn
            Fn = loss_value(loss, uxn, y)
            if mu != 0.0:
                Fn -= mu * sq_norm(xn)
            lin = 0.0
            dd = 0.0
            for j in range(p):
                d = xn[j] - yv[j]
                lin += grad[j] * d
                dd += d * d
            if icpt is not None:
                lin += gc * (cn - cy)
                dd += (cn - cy) * (cn - cy)
            q = Fy + lin + 0.5 * L * dd
            # (L = inf: no smaller step exists; it only happens when the values are not
            # numbers, and the search must not loop on them)
            if Fn <= q + 1e-12 * max(1.0, abs(Fy)) or nback > 1e9 or not L < np.inf:
                break
            L *= 2.0
            nback += 1
        Pn = Fn + twolam * g_node_any(xn, state, budget, M, bounds)
        copy_into(x_prev, x)
        copy_into(x, xn)
        copy_into(ux_prev, ux)
        copy_into(ux, uxn)
        c_prev = c
        c = cn
        gap = Pn - best
        do_restart = False
        if restart == RESTART_FUNCTION or restart == RESTART_BOTH:
            if Pn > Px:
                do_restart = True
        if restart == RESTART_GAP or restart == RESTART_BOTH:
            if not (gap_ref < np.inf):
                gap_ref = gap
            elif gap <= 0.5 * gap_ref:
                do_restart = True
        if do_restart:
            t = 1.0
            nrest += 1
            gap_ref = gap
            copy_into(x_prev, x)
            copy_into(ux_prev, ux)
            c_prev = c
        else:
            t = t_next
        Px = Pn
        if Px - best <= (open_tol if Px < cutoff else rel_tol) * max(1.0, abs(Px)):
            status = ST_CONVERGED
            break
        if pol_every > 0:
            sc["pol_count"] += 1
            if sc["pol_count"] >= pol_every:
                sc["pol_count"] = 0
                if _polish_due(x, it.sig, sc):
                    status = ST_POLISH
                    break
    sc["t"] = t
    sc["L"] = L
    sc["best"] = best
    sc["px"] = Px
    sc["gap_ref"] = gap_ref
    sc["n_restart"] = nrest
    sc["n_backtrack"] = nback
    sc["c"] = c
    sc["c_prev"] = c_prev
    sc["c_bp"] = c_bp
    return status, n_it


@njit(cache=True, nogil=True)
def prox_grad_step(data, state, budget, b, L):
    """One proximal-gradient step from ``b`` with step ``1/L``: returns ``(x+, X x+, P(x+))``.

    (No intercept: used by polishing only.)
    """
    D = data.D
    n = D.n
    p = D.p
    u = np.empty(n)
    matvec(D, b, u)
    zeta = np.empty(n)
    loss_value_grad(data.loss, u, data.y, zeta)
    grad = np.empty(p)
    rmatvec(D, zeta, grad)
    v = np.empty(p)
    for j in range(p):
        v[j] = b[j] - (grad[j] - 2.0 * data.mu * b[j]) / L
    xn = prox_node_any(v, state, budget, 2.0 * data.lam / L, data.M, data.bounds)
    un = np.empty(n)
    matvec(D, xn, un)
    F = loss_value(data.loss, un, data.y)
    if data.mu != 0.0:
        F -= data.mu * sq_norm(xn)
    return xn, un, F + 2.0 * data.lam * g_node_any(xn, state, budget, data.M, data.bounds)
