"""Node solver and public one-shot API of the perspective relaxation."""

from __future__ import annotations

import math
import time as _time
from typing import Any

import numpy as np

from sparsecert._validation import check_fixings, check_k
from sparsecert.solvers.losses import POISSON, SQUARED, loss_value_grad, spectral_norm_sq
from sparsecert.solvers.perspective._fista import (
    RESTART_BOTH,
    RESTART_FUNCTION,
    RESTART_GAP,
    RESTART_NONE,
    SC_BEST,
    SC_C,
    SC_CBP,
    SC_CPREV,
    SC_GAPREF,
    SC_L,
    SC_NREST,
    SC_PX,
    SC_SIZE,
    SC_T,
    ST_CONVERGED,
    ST_CUTOFF,
    bound_at,
    dual_value,
    fista_chunk,
    icpt_grad_dual,
    primal_value,
    prox_grad_step,
)
from sparsecert.solvers.perspective._gfun import FREE, IN, OUT, relaxed_z
from sparsecert.solvers.perspective._linalg import x_dot, xt_dot
from sparsecert.solvers.perspective._polish import newton_polish
from sparsecert.solvers.perspective._zspace import ZSpace
from sparsecert.solvers.perspective.problem import LIPSCHITZ_SAFETY, RelaxationProblem
from sparsecert.solvers.perspective.result import RelaxationResult

__all__ = ["solve_node", "perspective_relaxation", "DEFAULT_RESTART", "RESTARTS"]

RESTARTS = {"none": RESTART_NONE, "function": RESTART_FUNCTION, "gap": RESTART_GAP,
            "both": RESTART_BOTH}
#: default restart scheme (chosen from benchmarks/relaxation.py, see docs/relaxation.md)
DEFAULT_RESTART = "function"
#: use a working set of columns when more than this many columns are active
WS_MIN_COLUMNS = 256
#: the working set is abandoned (full iterations from the current point) beyond this fraction
WS_MAX_FRACTION = 0.35
#: solve_node(solver="auto") works in z-space when n_active >= ZSPACE_RATIO * n_samples
ZSPACE_RATIO = 4
#: working set by default when the active columns are at least this many times n
WS_AUTO_RATIO = 4
#: ... and n_samples <= ZSPACE_MAX_N (an iteration costs n^2 |supp z| + n^3 / 3 flops)
ZSPACE_MAX_N = 300
#: Newton polishing of the iterate (see _polish.py) when at least this many columns are active
POLISH = True
POLISH_MIN_COLUMNS = 150
POLISH_BLAS_SPEEDUP = 15.0
#: at every iteration FISTA first tries L * L_DOWN (then backtracks): adapts the step to the
#: local curvature
L_DOWN = 1.0


# ----------------------------------------------------------------------------------------------
def _fixing_mask(arr, p: int, name: str) -> np.ndarray:
    if arr is None:
        return np.zeros(p, dtype=bool)
    a = np.asarray(arr)
    if a.dtype != np.bool_ or a.shape != (p,):
        raise ValueError(f"{name} must be a boolean array of shape ({p},), got dtype {a.dtype} "
                         f"and shape {a.shape}")
    return a


def _node_state(p: int, k: int, s1: np.ndarray, s0: np.ndarray) -> tuple[np.ndarray, int]:
    """State vector (0 out / 1 in / 2 free) with the edge cases resolved, and the budget."""
    state = np.full(p, FREE, dtype=np.int8)
    state[s1] = IN
    state[s0] = OUT
    budget = k - int(s1.sum())
    free = state == FREE
    n_free = int(free.sum())
    if budget <= 0:
        state[free] = OUT  # no budget left: the free coordinates are forced to zero
        budget = 0
    elif n_free <= budget:
        state[free] = IN  # no cardinality coupling: a plain ridge problem
    return state, budget


def _relaxed_z(coef: np.ndarray, state: np.ndarray, budget: int) -> np.ndarray:
    """Optimal relaxed indicators z for g_node at ``coef``."""
    return relaxed_z(coef, state, budget)


