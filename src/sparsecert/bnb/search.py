"""The branch-and-bound search loop.

The loop is small on purpose; the parts live in their own modules:

* :mod:`~sparsecert.bnb.settings` -- the engine's settings;
* :mod:`~sparsecert.bnb.node` -- a node and its fixings;
* :mod:`~sparsecert.bnb.queues` -- node selection by name;
* :mod:`~sparsecert.bnb.branching` -- branching rules by name;
* :mod:`~sparsecert.bnb.evaluate` -- relaxations in batches through an executor;
* :mod:`~sparsecert.bnb.pipe_pool` -- the processes backend's pool;
* :mod:`~sparsecert.bnb.pipeline` -- batches formed, handed out and applied in order;
* :mod:`sparsecert.solvers.heuristics` -- incumbents (beam search, swaps, rounding);
* :mod:`~sparsecert.bnb.progress` -- the log;
* :mod:`~sparsecert.bnb.results` -- the record returned;
* :mod:`sparsecert.statuses` -- the statuses and the gap definition.

Extension points (public, so that callers compose with the engine instead of subclassing it):
``refitter`` (share a cache of exact support refits across searches), ``start_supports``
(supports offered as incumbents before the search), ``root_warm_start`` (the start point of the
root relaxation), ``node_callback`` (called once per evaluated node) and
:meth:`BranchAndBound.offer_support` (offer an incumbent at any time).

Correctness argument (what the certificate re-checks): every node is either branched into the
two children ``z_j = 0`` and ``z_j = 1`` on a free ``j``, or is a leaf; the leaves therefore
partition the feasible supports. A leaf's bound is a weak-duality bound of its own perspective
relaxation (computed from its witness), which is below the objective of every support in it. So
the minimum over the leaves is a valid global lower bound, whatever the relaxations' accuracy.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict

import numpy as np

from sparsecert._validation import check_k, check_vector
from sparsecert.bnb.branching import choose_branch_variable
from sparsecert.bnb.compile_watch import CompileWatch
from sparsecert.bnb.evaluate import (
    NO_HEURISTIC,
    ROUND,
    ROUND_AND_SWAP,
    BatchEvaluator,
    NodeContext,
    NodeOutcome,
    NodeTask,
    blas_single_thread,
    make_executor,
    new_token,
    node_witness,
    register,
    release,
)
from sparsecert.bnb.fixing import FixingPlan, apply_fixings
from sparsecert.bnb.incumbents import checked_support, root_fixings, start_models
from sparsecert.bnb.informed import BranchChoice, Brancher
from sparsecert.bnb.interrupts import deferred_interrupt
from sparsecert.bnb.node import Node, Witness
from sparsecert.bnb.pipeline import BatchPipeline
from sparsecert.bnb.progress import ProgressLog
from sparsecert.bnb.proof_sink import ProofSink
from sparsecert.bnb.queues import StagingQueue, make_queue
from sparsecert.bnb.results import HistoryRecord, SearchResult
from sparsecert.bnb.settings import NODE_STRATEGIES, BnBSettings
from sparsecert.bnb.subtree import SubtreeOutcome, SubtreeRules, SubtreeTask
from sparsecert.problem import SearchOptions
from sparsecert.solvers.heuristics import SubsetModel, SupportRefitter
from sparsecert.solvers.perspective import RelaxationProblem, RelaxationResult
from sparsecert.statuses import (
    BRANCHED,
    INTERRUPTED,
    OPEN,
    OPTIMAL,
    PRUNED,
    SOLVED,
    TREE_EXHAUSTED,
    cutoff,
    gap_closed,
    relative_gap,
)

__all__ = ["BnBSettings", "BranchAndBound", "NodeCallback", "NODE_STRATEGIES", "ProofSink"]

#: seconds between two samples of a search's progress history at first
HISTORY_STEP = 0.05
#: samples the history holds at most: when full, every other one is dropped and the step doubles
HISTORY_MAX = 4096

#: ``callback(node, result)``: called once per evaluated node, after the engine processed it
#: (``node.status`` tells what happened: branched, pruned or solved).
NodeCallback = Callable[[Node, RelaxationResult], None]


class BranchAndBound(BatchPipeline):
    """Best-bound branch and bound over the perspective relaxation.

    Parameters
    ----------
    problem : RelaxationProblem
        The prepared data (validated, labels mapped, eigen shift chosen).
    k : int
        Cardinality bound, ``1 <= k <= problem.n_features``.
    settings : BnBSettings or SearchOptions, optional
        The search's settings (search options get the default tuning); default: all the
        defaults. ``settings.n_jobs`` parallel node evaluations with the engine's own executor
        (``settings.backend``: ``"threads"``, the default, runs ``n_jobs - 1`` pool threads and
        the engine's own thread, which runs the tasks no worker has started while it waits; the
        relaxation kernels release the GIL; BLAS pinned to one thread during the search;
        ``"processes"`` (the engine's pipe pool, :mod:`sparsecert.bnb.pipe_pool`) or ``"mpi"``, an
        ``mpi4py.futures.MPIPoolExecutor``, send the problem
        once per worker), or ``settings.executor`` (a Dask client's executor, a pool made
        elsewhere, ...; a task names the problem by a token, and a worker that does not hold
        it yet receives it once, with its first task of the search);
        ``settings.verbose`` 1 prints a progress line every ``settings.log_interval`` seconds
        to ``settings.log`` (default: standard output).
    refitter : SupportRefitter, optional
        The exact support refits (with their cache) used for every incumbent; pass one to share
        the cache between searches on the same problem (default: a new one).
    start_supports : iterable of sequences of int
        Supports (at most ``k`` feature indices each) offered as incumbents before the search:
        each is refitted exactly on the problem's data and improved by swap search. They only
        make pruning start earlier; the proof does not depend on them.
    root_warm_start : numpy.ndarray of shape (n_features,), optional
        Start point of the root relaxation (any point is allowed: the bound is a weak-duality
        bound at whatever iterate the solver reaches).
    node_callback : callable, optional
        ``node_callback(node, result)`` after each evaluated node has been processed (see
        :data:`NodeCallback`).
    proof : ProofSink, optional
        Each node goes to ``proof.closed(node)`` when it closes and is then forgotten (the
        engine holds the open frontier only; without it, the whole tree: ``SearchResult.nodes``);
        the time limit keeps ``proof.reserve(n_open)`` seconds for the certificate.
    """

    def __init__(self, problem: RelaxationProblem, k: int,
                 settings: SearchOptions | None = None, *,
                 refitter: SupportRefitter | None = None,
                 start_supports: Iterable[Sequence[int]] = (),
                 root_warm_start: np.ndarray | None = None,
                 node_callback: NodeCallback | None = None,
                 proof: ProofSink | None = None) -> None:
        self.problem = problem
        self.k = check_k(k, problem.n_features)
        self.settings = BnBSettings.from_options(settings if settings is not None
                                                 else SearchOptions())
        self.refitter = refitter if refitter is not None else SupportRefitter.for_problem(problem)
        self.start_supports = [checked_support(self.problem, self.k, s) for s in start_supports]
        self.root_warm_start = (None if root_warm_start is None else
                                check_vector(root_warm_start, "root_warm_start",
                                             problem.n_features))
        if node_callback is not None and not callable(node_callback):
            raise TypeError(f"node_callback must be callable, got {type(node_callback).__name__}")
        self.node_callback = node_callback
        self.proof = proof
        s = self.settings
        self.n_jobs = s.n_jobs
        self.user_executor = s.executor
        self.backend = s.backend
        self.progress = ProgressLog(s.verbose, s.log_interval, s.log)
        self.incumbent: SubsetModel | None = None
        self._n_fixed = 0
        self._announced = False
        #: seconds the caller spent compiling the kernels before the search (the front door's
        #: first run, see sparsecert.firstrun); the result reports it apart from the search
        self.compile_time = 0.0

    def _root_fixings(self) -> tuple[np.ndarray, np.ndarray]:
        return root_fixings(self.problem)

    # ------------------------------------------------------------------------------------------
    # incumbents
    # ------------------------------------------------------------------------------------------
    def _cutoff(self) -> float:
        ub = self.incumbent.objective if self.incumbent is not None else np.inf
        return cutoff(ub, self.settings.rel_gap, self.settings.abs_gap)

    def _offer(self, model: SubsetModel) -> bool:
        if self.incumbent is None or model.objective < self.incumbent.objective:
            self.incumbent = model
            return True
        return False

    def offer_support(self, support: Sequence[int]) -> bool:
        """Offer the model refitted on ``support`` (at most ``k`` indices) as an incumbent.

        The model is refitted exactly on the problem's data, so its objective is the engine's
        own. Returns True if it became the incumbent.
        """
        return self._offer(self.refitter.fit(checked_support(self.problem, self.k, support)))

    def _start_incumbents(self) -> None:
        """Beam search, then swap search from its model and from each start support."""
        for model in start_models(self.refitter, self.problem, self.k, self.settings,
                                  self.start_supports):
            self._offer(model)

    # ------------------------------------------------------------------------------------------
    # node processing: one small step per method
    # ------------------------------------------------------------------------------------------
    def _witness(self, res: RelaxationResult) -> Witness:
        """The witness to keep for ``res``, numbered in the order the search keeps them."""
        self._n_witnesses += 1
        return node_witness(self.problem, res, self._n_witnesses - 1)

    def _task(self, node: Node, token: str | None, remaining: float | None
              ) -> NodeTask | SubtreeTask:
        """The node's evaluation: its relaxation, then (in the worker) the leaf's exact refit or
        the node heuristics: rounding, and swap search from every ``heuristic_every``-th node;
        with ``subtree_nodes > 1``, the same for its subtree, depth first."""
        leaf = node.is_leaf_problem(self.k)
        s = self.settings
        self._n_tasks += 1
        level = ROUND_AND_SWAP if self._n_tasks % s.heuristic_every == 0 else ROUND
        task = self._node_task(node, token, remaining, leaf, level)
        if s.subtree_nodes == 1:
            return task
        return SubtreeTask(task, s.subtree_nodes, self._cutoff(), self._rules, self._n_tasks)

    def _node_task(self, node: Node, token: str | None, remaining: float | None, leaf: bool,
                   level: int) -> NodeTask:
        s = self.settings
        return NodeTask(context=token if token is not None else self._context,
                        fixed_in=node.fixed_in, fixed_out=node.fixed_out,
                        cutoff=np.inf if leaf else self._cutoff(), warm_start=node.warm_start,
                        rel_tol=s.leaf_rel_tol if leaf else s.node_rel_tol,
                        max_iter=s.leaf_max_iter if leaf else s.node_max_iter,
                        time_limit=remaining, inherited_bound=node.lower_bound, leaf=leaf,
                        heuristic=NO_HEURISTIC if leaf else level,
                        n_candidates=s.n_candidates, fixing=s.fixing and not leaf,
                        witness=node.witness, solver=s.node_strategy,
                        iterations=self._iterations, race=self._race_here(node, leaf),
                        branching=None if leaf else self._brancher.spec(node.depth),
                        open_rel_tol=None if leaf else s.open_rel_tol)

    def _race_here(self, node: Node, leaf: bool) -> bool:
        """Does the node's task race the node strategies? With ``node_strategy="auto"``, the
        first task below the root that is not a leaf, then once a batch until a race has
        measured the iterations (where z-space does not apply a race is a plain solve). Not
        the root: solved from zero with all columns active, it is the least typical node and
        the dearest race (riboflavin: a z-space root costs about ten FISTA roots), while its
        children start warm from its solution, with its fixings, as the later nodes do."""
        if (not self._race_pending or leaf or node.parent is None
                or self.settings.node_strategy != "auto"):
            return False
        self._race_pending = False
        return True

    def _close(self, node: Node, status: str) -> None:
        # the bound is counted before the node stops counting as open (see _branch)
        self._closed_lb = min(self._closed_lb, node.lower_bound)
        node.status = status
        node.warm_start = None
        self._forget(node)

    def _forget(self, node: Node) -> None:
        """A closed node leaves the frontier, recorded first (a Ctrl-C between: counted once)."""
        if self.proof is not None:
            self.proof.closed(node)
        self._live.pop(node.id, None)
        self._brancher.closed(node.id)

    def _record_bound(self, node: Node, res: RelaxationResult) -> None:
        """Count the evaluation; keep the better of the node's own and inherited bounds."""
        self._n_evaluated += 1
        self._n_iter += int(res.n_iter)
        self._strategies[res.strategy] = self._strategies.get(res.strategy, 0) + 1
        node.n_iter = int(res.n_iter)
        if res.lower_bound > node.lower_bound:
            node.witness = self._witness(res)
            node.lower_bound = float(res.lower_bound)

    def _solve_leaf(self, node: Node) -> None:
        """A leaf without cardinality coupling: its best support (refitted by the task, see
        :func:`~sparsecert.bnb.evaluate.evaluate_task`) is an incumbent; close it."""
        self._close(node, SOLVED)

    def _fix(self, node: Node, plan: FixingPlan | None) -> bool:
        """Apply the reduced-cost fixings the node's task found with the node's witness (each
        cut-off region enters the global bound like a pruned leaf); True when they cover the
        whole node."""
        fixed = apply_fixings(node.fixed_in, node.fixed_out, plan, self.k)
        if fixed is None:  # none, or the node would become a leaf its witness does not solve
            return False
        fi, fo = fixed
        # the cut-off regions are counted before they leave the node, and the fixings are
        # recorded before the node's sets take them: at every step the node's sets are its
        # base fixings plus some of the recorded ones, a region its witness bounds (see _branch)
        self._closed_lb = min(self._closed_lb, min(plan.region_bounds))
        node.bound_fixings = list(plan.fixings)
        node.fixed_in = fi
        node.fixed_out = fo
        self._n_fixed += len(plan.fixings)
        if plan.covers_node:  # the remainder lies in a cut-off region: its bound passes too
            node.lower_bound = max(node.lower_bound, plan.remainder_bound)
        return plan.covers_node

    @property
    def n_fixed(self) -> int:
        """Reduced-cost fixings made so far (the last run's, after it ends)."""
        return self._n_fixed

    def _prune(self, node: Node) -> bool:
        """Close the node if its bound reaches the cutoff; True if it was pruned."""
        if node.lower_bound >= self._cutoff():
            self._close(node, PRUNED)
            return True
        return False

    def _branch(self, node: Node, res: RelaxationResult, choice: BranchChoice | None = None
                ) -> None:
        """Split on a free variable (the task's ``choice`` with an informed rule); the children
        inherit the bound and the warm start, or take their strong-branching bounds."""
        j = choice.var if choice is not None else choose_branch_variable(
            self.settings.branching, np.asarray(res.coef), np.asarray(res.z), node.free_mask())
        node.warm_start = np.asarray(res.coef, dtype=float)
        kids = [node.child(self._next_id, j, 0), node.child(self._next_id + 1, j, 1)]
        self._next_id += 2
        if choice is not None:
            for c, sb in zip(kids, choice.children, strict=True):
                if sb is not None and sb.lower_bound > c.lower_bound:  # a valid bound, its witness
                    c.lower_bound, c.witness = float(sb.lower_bound), self._witness(sb)
                    c.warm_start = np.asarray(sb.coef, dtype=float).copy()
        self._brancher.branched(node.lower_bound, j, float(np.asarray(res.z)[j]),
                                (kids[0].id, kids[1].id))
        # Every region stays counted between any two steps, should a Ctrl-C land there: the
        # children join the tree (open) before their parent is marked branched, and the
        # result's bound takes every open node of the tree, queued or not (see _result).
        self._live.update((c.id, c) for c in kids)
        self._n_nodes += 2
        if self.nodes is not None:
            self.nodes.extend(kids)
        node.children = [c.id for c in kids]
        node.status = BRANCHED
        if not node.bound_fixings:  # the children hold it; leaves and fixings are certified
            node.witness = None
        node.warm_start = None
        self._forget(node)
        for c in kids:  # z_j = 1 pushed last: a depth-first dive follows the relaxation
            self.queue.push(c)

    def _process(self, node: Node, out: NodeOutcome) -> None:
        """Bound, offer the models the task found, then solve a leaf, or prune, or branch."""
        res = out.relaxation
        if res.race is not None:  # the race: what every later node expects
            self._iterations = res.race.iterations
            self._race = asdict(res.race)
        self._race_pending = self._iterations is None  # (the next batch's first task)
        self._record_bound(node, res)
        self._brancher.evaluated(node.id, node.lower_bound)
        if out.branch is not None:  # strong branching's iterations count as the node's
            self._n_iter += self._brancher.spent(out.branch)
        for model in out.models:  # the leaf's exact refit, or the node's rounding and swaps
            self._offer(model)
        if node.is_leaf_problem(self.k):
            self._solve_leaf(node)
        elif not self._prune(node):
            if self._fix(node, out.fixing):
                self._close(node, PRUNED)
            else:
                self._branch(node, res, out.branch)
        if self.node_callback is not None:
            self.node_callback(node, res)

    # ------------------------------------------------------------------------------------------
    # main loop
    # ------------------------------------------------------------------------------------------
    def _global_lb(self, in_flight: Iterable[Node] = ()) -> float:
        lb = min(self._closed_lb, self.queue.min_bound())
        for n in in_flight:
            lb = min(lb, n.lower_bound)
        return lb

    def _elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def _log(self, force: bool = False) -> None:
        elapsed = self._elapsed()
        sample = (force or not self.history
                  or elapsed - self.history[-1].time >= self._history_step)
        if not (sample or self.progress.due()):
            return  # the bound below reads every open node of a depth-first queue
        ub = self.incumbent.objective if self.incumbent is not None else np.inf
        lb = self._global_lb(self._in_flight)  # nodes handed out are still open
        if sample:
            self.history.append(HistoryRecord(elapsed, self._n_nodes, ub, lb))
            if len(self.history) >= HISTORY_MAX:  # a long search: every other sample kept
                self.history = self.history[::2]
                self._history_step *= 2.0
        self.progress.update(elapsed, self._n_evaluated, len(self.queue), ub, lb,
                             relative_gap(ub, lb), force=force)

    def _reset(self) -> None:
        """A fresh tree holding the root (warm-started from ``root_warm_start``)."""
        self._t0 = time.perf_counter()
        self.incumbent = None
        self.history: list[HistoryRecord] = []
        self._history_step = HISTORY_STEP  # seconds between samples (doubled as it fills)
        self._closed_lb = np.inf
        self._n_evaluated = 0
        self._n_iter = 0
        self._next_id = 1
        self._n_tasks = 0
        self._compiled = 0.0  # seconds numba compiled during this run (see compile_watch)
        self._n_witnesses = 0
        self._n_fixed = 0
        self._iterations = None  # the iterations of each node strategy (the race's)
        self._race: dict | None = None
        self._race_pending = False  # set once the root is processed (see _race_here)
        self._strategies: dict[str, int] = {}
        self._context = NodeContext(self.problem, self.k, self.refitter)
        s = self.settings
        self._brancher = Brancher(s.branching, self.problem.n_features)
        self._rules = SubtreeRules(s.rel_gap, s.abs_gap, s.branching, s.heuristic_every,
                                   s.node_rel_tol, s.node_max_iter, s.leaf_rel_tol,
                                   s.leaf_max_iter, s.fixing, s.open_rel_tol)
        self._in_flight: deque[Node] = deque()  # handed to the workers, not yet processed
        self._n_dropped = 0  # subtree records whose node the engine had closed above them
        self.queue = make_queue(self.settings.node_selection)
        root = Node(0, None, 0, *self._root_fixings())
        if self.root_warm_start is not None:
            root.warm_start = self.root_warm_start.copy()
        self._live: dict[int, Node] = {root.id: root}  # the open frontier
        self._n_nodes = 1
        self.nodes: list[Node] | None = [root] if self.proof is None else None  # the tree
        self.queue.push(root)

    def _replay(self, node: Node, sub: SubtreeOutcome) -> None:
        """Apply a subtree task's records in the order the task evaluated them: each through
        :meth:`_process`, on the node this engine made for its path. A record whose node this
        engine closed above it (its cutoff is never above the task's, so it may prune a node
        the task branched) is dropped, its models offered all the same; the children no record
        evaluated join the queue."""
        queue, staged = self.queue, StagingQueue()
        self.queue = staged  # the children made here, in the order made
        at = {(): node}
        try:
            for rec in sub.records:
                n = at.pop(rec.path, None)
                if n is None or n.status != OPEN:
                    self._n_dropped += 1
                    for model in rec.outcome.models:
                        self._offer(model)
                    continue
                first = len(staged.nodes)
                self._process(n, rec.outcome)
                kids = staged.nodes[first:]
                if (rec.branch_var is not None and len(kids) == 2
                        and kids[0].branch_var == rec.branch_var):
                    at[(*rec.path, 0)], at[(*rec.path, 1)] = kids
        finally:
            self.queue = queue
            for c in staged.nodes:
                if c.status == OPEN:
                    queue.push(c)

    def announce(self) -> None:
        """The log's first line: the problem and the tolerance (once per run; :meth:`run` says
        it unless it was said before, so that a caller can put work of its own, such as the
        first run's compilation, between the line and the search)."""
        if self._announced:
            return
        self._announced = True
        pr = self.problem
        self.progress.message(
            f"sparsecert branch and bound: n={pr.n_samples} p={pr.n_features} k={self.k} "
            f"loss={pr.loss} lambda2={pr.lambda2:g} eig_shift={pr.mu:.6g} "
            f"rel_gap={self.settings.rel_gap:g}")

    @contextlib.contextmanager
    def after_search(self, phase: str) -> Iterator[Callable[[str], None]]:
        """The log keeps ticking through work after the search (the certificate's assembly),
        its lines naming ``phase``; yields a function that renames the phase (how far it is),
        and says how long the phase took when that was longer than a log interval."""
        t0 = time.perf_counter()
        with self.progress.ticking(self._t0), self.progress.phase(phase):
            yield self.progress.note
        seconds = time.perf_counter() - t0
        if seconds >= self.settings.log_interval:
            self.progress.message(f"{phase}: {seconds:.1f} s after the search")

    def _add_compile_time(self, seconds: float) -> None:
        """Move the deadline by a compilation's seconds (:mod:`~sparsecert.bnb.compile_watch`)."""
        self._compiled += seconds
        if self._deadline is not None:
            self._deadline += seconds

    def run(self, started: float | None = None) -> SearchResult:
        """Search until the gap closes or a limit is hit; Ctrl-C returns the best so far. The
        time limit counts from ``started`` (``time.perf_counter()``; default: now), the first
        run's :attr:`compile_time` and any compilation during the search excepted (see
        :mod:`sparsecert.bnb.compile_watch`), and keeps the ``proof`` sink's reserve."""
        self.announce()
        self._announced = False  # the next run says it again
        self._reset()
        tl, t_start = self.settings.time_limit, self._t0 if started is None else (
            started + self.compile_time)
        self._deadline = None if tl is None else t_start + tl
        # tasks name the search's data by a token: the processes that run them hold it (the
        # pool initializers send it once per worker, a user executor's worker receives it with
        # its first task); this process holds it too, for the tasks its own thread runs
        registered = token = new_token()
        register(token, self._context)
        if self.user_executor is not None:
            executor, own = self.user_executor, False
        else:
            executor = make_executor(self.n_jobs, self.backend, self._context, token)
            own = executor is not None
        # the engine's pools leave one worker's share to this thread
        evaluator = BatchEvaluator(executor, caller_runs=own, context=self._context)
        remote = executor is not None and not (own and self.backend == "threads")
        if not remote:
            token = None  # threads share the context object itself
        stopped: str | None = None
        # the engine's workers: one busy worker per core, so BLAS gets one thread while they run
        blas = blas_single_thread(own)
        blas.__enter__()
        watch = CompileWatch.for_search(self.progress, self._add_compile_time)
        try:
            with self.progress.ticking(self._t0), watch:
                with self.progress.phase("heuristics"):
                    self._start_incumbents()
                self._log(force=True)
                stopped = self._search(evaluator, token)
        except KeyboardInterrupt:
            stopped = INTERRUPTED
        finally:
            # a second Ctrl-C while the workers end (or the result is assembled, below) is
            # deferred once: it would throw the result away
            with deferred_interrupt():
                blas.__exit__(None, None, None)
                if own:
                    executor.shutdown(wait=True, cancel_futures=True)
                release(registered)
        with deferred_interrupt():
            return self._result(stopped)

    def _result(self, stopped: str | None) -> SearchResult:
        """The record; the status is ``"optimal"`` whenever the gap closed, whatever stopped."""
        if self.incumbent is None:  # interrupted before the first incumbent: the empty model
            self._offer(self.refitter.fit(()))
        s = self.settings
        ub = self.incumbent.objective
        # every open node of the tree, also one that an interrupt kept out of the queue
        open_nodes = [n for n in self._live.values() if n.status == OPEN]
        lb = min(self._global_lb(open_nodes), ub)
        if gap_closed(ub, lb, s.rel_gap, s.abs_gap):
            status = OPTIMAL
        else:  # a limit, or the tree is exhausted but the leaves' bounds fall short
            status = stopped if stopped is not None else TREE_EXHAUSTED
        self._log(force=True)
        return SearchResult(
            status=status, coef=self.incumbent.dense(self.problem.n_features),
            intercept=self.incumbent.intercept, support=self.incumbent.support, upper_bound=ub,
            lower_bound=lb, absolute_gap=max(0.0, ub - lb), relative_gap=relative_gap(ub, lb),
            n_nodes=self._n_nodes, n_open=len(open_nodes), time=self._elapsed(),
            nodes=self.nodes if self.nodes is not None else list(self._live.values()),
            streamed=self.proof is not None, history=self.history, settings=s.record(),
            n_relaxation_iters=self._n_iter, compile_time=self.compile_time + self._compiled,
            n_evaluated=self._n_evaluated, node_strategies=dict(self._strategies),
            strategy_race=self._race, n_strong_iters=self._brancher.n_strong_iter)
