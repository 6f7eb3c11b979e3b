"""DTZO-style distributed trilevel zeroth-order optimisation with cascaded zeroth-order cuts.

Problem (``z = (x1, x2, x3)``, ``N`` workers, each holding ``f_{l,j}``; ``f_l = sum_j f_{l,j}``)::

    min_{x1}  f_1(x1, x2, x3)
    s.t.      x2 in argmin_{x2'} f_2(x1, x2', x3*(x1, x2'))
              x3*(x1, x2) = argmin_{x3'} f_3(x1, x2, x3')

The level objectives are black boxes (values only); levels listed in ``exact_levels`` may use
gradients (grey-box). This is a *reconstruction* of the method of Jiao, Yang and Jian (ICML 2025),
whose full text was not available; see ``docs/dtzo.md`` for what is reconstructed and why.

Mechanism (all notation in ``docs/dtzo.md``):

* **Residuals by K zeroth-order steps.** ``r_3(z) = (x3 - Phi_3^K(z)) / (K eta_3)`` where
  ``Phi_3^K`` runs ``K`` zeroth-order gradient steps on ``x3 -> f_3(x1, x2, x3)`` from ``x3``
  (``r_3`` equals ``grad_{x3} f_3`` for ``K = 1``, exact estimates); it vanishes exactly on the
  level-3 solution set. ``r_2(x1, x2)`` is the same on the *level-2 problem restricted by the inner
  cuts*: ``x2 -> f_2(x1, x2, A [x1; x2] + b)`` where ``x3 = A [x1; x2] + b`` is the level-3 solution
  map implied by the inner cuts (the cascade).
* **Zeroth-order cuts.** At a point ``z_c`` the master obtains ``r_c = r(z_c)`` and a central-
  difference Jacobian ``J_c`` along a random orthonormal frame (common random numbers across
  the perturbed trajectories), or, with ``cut_jacobian="update"``, the previous cut's Jacobian
  updated along the secant and a few fresh directions (:mod:`~sparsecert.distributed.dtzo.cuts`;
  a refinement then costs ``O(d3)`` instead of ``O(d * d3)`` queries). A *quadratic cut* is
  ``||r_c + J_c (z - z_c)||^2 <= eps^2`` (the Gauss-Newton model of ``||r||^2``, a quadratic
  polynomial in ``z``); a *linear cut* is the tangent
  ``||r_c|| + g_c^T (z - z_c) <= eps`` with ``g_c = J_c^T r_c / ||r_c||``. A cut is **valid** on a
  set S when its model ``m_c`` satisfies ``m_c(z) <= ||r(z)||`` for all z in S: it then removes no
  point with ``||r(z)|| <= eps``. Both kinds are valid everywhere when ``r`` is affine (quadratic
  levels, exact estimates): the quadratic model is then exact and the linear one is a tangent of a
  convex function. Otherwise cuts are local models, refreshed every ``T`` iterations.
* **Penalised consensus problem.** Workers keep local copies ``z_j``; the master keeps the
  consensus ``z`` and the cuts, and solves
  ``min_z sum_j (rho/2)||z_j + u_j - z||^2 + (beta/2) sum_c max(0, m_c(z) - eps)^2``
  (exterior penalty on cut violation + consensus penalty; ``u_j`` are scaled multipliers of the
  consensus constraint, zero when ``multipliers=False``) by a damped Newton method.
  Worker ``j`` takes zeroth-order steps on ``f_{1,j}(z_j) + (rho/2)||z_j - z + u_j||^2``.
* **Refinement.** New cuts every ``T`` iterations while ``t < T1``; cuts whose model stays below
  ``inactive_tol * eps`` for ``drop_after`` consecutive iterations are dropped (except the newest
  cut of each level, so a level never loses its constraint); at most
  ``max_cuts`` per level are kept (the oldest goes first).
* **Communication.** The server (the master) lives on the root process; every exchange goes
  through the :class:`~sparsecert.distributed.comm.Communicator` as encoded bytes. Each
  iteration: uplink ``z_j + u_j`` (participants only, ``gather``), downlink the consensus ``z``
  (``broadcast``). Each of the ``K`` steps of a residual trajectory: uplink the workers' batched
  gradient estimates, downlink their sum (every process then knows the trajectories, builds the
  same cuts and the same level-3 map ``(A, b)``; nothing else is sent). Cut directions and
  participation come from a generator seeded identically on every process (shared seed, no
  bits). Traffic is reported in bits per worker per direction. Monitoring reductions (query
  counts, consensus error, the level-1 objective) are not metered.
* **Partial participation.** With ``participation = S < N`` a master generator (seeded by
  ``seed``, the same on every process and for every communicator) samples S workers per iteration;
  cuts are always built with all workers (the residuals are sums over all of them).

The shared protocol, result record and oracle live in
:mod:`sparsecert.distributed.dtzo.trilevel`; the baselines in
:mod:`sparsecert.distributed.dtzo.baselines` (re-exported here).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from sparsecert.distributed.comm import Communicator
from sparsecert.distributed.dtzo.baselines import FedAvgConfig, NestedZOConfig, nested_zo, zo_fedavg
from sparsecert.distributed.dtzo.cuts import Cut, JacobianEstimator, cut_model, level3_map
from sparsecert.distributed.dtzo.diagnostics import DTZOWarning, RunTrace, diagnose, warn_if_failed
from sparsecert.distributed.dtzo.master import solve_master
from sparsecert.distributed.dtzo.trilevel import DTZOResult, Monitor, TrilevelProblem, _TrilevelRun
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig
from sparsecert.distributed.options import check_settings

__all__ = [
    "TrilevelProblem",
    "DTZOConfig",
    "DTZOResult",
    "DTZOWarning",
    "Cut",
    "NestedZOConfig",
    "FedAvgConfig",
    "dtzo",
    "dtzo_first_order",
    "nested_zo",
    "zo_fedavg",
    "cut_model",
]


# ----------------------------------------------------------------------------------------------
# configuration and results
# ----------------------------------------------------------------------------------------------


def _inner_default() -> ZOConfig:
    return ZOConfig(q=None, mu=1e-4, scheme="central", directions="orthogonal")


@dataclass(frozen=True)
class DTZOConfig:
    """Settings of :func:`dtzo` (see the module docstring for the roles).

    Parameters
    ----------
    n_iter : int
        Outer iterations (one uplink + one downlink each, plus cut rounds).
    rho : float
        Consensus penalty.
    beta : float
        Exterior penalty on cut violation.
    eps : float
        Tolerance of the residual-norm constraints ``||r_l|| <= eps``.
    lr : float
        Worker step size on the local subproblem.
    local_steps : int
        Worker steps per iteration.
    multipliers : bool
        Keep scaled consensus multipliers ``u_j`` (augmented-Lagrangian form of the consensus
        penalty). ``False`` gives the pure penalty.
    K : int
        Zeroth-order steps defining each residual.
    eta3, eta2 : float
        Step sizes of those steps (levels 3 and 2).
    T, T1 : int
        Cut period and refinement horizon (cuts at ``t = 0, T, 2T, ... < T1``).
    cut_kind : {"quadratic", "linear"}
    cascade : bool
        Build level-2 residuals on the problem restricted by the inner cuts (``True``) or with
        ``x3`` frozen at the cut point (single-level approximation, ablation).
    drop_inactive : bool
        Drop cuts inactive for ``drop_after`` consecutive iterations.
    drop_after : int
    inactive_tol : float
        A cut is inactive when ``m_c(z) < inactive_tol * eps``.
    max_cuts : int
        Per level.
    zo_f1, zo_inner, zo_cut : ZOConfig
        Estimators for the worker steps on ``f_1``, for the K residual steps, and the directions
        and radius of the cut Jacobians (the cut frame is always orthonormal; ``zo_cut.q`` may
        truncate it to a random sketch weighted by ``n / q``).
    cut_jacobian : {"full", "update"}
        ``"full"``: every cut estimates its Jacobian along a full orthonormal frame of its
        variables (``2 n + 1`` residual trajectories, ``n = d`` for level 3 and ``d1 + d2`` for
        level 2). ``"update"``: only the first cut of each level does; later cuts start from the
        previous cut's Jacobian, correct it along the secant between the two cut points (a
        Broyden step, no extra queries) and re-measure it along ``cut_dirs`` fresh random
        orthonormal directions (``2 cut_dirs + 1`` trajectories): the cost of a refinement
        then grows like ``d3`` instead of ``d * d3``.
    cut_dirs : int
        Fresh directions per refinement when ``cut_jacobian="update"``.
    cut_refresh_tol : float
        With ``cut_jacobian="update"``, a refinement measures a full frame instead when the
        previous Jacobian mispredicts the change of the residual between the two cut points by
        more than this fraction (strong non-linearity).
    check_residuals : bool
        Estimate both residuals once more at the returned point (``K`` rounds per level,
        counted in the queries and the traffic) and warn (:class:`DTZOWarning`, with advice)
        when a level's residual did not decrease or the workers did not reach consensus.
    exact_levels : tuple of int
        Levels whose gradients are used (grey box). ``(1, 2, 3)`` is the first-order reference.
    vr_period : int
        If > 0, workers use a zeroth-order SVRG control variate for ``grad f_{1,j}``: every
        ``vr_period`` of their steps they store a reference point and a full-frame estimate there
        (``d`` orthonormal central differences); in between, the step uses
        ``g(z) - g(z_ref) + G_ref`` with the *same* random directions for both terms, whose noise
        vanishes as ``z - z_ref -> 0``. 0 disables it.
    participation : int or None
        Workers sampled per iteration (``None``: all).
    seed : int
        Seed of the master's generator (cut frames, participation).
    dtype : {"float64", "float32"}
        Encoding of vectors on the wire.
    record_every : int
    """

    n_iter: int = 200
    rho: float = 1.0
    beta: float = 1e4
    eps: float = 1e-4
    lr: float = 0.1
    local_steps: int = 1
    multipliers: bool = True
    K: int = 3
    eta3: float = 0.1
    eta2: float = 0.1
    T: int = 10
    T1: int = 100
    cut_kind: str = "quadratic"
    cascade: bool = True
    drop_inactive: bool = True
    drop_after: int = 3
    inactive_tol: float = 0.5
    max_cuts: int = 5
    zo_f1: ZOConfig = field(default_factory=lambda: ZOConfig(q=None, mu=1e-4))
    zo_inner: ZOConfig = field(default_factory=_inner_default)
    zo_cut: ZOConfig = field(default_factory=lambda: ZOConfig(q=None, mu=1e-3))
    cut_jacobian: str = "full"
    cut_dirs: int = 4
    cut_refresh_tol: float = 0.25
    check_residuals: bool = True
    exact_levels: tuple[int, ...] = ()
    vr_period: int = 0
    participation: int | None = None
    seed: int = 0
    dtype: str = "float64"
    record_every: int = 1

    def __post_init__(self) -> None:
        check_settings(self, ints={"n_iter": 0, "local_steps": 1, "K": 1, "T": 1, "T1": 0,
                                   "drop_after": 1, "max_cuts": 1, "record_every": 1,
                                   "vr_period": 0, "cut_dirs": 1,
                                   **({} if self.participation is None else {"participation": 1})},
                       positive=("rho", "beta", "eps", "lr", "eta3", "eta2", "inactive_tol",
                                 "cut_refresh_tol"),
                       choices={"cut_kind": ("quadratic", "linear"),
                                "cut_jacobian": ("full", "update"),
                                "dtype": ("float64", "float32")})
        if not set(self.exact_levels) <= {1, 2, 3}:
            raise ValueError(f"exact_levels must be a subset of (1, 2, 3), got {self.exact_levels}")


# ----------------------------------------------------------------------------------------------
# the DTZO-style method
# ----------------------------------------------------------------------------------------------


class _DTZO(_TrilevelRun):
    def __init__(self, problem: TrilevelProblem, comm: Communicator, cfg: DTZOConfig,
                 monitor: Monitor | None) -> None:
        # the master's generator draws the cut frames and the participants
        super().__init__(problem, comm, monitor, cfg.exact_levels, [cfg.seed, 20250713])
        self.check_participation(cfg.participation)
        self.d1, self.d2, self.d3 = self.dims
        self.d12 = self.d1 + self.d2
        self.d = self.d12 + self.d3
        self.cfg = cfg
        self.n_dropped = 0  # cuts removed as inactive (history: "cuts_dropped")
        z0 = np.asarray(problem.initial_point(), dtype=np.float64)
        self.z = z0.copy()
        self.zj = {j: z0.copy() for j in comm.local_workers}
        self.uj = {j: np.zeros(self.d) for j in comm.local_workers}
        self.nsteps = {j: 0 for j in comm.local_workers}
        self.zref = {j: z0.copy() for j in comm.local_workers}
        self.gref = {j: np.zeros(self.d) for j in comm.local_workers}
        # server state (used on the root only): the last received z_j + u_j of every worker
        self.w = np.tile(z0, (comm.n_workers, 1))
        self.cuts: list[Cut] = []
        self.trace = RunTrace()
        self.jac = JacobianEstimator(self.rng, cfg.zo_cut.mu, cfg.zo_cut.q, cfg.cut_jacobian,
                                     cfg.cut_dirs, cfg.cut_refresh_tol)
        self.A = np.zeros((self.d3, self.d12))
        self.b = z0[self.d12:].copy()

    # -- residuals and cuts --------------------------------------------------------------------
    def _descend(self, level: int, xb: np.ndarray, C: np.ndarray, offset: np.ndarray,
                 eta: float) -> np.ndarray:
        """K zeroth-order steps on the block ``xb`` (``(m, n_b)`` starting points) of
        ``f_level(xb @ C.T + offset)``; each step is one round trip (the workers' estimates
        up, their sum down); returns the residuals ``(xb - Phi^K) / (K eta)``."""
        cfg = self.cfg
        x = xb.copy()
        for k in range(cfg.K):
            local = {j: self.oracle.grad(level, j, x, C, offset, cfg.zo_inner)
                     for j in self.comm.local_workers}
            G = self.server_sum(local, cfg.dtype, x.shape)
            g0 = np.linalg.norm(G[0])  # the unperturbed trajectory (row 0)
            if k == 0:
                first = g0
            elif k == cfg.K - 1 and g0 > first:
                self.trace.diverged[level] = True
            x = x - eta * G
        return (xb - x) / (cfg.K * eta)

    def _residuals3(self, Z: np.ndarray) -> np.ndarray:
        """Level-3 residuals at the rows of ``Z`` (full variables)."""
        d12 = self.d12
        C = np.zeros((self.d, self.d3))
        C[d12:] = np.eye(self.d3)
        offset = np.hstack([Z[:, :d12], np.zeros((Z.shape[0], self.d3))])
        return self._descend(3, Z[:, d12:], C, offset, self.cfg.eta3)

    def _residuals2(self, X: np.ndarray) -> np.ndarray:
        """Level-2 residuals at the rows of ``X`` (``(x1, x2)`` variables) on the level-2
        problem restricted by the inner cuts (``x3 = A x12 + b``), or with ``x3`` frozen at the
        consensus when ``cascade`` is off."""
        d1, d12 = self.d1, self.d12
        C = np.zeros((self.d, self.d2))
        C[d1:d12] = np.eye(self.d2)
        offset = np.zeros((X.shape[0], self.d))
        offset[:, :d1] = X[:, :d1]
        if self.cfg.cascade:
            C[d12:] = self.A[:, d1:]
            offset[:, d12:] = X[:, :d1] @ self.A[:, :d1].T + self.b
        else:
            offset[:, d12:] = self.z[d12:]
        return self._descend(2, X[:, d1:], C, offset, self.cfg.eta2)

    def _level3_cut(self, t: int) -> Cut:
        r, J = self.jac.estimate(3, self.z, self._residuals3)
        return Cut(3, self.z.copy(), r, J, self.cfg.cut_kind, t)

    def _update_map(self) -> None:
        """Level-3 solution map ``x3 = A x12 + b`` minimising the inner cuts' models (computed
        on every process from the broadcast sums: nothing more to send)."""
        got = level3_map(self.cuts, self.d12)
        if got is not None:
            self.A, self.b = got

    def _level2_cut(self, t: int) -> Cut:
        d12 = self.d12
        r, J12 = self.jac.estimate(2, self.z[:d12], self._residuals2)
        J = np.zeros((self.d2, self.d))
        J[:, :d12] = J12
        return Cut(2, self.z.copy(), r, J, self.cfg.cut_kind, t)

    def _add_cut(self, cut: Cut) -> None:
        if cut.kind == "linear" and np.linalg.norm(cut.r) == 0.0:
            return  # tangent undefined at an exact solution; the point is feasible anyway
        self.cuts.append(cut)
        same = [c for c in self.cuts if c.level == cut.level]
        while len(same) > self.cfg.max_cuts:
            self.cuts.remove(same.pop(0))

    def _refine(self, t: int) -> None:
        led = self.ledger
        before = dict(led.queries)
        c3 = self._level3_cut(t)
        self._add_cut(c3)
        self._update_map()
        c2 = self._level2_cut(t)
        self._add_cut(c2)
        for j in led.queries:
            led.cut_queries[j] += led.queries[j] - before[j]
        self.trace.add(t, np.linalg.norm(c3.r), np.linalg.norm(c2.r))

    def _check(self, t: int) -> None:
        """Residual estimates at the current consensus point (one trajectory per level)."""
        r3 = self._residuals3(self.z[None, :])[0]
        r2 = self._residuals2(self.z[None, : self.d12])[0]
        self.trace.add(t, np.linalg.norm(r3), np.linalg.norm(r2))
        self.trace.final = True

    def _drop_inactive(self) -> None:
        cfg = self.cfg
        newest = {c.level: c for c in self.cuts}  # the newest cut of a level is always kept
        keep = []
        for c in self.cuts:
            if cut_model(c, self.z) < cfg.inactive_tol * cfg.eps:
                c.inactive += 1
            else:
                c.inactive = 0
            if c is newest[c.level] or not (cfg.drop_inactive and c.inactive >= cfg.drop_after):
                keep.append(c)
        if len(keep) != len(self.cuts):
            self.n_dropped += len(self.cuts) - len(keep)
            self.cuts = keep
            self._update_map()

    # -- workers -------------------------------------------------------------------------------
    def _worker_grad(self, j: int) -> np.ndarray:
        cfg = self.cfg
        C = np.eye(self.d)
        zero = np.zeros((1, self.d))
        if cfg.vr_period == 0 or 1 in self.oracle.exact:
            return self.oracle.grad(1, j, self.zj[j][None, :], C, zero, cfg.zo_f1)[0]
        if self.nsteps[j] % cfg.vr_period == 0:
            full = ZOConfig(q=None, mu=cfg.zo_f1.mu, scheme="central", directions="orthogonal")
            self.zref[j] = self.zj[j].copy()
            self.gref[j] = self.oracle.grad(1, j, self.zref[j][None, :], C, zero, full)[0]
        self.nsteps[j] += 1
        both = np.vstack([self.zj[j], self.zref[j]])
        g = self.oracle.grad(1, j, both, C, np.zeros((2, self.d)), cfg.zo_f1)
        return g[0] - g[1] + self.gref[j]

    def _worker_step(self, j: int) -> None:
        cfg = self.cfg
        for _ in range(cfg.local_steps):
            g = self._worker_grad(j)
            self.zj[j] = self.zj[j] - cfg.lr * (g + cfg.rho * (self.zj[j] - self.z + self.uj[j]))

    def _worker_send(self, j: int) -> np.ndarray:
        """A participant's round: its local steps, then ``z_j + u_j`` goes up."""
        self._worker_step(j)
        return self.zj[j] + self.uj[j]

    def _master_step(self, received: dict[int, np.ndarray]) -> np.ndarray:
        """The server's round: the received copies replace the participants' last ones, then
        the master problem gives the new consensus point."""
        for j, v in received.items():
            self.w[j] = v
        cfg = self.cfg
        return solve_master(self.z, self.w.mean(axis=0), cfg.rho * self.comm.n_workers,
                            self.cuts, cfg.eps, cfg.beta)

    # -- main loop -----------------------------------------------------------------------------
    def run(self) -> DTZOResult:
        cfg, comm = self.cfg, self.comm
        self._start, self._paused = time.perf_counter(), 0.0
        self._record(0)
        for t in range(cfg.n_iter):
            if t < cfg.T1 and t % cfg.T == 0:
                self._refine(t)
            part = self.participants(cfg.participation)
            self.z = self.consensus_round(part, self._worker_send, self._master_step, cfg.dtype)
            if cfg.multipliers:
                pset = set(part.tolist())
                for j in comm.local_workers:
                    if j in pset:
                        self.uj[j] = self.uj[j] + self.zj[j] - self.z
            self._drop_inactive()
            if t + 1 == cfg.n_iter and cfg.check_residuals:
                self._check(t + 1)
            if (t + 1) % cfg.record_every == 0 or t + 1 == cfg.n_iter:
                self._record(t + 1)
        res = self.result(self.z, "dtzo")
        res.residual_trace = self.trace.as_arrays()
        if cfg.check_residuals:
            res.warnings = diagnose(self.trace, cfg.eps, cfg.T1, cfg.n_iter,
                                    float(self.hist["consensus_error"][-1]),
                                    float(np.linalg.norm(self.z)))
            if comm.is_root:  # once, not once per process
                warn_if_failed(res.warnings)
        return res

    def _record(self, t: int) -> None:
        """One history row; its ``seconds`` are the run's wall seconds on this process so
        far, the records themselves (monitor, reductions) excluded."""
        t0 = time.perf_counter()
        row = self.history_row(t, self.z, self.zj,
                               n_cuts3=sum(c.level == 3 for c in self.cuts),
                               n_cuts2=sum(c.level == 2 for c in self.cuts),
                               cuts_dropped=self.n_dropped, full_frames=self.jac.stats.full)
        row["seconds"] = t0 - self._start - self._paused
        self.append(row)
        self._paused += time.perf_counter() - t0


def dtzo(problem: TrilevelProblem, comm: Communicator, config: DTZOConfig | None = None,
         monitor: Monitor | None = None) -> DTZOResult:
    """Run the DTZO-style method.

    Parameters
    ----------
    problem : TrilevelProblem
        Workers' level objectives (the process only queries its local workers).
    comm : Communicator
        :class:`~sparsecert.distributed.comm.SimComm` or
        :class:`~sparsecert.distributed.comm.MPIComm`.
    config : DTZOConfig, optional
    monitor : callable, optional
        ``monitor(z) -> dict`` of diagnostics recorded in the history (not counted as traffic).

    Returns
    -------
    DTZOResult
    """
    return _DTZO(problem, comm, config or DTZOConfig(), monitor).run()


def dtzo_first_order(problem: TrilevelProblem, comm: Communicator,
                     config: DTZOConfig | None = None,
                     monitor: Monitor | None = None) -> DTZOResult:
    """The same algorithm with exact gradients at every level (first-order reference)."""
    cfg = replace(config or DTZOConfig(), exact_levels=(1, 2, 3))
    res = _DTZO(problem, comm, cfg, monitor).run()
    res.method = "first_order"
    return res
