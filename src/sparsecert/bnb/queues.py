"""Node selection strategies, chosen by name.

* ``"best_bound"``: smallest lower bound first (the global bound is then the queue's minimum).
* ``"depth_first"``: last in, first out (finds incumbents fast, proves slowly).
* ``"best_bound_dive"`` (default): depth first until ``dive_nodes`` nodes have been popped, then
  best bound -- an early dive for incumbents, then the order that proves optimality fastest.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from sparsecert.bnb.node import Node

__all__ = ["NodeQueue", "BestBoundQueue", "DepthFirstQueue", "BestBoundDiveQueue", "make_queue",
           "QUEUE_STRATEGIES", "StagingQueue"]


class NodeQueue:
    """Interface of the open-node pool."""

    def push(self, node: Node) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def pop(self) -> Node:  # pragma: no cover - interface
        raise NotImplementedError

    def __len__(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def __iter__(self) -> Iterator[Node]:  # pragma: no cover - interface
        raise NotImplementedError

    def min_bound(self) -> float:
        """Smallest lower bound among open nodes (``inf`` when empty)."""
        return min((n.lower_bound for n in self), default=np.inf)


class BestBoundQueue(NodeQueue):
    """A heap on ``(lower_bound, -depth, id)``: deterministic ties."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Node]] = []

    def push(self, node: Node) -> None:
        heapq.heappush(self._heap, (node.lower_bound, -node.depth, node.id, node))

    def pop(self) -> Node:
        return heapq.heappop(self._heap)[-1]

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator[Node]:
        return (t[-1] for t in self._heap)

    def min_bound(self) -> float:
        return self._heap[0][0] if self._heap else np.inf


class DepthFirstQueue(NodeQueue):
    """A stack."""

    def __init__(self) -> None:
        self._stack: list[Node] = []

    def push(self, node: Node) -> None:
        self._stack.append(node)

    def pop(self) -> Node:
        return self._stack.pop()

    def __len__(self) -> int:
        return len(self._stack)

    def __iter__(self) -> Iterator[Node]:
        return iter(self._stack)


class BestBoundDiveQueue(NodeQueue):
    """Depth first for the first ``dive_nodes`` pops, best bound afterwards."""

    def __init__(self, dive_nodes: int = 20) -> None:
        self.dive_nodes = int(dive_nodes)
        self._pops = 0
        self._dfs = DepthFirstQueue()
        self._heap = BestBoundQueue()

    @property
    def diving(self) -> bool:
        return self._pops < self.dive_nodes

    def push(self, node: Node) -> None:
        (self._dfs if self.diving else self._heap).push(node)

    def pop(self) -> Node:
        self._pops += 1
        if not self.diving and len(self._dfs):
            for n in self._dfs:
                self._heap.push(n)
            self._dfs = DepthFirstQueue()
        return (self._dfs if len(self._dfs) else self._heap).pop()

    def __len__(self) -> int:
        return len(self._dfs) + len(self._heap)

    def __iter__(self) -> Iterator[Node]:
        yield from self._dfs
        yield from self._heap

    def min_bound(self) -> float:
        return min(self._dfs.min_bound(), self._heap.min_bound())


class StagingQueue(NodeQueue):
    """A queue that only collects what is pushed, in order: where a subtree's replay puts the
    children it makes before they join the search's queue (see ``BranchAndBound._replay``)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def push(self, node: Node) -> None:
        self.nodes.append(node)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)


QUEUE_STRATEGIES = {
    "best_bound": BestBoundQueue,
    "depth_first": DepthFirstQueue,
    "best_bound_dive": BestBoundDiveQueue,
}


def make_queue(name: str) -> NodeQueue:
    """Instantiate a queue strategy by name."""
    try:
        return QUEUE_STRATEGIES[name]()
    except KeyError:
        raise ValueError(f"unknown node selection {name!r}; choose from "
                         f"{sorted(QUEUE_STRATEGIES)}") from None
