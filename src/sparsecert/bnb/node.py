"""Nodes of the branch-and-bound tree.

A search keeps every open node in memory, so a node is small: its fixings are bit-packed
(``p / 8`` bytes each) and its warm start is the parent's relaxed solution kept once for both
children; it and the witness's vector are kept as their non-zeros when they are sparse (as
they usually are: a relaxed solution has a few dozen non-zeros on a 4,088-column problem). The
attributes read as full-length arrays built on access (``fixed_in``, ``fixed_out``,
``warm_start``, ``Witness.vector``), exact bit for bit.
"""

from __future__ import annotations

import numpy as np

from sparsecert.statuses import OPEN

__all__ = ["Node", "Witness", "CompactVector"]


class CompactVector:
    """A read-only float vector of length ``size`` kept compactly: its non-zero entries (indices
    and values; ``-0.0`` counts as non-zero) when at most a quarter of them are, else a dense
    copy. Exact: :meth:`dense` returns the vector it was built from, bit for bit."""

    __slots__ = ("size", "index", "values")

    def __init__(self, vector: np.ndarray) -> None:
        v = np.ascontiguousarray(vector, dtype=np.float64).reshape(-1)
        self.size = int(v.size)
        nz = np.flatnonzero(v.view(np.int64)) if v.size else np.zeros(0, np.int64)
        if 4 * nz.size <= v.size:
            self.index: np.ndarray | None = nz.astype(np.int32)
            self.values = v[nz].copy()
        else:
            self.index, self.values = None, v.copy()

    def dense(self, zero: int = -1) -> np.ndarray:
        """A fresh full-length copy, with entry ``zero`` set to 0 when ``zero >= 0``."""
        if self.index is None:
            out = self.values.copy()
        else:
            out = np.zeros(self.size)
            out[self.index] = self.values
        if zero >= 0:
            out[zero] = 0.0
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return self.values.nbytes + (0 if self.index is None else self.index.nbytes)


class Witness:
    """What proves a node's bound: a point ``b~`` of the relaxation (``kind`` ``"point"``,
    ``vector`` of length p) or a dual point ``zeta`` (``"dual"``, length n).

    ``id`` numbers the witnesses a search keeps, in the order it kept them (``-1`` for one it
    only looked at); a child inherits its parent's record, so the id says which nodes share a
    witness (the certificate evaluates each once). ``cert`` is where the proof recorder wrote
    it in the certificate (its kind code and slot), set the first time a closing node needs it.
    The vector is kept as a :class:`CompactVector` (a point is usually sparse) and read back
    exactly, as a fresh array.
    """

    __slots__ = ("kind", "_vector", "id", "cert")

    def __init__(self, kind: str, vector: np.ndarray, id: int = -1,
                 cert: tuple[int, int] | None = None) -> None:
        self.kind, self.id, self.cert = kind, id, cert
        self._vector = CompactVector(vector)

    @property
    def vector(self) -> np.ndarray:
        return self._vector.dense()

    @property
    def nbytes(self) -> int:
        """Bytes held by the vector's storage."""
        return self._vector.nbytes

    def __repr__(self) -> str:
        return f"Witness({self.kind!r}, <{self._vector.size} entries>, id={self.id})"


class _PackedMask:
    """A boolean mask of length ``node._p`` kept bit-packed in the node's slot ``slot``; each
    read builds a fresh array."""

    def __init__(self, slot: str) -> None:
        self.slot = slot

    def __get__(self, node, owner=None):
        if node is None:
            return self
        return np.unpackbits(getattr(node, self.slot), count=node._p).view(bool)

    def __set__(self, node, mask: np.ndarray) -> None:
        setattr(node, self.slot, np.packbits(np.asarray(mask, dtype=bool)))


