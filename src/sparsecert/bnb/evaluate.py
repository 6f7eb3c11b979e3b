"""Node evaluation in batches through any ``concurrent.futures.Executor``.

A task evaluates one node: its relaxation and, when the node stays open, the node heuristics
(rounding of the relaxed solution and, every few nodes, swap local search from it) or, for a leaf,
the exact refit of its support. Everything a task computes is a pure function of its inputs (the
problem, the fixings, the cutoff known when the batch was formed, the warm start), so the tree --
and hence the certificate -- does not depend on which executor ran it or in which order the tasks
finished. Running the heuristics inside the task (instead of in the engine between batches) keeps
the engine's serial part small: the workers do all the per-node work.

Executors (each has ``n_jobs`` workers, the engine's own thread or process being the last one):

* serial (``n_jobs=1``): the tasks run in the calling thread;
* threads (the default for ``n_jobs > 1``): ``n_jobs - 1`` pool threads and the calling
  thread, which runs the tasks no worker has started while it waits for the outcomes in order;
  the relaxation kernels release the GIL; BLAS is pinned to one thread for the whole search
  (:func:`blas_single_thread`), since each worker already keeps a core busy;
* processes (``backend="processes"``: :class:`sparsecert.bnb.pipe_pool.PipePool` on POSIX
  systems, whose workers read every task from their pipes and claim them in order with the
  calling thread, so that no thread of the engine's process hands tasks out;
  ``concurrent.futures.ProcessPoolExecutor`` elsewhere) and MPI (``backend="mpi"``: an
  ``mpi4py.futures.MPIPoolExecutor``, spawned or from ``mpiexec -n N python -m mpi4py.futures``):
  ``n_jobs - 1`` worker processes and the calling thread, as with threads; the problem is sent
  once to each worker by the pool initializer, which also pins BLAS to one thread there;
* any user executor (a Dask client's ``get_executor()``, a pool made elsewhere, ...): its
  workers are the user's. The problem is not sent with the tasks: a worker that does not hold
  it yet answers its first task with :class:`ContextMissing`, and the engine sends that task
  again with the problem, which the worker then keeps (:data:`WORKER_CACHE_SIZE` searches at
  most) for every later task of the search: each worker receives the data once.

Whatever the executor, a task carries the search's token (a short string), the node's fixings
(as index arrays when pickled), the cutoff, the warm start and the inherited witness; its
outcome carries the relaxation's vectors and the models found.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sparsecert.bnb.fixing import FixingPlan, apply_fixings, fixing_plan
from sparsecert.bnb.node import Witness
from sparsecert.bnb.pipe_pool import PipePool
from sparsecert.bnb.pipe_pool import available as pipe_pool_available
from sparsecert.solvers.heuristics import (
    SubsetModel,
    SupportRefitter,
    round_relaxation,
    swap_search,
)
from sparsecert.solvers.perspective import RelaxationProblem, RelaxationResult, solve_node

__all__ = ["NodeContext", "NodeTask", "NodeOutcome", "ContextMissing", "evaluate_task",
           "execute_task", "context_of", "BatchEvaluator", "make_executor", "register", "release",
           "new_token", "blas_single_thread", "node_witness", "WORKER_CACHE_SIZE",
           "OutcomeStream"]

#: heuristic levels of a task
NO_HEURISTIC, ROUND, ROUND_AND_SWAP = 0, 1, 2


def node_witness(problem: RelaxationProblem, res: RelaxationResult, wid: int = -1) -> Witness:
    """The witness of a relaxation result (numbered ``wid``): its dual point ``zeta`` when an
    intercept is carried as a variable, its bound point ``b~`` otherwise."""
    if problem.icpt:
        return Witness("dual", np.asarray(res.dual, dtype=float), wid)  # kept as a copy
    return Witness("point", np.asarray(res.bound_point, dtype=float), wid)


class NodeContext:
    """What every node evaluation of one search shares: the problem, an exact refitter and the
    safe evaluation of witnesses (for reduced-cost fixing).

    Both helpers are built on first use and are not pickled, so a process worker or a remote
    executor rebuilds its own from the problem.
    """

    def __init__(self, problem: RelaxationProblem, k: int,
                 refitter: SupportRefitter | None = None) -> None:
        self.problem = problem
        self.k = int(k)
        self._refitter = refitter
        self._terms = None

    @property
    def refitter(self) -> SupportRefitter:
        if self._refitter is None:
            self._refitter = SupportRefitter.for_problem(self.problem)
        return self._refitter

    @property
    def terms(self):
        """The witness-terms provider of :func:`sparsecert.bnb.fixing.fixing_plan`."""
        if self._terms is None:
            from sparsecert.bnb.fixing import WitnessTerms

            self._terms = WitnessTerms(self.problem)
        return self._terms

    def __getstate__(self) -> dict:
        return {"problem": self.problem, "k": self.k, "_refitter": None, "_terms": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


#: how many searches' contexts a process keeps (least recently used dropped first): a
#: long-lived worker (a Dask cluster's) serving search after search does not keep every data set
WORKER_CACHE_SIZE = 4

# Contexts this process holds (token -> context): registered by a pool's initializer, by a
# task that carries its context (after a ContextMissing) and, in the engine's process, by the
# engine itself, so that tasks travel with the token only.
_CONTEXTS: OrderedDict[str, NodeContext] = OrderedDict()


def new_token() -> str:
    """A token naming one search's context in the processes that hold it."""
    return f"sparsecert-{uuid.uuid4().hex}"


