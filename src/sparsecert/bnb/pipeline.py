"""The search's batch pipeline: batches of open nodes formed, handed to the workers, and their
outcomes applied in order.

:class:`BatchPipeline` is the part of :class:`sparsecert.bnb.search.BranchAndBound` that moves
nodes between the queue and the workers. A batch of up to ``batch_size`` open nodes is formed
once at most ``batch_overlap`` outcomes of the batches before it are still to be applied (no
overlap until a full batch has been applied), so that the workers do not wait for the engine at
a batch's end; the outcomes are applied in the order the nodes were handed out, each as soon as
it and those before it are in. The tree depends on ``batch_size`` and ``batch_overlap``, never on
the executor or the number of workers. A Ctrl-C puts every node not yet applied back in the
queue, still open.

The engine provides the state it reads: ``settings``, ``queue``, ``proof``, ``_live``,
``_deadline``, ``_in_flight``, ``_n_evaluated`` and the node steps ``_prune``, ``_task``,
``_process``, ``_replay`` and ``_log``.
"""

from __future__ import annotations

from sparsecert.bnb.evaluate import BatchEvaluator, OutcomeStream
from sparsecert.bnb.node import Node
from sparsecert.bnb.proof_sink import time_left
from sparsecert.bnb.subtree import SubtreeOutcome
from sparsecert.statuses import NODE_LIMIT, OPEN, TIME_LIMIT

__all__ = ["BatchPipeline"]


class BatchPipeline:
    """Forming batches, handing them out, applying their outcomes in order (a part of the
    engine, see the module's docstring)."""

    def _limit_reached(self) -> str | None:
        """The status of a limit that stops the search now (the root is always evaluated)."""
        s = self.settings
        if self._n_evaluated == 0:
            return None
        left = time_left(self._deadline, self.proof, len(self._live))
        if left is not None and left <= 0:
            return TIME_LIMIT
        if s.node_limit is not None and self._n_evaluated >= s.node_limit:
            return NODE_LIMIT
        return None

    def _next_batch(self) -> list[Node]:
        """Up to ``batch_size`` open nodes, closing those pruned by their inherited bound."""
        batch: list[Node] = []
        while len(self.queue) and len(batch) < self.settings.batch_size:
            node = self.queue.pop()
            if not self._prune(node):
                batch.append(node)
        return batch

    def _submit(self, batch: list[Node], stream: OutcomeStream, token: str | None) -> None:
        """Hand the batch's tasks to the workers (a batch of one, with nothing in flight,
        runs in this thread)."""
        left = time_left(self._deadline, self.proof, len(self._live))
        remaining = None if left is None else max(1e-3, left)
        tasks = [self._task(n, token, remaining) for n in batch]
        stream.submit(tasks, here=len(tasks) == 1 and len(stream) == 0)
        self._in_flight.extend(batch)

    def _apply_next(self, stream: OutcomeStream) -> None:
        """Take the next outcome in order and process its node (each as soon as it and those
        before it are in: the workers go on with the rest meanwhile). On a Ctrl-C the nodes
        not processed go back to the queue, still open."""
        flight = self._in_flight
        try:
            out = stream.next()
        except KeyboardInterrupt:
            self._requeue([])
            raise
        node = flight.popleft()
        try:
            if isinstance(out, SubtreeOutcome):
                self._replay(node, out)
            else:
                self._process(node, out)
        except KeyboardInterrupt:  # (or from the node callback) the rest is not applied
            self._requeue([node] if node.status == OPEN else [])
            raise

    def _requeue(self, nodes: list[Node]) -> None:
        """``nodes`` and every node in flight back in the queue (unevaluated, still open)."""
        for n in nodes + list(self._in_flight):
            self.queue.push(n)
        self._in_flight.clear()

    def _search(self, evaluator: BatchEvaluator, token: str | None) -> str | None:
        """The loop: form a batch once at most ``batch_overlap`` outcomes are still to be
        applied (0: the previous batch is applied in full), apply the outcomes in order;
        returns the limit that stopped it, if any."""
        stream, s = evaluator.stream(), self.settings
        stopped = None
        while True:
            # no overlap until a full batch is applied: a user executor's workers receive the
            # data with their first tasks (one resend each), before a second batch is sent
            overlap = s.overlap if self._n_evaluated > s.batch_size else 0
            if stopped is None and len(self._in_flight) <= overlap:
                if not self._in_flight and not len(self.queue):
                    break
                if self._n_evaluated:
                    # also while outcomes are still to be applied (with an overlap, the
                    # pipeline never runs dry): the bound counts the nodes in flight
                    self._log()
                stopped = self._limit_reached()
                if stopped is None:
                    batch = self._next_batch()
                    if batch:
                        self._submit(batch, stream, token)
            if not self._in_flight:
                if stopped is not None or not len(self.queue):
                    break
                continue
            self._apply_next(stream)
        return stopped