def _initial_L(prob: RelaxationProblem, X: np.ndarray, norm_sq: float, ub: np.ndarray) -> float:
    if prob.loss_id == POISSON:
        return norm_sq * max(float(np.exp(np.minimum(ub, 700.0)).max()), 1e-6)
    # curvature c ||X_W||^2 - 2 mu (mu <= lambda_min(X^T X) <= lambda_min(X_W^T X_W))
    # (a design that is identically zero has no curvature: any step size is exact)
    curv = prob.lipschitz / prob.norm_sq if prob.norm_sq > 0 else 1.0
    return max(curv * norm_sq - 2.0 * prob.mu, 1e-12 * curv * norm_sq, 1e-300)


class _Runner:
    """Chunked calls of the FISTA kernel with a wall-clock limit."""

    def __init__(self, deadline: float | None, restart: int):
        self.deadline = deadline
        self.restart = restart
        self.timed_out = False

    def run(self, prob, X, XT, state, budget, x, x_prev, ux, ux_prev, sc, bp, dual, tol, n_max,
            cutoff, polisher=None):
        done = 0
        status = 0
        chunk = n_max if self.deadline is None else 20
        if polisher is not None:
            chunk = polisher.every
        while done < n_max:
            m = min(chunk, n_max - done)
            t_start = _time.perf_counter()
            status, it = fista_chunk(X, XT, prob.y, prob.loss_id, prob.lam_eff, prob.mu, prob.M,
                                     state, budget, x, x_prev, ux, ux_prev, sc, bp, dual,
                                     tol, m, self.restart, cutoff, L_DOWN, prob.icpt,
                                     prob.cls, prob.Xty)
            done += it
            if status != 0:
                break
            if polisher is not None:
                status = polisher.after_chunk(it, x, x_prev, ux, ux_prev, sc, bp, dual, tol,
                                              cutoff)
                if status != 0:
                    break
                if self.deadline is None:
                    continue
            if self.deadline is not None:
                now = _time.perf_counter()
                if now >= self.deadline:
                    self.timed_out = True
                    break
                per_it = (now - t_start) / max(it, 1)
                chunk = int(min(max(20, 0.25 * (self.deadline - now) / max(per_it, 1e-9)), 5000))
                if polisher is not None:
                    chunk = min(chunk, polisher.every)
        return status, done