def register(token: str, context: NodeContext, blas_threads: int | None = None) -> None:
    """Keep ``context`` under ``token`` in this process (a pool initializer, or the engine);
    ``blas_threads`` pins BLAS to that many threads for the life of the process."""
    _CONTEXTS[token] = context
    _CONTEXTS.move_to_end(token)
    while len(_CONTEXTS) > WORKER_CACHE_SIZE:
        _CONTEXTS.popitem(last=False)
    if blas_threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(blas_threads)  # for the life of this worker process


def release(token: str | None) -> None:
    """Forget a context registered in this process."""
    if token is not None:
        _CONTEXTS.pop(token, None)


class ContextMissing:
    """What a task answers where its worker does not hold the search's context (a user
    executor's worker, on its first task of the search): the engine sends the task again with
    the context (:attr:`NodeTask.carried`). A returned value, not an exception, so that an
    executor does not log it as a failure."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return f"ContextMissing({self.token!r})"


def _pack(mask: np.ndarray | None):
    """A boolean mask as (length, indices of its True entries): what a task's fixings pickle
    to (a node fixes few of its variables)."""
    if mask is None or mask.dtype != bool:
        return mask
    idx = np.flatnonzero(mask)
    return ("indices", mask.shape[0], idx.astype(np.int32 if mask.shape[0] < 2**31 else np.int64))


def _unpack(packed):
    if isinstance(packed, tuple) and packed and packed[0] == "indices":
        mask = np.zeros(packed[1], dtype=bool)
        mask[packed[2]] = True
        return mask
    return packed


@dataclass
class NodeTask:
    """Everything one node evaluation needs.

    ``heuristic`` is 0 (none), 1 (round the relaxed solution) or 2 (round, then swap local
    search); the heuristics run only when the node's bound stays below ``cutoff``. For a leaf
    (``leaf=True``: no cardinality coupling left) the task refits the leaf's support instead.
    """

    context: NodeContext | str  # the context, or the token of one the worker holds
    fixed_in: np.ndarray
    fixed_out: np.ndarray
    cutoff: float
    warm_start: np.ndarray | None
    rel_tol: float
    max_iter: int
    time_limit: float | None
    inherited_bound: float = -np.inf
    leaf: bool = False
    heuristic: int = NO_HEURISTIC
    n_candidates: int = 10
    fixing: bool = False
    witness: Witness | None = None  # the node's inherited witness
    solver: str = "auto"  # the node strategy (solve_node's solver)
    iterations: Any = None  # the iterations expected of each strategy (the race's)
    race: bool = False  # solve with both strategies, measure their iterations (one node)
    branching: Any = None  # an informed rule's BranchSpec (sparsecert.bnb.informed), or None
    carried: NodeContext | None = None  # the context itself, sent after a ContextMissing
    open_rel_tol: float | None = None  # the tolerance once P < cutoff (solve_node's)

    def run(self) -> NodeOutcome | ContextMissing:
        return evaluate_task(self)

    def with_context(self, context: NodeContext) -> NodeTask:
        """The same task holding ``context`` itself (run where the context is at hand)."""
        return self if self.context is context else replace(self, context=context)

    def carrying(self, context: NodeContext) -> NodeTask:
        """The same task carrying ``context`` to a worker that does not hold it yet."""
        return replace(self, carried=context)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["fixed_in"] = _pack(self.fixed_in)
        state["fixed_out"] = _pack(self.fixed_out)
        return state

    def __setstate__(self, state: dict) -> None:
        state["fixed_in"] = _unpack(state["fixed_in"])
        state["fixed_out"] = _unpack(state["fixed_out"])
        self.__dict__.update(state)


@dataclass
class NodeOutcome:
    """A task's result: the relaxation, the feasible models found (in the order found) and the
    node's reduced-cost fixings (from the witness the engine keeps: the relaxation's if its bound
    beats the inherited one, else the inherited witness) and, with an informed branching rule,
    the node's branching decision (:class:`sparsecert.bnb.informed.BranchChoice`)."""

    relaxation: RelaxationResult
    models: list[SubsetModel] = field(default_factory=list)
    fixing: FixingPlan | None = None
    branch: Any = None  # an informed rule's BranchChoice, when the node is to be branched


