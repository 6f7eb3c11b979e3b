"""Nodes of the branch-and-bound tree."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sparsecert.statuses import OPEN

__all__ = ["Node", "Witness"]


@dataclass(eq=False)
class Witness:
    """What proves a node's bound: a point ``b~`` of the relaxation (``kind`` ``"point"``,
    ``vector`` of length p) or a dual point ``zeta`` (``"dual"``, length n).

    ``id`` numbers the witnesses a search keeps, in the order it kept them (``-1`` for one it
    only looked at); a child inherits its parent's record, so the id says which nodes share a
    witness (the certificate evaluates each once). ``cert`` is where the proof recorder wrote
    it in the certificate (its kind code and slot), set the first time a closing node needs it.
    """

    kind: str
    vector: np.ndarray
    id: int = -1
    cert: tuple[int, int] | None = None


@dataclass(eq=False)
class Node:
    """One node: a subproblem with some indicators fixed.

    Attributes
    ----------
    id, parent, depth : int
        Position in the tree (the root has ``parent=None`` and depth 0).
    fixed_in, fixed_out : numpy.ndarray of bool
        ``z_j = 1`` (S1) and ``z_j = 0`` (S0) fixings.
    branch_var, branch_value : int or None
        The fixing that created this node from its parent.
    lower_bound : float
        Best valid bound known for the node (the parent's until it is evaluated).
    witness : Witness or None
        What proves ``lower_bound`` (inherited from the parent until evaluated).
    warm_start : numpy.ndarray or None
        Relaxed solution of the parent, to warm-start this node's relaxation.
    status : str
        One of :data:`sparsecert.statuses.NODE_STATUSES`: ``"open"``, ``"branched"``,
        ``"pruned"`` (bound above the cutoff) or ``"solved"`` (a leaf solved exactly: its free
        set fits the remaining budget).
    n_iter : int
        Relaxation iterations spent on the node.
    children : list of int
        Ids of the two children of a branched node.
    bound_fixings : list of (int, int)
        Reduced-cost fixings ``(j, v)`` made at this node from its witness: ``fixed_in`` and
        ``fixed_out`` include them (the node's *extended* fixings; its *base* fixings are its
        parent's extended ones plus its branching); see :mod:`sparsecert.bnb.fixing`.
    """

    id: int
    parent: int | None
    depth: int
    fixed_in: np.ndarray
    fixed_out: np.ndarray
    branch_var: int | None = None
    branch_value: int | None = None
    lower_bound: float = -np.inf
    witness: Witness | None = None
    warm_start: np.ndarray | None = None
    status: str = OPEN
    n_iter: int = 0
    children: list[int] = field(default_factory=list)
    bound_fixings: list[tuple[int, int]] = field(default_factory=list)

    def free_budget(self, k: int) -> int:
        """``k - |S1|``."""
        return k - int(self.fixed_in.sum())

    def free_mask(self) -> np.ndarray:
        """Boolean mask of the variables fixed neither in nor out."""
        return ~(self.fixed_in | self.fixed_out)

    def n_free(self) -> int:
        """Number of variables fixed neither in nor out."""
        return int(self.free_mask().sum())

    def is_leaf_problem(self, k: int) -> bool:
        """True when no cardinality coupling is left: budget 0, or all free variables fit."""
        b = self.free_budget(k)
        return b == 0 or self.n_free() <= b

    def base_fixings(self) -> tuple[np.ndarray, np.ndarray]:
        """``(fixed_in, fixed_out)`` without this node's own bound fixings."""
        fi, fo = self.fixed_in.copy(), self.fixed_out.copy()
        for j, v in self.bound_fixings:
            (fi if v == 1 else fo)[j] = False
        return fi, fo

    def child(self, new_id: int, var: int, value: int) -> Node:
        """The child fixing ``z_var = value`` (inherits bound, witness and warm start)."""
        fi, fo = self.fixed_in.copy(), self.fixed_out.copy()
        (fi if value == 1 else fo)[var] = True
        warm = None
        if self.warm_start is not None:
            warm = self.warm_start.copy()
            if value == 0:
                warm[var] = 0.0
        return Node(new_id, self.id, self.depth + 1, fi, fo, var, value, self.lower_bound,
                    self.witness, warm)
