"""Informed branching: pseudo-costs and strong branching at the top of the tree.

Three rules of :data:`sparsecert.bnb.branching.BRANCHING_RULES` choose with more than the
node's own relaxed solution:

* ``"pseudo_cost"``: the candidate (a fractional free variable, else any free one) with the
  largest product score of its estimated gains (:mod:`sparsecert.bnb.pseudocost`); until both
  directions have been observed, ``largest_coef``.
* ``"strong"``: at the nodes of depth below :attr:`StrongParams.depth`, the
  :attr:`StrongParams.candidates` candidates with the largest ``|b_j|`` have both children
  bounded by :attr:`StrongParams.iterations` iterations of the node relaxation each, and the
  one with the largest product of the two gains is chosen; deeper, ``largest_coef``.
* ``"reliability"``: pseudo-costs, initialised by strong branching: at the nodes of depth below
  :attr:`StrongParams.depth`, the candidates ranked best by their pseudo-cost score (by
  ``|b_j|`` before any observation) whose pseudo-costs are not yet reliable (observed fewer than
  :attr:`StrongParams.reliable` times in a direction) are strong-branched, the others scored by
  their pseudo-costs; deeper, pseudo-costs alone.

The choice is made in the node's task (:func:`choose`), from the task's inputs only (the
pseudo-cost table taken when the task was made), so the tree is the same on every executor.

**Strong-branching bounds are valid bounds.** A strong-branching child is solved by the same
node relaxation as any node (with the child's fixings: the node's, after its reduced-cost
fixings, plus the branching), stopped after a few iterations; its ``lower_bound`` is the
running maximum of the weak-duality bound over the iterates, valid at any iterate, and the
point that attained it is a witness of it. So the engine gives the chosen variable's children
their strong-branching bounds and witnesses as initial bounds (when they beat the parent's):
a child whose bound already passes the cutoff is pruned when popped, without a relaxation, its
bound proven by its own witness in the certificate. Every strong-branching iteration counts in
the search's relaxation iterations (``SearchResult.n_relaxation_iters``; apart, in
``n_strong_iters``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sparsecert.bnb.pseudocost import PseudoCosts, PseudoCostTable, product_score
from sparsecert.solvers.perspective import RelaxationResult, solve_node

__all__ = ["INFORMED_RULES", "StrongParams", "BranchSpec", "BranchChoice", "Brancher", "choose",
           "DEFAULT_STRONG"]

#: the rules chosen in the task with the search's state (see the module docstring)
INFORMED_RULES = ("pseudo_cost", "strong", "reliability")

_FRAC_TOL = 1e-6  # as sparsecert.bnb.branching
#: strong-branching children whose gains are recorded as pseudo-costs: a child stopped by its
#: iteration cap has a bound below its relaxation's (a truncated gain), used for the choice only
_SETTLED = ("converged", "cutoff")


@dataclass(frozen=True)
class StrongParams:
    """Where and how hard strong branching works.

    Attributes
    ----------
    depth : int
        Strong branching at the nodes of depth ``< depth`` only (the top of the tree).
    candidates : int
        Candidates strong-branched at a node (at most).
    iterations : int
        Relaxation iterations for each strong-branching child (it stops earlier when its bound
        reaches the cutoff or the relaxation converges).
    reliable : int
        ``"reliability"``: observations in each direction after which a variable's
        pseudo-costs are trusted instead of strong-branching it.
    """

    depth: int = 4
    candidates: int = 8
    iterations: int = 30
    reliable: int = 1

    def __post_init__(self) -> None:
        for name in ("depth", "candidates", "iterations", "reliable"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "depth"
                                                                      else 1):
                raise ValueError(f"StrongParams.{name} must be a positive integer, got {v!r}")


DEFAULT_STRONG = StrongParams()


@dataclass(frozen=True)
class BranchSpec:
    """What a task needs to choose its branching variable with an informed rule."""

    rule: str
    table: PseudoCostTable | None = None
    strong: bool = False  # strong-branch at this node
    params: StrongParams = DEFAULT_STRONG

    def below(self) -> BranchSpec:
        """The spec of a node below this one in a subtree task: no strong branching."""
        return BranchSpec(self.rule, self.table, False, self.params)


@dataclass
class BranchChoice:
    """A task's branching decision.

    Attributes
    ----------
    var : int
        The variable to branch on.
    z : float
        The node's relaxed ``z_var`` (the pseudo-costs' fractionality).
    n_iter, n_solves : int
        Strong-branching iterations and child relaxations spent on the choice.
    children : tuple
        The strong-branching results of the chosen variable's children ``(z = 0, z = 1)``, or
        ``(None, None)``: valid bounds with their witnesses (see the module docstring).
    observations : list of (int, float, float, float)
        ``(j, z_j, down gain, up gain)`` of the strong-branched candidates whose two children
        converged or reached the cutoff (for the pseudo-costs).
    """

    var: int
    z: float
    n_iter: int = 0
    n_solves: int = 0
    children: tuple = (None, None)
    observations: list = field(default_factory=list)


def _candidates(b: np.ndarray, z: np.ndarray, free: np.ndarray) -> np.ndarray:
    """largest_coef's candidates: the fractional free variables, else every free one."""
    frac = free & (z > _FRAC_TOL) & (z < 1 - _FRAC_TOL)
    return np.flatnonzero(frac if frac.any() else free)


