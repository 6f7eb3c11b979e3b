"""Compute time measured per phase and communication time modelled from exact bit counts.

End-to-end time of a distributed run = the compute time of one node (measured) + the time its
messages spend on the network at a stated bandwidth (modelled from the bits actually counted).
The model, stated once here and used by every benchmark that reports time:

* One worker per node; the nodes compute in parallel, so a round costs one worker's share of
  the per-worker phases (oracle, level fitting, encoding: measured over all workers hosted by
  the process, divided by their number) plus the phases every node runs in full (decoding all
  messages, the update of the replicated server).
* An all-to-all exchange of ``n`` messages (``allgather``) over full-duplex links of bandwidth
  ``B`` bit/s: each node must receive the other ``n - 1`` messages, so the round takes
  ``(bits received by a node) / B`` (:func:`allgather_seconds`; e.g. a ring allgather).
* A dense float vector can instead be summed on the way (ring allreduce): each node sends and
  receives ``2 (n - 1) / n`` times the vector, ``2 (n - 1) / n * d * bits_per_value / B``
  (:func:`ring_allreduce_seconds`). Uncompressed baselines get this cheaper collective.
* Latency and protocol overheads are ignored (they favour neither side at these message
  sizes and would only add the same constant per round to both).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "PhaseClock",
    "WORKER_PHASES",
    "NODE_PHASES",
    "allgather_seconds",
    "ring_allreduce_seconds",
    "GBIT",
]

GBIT = 1e9
WORKER_PHASES = ("oracle", "fit", "encode")
NODE_PHASES = ("decode", "update")


def _check_bandwidth(bandwidth: float) -> float:
    b = float(bandwidth)
    if not b > 0 or b == float("inf"):
        raise ValueError(f"bandwidth must be a positive finite number of bit/s, got {bandwidth!r}")
    return b


def allgather_seconds(bits_received: float, bandwidth: float) -> float:
    """Seconds for a node to receive ``bits_received`` bits at ``bandwidth`` bit/s."""
    if bits_received < 0:
        raise ValueError("bits_received must be >= 0")
    return float(bits_received) / _check_bandwidth(bandwidth)


def ring_allreduce_seconds(n_values: int, n_workers: int, bits_per_value: int,
                           bandwidth: float) -> float:
    """Seconds of one ring allreduce of ``n_values`` numbers over ``n_workers`` nodes."""
    if n_workers < 1 or n_values < 0 or bits_per_value < 1:
        raise ValueError("need n_workers >= 1, n_values >= 0 and bits_per_value >= 1")
    return 2.0 * (n_workers - 1) / n_workers * n_values * bits_per_value / \
        _check_bandwidth(bandwidth)


class PhaseClock:
    """Wall-clock seconds spent by this process in each phase of an algorithm.

    Per-worker phases (:data:`WORKER_PHASES`) are summed over the workers the process hosts;
    :meth:`node_seconds` turns them into one node's share.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(WORKER_PHASES + NODE_PHASES, 0.0)

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - t0

    def node_seconds(self, n_local_workers: int) -> dict[str, float]:
        """Seconds of one node hosting one worker: per-worker phases divided by the number of
        workers this process hosts, node phases as measured. A process that hosts no worker
        (more ranks than workers) measured no per-worker phase: they count 0 there."""
        if n_local_workers < 0:
            raise ValueError("n_local_workers must be >= 0")
        return {k: (v / max(n_local_workers, 1) if k in WORKER_PHASES else v)
                for k, v in self.seconds.items()}

    def node_total(self, n_local_workers: int) -> float:
        """Sum of :meth:`node_seconds`."""
        return float(sum(self.node_seconds(n_local_workers).values()))