def context_of(task: NodeTask) -> NodeContext | None:
    """The task's context: its own, the one it carries (then kept here under its token) or the
    one this process holds under its token; None when this process holds none."""
    if not isinstance(task.context, str):
        return task.context
    if task.carried is not None:
        register(task.context, task.carried)
        return task.carried
    ctx = _CONTEXTS.get(task.context)
    if ctx is not None:
        _CONTEXTS.move_to_end(task.context)
    return ctx


def _leaf_support(task: NodeTask, k: int) -> tuple[int, ...]:
    free = ~(task.fixed_in | task.fixed_out)
    budget = k - int(task.fixed_in.sum())
    chosen = task.fixed_in | free if budget > 0 else task.fixed_in
    return tuple(int(j) for j in np.flatnonzero(chosen))


def _informed_choice(ctx: NodeContext, task: NodeTask, res: RelaxationResult, bound: float,
                     plan: FixingPlan | None):
    """The informed rule's branching decision, on the free variables the engine will see
    after it applies ``plan``; None when the fixings close the node."""
    from sparsecert.bnb.informed import choose

    fixed = apply_fixings(task.fixed_in, task.fixed_out, plan, ctx.k)
    if fixed is not None and plan.covers_node:
        return None
    fi, fo = fixed if fixed is not None else (task.fixed_in, task.fixed_out)
    return choose(ctx, task, task.branching, res, fi, fo, bound)


def evaluate_task(task: NodeTask) -> NodeOutcome | ContextMissing:
    """Solve one node relaxation and run its heuristics (module-level: it pickles).

    Returns :class:`ContextMissing` instead when the task names a context by its token and
    this process holds none under it (nor does the task carry it)."""
    ctx = context_of(task)
    if ctx is None:
        return ContextMissing(task.context)
    res = solve_node(ctx.problem, ctx.k, task.fixed_in, task.fixed_out, rel_tol=task.rel_tol,
                     max_iter=task.max_iter, time_limit=task.time_limit, cutoff=task.cutoff,
                     warm_start=task.warm_start, solver=task.solver,
                     iterations=task.iterations, race=task.race,
                     open_rel_tol=task.open_rel_tol)
    out = NodeOutcome(res)
    if task.leaf:
        out.models.append(ctx.refitter.fit(_leaf_support(task, ctx.k)))
        return out
    bound = max(float(res.lower_bound), task.inherited_bound)
    if bound >= task.cutoff:
        return out
    if task.fixing:
        own = float(res.lower_bound) > task.inherited_bound
        witness = node_witness(ctx.problem, res) if own else task.witness
        if witness is not None:
            out.fixing = fixing_plan(ctx.terms, witness, task.fixed_in, task.fixed_out, ctx.k,
                                     task.cutoff)
    if task.branching is not None:
        out.branch = _informed_choice(ctx, task, res, bound, out.fixing)
    if task.heuristic == NO_HEURISTIC:
        return out
    refitter = ctx.refitter
    model = round_relaxation(refitter, res.coef, ctx.k, task.fixed_in, task.fixed_out)
    out.models.append(model)
    if task.heuristic == ROUND_AND_SWAP:
        out.models.append(swap_search(refitter, model, ctx.k,
                                      fixed_in=np.flatnonzero(task.fixed_in),
                                      allowed=~task.fixed_out, n_candidates=task.n_candidates))
    return out


