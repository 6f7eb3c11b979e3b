"""The branch-and-bound search loop.

The loop is small on purpose; the parts live in their own modules:

* :mod:`~sparsecert.bnb.node` -- a node and its fixings;
* :mod:`~sparsecert.bnb.queues` -- node selection by name;
* :mod:`~sparsecert.bnb.branching` -- branching rules by name;
* :mod:`~sparsecert.bnb.evaluate` -- relaxations in batches through an executor;
* :mod:`sparsecert.solvers.heuristics` -- incumbents (beam search, swaps, rounding);
* :mod:`~sparsecert.bnb.progress` -- the log;
* :mod:`~sparsecert.bnb.results` -- the record returned.

Correctness argument (what the certificate re-checks): every node is either branched into the
two children ``z_j = 0`` and ``z_j = 1`` on a free ``j``, or is a leaf; the leaves therefore
partition the feasible supports. A leaf's bound is a weak-duality bound of its own perspective
relaxation (computed from its witness), which is below the objective of every support in it. So
the minimum over the leaves is a valid global lower bound, whatever the relaxations' accuracy.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import asdict, dataclass

import numpy as np

from sparsecert.bnb.branching import BRANCHING_RULES, choose_branch_variable
from sparsecert.bnb.evaluate import BatchEvaluator, NodeTask, make_executor, release
from sparsecert.bnb.node import Node, Witness
from sparsecert.bnb.progress import ProgressLog
from sparsecert.bnb.queues import QUEUE_STRATEGIES, make_queue
from sparsecert.bnb.results import SearchResult, relative_gap
from sparsecert.solvers.heuristics import (
    SubsetModel,
    SupportRefitter,
    beam_search,
    round_relaxation,
    swap_search,
)
from sparsecert.solvers.perspective import RelaxationProblem, RelaxationResult

__all__ = ["BnBSettings", "BranchAndBound"]


@dataclass
class BnBSettings:
    """Settings of the search (all recorded in the certificate).

    Parameters
    ----------
    rel_gap : float
        Stop when ``(UB - LB) / max(1, |UB|) <= rel_gap``.
    abs_gap : float
        ... or when ``UB - LB <= abs_gap``.
    time_limit, node_limit : float or None, int or None
        Limits; the best model so far is returned with status ``"time_limit"``/``"node_limit"``.
    node_selection : str
        A name in :data:`sparsecert.bnb.queues.QUEUE_STRATEGIES`.
    branching : str
        A name in :data:`sparsecert.bnb.branching.BRANCHING_RULES`.
    batch_size : int
        Nodes evaluated per batch. The tree depends on it (and not on the executor or
        ``n_jobs``): the same settings give the same certificate on any executor.
    node_rel_tol, node_max_iter : float, int
        Accuracy and iteration cap of a node relaxation (it stops earlier on the cutoff).
    leaf_rel_tol, leaf_max_iter : float, int
        The same for leaves solved exactly.
    beam_width, n_candidates : int
        Beam search at the root.
    heuristic_every : int
        Run swap local search from a node's rounded solution every this many nodes.
    log_interval : float
        Seconds between progress lines.
    """

    rel_gap: float = 1e-4
    abs_gap: float = 1e-9
    time_limit: float | None = None
    node_limit: int | None = None
    node_selection: str = "best_bound_dive"
    branching: str = "largest_coef"
    batch_size: int = 4
    node_rel_tol: float = 1e-6
    node_max_iter: int = 5000
    leaf_rel_tol: float = 1e-9
    leaf_max_iter: int = 50000
    beam_width: int = 5
    n_candidates: int = 10
    heuristic_every: int = 10
    log_interval: float = 5.0

    @classmethod
    def from_options(cls, **options) -> BnBSettings:
        """Settings from keyword options, ``None`` meaning "the default"."""
        return cls(**{k: v for k, v in options.items() if v is not None})

    def validate(self) -> None:
        if not (0 <= self.rel_gap < 1):
            raise ValueError(f"rel_gap must be in [0, 1), got {self.rel_gap}")
        if self.abs_gap < 0:
            raise ValueError(f"abs_gap must be >= 0, got {self.abs_gap}")
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError(f"time_limit must be positive, got {self.time_limit}")
        if self.node_limit is not None and self.node_limit < 1:
            raise ValueError(f"node_limit must be >= 1, got {self.node_limit}")
        if self.node_selection not in QUEUE_STRATEGIES:
            raise ValueError(f"unknown node_selection {self.node_selection!r}; choose from "
                             f"{sorted(QUEUE_STRATEGIES)}")
        if self.branching not in BRANCHING_RULES:
            raise ValueError(f"unknown branching {self.branching!r}; choose from "
                             f"{sorted(BRANCHING_RULES)}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")


class BranchAndBound:
    """Best-bound branch and bound over the perspective relaxation.

    Parameters
    ----------
    problem : RelaxationProblem
        The prepared data (validated, labels mapped, eigen shift chosen).
    k : int
        Cardinality bound.
    settings : BnBSettings, optional
    n_jobs : int
        Parallel node evaluations with the engine's own executor (``backend``); 1 is serial.
    executor : concurrent.futures.Executor, optional
        Use this executor instead (processes, ``mpi4py.futures.MPIPoolExecutor``, a Dask
        client's executor, ...). Its tasks carry the problem (pickled once per task).
    backend : str
        ``"threads"`` (default: the relaxation kernels release the GIL) or ``"processes"``.
    verbose : int
        0 silent, 1 a progress line every ``settings.log_interval`` seconds.
    log : callable, optional
        Where progress lines go (default: standard output).
    """

    def __init__(self, problem: RelaxationProblem, k: int, settings: BnBSettings | None = None,
                 *, n_jobs: int = 1, executor: cf.Executor | None = None,
                 backend: str = "threads", verbose: int = 1, log=None) -> None:
        self.problem = problem
        self.k = int(k)
        if not 1 <= self.k <= problem.n_features:
            raise ValueError(f"k must be between 1 and n_features={problem.n_features}, "
                             f"got {k}")
        self.settings = settings or BnBSettings()
        self.settings.validate()
        self.n_jobs = int(n_jobs)
        self.user_executor = executor
        self.backend = backend
        self.progress = ProgressLog(verbose, self.settings.log_interval, log)
        self.refitter = SupportRefitter(
            problem.X, problem.y, problem.loss, problem.lambda2, problem.M,
            fit_intercept=problem.fit_intercept and problem.loss != "squared")
        self._use_dual_witness = problem.fit_intercept and problem.loss != "squared"

    # ------------------------------------------------------------------------------------------
    # incumbent
    # ------------------------------------------------------------------------------------------
    def _cutoff(self) -> float:
        ub = self.incumbent.objective if self.incumbent is not None else np.inf
        if not np.isfinite(ub):
            return np.inf
        return ub - max(self.settings.abs_gap, self.settings.rel_gap * max(1.0, abs(ub)))

    def _offer(self, model: SubsetModel) -> None:
        if self.incumbent is None or model.objective < self.incumbent.objective:
            self.incumbent = model

    def _root_heuristic(self) -> None:
        s = self.settings
        model = beam_search(self.refitter, self.k, beam_width=s.beam_width,
                            n_candidates=s.n_candidates)
        self._offer(swap_search(self.refitter, model, self.k, n_candidates=s.n_candidates))

    def _node_heuristic(self, node: Node, res: RelaxationResult) -> None:
        model = round_relaxation(self.refitter, res.coef, self.k, node.fixed_in, node.fixed_out)
        self._offer(model)
        if self._n_evaluated % self.settings.heuristic_every == 0:
            allowed = ~node.fixed_out
            self._offer(swap_search(self.refitter, model, self.k,
                                    fixed_in=np.flatnonzero(node.fixed_in), allowed=allowed,
                                    n_candidates=self.settings.n_candidates))

    # ------------------------------------------------------------------------------------------
    # node processing
    # ------------------------------------------------------------------------------------------
    def _witness(self, res: RelaxationResult) -> Witness:
        if self._use_dual_witness:
            return ("dual", np.asarray(res.dual, dtype=float).copy())
        return ("point", np.asarray(res.bound_point, dtype=float).copy())

    def _task(self, node: Node, token: str | None, remaining: float | None) -> NodeTask:
        leaf = node.is_leaf_problem(self.k)
        s = self.settings
        return NodeTask(problem=token if token is not None else self.problem, k=self.k,
                        fixed_in=node.fixed_in, fixed_out=node.fixed_out,
                        cutoff=np.inf if leaf else self._cutoff(), warm_start=node.warm_start,
                        rel_tol=s.leaf_rel_tol if leaf else s.node_rel_tol,
                        max_iter=s.leaf_max_iter if leaf else s.node_max_iter,
                        time_limit=remaining)

    def _close(self, node: Node, status: str) -> None:
        node.status = status
        node.warm_start = None
        self._closed_lb = min(self._closed_lb, node.lower_bound)

    def _process(self, node: Node, res: RelaxationResult) -> None:
        self._n_evaluated += 1
        self._n_iter += int(res.n_iter)
        node.n_iter = int(res.n_iter)
        if res.lower_bound > node.lower_bound:  # keep the better of own and inherited bounds
            node.lower_bound = float(res.lower_bound)
            node.witness = self._witness(res)
        if node.is_leaf_problem(self.k):
            free = ~(node.fixed_in | node.fixed_out)
            support = np.flatnonzero(node.fixed_in | (free if node.free_budget(self.k) else False))
            self._offer(self.refitter.fit(tuple(int(j) for j in support)))
            self._close(node, "solved")
            return
        if node.lower_bound >= self._cutoff():
            self._close(node, "pruned")
            return
        self._node_heuristic(node, res)
        if node.lower_bound >= self._cutoff():
            self._close(node, "pruned")
            return
        free = ~(node.fixed_in | node.fixed_out)
        j = choose_branch_variable(self.settings.branching, np.asarray(res.coef),
                                   np.asarray(res.z), free)
        node.warm_start = np.asarray(res.coef, dtype=float)
        kids = [node.child(self._next_id, j, 0), node.child(self._next_id + 1, j, 1)]
        self._next_id += 2
        node.status = "branched"
        node.children = [c.id for c in kids]
        node.witness = None  # the children hold it; only leaves' witnesses are certified
        node.warm_start = None
        for c in kids:  # z_j = 1 pushed last: a depth-first dive follows the relaxation
            self.nodes.append(c)
            self.queue.push(c)

    # ------------------------------------------------------------------------------------------
    # main loop
    # ------------------------------------------------------------------------------------------
    def _global_lb(self, in_flight: list[Node] = ()) -> float:
        lb = min(self._closed_lb, self.queue.min_bound())
        for n in in_flight:
            lb = min(lb, n.lower_bound)
        return lb

    def _log(self, force: bool = False) -> None:
        ub = self.incumbent.objective if self.incumbent is not None else np.inf
        lb = self._global_lb()
        elapsed = time.perf_counter() - self._t0
        now_gap = relative_gap(ub, lb)
        if not self.history or elapsed - self.history[-1][0] >= 0.05 or force:
            self.history.append((elapsed, len(self.nodes), ub, lb))
        self.progress.update(elapsed, self._n_evaluated, len(self.queue), ub, lb, now_gap,
                             force=force)

    def run(self) -> SearchResult:
        """Search until the gap closes or a limit is hit; Ctrl-C returns the best so far."""
        s = self.settings
        p = self.problem.n_features
        self._t0 = time.perf_counter()
        self.incumbent: SubsetModel | None = None
        self.history: list[tuple[float, int, float, float]] = []
        self._closed_lb = np.inf
        self._n_evaluated = 0
        self._n_iter = 0
        self._next_id = 1
        self.queue = make_queue(s.node_selection)
        root = Node(0, None, 0, np.zeros(p, bool), np.zeros(p, bool))
        self.nodes = [root]
        self.queue.push(root)
        status = "optimal"

        if self.user_executor is not None:
            executor, token, own = self.user_executor, None, False
        else:
            executor, token = make_executor(self.n_jobs, self.backend, self.problem)
            own = executor is not None
        evaluator = BatchEvaluator(executor)
        self.progress.message(
            f"sparsecert branch and bound: n={self.problem.n_samples} p={p} k={self.k} "
            f"loss={self.problem.loss} lambda2={self.problem.lambda2:g} "
            f"eig_shift={self.problem.mu:.6g} rel_gap={s.rel_gap:g}")
        try:
            self._root_heuristic()
            self._log(force=True)
            while len(self.queue):
                elapsed = time.perf_counter() - self._t0
                started = self._n_evaluated > 0  # the root is always evaluated
                if started and s.time_limit is not None and elapsed >= s.time_limit:
                    status = "time_limit"
                    break
                if started and s.node_limit is not None and self._n_evaluated >= s.node_limit:
                    status = "node_limit"
                    break
                batch: list[Node] = []
                while len(self.queue) and len(batch) < s.batch_size:
                    node = self.queue.pop()
                    if node.lower_bound >= self._cutoff():  # pruned by its inherited bound
                        self._close(node, "pruned")
                        continue
                    batch.append(node)
                if not batch:
                    continue
                remaining = None if s.time_limit is None else max(1e-3, s.time_limit - elapsed)
                try:
                    results = evaluator.map([self._task(n, token, remaining) for n in batch])
                except KeyboardInterrupt:
                    for n in batch:  # unevaluated: back in the pool, still open
                        self.queue.push(n)
                    raise
                for node, res in zip(batch, results, strict=True):
                    self._process(node, res)
                self._log()
        except KeyboardInterrupt:
            status = "interrupted"
        finally:
            if own:
                executor.shutdown(wait=True, cancel_futures=True)
                release(token)

        ub = self.incumbent.objective
        lb = min(self._global_lb(), ub)
        abs_gap = max(0.0, ub - lb)
        rgap = relative_gap(ub, lb)
        if rgap <= s.rel_gap or abs_gap <= s.abs_gap:
            status = "optimal"
        elif status == "optimal":  # the tree is exhausted but the leaves' bounds fall short
            status = "tree_exhausted"
        self._log(force=True)
        coef = self.incumbent.dense(p)
        return SearchResult(
            status=status, coef=coef, intercept=self.incumbent.intercept,
            support=self.incumbent.support, upper_bound=ub, lower_bound=lb,
            absolute_gap=abs_gap, relative_gap=rgap, n_nodes=len(self.nodes),
            n_open=len(self.queue), time=time.perf_counter() - self._t0, nodes=self.nodes,
            history=self.history, settings=asdict(s), n_relaxation_iters=self._n_iter)
