"""Subtree tasks: a worker explores a node's subtree depth first.

A task of ``subtree_nodes = m > 1`` (:class:`SubtreeTask`) evaluates its node and then, depth
first, up to ``m - 1`` of its descendants, against the cutoff known when the task was made,
lowered by the incumbents the task itself finds; it decides each node as the engine would
(solved leaf, pruned, reduced-cost fixings, branching variable) and returns every evaluation
in the order made, each with its path below the task's node (:class:`SubtreeOutcome`). The
engine replays the records through its own node processing, in task order, creating the nodes
(and their ids) itself; the children a task did not evaluate join the global queue.

The engine's cutoff at a record's replay is never above the task's own at that node (it knows
the task's incumbents and those of every task before it), so the engine prunes every node the
task pruned, and may prune one the task branched: the records below it are then dropped (their
models still offered). Everything in a task is a pure function of its inputs, so the tree and
the certificate depend on ``batch_size`` and ``subtree_nodes``, not on the executor or the
number of workers.

A worker thus owns a subtree for the length of its task (depth first, locally, as the workers
of UG/ParaSCIP and pybnb do), and the global queue only balances the work between tasks; a task
carries one node's fixings and warm start, and returns ``m`` outcomes in one message.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from sparsecert.bnb.branching import choose_branch_variable
from sparsecert.bnb.evaluate import (
    NO_HEURISTIC,
    ROUND,
    ROUND_AND_SWAP,
    ContextMissing,
    NodeContext,
    NodeOutcome,
    NodeTask,
    context_of,
    evaluate_task,
    node_witness,
)
from sparsecert.bnb.fixing import apply_fixings
from sparsecert.statuses import cutoff

__all__ = ["SubtreeRules", "SubtreeTask", "SubtreeRecord", "SubtreeOutcome", "explore_subtree",
           "apply_fixings"]  # apply_fixings: re-exported from sparsecert.bnb.fixing


@dataclass(frozen=True)
class SubtreeRules:
    """The engine's settings a task needs below its node."""

    rel_gap: float
    abs_gap: float
    branching: str
    heuristic_every: int
    node_rel_tol: float
    node_max_iter: int
    leaf_rel_tol: float
    leaf_max_iter: int
    fixing: bool
    node_open_rel_tol: float | None = None


@dataclass
class SubtreeTask:
    """Explore ``node``'s subtree depth first for at most ``max_nodes`` evaluations.

    ``node`` is the task of the subtree's top node, as the engine makes it (its cutoff is
    ``search_cutoff``, or ``inf`` for a leaf); ``base`` numbers the task's first evaluation for
    the heuristics' schedule (swap search at evaluation ``i`` when ``(base + i) %
    heuristic_every == 0``).
    """

    node: NodeTask
    max_nodes: int
    search_cutoff: float
    rules: SubtreeRules
    base: int

    def run(self) -> SubtreeOutcome | ContextMissing:
        return explore_subtree(self)

    def with_context(self, context: NodeContext) -> SubtreeTask:
        return replace(self, node=self.node.with_context(context))

    def carrying(self, context: NodeContext) -> SubtreeTask:
        return replace(self, node=self.node.carrying(context))


@dataclass
class SubtreeRecord:
    """One evaluation of a subtree task: the node's path below the task's node (the branch
    values, ``()`` for the task's node), its outcome and the variable the task branched it on
    (None when the task closed it)."""

    path: tuple[int, ...]
    outcome: NodeOutcome
    branch_var: int | None = None


@dataclass
class SubtreeOutcome:
    """The records of a subtree task, in the order they were evaluated (depth first)."""

    records: list[SubtreeRecord] = field(default_factory=list)


def _is_leaf(fixed_in: np.ndarray, fixed_out: np.ndarray, k: int) -> bool:
    budget = k - int(fixed_in.sum())
    return budget == 0 or int((~(fixed_in | fixed_out)).sum()) <= budget


