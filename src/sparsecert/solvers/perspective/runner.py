"""Calls of a chunked node kernel with a wall-clock limit.

Both iterative kernels (FISTA on ``b``, ``_fista.fista_chunk``, and projected gradient on
``z``, ``_zspace.zspace_chunk``) follow one convention: a call runs at most ``max_iter``
iterations and returns ``(status, iterations done)``, the run's state living in a record the
kernel advances in place. So one runner drives both: without a deadline one call runs the node
to its end (the FISTA kernel returns early only to have its iterate polished); with one, the
calls are chunks of iterations sized to read the clock about four times in the remaining time.
The iterates do not depend on how the run was cut into chunks.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sparsecert.solvers.perspective._fista import ST_CONVERGED, ST_CUTOFF, ST_POLISH

__all__ = ["Runner"]


class Runner:
    """Drives a chunked kernel call ``step(max_iter) -> (status, n_done)``.

    Parameters
    ----------
    deadline : float or None
        ``time.perf_counter()`` value at which the run stops (status ``"time_limit"``).
    max_chunk : int or None
        At most this many iterations per call (``None``: no cap).
    """

    def __init__(self, deadline: float | None, max_chunk: int | None = None):
        self.deadline = deadline
        self.max_chunk = max_chunk
        self.timed_out = False

    def run(self, step: Callable[[int], tuple[int, int]], n_max: int,
            polish: Callable[[], int] | None = None) -> tuple[int, int]:
        """Advance the run by at most ``n_max`` iterations; returns ``(status, n_done)``.

        ``polish``: called whenever the kernel returns ``ST_POLISH`` (a polish of the FISTA
        iterate is due); returns the status that replaces it (0: go on).
        """
        done = 0
        status = 0
        chunk = n_max if self.deadline is None else 20
        while done < n_max:
            m = min(chunk, n_max - done)
            if self.max_chunk is not None:
                m = min(m, self.max_chunk)
            t_start = time.perf_counter()
            status, n_it = step(m)
            done += n_it
            if status == ST_POLISH:
                status = polish()
            if status != 0:
                break
            if self.deadline is not None:
                now = time.perf_counter()
                if now >= self.deadline:
                    self.timed_out = True
                    break
                per_it = (now - t_start) / max(n_it, 1)
                chunk = int(min(max(20, 0.25 * (self.deadline - now) / max(per_it, 1e-9)), 5000))
        return status, done

    def status_name(self, status: int) -> str:
        """The result status of a run that returned ``status``."""
        if status == ST_CONVERGED:
            return "converged"
        if status == ST_CUTOFF:
            return "cutoff"
        return "time_limit" if self.timed_out else "max_iter"
