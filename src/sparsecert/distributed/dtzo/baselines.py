"""Baselines for the DTZO-style method: nested zeroth-order loops and single-level zeroth-order
federated averaging that ignores the hierarchy (both on the same communication layer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sparsecert.distributed.comm import Communicator
from sparsecert.distributed.dtzo.trilevel import DTZOResult, Monitor, TrilevelProblem, _TrilevelRun
from sparsecert.distributed.dtzo.zeroth_order import ZOConfig, zo_rows
from sparsecert.distributed.options import check_settings

__all__ = ["NestedZOConfig", "FedAvgConfig", "nested_zo", "zo_fedavg"]

# ----------------------------------------------------------------------------------------------
# baselines
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NestedZOConfig:
    """Settings of :func:`nested_zo`: ``n_outer`` zeroth-order steps on ``x1`` of the value
    function, each solving level 2 by ``M2`` steps whose every function value solves level 3 by
    ``M3`` steps (warm-started)."""

    n_outer: int = 50
    M2: int = 10
    M3: int = 10
    lr1: float = 0.1
    lr2: float = 0.1
    lr3: float = 0.1
    zo: ZOConfig = field(default_factory=lambda: ZOConfig(q=None, mu=1e-4))
    seed: int = 0
    dtype: str = "float64"

    def __post_init__(self) -> None:
        check_settings(self, ints={"n_outer": 1, "M2": 1, "M3": 1},
                       positive=("lr1", "lr2", "lr3"))


class _Nested(_TrilevelRun):
    def __init__(self, problem: TrilevelProblem, comm: Communicator, cfg: NestedZOConfig,
                 monitor: Monitor | None) -> None:
        super().__init__(problem, comm, monitor, (), [cfg.seed, 4242])
        self.cfg = cfg

    def gvals(self, level: int, Z: np.ndarray) -> np.ndarray:
        """Global ``f_level = sum_j f_{level,j}`` at rows of ``Z`` (one round trip: the values
        up, their sum down)."""
        local = {j: self.oracle.values(level, j, Z) for j in self.comm.local_workers}
        return self.server_sum(local, self.cfg.dtype, (Z.shape[0],))

    def _grad(self, f: Callable[[np.ndarray, np.ndarray], np.ndarray],
              X: np.ndarray) -> np.ndarray:
        """Estimates at the rows of ``X`` of ``f(P, idx)``, ``idx`` the row of ``X`` each
        point of ``P`` perturbs."""
        m = X.shape[0]
        return zo_rows(lambda P: f(P, np.repeat(np.arange(m), P.shape[0] // m)), X, self.rng,
                       self.cfg.zo)[0]

    def solve3(self, X12: np.ndarray, X3: np.ndarray) -> np.ndarray:
        X3 = X3.copy()
        for _ in range(self.cfg.M3):
            G = self._grad(lambda P, idx: self.gvals(3, np.hstack([X12[idx], P])), X3)
            X3 -= self.cfg.lr3 * G
        return X3

    def solve2(self, X1: np.ndarray, X2: np.ndarray, X3: np.ndarray):
        X2, X3 = X2.copy(), X3.copy()

        def phi2(P: np.ndarray, idx: np.ndarray) -> np.ndarray:
            X12 = np.hstack([X1[idx], P])
            P3 = self.solve3(X12, X3[idx])
            return self.gvals(2, np.hstack([X12, P3]))

        for _ in range(self.cfg.M2):
            X2 -= self.cfg.lr2 * self._grad(phi2, X2)
            X3 = self.solve3(np.hstack([X1, X2]), X3)
        return X2, X3

    def run(self) -> DTZOResult:
        d1, d2, _ = self.dims
        z = np.asarray(self.problem.initial_point(), dtype=np.float64).copy()
        x1, x2, x3 = z[:d1].copy(), z[d1:d1 + d2].copy(), z[d1 + d2:].copy()
        x3 = self.solve3(np.concatenate([x1, x2])[None, :], x3[None, :])[0]
        self.append(self.history_row(0, np.concatenate([x1, x2, x3])))
        for t in range(self.cfg.n_outer):
            def value1(P: np.ndarray, idx: np.ndarray, x2=x2, x3=x3) -> np.ndarray:
                m = P.shape[0]
                P2, P3 = self.solve2(P, np.tile(x2, (m, 1)), np.tile(x3, (m, 1)))
                return self.gvals(1, np.hstack([P, P2, P3]))

            g1 = self._grad(value1, x1[None, :])[0]
            x1 = x1 - self.cfg.lr1 * g1
            X2, X3 = self.solve2(x1[None, :], x2[None, :], x3[None, :])
            x2, x3 = X2[0], X3[0]
            self.append(self.history_row(t + 1, np.concatenate([x1, x2, x3])))
        return self.result(np.concatenate([x1, x2, x3]), "nested_zo")


def nested_zo(problem: TrilevelProblem, comm: Communicator, config: NestedZOConfig | None = None,
              monitor: Monitor | None = None) -> DTZOResult:
    """Nested zeroth-order loops (baseline): every value of a level solves the levels below.

    The master draws the directions and asks the workers for sums of function values (one
    uplink per batch of points), so the method is exact up to the inner iteration counts but
    pays ``O(q^2 M2 M3)`` queries per outer step. Consensus is trivial (one shared iterate).
    """
    return _Nested(problem, comm, config or NestedZOConfig(), monitor).run()


@dataclass(frozen=True)
class FedAvgConfig:
    """Settings of :func:`zo_fedavg`."""

    n_rounds: int = 200
    local_steps: int = 5
    lr: float = 0.05
    zo: ZOConfig = field(default_factory=lambda: ZOConfig(q=None, mu=1e-4))
    participation: int | None = None
    seed: int = 0
    dtype: str = "float64"

    def __post_init__(self) -> None:
        check_settings(self, ints={"n_rounds": 1, "local_steps": 1}, positive=("lr",))


def zo_fedavg(problem: TrilevelProblem, comm: Communicator, config: FedAvgConfig | None = None,
              monitor: Monitor | None = None) -> DTZOResult:
    """Single-level zeroth-order federated averaging that ignores the hierarchy (baseline).

    Each round, the (sampled) workers start from the broadcast ``z``, take ``local_steps``
    zeroth-order steps on ``f_{1,j} + f_{2,j} + f_{3,j}`` and send their ``z_j``; the master
    averages them.
    """
    cfg = config or FedAvgConfig()
    run = _TrilevelRun(problem, comm, monitor, (), [cfg.seed, 777])
    run.check_participation(cfg.participation)
    oracle = run.oracle
    z = np.asarray(problem.initial_point(), dtype=np.float64).copy()
    zj = {j: z.copy() for j in comm.local_workers}

    def flat(j: int, Z: np.ndarray) -> np.ndarray:
        """``f_{1,j} + f_{2,j} + f_{3,j}``: the hierarchy flattened into one objective."""
        return sum(oracle.values(lev, j, Z) for lev in (1, 2, 3))

    def local_steps(j: int) -> np.ndarray:
        """Worker ``j``'s ``local_steps`` zeroth-order steps from the broadcast ``z``."""
        x = z.copy()
        for _ in range(cfg.local_steps):
            g = zo_rows(lambda P: flat(j, P), x[None, :], comm.worker_rng(j), cfg.zo)[0]
            x = x - cfg.lr * g[0]
        zj[j] = x
        return x

    def average(received: dict[int, np.ndarray]) -> np.ndarray:
        return np.mean(list(received.values()), axis=0)  # the participants' models

    run.append(run.history_row(0, z, zj))
    for t in range(cfg.n_rounds):
        part = run.participants(cfg.participation)
        z = run.consensus_round(part, local_steps, average, cfg.dtype)
        run.append(run.history_row(t + 1, z, zj))
    return run.result(z, "zo_fedavg")
