"""Tree reconstruction: the certificate's tree from the engine's nodes.

The structure comes from the parent links alone: a node some other node names as its parent is
*branched* (a Ctrl-C can cut a branching short after the children joined the tree, before their
parent was marked), every other node is a *leaf* and keeps its own status. A node needs a
witness in the certificate when it is a leaf or has bound fixings; a leaf the search never
bounded (no witness of its own nor inherited: a root a Ctrl-C stopped) gets the producer's zero
witness, whose bound is weak but proven.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TreeNode", "reconstruct", "columns_read"]


@dataclass(frozen=True)
class TreeNode:
    """One engine node as the certificate sees it.

    ``node`` is the engine's :class:`~sparsecert.bnb.node.Node`; ``leaf`` says whether no node
    names it as parent; ``witness`` is the one its regions are bounded with (None for a
    branched node without bound fixings: its children carry the bound).
    """

    node: Any
    leaf: bool
    witness: Any

    @property
    def fixings(self) -> list[tuple[int, int]]:
        """The node's bound fixings ``(j, v)``."""
        return [(int(j), int(v)) for j, v in self.node.bound_fixings]

    @property
    def bounded(self) -> bool:
        """Whether the node has regions to bound (a leaf, or a node with bound fixings)."""
        return self.leaf or bool(self.node.bound_fixings)


def reconstruct(nodes, zero) -> list[TreeNode]:
    """The engine's ``nodes`` (in their order) as :class:`TreeNode` records; ``zero`` is the
    witness of a leaf that has none."""
    branched = {nd.parent for nd in nodes if nd.parent is not None}
    out = []
    for nd in nodes:
        leaf = nd.id not in branched
        w = zero if nd.witness is None and leaf else nd.witness
        out.append(TreeNode(nd, leaf, w if (leaf or nd.bound_fixings) else None))
    return out


def columns_read(tree: list[TreeNode], p: int) -> dict[int, np.ndarray]:
    """For each witness id, the columns some node bounded with it reads: those not fixed out
    (at a node with bound fixings, out of its base fixings, which its regions use)."""
    used: dict[int, np.ndarray] = {}
    for tn in tree:
        if tn.witness is None:
            continue
        nd = tn.node
        out = nd.base_fixings()[1] if nd.bound_fixings else nd.fixed_out
        mask = ~np.asarray(out, dtype=bool).reshape(p)
        key = tn.witness.id
        used[key] = mask if key not in used else used[key] | mask
    return used