class Node:
    """One node: a subproblem with some indicators fixed.

    Attributes
    ----------
    id, parent, depth : int
        Position in the tree (the root has ``parent=None`` and depth 0).
    fixed_in, fixed_out : numpy.ndarray of bool
        ``z_j = 1`` (S1) and ``z_j = 0`` (S0) fixings (stored bit-packed; each read builds a
        fresh array, so change them by assigning a new one).
    branch_var, branch_value : int or None
        The fixing that created this node from its parent.
    lower_bound : float
        Best valid bound known for the node (the parent's until it is evaluated).
    witness : Witness or None
        What proves ``lower_bound`` (inherited from the parent until evaluated).
    warm_start : numpy.ndarray or None
        Relaxed solution of the parent (entry ``branch_var`` zeroed in the ``z = 0`` child),
        to warm-start this node's relaxation; a fresh copy on each read, shared storage with
        the sibling.
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

    __slots__ = ("id", "parent", "depth", "_p", "_in", "_out", "branch_var", "branch_value",
                 "lower_bound", "witness", "_warm", "_warm_zero", "status", "n_iter",
                 "children", "bound_fixings")

    fixed_in = _PackedMask("_in")
    fixed_out = _PackedMask("_out")

    def __init__(self, id: int, parent: int | None, depth: int, fixed_in: np.ndarray,
                 fixed_out: np.ndarray) -> None:
        """An open node at its place in the tree, with its fixings; what it inherits
        (branching, bound, witness, warm start) is set by :meth:`child`."""
        self.id, self.parent, self.depth = id, parent, depth
        self._p = int(np.asarray(fixed_in).size)
        self.fixed_in, self.fixed_out = fixed_in, fixed_out
        self.branch_var: int | None = None
        self.branch_value: int | None = None
        self.lower_bound = -np.inf
        self.witness: Witness | None = None
        self._warm: CompactVector | None = None
        self._warm_zero = -1
        self.status = OPEN
        self.n_iter = 0
        self.children: list[int] = []
        self.bound_fixings: list[tuple[int, int]] = []

    @property
    def warm_start(self) -> np.ndarray | None:
        return None if self._warm is None else self._warm.dense(self._warm_zero)

    @warm_start.setter
    def warm_start(self, vector: np.ndarray | CompactVector | None) -> None:
        self._warm_zero = -1
        if vector is None or isinstance(vector, CompactVector):
            self._warm = vector
        else:
            self._warm = CompactVector(vector)

    @property
    def nbytes(self) -> int:
        """Bytes held by the node's arrays (its fixings and its share of the warm start)."""
        warm = 0 if self._warm is None else self._warm.nbytes
        return self._in.nbytes + self._out.nbytes + warm

    def free_budget(self, k: int) -> int:
        """``k - |S1|``."""
        return k - int(np.unpackbits(self._in).sum())

    def free_mask(self) -> np.ndarray:
        """Boolean mask of the variables fixed neither in nor out."""
        return np.unpackbits(~(self._in | self._out), count=self._p).view(bool)

    def n_free(self) -> int:
        """Number of variables fixed neither in nor out."""
        return int(self.free_mask().sum())

    def is_leaf_problem(self, k: int) -> bool:
        """True when no cardinality coupling is left: budget 0, or all free variables fit."""
        b = self.free_budget(k)
        return b == 0 or self.n_free() <= b

    def base_fixings(self) -> tuple[np.ndarray, np.ndarray]:
        """``(fixed_in, fixed_out)`` without this node's own bound fixings."""
        fi, fo = self.fixed_in, self.fixed_out
        for j, v in self.bound_fixings:
            (fi if v == 1 else fo)[j] = False
        return fi, fo

    def child(self, new_id: int, var: int, value: int) -> Node:
        """The child fixing ``z_var = value`` (inherits bound, witness and warm start)."""
        fi, fo = self.fixed_in, self.fixed_out
        (fi if value == 1 else fo)[var] = True
        warm = self._warm
        if warm is not None and self._warm_zero >= 0:  # this node's own zeroed entry, kept
            warm = CompactVector(self.warm_start)
        kid = Node(new_id, self.id, self.depth + 1, fi, fo)
        kid.branch_var, kid.branch_value = var, value
        kid.lower_bound, kid.witness, kid._warm = self.lower_bound, self.witness, warm
        if warm is not None and value == 0:
            kid._warm_zero = var
        return kid
