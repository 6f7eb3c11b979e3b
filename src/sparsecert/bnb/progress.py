"""A MIP-solver-style progress log."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["ProgressLog"]


class ProgressLog:
    """Prints a header and a line every ``interval`` seconds (and on demand).

    Parameters
    ----------
    verbose : int
        0 silent; 1 a line every ``interval`` seconds and a final line; 2 a line per batch.
    interval : float
        Seconds between lines at ``verbose=1``.
    write : callable, optional
        Where lines go (default: ``sys.stdout`` with a flush).
    """

    HEADER = (f"{'time':>8} {'nodes':>9} {'open':>8} {'incumbent':>15} {'lower bound':>15} "
              f"{'gap':>9}")

    def __init__(self, verbose: int = 1, interval: float = 5.0,
                 write: Callable[[str], None] | None = None) -> None:
        self.verbose = int(verbose)
        self.interval = float(interval)
        self._write = write or self._stdout
        self._last = -float("inf")
        self._started = False

    @staticmethod
    def _stdout(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def message(self, text: str) -> None:
        """A free-form line (shown when ``verbose >= 1``)."""
        if self.verbose >= 1:
            self._write(text)

    def update(self, elapsed: float, nodes: int, n_open: int, upper: float, lower: float,
               gap: float, force: bool = False) -> None:
        """Maybe print a progress line."""
        if self.verbose <= 0:
            return
        now = time.perf_counter()
        if not (force or self.verbose >= 2 or now - self._last >= self.interval):
            return
        if not self._started:
            self._write(self.HEADER)
            self._started = True
        self._last = now
        gap_s = f"{100 * gap:8.4f}%" if gap != float("inf") else "      inf"
        self._write(f"{elapsed:7.1f}s {nodes:9d} {n_open:8d} {upper:15.8g} {lower:15.8g} {gap_s}")