def _order(score: np.ndarray, tie: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Positions of the candidates by score descending, ties by ``tie`` descending (the
    node's ``|b_j|``: largest_coef's order), then by index ascending."""
    return np.lexsort((cand, -tie, -score))


def _pc_gains(table: PseudoCostTable, z: np.ndarray, cand: np.ndarray):
    down, up = table.estimates()
    return down[cand] * z[cand], up[cand] * (1.0 - z[cand])


def _strong_child(ctx, task, fi, fo, warm, j: int, value: int, params: StrongParams
                  ) -> RelaxationResult:
    fi, fo = fi.copy(), fo.copy()
    (fi if value else fo)[j] = True
    start = warm.copy()
    if not value:
        start[j] = 0.0
    return solve_node(ctx.problem, ctx.k, fi, fo, rel_tol=task.rel_tol,
                      max_iter=params.iterations, time_limit=task.time_limit, cutoff=task.cutoff,
                      warm_start=start, solver=task.solver, iterations=task.iterations,
                      open_rel_tol=task.open_rel_tol)


def choose(ctx, task, spec: BranchSpec, res: RelaxationResult, fixed_in: np.ndarray,
           fixed_out: np.ndarray, bound: float) -> BranchChoice:
    """The branching decision of a node whose relaxation is ``res``, with bound ``bound`` (the
    better of its own and its inherited one), on its free variables after its reduced-cost
    fixings (``fixed_in``, ``fixed_out``); ``ctx`` and ``task`` are the node's
    :class:`~sparsecert.bnb.evaluate.NodeContext` and task."""
    b = np.abs(np.asarray(res.coef, dtype=float))
    z = np.asarray(res.z, dtype=float)
    free = ~(fixed_in | fixed_out)
    if not free.any():
        raise ValueError("no free variable to branch on")
    cand = _candidates(b, z, free)
    params = spec.params
    use_pc = spec.rule in ("pseudo_cost", "reliability") and spec.table is not None \
        and spec.table.observed
    if use_pc:
        d, u = _pc_gains(spec.table, z, cand)
        score = product_score(d, u, bound)
    else:
        score = b[cand]
    order = _order(score, b[cand], cand)
    if not spec.strong or spec.rule == "pseudo_cost":
        j = int(cand[order[0]])
        return BranchChoice(j, float(z[j]))
    # strong branching on the top candidates
    top = cand[order[:params.candidates]]
    if use_pc:
        probe = top[~spec.table.reliable(params.reliable)[top]] if spec.rule == "reliability" \
            else top
        final = dict(zip(cand.tolist(), score.tolist(), strict=True))
    else:
        probe, final = top, {}
    choice = BranchChoice(-1, 0.0)
    kids: dict[int, tuple] = {}
    warm = np.asarray(res.coef, dtype=float)
    for j in probe.tolist():
        down = _strong_child(ctx, task, fixed_in, fixed_out, warm, j, 0, params)
        up = _strong_child(ctx, task, fixed_in, fixed_out, warm, j, 1, params)
        choice.n_iter += int(down.n_iter) + int(up.n_iter)
        choice.n_solves += 2
        gd = max(0.0, float(down.lower_bound) - bound)
        gu = max(0.0, float(up.lower_bound) - bound)
        if down.status in _SETTLED and up.status in _SETTLED:  # else the gains are truncated
            choice.observations.append((j, float(z[j]), gd, gu))
        final[j] = float(product_score(np.array([gd]), np.array([gu]), bound)[0])
        kids[j] = (down, up)
    pool = top if not use_pc else cand
    best = max(pool.tolist(), key=lambda i: (final.get(i, -np.inf), b[i], -i))
    choice.var, choice.z = int(best), float(z[best])
    choice.children = kids.get(best, (None, None))
    return choice


class Brancher:
    """The engine's side of the informed rules: the pseudo-cost book and each task's spec.

    Parameters
    ----------
    rule : str
        The search's branching rule.
    p : int
        Number of variables.
    params : StrongParams, optional
        Strong branching's depth, candidates and iterations (default: :data:`DEFAULT_STRONG`).
    """

    def __init__(self, rule: str, p: int, params: StrongParams | None = None) -> None:
        self.rule = rule
        self.params = DEFAULT_STRONG if params is None else params
        self.informed = rule in INFORMED_RULES
        self.costs = PseudoCosts(p)
        self.n_strong_iter = 0
        self.n_strong_solves = 0

    def spec(self, depth: int) -> BranchSpec | None:
        """The spec of a task for a node at ``depth`` (None for the engine's plain rules)."""
        if not self.informed:
            return None
        table = self.costs.table() if self.rule != "strong" else None
        strong = self.rule != "pseudo_cost" and depth < self.params.depth
        return BranchSpec(self.rule, table, strong, self.params)

    def spent(self, choice: BranchChoice) -> int:
        """Count a task's strong branching (whether or not the engine then branched the node)
        and record its observations; returns its iterations."""
        self.n_strong_iter += choice.n_iter
        self.n_strong_solves += choice.n_solves
        for j, zj, gd, gu in choice.observations:
            self.costs.record(j, 0, gd, zj)
            self.costs.record(j, 1, gu, 1.0 - zj)
        return choice.n_iter

    def branched(self, parent_bound: float, var: int, z: float, kid_ids: tuple[int, int]
                 ) -> None:
        """A node was branched on ``var`` (relaxed ``z``) into ``kid_ids`` (``z = 0``, ``z = 1``):
        await the children's gains."""
        if not self.informed:
            return
        self.costs.expect(kid_ids[0], var, 0, parent_bound, z)
        self.costs.expect(kid_ids[1], var, 1, parent_bound, 1.0 - z)

    def evaluated(self, node_id: int, bound: float) -> None:
        """A child's relaxation gave it ``bound``: record its gain."""
        self.costs.observe(node_id, bound)

    def closed(self, node_id: int) -> None:
        """A node closed (whether evaluated or not): nothing more to await of it."""
        self.costs.forget(node_id)
