"""Where a search hands its closed nodes: the proof sink (the certificate's recorder,
:class:`sparsecert.proof.recorder.ProofRecorder`), so that the engine keeps only its open
frontier and its time limit keeps a reserve for the certificate."""

from __future__ import annotations

import time
from typing import Protocol

from sparsecert.bnb.node import Node

__all__ = ["ProofSink", "time_left"]


class ProofSink(Protocol):
    """What :class:`sparsecert.bnb.BranchAndBound` calls on its ``proof``."""

    def closed(self, node: Node) -> None:
        """Record a node that just closed (its status set, its fixings and witness final);
        the engine forgets it afterwards."""

    def reserve(self, n_open: int) -> float:
        """Seconds the certificate needs after the search with ``n_open`` open nodes."""


def time_left(deadline: float | None, sink: ProofSink | None, n_open: int) -> float | None:
    """Seconds the search has left before ``deadline`` (a ``time.perf_counter()`` value; None:
    no limit), keeping the sink's reserve for ``n_open`` open nodes."""
    if deadline is None:
        return None
    return deadline - time.perf_counter() - (0.0 if sink is None else sink.reserve(n_open))