def execute_task(task) -> Any:
    """Run a task of any kind (a :class:`NodeTask`, or a subtree task; module-level: what the
    executors receive)."""
    return task.run()


def make_executor(n_jobs: int, backend: str, context: NodeContext, token: str
                  ) -> cf.Executor | None:
    """The engine's own executor for ``n_jobs`` workers (``None`` when serial).

    The pool has ``n_jobs - 1`` workers: the calling thread is the last one (see
    :class:`BatchEvaluator`), so that ``n_jobs`` workers share ``n_jobs`` cores instead of
    ``n_jobs`` workers and an engine waiting beside them. Process and MPI workers receive the
    context once, by the pool's initializer, under ``token``.
    """
    if n_jobs == -1:
        n_jobs = os.cpu_count() or 1
    if n_jobs <= 1:
        return None
    workers = n_jobs - 1  # the calling thread is the n_jobs-th worker (caller_runs=True)
    if backend == "threads":
        return cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sparsecert")
    if backend == "processes":
        if pipe_pool_available():
            return PipePool(workers, initializer=register, initargs=(token, context, 1))
        return cf.ProcessPoolExecutor(max_workers=workers, initializer=register,
                                      initargs=(token, context, 1))
    if backend == "mpi":
        try:
            from mpi4py.futures import MPIPoolExecutor
        except ImportError as exc:
            raise ImportError("backend='mpi' needs mpi4py (pip install 'sparsecert[mpi]')"
                              ) from exc
        return MPIPoolExecutor(max_workers=workers, initializer=register,
                               initargs=(token, context, 1))
    raise ValueError(f"unknown backend {backend!r}; use 'threads', 'processes' or 'mpi', or "
                     "pass an executor")


def blas_single_thread(active: bool):
    """A context pinning BLAS/OpenMP pools to one thread (when ``active``), restored on exit."""
    if not active:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1)


class BatchEvaluator:
    """Evaluates a batch of tasks, serially or on an executor, returning outcomes in order.

    Parameters
    ----------
    executor : concurrent.futures.Executor, optional
        Where the tasks run; ``None`` runs them in the calling thread.
    caller_runs : bool
        The calling thread works too: while it waits for the next outcome in order, it takes
        the first task of the batch that no worker has started (cancelling its future) and runs
        it itself. For the engine's own pools of ``n_jobs - 1`` workers, whose calling thread
        would otherwise sit waiting and wake for every outcome: ``n_jobs`` workers then keep
        ``n_jobs`` cores busy with no engine competing for them (measured with threads on the
        parallel figure's tree, 2 cores: 1.69x-1.77x against 1.57x-1.70x for two pool threads,
        and 1.04-1.06 times the serial CPU time against 1.07-1.14). The outcomes are the same:
        every task is a pure function of its inputs, and each runs exactly once.
    run_task : callable
        The function a task is evaluated with (:func:`execute_task`: the task's own ``run``).
    context : NodeContext, optional
        The search's context: sent with a task again when its worker answers
        :class:`ContextMissing` (a user executor's worker on its first task of the search),
        and used for the tasks the calling thread runs.
    """

    def __init__(self, executor: cf.Executor | None = None, caller_runs: bool = False,
                 run_task: Callable[[NodeTask], NodeOutcome] | None = None,
                 context: NodeContext | None = None) -> None:
        self.executor = executor
        self.caller_runs = caller_runs
        self.run_task = execute_task if run_task is None else run_task
        self.context = context
        #: tasks sent again with their context (one per worker that did not hold it)
        self.n_resent = 0

    def map(self, tasks: list[NodeTask]) -> list[NodeOutcome]:
        return list(self.outcomes(tasks))

    def _here(self, task: NodeTask) -> NodeOutcome:
        """Run ``task`` in the calling thread (with the search's own context object)."""
        if self.context is not None and hasattr(task, "with_context"):
            task = task.with_context(self.context)
        return self.run_task(task)

    def _result(self, future: cf.Future, task: NodeTask) -> NodeOutcome:
        out = future.result()
        while isinstance(out, ContextMissing):
            if self.context is None:
                raise RuntimeError(f"a worker does not hold the search's context {out.token!r} "
                                   "and the evaluator has none to send")
            self.n_resent += 1
            out = self.executor.submit(self.run_task, task.carrying(self.context)).result()
        return out

    def outcomes(self, tasks: list[NodeTask]) -> Iterator[NodeOutcome]:
        """The tasks' outcomes in task order, each as soon as it and those before it are done.

        On an executor every task is submitted first, so the caller can apply the first
        outcomes while the workers still evaluate the rest (the outcomes do not depend on
        when they are applied: every task's inputs were fixed when it was made).
        """
        stream = self.stream()
        stream.submit(tasks, here=len(tasks) == 1)
        for _ in range(len(tasks)):
            yield stream.next()

    def stream(self) -> OutcomeStream:
        """An empty :class:`OutcomeStream` on this evaluator's executor."""
        return OutcomeStream(self)


