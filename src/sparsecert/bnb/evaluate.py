"""Node evaluation: one relaxation per node, in batches through any ``concurrent.futures.Executor``.

A task is a pure function of its inputs (the problem, the fixings, the cutoff known when the
batch was formed, the warm start), so the tree -- and hence the certificate -- does not depend on
which executor ran it or in which order the tasks finished.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from dataclasses import dataclass

import numpy as np

from sparsecert.solvers.perspective import RelaxationProblem, RelaxationResult, solve_node

__all__ = ["NodeTask", "evaluate_task", "BatchEvaluator", "make_executor"]

# Problems registered in worker processes by the pool initializer (token -> problem), so that a
# process pool created by the engine does not pickle the data with every task.
_PROBLEMS: dict[str, RelaxationProblem] = {}


def _register(token: str, problem: RelaxationProblem) -> None:
    _PROBLEMS[token] = problem


def release(token: str | None) -> None:
    """Forget a problem registered for a process pool."""
    if token is not None:
        _PROBLEMS.pop(token, None)


@dataclass
class NodeTask:
    """Everything one node evaluation needs."""

    problem: RelaxationProblem | str  # the problem, or a token registered in the worker
    k: int
    fixed_in: np.ndarray
    fixed_out: np.ndarray
    cutoff: float
    warm_start: np.ndarray | None
    rel_tol: float
    max_iter: int
    time_limit: float | None


def evaluate_task(task: NodeTask) -> RelaxationResult:
    """Solve one node relaxation (module-level, so it pickles for process executors)."""
    prob = _PROBLEMS[task.problem] if isinstance(task.problem, str) else task.problem
    return solve_node(prob, task.k, task.fixed_in, task.fixed_out, rel_tol=task.rel_tol,
                      max_iter=task.max_iter, time_limit=task.time_limit, cutoff=task.cutoff,
                      warm_start=task.warm_start)


def make_executor(n_jobs: int, backend: str, problem: RelaxationProblem
                  ) -> tuple[cf.Executor | None, str | None]:
    """The engine's own executor for ``n_jobs`` workers (``None`` when serial).

    Returns the executor and the token under which process workers know the problem.
    """
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    if n_jobs <= 1:
        return None, None
    if backend == "threads":
        return cf.ThreadPoolExecutor(max_workers=n_jobs, thread_name_prefix="sparsecert"), None
    if backend == "processes":
        token = f"problem-{id(problem)}-{os.getpid()}"
        _register(token, problem)  # also here: single-task batches run in this process
        ex = cf.ProcessPoolExecutor(max_workers=n_jobs, initializer=_register,
                                    initargs=(token, problem))
        return ex, token
    raise ValueError(f"unknown backend {backend!r}; use 'threads' or 'processes', or pass an "
                     "executor")


class BatchEvaluator:
    """Evaluates a batch of tasks, serially or on an executor, returning results in order."""

    def __init__(self, executor: cf.Executor | None = None) -> None:
        self.executor = executor

    def map(self, tasks: list[NodeTask]) -> list[RelaxationResult]:
        if self.executor is None or len(tasks) == 1:
            return [evaluate_task(t) for t in tasks]
        futures = [self.executor.submit(evaluate_task, t) for t in tasks]
        return [f.result() for f in futures]