def explore_subtree(task: SubtreeTask) -> SubtreeOutcome | ContextMissing:
    """Evaluate ``task``'s node and its subtree depth first (module-level: it pickles)."""
    top = task.node
    ctx = context_of(top)
    if ctx is None:
        return ContextMissing(top.context)
    top = top.with_context(ctx)
    rules, k = task.rules, ctx.k
    deadline = None if top.time_limit is None else time.perf_counter() + top.time_limit
    best = math.inf  # the best objective among the models this task found
    iterations = top.iterations
    out = SubtreeOutcome()
    # (path, fixed_in, fixed_out, inherited bound, inherited witness, warm start)
    stack = [((), top.fixed_in, top.fixed_out, top.inherited_bound, top.witness,
              top.warm_start)]
    while stack and len(out.records) < task.max_nodes:
        path, fi, fo, inherited, witness, warm = stack.pop()
        cut = min(task.search_cutoff, cutoff(best, rules.rel_gap, rules.abs_gap))
        if path and inherited >= cut:
            continue  # the engine prunes it when it pops it (its cutoff is as low or lower)
        remaining = None
        if deadline is not None:
            remaining = deadline - time.perf_counter()
            if path and remaining <= 0:
                break
            remaining = max(1e-3, remaining)
        if path:
            leaf = _is_leaf(fi, fo, k)
            i = len(out.records)
            level = ROUND_AND_SWAP if (task.base + i) % rules.heuristic_every == 0 else ROUND
            node = replace(top, fixed_in=fi, fixed_out=fo, cutoff=math.inf if leaf else cut,
                           warm_start=warm,
                           rel_tol=rules.leaf_rel_tol if leaf else rules.node_rel_tol,
                           max_iter=rules.leaf_max_iter if leaf else rules.node_max_iter,
                           time_limit=remaining, inherited_bound=inherited, leaf=leaf,
                           heuristic=NO_HEURISTIC if leaf else level,
                           fixing=rules.fixing and not leaf, witness=witness,
                           open_rel_tol=None if leaf else rules.node_open_rel_tol,
                           iterations=iterations, race=False,
                           branching=None if top.branching is None or leaf
                           else top.branching.below())
        else:
            node, leaf = top, top.leaf
        result = evaluate_task(node)
        record = SubtreeRecord(path, result)
        out.records.append(record)
        res = result.relaxation
        if res.race is not None:
            iterations = res.race.iterations
        for model in result.models:
            best = min(best, model.objective)
        if leaf:
            continue
        own = float(res.lower_bound) > inherited
        bound = max(float(res.lower_bound), inherited)
        if bound >= min(task.search_cutoff, cutoff(best, rules.rel_gap, rules.abs_gap)):
            continue  # pruned
        fixed = apply_fixings(fi, fo, result.fixing, k)
        if fixed is not None:
            if result.fixing.covers_node:
                continue  # closed by its fixings
            fi, fo = fixed
        if result.branch is not None:  # an informed rule chose in the node's evaluation
            j = result.branch.var
        else:
            j = choose_branch_variable(rules.branching, np.asarray(res.coef),
                                       np.asarray(res.z), ~(fi | fo))
        record.branch_var = int(j)
        kept = node_witness(ctx.problem, res) if own else witness
        coef = np.asarray(res.coef, dtype=float)
        warm0 = coef.copy()
        warm0[j] = 0.0
        fo0, fi1 = fo.copy(), fi.copy()
        fo0[j] = True
        fi1[j] = True
        kids = [((*path, 0), fi, fo0, bound, kept, warm0),
                ((*path, 1), fi1, fo, bound, kept, coef.copy())]
        if result.branch is not None:  # strong-branching bounds, as the engine gives them
            for i, sb in enumerate(result.branch.children):
                if sb is not None and float(sb.lower_bound) > bound:
                    kids[i] = (kids[i][0], kids[i][1], kids[i][2], float(sb.lower_bound),
                               node_witness(ctx.problem, sb),
                               np.asarray(sb.coef, dtype=float).copy())
        # z_j = 1 pushed last: taken first, as the engine's depth-first dive does
        stack.extend(kids)
    return out