class _Polisher:
    """Newton polishing of the FISTA iterate once its structure is stable (see ``_polish``).

    Every candidate is checked with the true objective and the valid bound over all columns;
    it replaces the iterate only if its objective is lower and raises the bound only through
    the running maximum.
    """

    every = 10

    def __init__(self, prob, state, budget):
        self.prob, self.state, self.budget = prob, state, budget
        self.sig = None
        self.stable = 0
        self.since = 0
        self.n_fail = 0
        self.n_polish = 0
        self.n_active = int(np.sum(state != OUT))

    def _signature(self, x):
        return np.sign(x).astype(np.int8)

    def after_chunk(self, it, x, x_prev, ux, ux_prev, sc, bp, dual, tol, cutoff):
        self.since += it
        sig = self._signature(x)
        if self.sig is not None:
            changed = int(np.count_nonzero(sig != self.sig))
            nnz = int(np.count_nonzero(sig))
            # nearly stable: only a few tiny coordinates enter or leave
            self.stable = self.stable + it if changed <= max(2, nnz // 100) else 0
        self.sig = sig
        # a polish costs a Gram matrix of the support: keep it below ~1/3 of the time, with a
        # deterministic flop model (BLAS ~POLISH_BLAS_SPEEDUP x faster per flop than the
        # memory-bound mat-vecs of an iteration) so that runs are reproducible
        n = self.prob.n_samples
        m = int(np.count_nonzero(sig))
        per_iter = n * (self.n_active + m)
        wait = max(30.0, 2.0 * (n * m * m + m ** 3 / 3.0) / (POLISH_BLAS_SPEEDUP * per_iter))
        if self.n_fail >= 6 or self.stable < 20 or self.since < wait:
            return 0
        self.since = 0
        prob, state, budget = self.prob, self.state, self.budget
        cand = newton_polish(prob.X, prob.y, prob.loss_id, prob.lam_eff, prob.mu, x, state,
                             budget)
        self.n_polish += 1
        if cand is None:
            self.n_fail += 1
            return 0
        uc = _xb(prob.XT, cand)
        Pc = float(primal_value(prob.y, prob.loss_id, prob.lam_eff, prob.mu, prob.M, state,
                                budget, cand, uc))
        lb, zeta = _full_bound(prob, state, budget, cand, uc)
        newton = cand
        # one proximal-gradient step from the candidate repairs a slightly wrong structure
        c2, u2, P2 = prox_grad_step(prob.X, prob.XT, prob.y, prob.loss_id, prob.lam_eff,
                                    prob.mu, prob.M, state, budget, cand, sc[SC_L])
        if P2 < Pc:
            cand, uc, Pc = c2, u2, float(P2)
        improved = False
        if lb > sc[SC_BEST]:
            improved = lb > sc[SC_BEST] + 1e-3 * (sc[SC_PX] - sc[SC_BEST])
            sc[SC_BEST] = lb
            bp[:] = newton
            dual[:] = zeta
        if Pc < sc[SC_PX]:
            improved = True
            x[:] = cand
            x_prev[:] = cand
            ux[:] = uc
            ux_prev[:] = uc
            sc[SC_PX] = Pc
            sc[SC_T] = 1.0
        if not improved:
            self.n_fail += 1
        if sc[SC_BEST] >= cutoff:
            return ST_CUTOFF
        if sc[SC_PX] - sc[SC_BEST] <= tol * max(1.0, abs(sc[SC_PX])):
            return ST_CONVERGED
        return 0


def _new_sc(L: float) -> np.ndarray:
    sc = np.zeros(SC_SIZE)
    sc[SC_T] = 1.0
    sc[SC_L] = L
    sc[SC_BEST] = -np.inf
    sc[SC_PX] = np.inf
    sc[SC_GAPREF] = np.inf
    return sc


# ----------------------------------------------------------------------------------------------
def solve_node(prob: RelaxationProblem, k: int, fixed_in=None, fixed_out=None, *,
               rel_tol: float = 1e-6, max_iter: int = 20000, time_limit: float | None = None,
               cutoff: float | None = None, warm_start: Any = None,
               restart: str = DEFAULT_RESTART, working_set: bool | None = None,
               solver: str = "auto") -> RelaxationResult:
    """Solve the perspective relaxation of one branch-and-bound node.

    Parameters
    ----------
    prob : RelaxationProblem
        The validated data (not re-validated here).
    k : int
        Sparsity level.
    fixed_in, fixed_out : ndarray of bool (p,) or None
        S1 (z_j = 1) and S0 (z_j = 0). The free features share the budget ``k - |S1|``.
    rel_tol : float
        Stop when ``(P - LB) / max(1, |P|) <= rel_tol``.
    max_iter : int
        Cap on FISTA iterations (all working-set rounds together).
    time_limit : float or None
        Wall-clock cap in seconds.
    cutoff : float or None
        Stop (status ``"cutoff"``) as soon as the valid bound reaches ``cutoff``.
    warm_start : None, ndarray (p,) or RelaxationResult
        Starting point (its ``coef``); entries on ``fixed_out`` are ignored.
    restart : {"function", "gap", "both", "none"}
        Momentum restart scheme.
    working_set : bool or None
        Iterate on a working set of columns grown from the dual. ``None`` (the default): on
        when the active columns outnumber the samples ``WS_AUTO_RATIO`` times (p >> n, where
        the relaxed solution is sparse: leukemia, 38 x 7129 logistic, certifies in 1.5 s with it
        and not in 60 s without), off otherwise (the relaxed solutions of the n >= p benchmark
        family are dense, see docs/relaxation.md). The bound is always computed over all
        non-fixed-out columns.
    solver : {"auto", "fista", "zspace"}
        ``"zspace"``: accelerated projected gradient on the indicators z with n x n solves
        (least squares, no box, no shift, plain intercept only); ``"auto"`` uses it when the
        number of active columns is at least ``ZSPACE_RATIO`` times n and ``n <= ZSPACE_MAX_N``,
        FISTA on b otherwise.

    Returns
    -------
    RelaxationResult
    """
    t0 = _time.perf_counter()
    p = prob.n_features
    k = check_k(k, p)
    s1 = _fixing_mask(fixed_in, p, "fixed_in")
    s0 = _fixing_mask(fixed_out, p, "fixed_out")
    if np.any(s1 & s0):
        raise ValueError(f"fixed_in and fixed_out overlap on features "
                         f"{np.flatnonzero(s1 & s0)[:5].tolist()}")
    if int(s1.sum()) > k:
        raise ValueError(f"|fixed_in| = {int(s1.sum())} exceeds k = {k}")
    if restart not in RESTARTS:
        raise ValueError(f"restart must be one of {tuple(RESTARTS)}, got {restart!r}")
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 0):
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    if not (rel_tol >= 0.0):
        raise ValueError(f"rel_tol must be >= 0, got {rel_tol!r}")
    cut = np.inf if cutoff is None else float(cutoff)
    deadline = None if time_limit is None else t0 + float(time_limit)

    state, budget = _node_state(p, k, s1, s0)
    x0 = np.zeros(p)
    c0 = _initial_intercept(prob) if prob.icpt else 0.0
    if warm_start is not None:
        if prob.icpt and isinstance(warm_start, RelaxationResult):
            if np.isfinite(warm_start.intercept):  # user coordinates -> centred columns
                c0 = float(warm_start.intercept + prob.x_mean @ warm_start.coef)
        w = warm_start.coef if isinstance(warm_start, RelaxationResult) else warm_start
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (p,):
            raise ValueError(f"warm_start must have shape ({p},), got {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError("warm_start contains NaN or infinite values")
        x0 = np.where(state == OUT, 0.0, w)
        if prob.M < np.inf:
            x0 = np.clip(x0, -prob.M, prob.M)

    n_free = int(np.sum(state == FREE))
    if n_free == 0 and prob.loss_id == SQUARED and prob.M == np.inf:
        coef = _exact_ridge(prob, state)
        return _finish(prob, state, budget, coef, -np.inf, None, None, 0, 0, "converged", t0,
                       rel_tol, cut)

    if solver not in ("auto", "fista", "zspace"):
        raise ValueError(f"solver must be 'auto', 'fista' or 'zspace', got {solver!r}")
    n_active = int(np.sum(state != OUT))
    zspace_ok = (prob.loss_id == SQUARED and prob.M == np.inf and prob.mu == 0.0
                 and not prob.icpt and n_free > 0)
    if solver == "zspace" and not zspace_ok:
        raise ValueError("solver='zspace' needs the squared loss without a box or eig_shift")
    auto_z = (n_active >= ZSPACE_RATIO * prob.n_samples and prob.n_samples <= ZSPACE_MAX_N)
    if zspace_ok and (solver == "zspace" or (solver == "auto" and auto_z)):
        return _solve_zspace(prob, state, budget, x0, rel_tol, int(max_iter), cut, deadline,
                             t0)
    runner = _Runner(deadline, RESTARTS[restart])
    if working_set is None:
        working_set = n_active >= WS_AUTO_RATIO * prob.n_samples
    use_ws = bool(working_set) and n_active > 1
    if use_ws and not prob.icpt:
        return _solve_ws(prob, state, budget, x0, rel_tol, int(max_iter), cut, runner, t0)

    return _solve_full(prob, state, budget, x0, rel_tol, int(max_iter), cut, runner, t0, c0=c0)


def _solve_zspace(prob, state, budget, x0, rel_tol, max_iter, cut, deadline, t0):
    """Accelerated projected gradient on z (see ``_zspace``); the bound is D(-2 alpha)."""
    zs = ZSpace(prob, state, budget)
    free = zs.free
    if np.any(x0 != 0.0):
        zf = relaxed_z(x0, state, budget)[free]
    else:  # the budget free columns most correlated with y
        c0 = np.abs(prob.X[:, free].T @ prob.y)
        zf = np.zeros(free.size)
        zf[np.argsort(-c0)[:budget]] = 1.0
    zf = zs.project(zf)
    ev = zs.evaluate(zf)
    if ev is None:  # pragma: no cover - K = I + PSD is always positive definite
        raise RuntimeError("z-space solve failed")
    f = ev[0]
    zp = zf.copy()
    t, L = 1.0, 1.0
    best, bp, dual = -np.inf, None, None
    n_rest = 0
    status = "max_iter"
    it = 0
    c_last = ev[3]
    while it < max_iter:
        tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        yf = zs.project(zf + ((t - 1.0) / tn) * (zf - zp))
        fy, gy, ay, cy = zs.evaluate(yf)
        lb = zs.bound(ay, cy)
        if lb > best:
            best, bp, dual = lb, zs.coef(yf, cy), -2.0 * ay
        it += 1
        if best >= cut:
            status = "cutoff"
            break
        while True:
            zn = zs.project(yf - gy / L)
            fn, gn, an, cn = zs.evaluate(zn)
            d = zn - yf
            if fn <= fy + gy @ d + 0.5 * L * (d @ d) + 1e-12 * max(1.0, abs(fy)) or L > 1e300:
                break
            L *= 2.0
        if fn > f:
            t = 1.0
            n_rest += 1
            zp = zn.copy()
        else:
            zp = zf
            t = tn
        zf, f, c_last = zn, fn, cn
        L *= 0.9
        if f - best <= rel_tol * max(1.0, abs(f)):
            status = "converged"
            break
        if deadline is not None and _time.perf_counter() >= deadline:
            status = "time_limit"
            break
    coef = zs.coef(zf, c_last)
    return _finish(prob, state, budget, coef, best, bp, dual, it, n_rest, status, t0, rel_tol,
                   cut)


def _initial_intercept(prob: RelaxationProblem) -> float:
    """The intercept-only optimum (logistic, Poisson), a good starting value."""
    if prob.loss == "logistic":
        n_pos = int(np.sum(prob.y > 0))
        n_neg = prob.n_samples - n_pos
        return float(np.log(n_pos / n_neg)) if n_pos and n_neg else 0.0
    if prob.loss == "poisson":
        return float(np.log(max(prob.y.mean(), 1e-3)))
    return 0.0


def _solve_full(prob, state, budget, x0, rel_tol, max_iter, cut, runner, t0, best=-np.inf,
                bp=None, dual=None, n_done=0, n_rest_done=0, c0=0.0):
    """FISTA over all active columns: the kernel's running-max bound is the valid bound."""
    X, p, n = prob.X, prob.n_features, prob.n_samples
    x = x0.copy()
    x_prev = x.copy()
    ux = _xb(prob.XT, x) + c0
    ux_prev = ux.copy()
    sc = _new_sc(_initial_L(prob, X, prob.norm_sq, ux))
    sc[SC_C] = sc[SC_CPREV] = sc[SC_CBP] = c0
    sc[SC_BEST] = best
    sc[SC_PX] = float(primal_value(prob.y, prob.loss_id, prob.lam_eff, prob.mu, prob.M, state,
                                   budget, x, ux))
    bp = np.zeros(p) if bp is None else bp.copy()
    dual = np.zeros(n) if dual is None else dual.copy()
    polisher = None
    if POLISH and not prob.icpt and int(np.sum(state != OUT)) >= POLISH_MIN_COLUMNS:
        polisher = _Polisher(prob, state, budget)
    status, n_it = runner.run(prob, X, prob.XT, state, budget, x, x_prev, ux, ux_prev, sc, bp,
                              dual, rel_tol, max_iter - n_done, cut, polisher)
    st = _status_name(status, runner)
    if not np.isfinite(sc[SC_BEST]):
        bp, dual = None, None
    return _finish(prob, state, budget, x, sc[SC_BEST], bp, dual, n_it + n_done,
                   int(sc[SC_NREST]) + n_rest_done, st, t0, rel_tol, cut, c=sc[SC_C])


def _status_name(status: int, runner: _Runner) -> str:
    if status == ST_CONVERGED:
        return "converged"
    if status == ST_CUTOFF:
        return "cutoff"
    return "time_limit" if runner.timed_out else "max_iter"


def _exact_ridge(prob: RelaxationProblem, state: np.ndarray) -> np.ndarray:
    """Plain ridge on the fixed-in columns (no free coordinates, no box): exact."""
    p = prob.n_features
    coef = np.zeros(p)
    idx = np.flatnonzero(state == IN)
    if idx.size == 0:
        return coef
    XI = prob.X[:, idx]
    n = XI.shape[0]
    if idx.size <= n:
        G = XI.T @ XI
        G[np.diag_indices_from(G)] += prob.lambda2
        coef[idx] = np.linalg.solve(G, XI.T @ prob.y)
    else:  # dual form: b = X^T (X X^T + lam I)^{-1} y
        K = XI @ XI.T
        K[np.diag_indices_from(K)] += prob.lambda2
        coef[idx] = XI.T @ np.linalg.solve(K, prob.y)
    return coef


def _xb(XT: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.empty(XT.shape[1])
    x_dot(XT, b, out)
    return out


def _xtz(X: np.ndarray, z: np.ndarray) -> np.ndarray:
    out = np.empty(X.shape[1])
    xt_dot(X, z, out)
    return out


def _full_bound(prob, state, budget, b, ub):
    zeta = np.empty(prob.n_samples)
    lb, _ = bound_at(prob.X, prob.y, prob.loss_id, prob.lam_eff, prob.mu, prob.M, state, budget,
                     b, ub, zeta)
    return float(lb), zeta


def _finish(prob, state, budget, coef, best, bp, dual, n_iter, n_rest, status, t0, rel_tol,
            cut, c=0.0) -> RelaxationResult:
    """Final objective and bound at the final iterate (both over all columns), the record."""
    coef = np.where(state == OUT, 0.0, coef)
    ux = _xb(prob.XT, coef)
    if prob.icpt:
        ux += c
    obj = float(primal_value(prob.y, prob.loss_id, prob.lam_eff, prob.mu, prob.M, state,
                             budget, coef, ux))
    if prob.icpt:
        lb_end, zeta_end = _icpt_bound(prob, state, budget, ux)
    else:
        lb_end, zeta_end = _full_bound(prob, state, budget, coef, ux)
    if bp is None or not lb_end <= best:
        best, bp, dual = lb_end, coef.copy(), zeta_end
    if prob.icpt:
        # certify with a dual whose entries are dyadic and whose sum is exactly zero
        dual = dyadic_zero_sum(dual, prob.y, prob.loss)
        best = float(dual_value(prob.X, prob.y, prob.loss_id, prob.lambda2, prob.M, state,
                                budget, dual))
    gap = (obj - best) / max(1.0, abs(obj)) if np.isfinite(obj) else np.inf
    if status in ("max_iter", "time_limit"):
        if best >= cut:
            status = "cutoff"
        elif gap <= rel_tol:
            status = "converged"
    intercept = 0.0
    if prob.fit_intercept and prob.loss_id == SQUARED:
        intercept = float(prob.y_mean - prob.x_mean @ coef)
    elif prob.icpt:  # centred columns -> the user's coordinates
        intercept = float(c - prob.x_mean @ coef)
    return RelaxationResult(
        coef=coef, intercept=intercept, objective=obj, lower_bound=float(best), dual=dual,
        bound_point=np.where(state == OUT, 0.0, bp), z=_relaxed_z(coef, state, budget),
        n_iter=int(n_iter), n_restarts=int(n_rest), status=status,
        time=_time.perf_counter() - t0, eig_shift=float(prob.mu), gap=float(gap))


def _icpt_bound(prob, state, budget, ub):
    """Fenchel dual at the zero-sum projection of ``f'(ub)`` (non-squared loss + intercept)."""
    n, p = prob.n_samples, prob.n_features
    zeta = np.empty(n)
    loss_value_grad(prob.loss_id, ub, prob.y, zeta)
    grad, zproj, gproj = np.empty(p), np.empty(n), np.empty(p)
    icpt_grad_dual(prob.X, prob.y, prob.loss_id, zeta, prob.cls, prob.Xty, grad, zproj, gproj)
    lb = float(dual_value(prob.X, prob.y, prob.loss_id, prob.lambda2, prob.M, state, budget,
                          zproj))
    return lb, zproj


#: dual entries are rounded to multiples of 2**-DYADIC_BITS
DYADIC_BITS = 40


def dyadic_zero_sum(zeta: np.ndarray, y: np.ndarray, loss: str) -> np.ndarray:
    """Round ``zeta`` to multiples of ``2**-40`` inside the conjugate's domain, with an exactly
    zero sum (``math.fsum(out) == 0.0``): the dual certificate of an unpenalised intercept."""
    scale = float(2 ** DYADIC_BITS)
    Z = np.rint(zeta * scale)
    big = 2.0 ** 52
    if loss == "logistic":  # t = -y zeta in [0, 1]
        lo = np.where(y > 0, -scale, 0.0)
        hi = np.where(y > 0, 0.0, scale)
    elif loss == "squared_hinge":  # y zeta <= 0
        lo = np.where(y > 0, -big, 0.0)
        hi = np.where(y > 0, 0.0, big)
    elif loss == "poisson":  # zeta + y >= 0
        lo = np.ceil(-y * scale)
        hi = np.full(y.shape, big)
    else:
        raise ValueError(f"no zero-sum dual rounding for loss {loss!r}")
    Z = np.clip(Z, lo, hi)
    if np.any(np.abs(Z) >= big):
        raise ValueError("dual entries too large for the dyadic grid")
    Zi = Z.astype(np.int64)
    R = int(Zi.sum())
    if R != 0:
        slack = (Zi - lo.astype(np.int64)) if R > 0 else (hi.astype(np.int64) - Zi)
        order = np.argsort(-slack)
        need = abs(R)
        for j in order:
            if need == 0:
                break
            d = int(min(slack[j], need))
            Zi[j] += -d if R > 0 else d
            need -= d
        if need:
            raise ValueError("could not make the dual sum exactly zero inside its domain")
    out = Zi.astype(np.float64) / scale
    assert math.fsum(out) == 0.0
    return out


# ----------------------------------------------------------------------------------------------
def _ws_scores(prob, state, grad):
    """``H_M(-grad_j / (2 lam'))`` (the terms of g*_node)."""
    a = -grad / (2.0 * prob.lam_eff)
    if prob.M == np.inf:
        return 0.5 * a * a
    aa = np.abs(a)
    return np.where(aa <= prob.M, 0.5 * aa * aa, prob.M * aa - 0.5 * prob.M ** 2)


def _solve_ws(prob, state, budget, x0, rel_tol, max_iter, cut, runner, t0):
    """Working-set outer loop: FISTA on a subset W of columns, the bound over all columns."""
    X, p, n = prob.X, prob.n_features, prob.n_samples
    free = state == FREE
    x = x0.copy()
    ux = _xb(prob.XT, x)
    zeta = np.empty(n)
    best, _ = bound_at(X, prob.y, prob.loss_id, prob.lam_eff, prob.mu, prob.M, state, budget, x,
                       ux, zeta)
    grad = _xtz(X, zeta) - 2.0 * prob.mu * x
    bp, dual = x.copy(), zeta.copy()
    h = _ws_scores(prob, state, grad)
    m0 = max(3 * budget, 50)
    in_w = (state == IN) | ((x != 0.0) & (state != OUT))
    cand = np.flatnonzero(free & ~in_w)
    if cand.size:
        top = cand[np.argsort(-h[cand])[:m0]]
        in_w[top] = True
    inner_tol = max(rel_tol, 1e-3)
    n_it = 0
    n_rest = 0
    status = "max_iter"
    n_active = int(np.sum(state != OUT))
    while True:
        if in_w.sum() > WS_MAX_FRACTION * n_active:
            return _solve_full(prob, state, budget, x, rel_tol, max_iter, cut, runner, t0, best,
                               bp, dual, n_it, n_rest)
        W = np.flatnonzero(in_w)
        XW = np.ascontiguousarray(X[:, W])
        XWT = np.ascontiguousarray(prob.XT[W])
        stW = np.ascontiguousarray(state[W])
        xW = x[W].copy()
        uxW = _xb(XWT, xW)
        nsW = spectral_norm_sq(XW, tol=1e-6, XT=XWT) * LIPSCHITZ_SAFETY
        sc = _new_sc(_initial_L(prob, XW, nsW, uxW))
        sc[SC_PX] = float(primal_value(prob.y, prob.loss_id, prob.lam_eff, prob.mu, prob.M, stW,
                                       budget, xW, uxW))
        bpW = np.zeros(W.size)
        dW = np.zeros(n)
        st, it = runner.run(prob, XW, XWT, stW, budget, xW, xW.copy(), uxW, uxW.copy(), sc, bpW, dW,
                            inner_tol, max_iter - n_it, np.inf)
        n_it += it
        n_rest += int(sc[SC_NREST])
        x = np.zeros(p)
        x[W] = xW
        # full bound at the primal iterate and at the subproblem's best bound point
        lb_x, zeta_x = _full_bound(prob, state, budget, x, uxW)
        if lb_x > best:
            best, bp, dual = lb_x, x.copy(), zeta_x
        if np.isfinite(sc[SC_BEST]):
            b2 = np.zeros(p)
            b2[W] = bpW
            lb2, zeta2 = _full_bound(prob, state, budget, b2, _xb(XWT, bpW))
            if lb2 > best:
                best, bp, dual = lb2, b2, zeta2
        Px = sc[SC_PX]
        if best >= cut:
            status = "cutoff"
            break
        if Px - best <= rel_tol * max(1.0, abs(Px)):
            status = "converged"
            break
        if runner.timed_out:
            status = "time_limit"
            break
        if n_it >= max_iter:
            status = "max_iter"
            break
        # grow W with the free columns outside W that would enter the top-(budget) of g*_node
        grad = _xtz(X, zeta_x) - 2.0 * prob.mu * x
        h = _ws_scores(prob, state, grad)
        hw = h[W][stW == FREE]
        thr = 0.0 if hw.size < budget else float(np.partition(hw, hw.size - budget)[hw.size -
                                                                                     budget])
        out_free = np.flatnonzero(free & ~in_w)
        viol = out_free[h[out_free] > thr * (1.0 + 1e-12) + 1e-300]
        if viol.size:
            n_add = max(2 * budget, 50, W.size)
            add = viol[np.argsort(-h[viol])[:n_add]]
            in_w[add] = True
        else:
            if inner_tol > 0.1 * rel_tol:
                inner_tol = max(inner_tol * 0.1, 0.1 * rel_tol)
            else:
                inner_tol = max(inner_tol * 0.1, 1e-16)
    return _finish(prob, state, budget, x, best, bp, dual, n_it, n_rest, status, t0, rel_tol, cut)


# ----------------------------------------------------------------------------------------------
def perspective_relaxation(X, y, k: int, lambda2: float, loss: str = "squared",
                           max_abs_coef: float | None = None, fixed_in=(), fixed_out=(),
                           rel_tol: float = 1e-6, max_iter: int = 20000,
                           time_limit: float | None = None, cutoff: float | None = None,
                           warm_start=None, eig_shift=None, fit_intercept: bool = False,
                           restart: str = DEFAULT_RESTART) -> RelaxationResult:
    """Solve the perspective relaxation of the k-sparse GLM (one shot).

    ``min_b sum_i f(x_i^T b, y_i) + 2 lambda2 g(b)`` where ``g`` is the perspective (half squared
    k-support norm with the box ``|b_j| <= M``), optionally at a branch-and-bound node.

    Parameters
    ----------
    X : array-like (n, p)
    y : array-like (n,)
    k : int
        Sparsity level, ``1 <= k <= p``.
    lambda2 : float
        Ridge weight, > 0 (objective: sum of losses + lambda2 ||b||^2).
    loss : {"squared", "logistic", "squared_hinge", "poisson"}
    max_abs_coef : float or None
        Box ``M``; None for none.
    fixed_in, fixed_out : sequences of int
        Feature indices fixed in (z_j = 1) / out (z_j = 0).
    rel_tol, max_iter, time_limit, cutoff, warm_start, restart
        See :func:`solve_node`.
    eig_shift : None, float or "auto"
        Least squares only: the eigenvalue-shifted (stronger) relaxation.
    fit_intercept : bool
        Unpenalised intercept.

    Returns
    -------
    RelaxationResult
    """
    prob = RelaxationProblem.from_data(X, y, lambda2, loss=loss, max_abs_coef=max_abs_coef,
                                       eig_shift=eig_shift, fit_intercept=fit_intercept)
    k = check_k(k, prob.n_features)
    s1, s0 = check_fixings(fixed_in, fixed_out, k, prob.n_features)
    return solve_node(prob, k, s1, s0, rel_tol=rel_tol, max_iter=max_iter,
                      time_limit=time_limit, cutoff=cutoff, warm_start=warm_start,
                      restart=restart)