class _Pending:
    """A submitted task: its future (None: not sent to an executor) and, once the calling
    thread has run it, its outcome."""

    __slots__ = ("task", "future", "outcome", "done_here")

    def __init__(self, task, future: cf.Future | None) -> None:
        self.task, self.future = task, future
        self.outcome, self.done_here = None, False


class OutcomeStream:
    """Tasks submitted in any number of groups, their outcomes taken in submission order.

    The engine submits a batch's tasks, applies the outcomes one by one and may submit the
    next batch before the last outcomes of the previous one are in (``BnBSettings.
    batch_overlap``), so the workers start on it while those finish. With ``caller_runs``,
    while the next outcome in order is not in, the calling thread takes the earliest task no
    worker has started (of any batch submitted so far: cancelling its future, so each task
    runs once) and runs it itself. Serially (no executor) the tasks submitted so far run when
    the first of their outcomes is asked for. The outcomes are the same whoever ran the tasks:
    each is a pure function of its inputs.
    """

    def __init__(self, evaluator: BatchEvaluator) -> None:
        self.ev = evaluator
        self._queue: deque[_Pending] = deque()  # submitted, outcome not yet taken
        self._untaken: deque[_Pending] = deque()  # not yet started here nor seen started

    def __len__(self) -> int:
        return len(self._queue)

    def submit(self, tasks: list, here: bool = False) -> None:
        """Submit ``tasks`` after those submitted before (to the executor, if any; ``here``:
        to run them in the calling thread, as a batch of one node does)."""
        ex, run = (None if here else self.ev.executor), self.ev.run_task
        for t in tasks:
            entry = _Pending(t, None if ex is None else ex.submit(run, t))
            self._queue.append(entry)
            if entry.future is not None and self.ev.caller_runs:
                self._untaken.append(entry)

    def next(self) -> NodeOutcome:
        """The outcome of the earliest submitted task whose outcome was not taken yet."""
        entry = self._queue[0]
        ev = self.ev
        if entry.future is None:
            if not entry.done_here:
                self._run_here()
            out = entry.outcome
        elif not ev.caller_runs:
            out = ev._result(entry.future, entry.task)
        else:
            while not entry.done_here and not entry.future.done():
                if not self._take_one():
                    break  # nothing left to take: wait for the worker
            out = entry.outcome if entry.done_here else ev._result(entry.future, entry.task)
        self._queue.popleft()
        return out

    def _run_here(self) -> None:
        """Run every task submitted to run in this thread that has not run yet, one after the
        other (serially, a batch's tasks run together and then its outcomes are applied: the
        node solves and the engine's bookkeeping do not take turns in the caches)."""
        for e in self._queue:
            if e.future is None and not e.done_here:
                e.outcome = self.ev._here(e.task)
                e.done_here = True

    def _take_one(self) -> bool:
        """Run the earliest task no worker has started here; False when there is none."""
        while self._untaken:
            cand = self._untaken.popleft()
            if cand.future.cancel():
                cand.outcome = self.ev._here(cand.task)
                cand.done_here = True
                return True
        return False
