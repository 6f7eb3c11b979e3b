"""A MIP-solver-style progress log that keeps ticking through long phases."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["ProgressLog"]


class ProgressLog:
    """Prints a header and a line every ``interval`` seconds (and on demand).

    While :meth:`ticking` is active a background thread makes sure that a line appears at least
    every ``interval`` seconds, also while the caller is busy in one long step (the numba
    compilation of a first run, the start heuristics, one hard node): it repeats the last
    known row with the current time and the name of the phase set by :meth:`phase`.

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
        self._lock = threading.RLock()
        self._row: tuple[int, int, float, float, float] = (0, 0, float("inf"), -float("inf"),
                                                            float("inf"))
        self._phase: str | None = None

    @staticmethod
    def _stdout(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def message(self, text: str) -> None:
        """A free-form line (shown when ``verbose >= 1``)."""
        if self.verbose >= 1:
            with self._lock:
                self._write(text)
                self._last = time.perf_counter()

    def due(self) -> bool:
        """Whether :meth:`update` would print a line now."""
        return self.verbose >= 2 or (self.verbose == 1
                                     and time.perf_counter() - self._last >= self.interval)

    def update(self, elapsed: float, nodes: int, n_open: int, upper: float, lower: float,
               gap: float, force: bool = False) -> None:
        """Maybe print a progress line."""
        if self.verbose <= 0:
            return
        with self._lock:
            self._row = (nodes, n_open, upper, lower, gap)
            now = time.perf_counter()
            if not (force or self.verbose >= 2 or now - self._last >= self.interval):
                return
            self._line(elapsed, self._row, "")

    def _line(self, elapsed: float, row, note: str) -> None:
        nodes, n_open, upper, lower, gap = row
        if not self._started:
            self._write(self.HEADER)
            self._started = True
        self._last = time.perf_counter()
        gap_s = f"{100 * gap:8.4f}%" if gap != float("inf") else "      inf"
        self._write(f"{elapsed:7.1f}s {nodes:9d} {n_open:8d} {upper:15.8g} {lower:15.8g} {gap_s}"
                    + (f"  {note}" if note else ""))

    def _tick(self, elapsed: float) -> None:
        """The ticker's line: the last row with the current time once the table has started,
        a short note before (e.g. while the kernels compile)."""
        if self._started:
            self._line(elapsed, self._row, self._phase or "")
        else:
            self._last = time.perf_counter()
            self._write(f"{elapsed:7.1f}s  {self._phase or 'working'} ...")

    @contextlib.contextmanager
    def phase(self, name: str | None) -> Iterator[None]:
        """Name the current phase in the lines the ticker prints (e.g. ``"heuristics"``)."""
        with self._lock:
            previous, self._phase = self._phase, name
        try:
            yield
        finally:
            with self._lock:
                self._phase = previous

    def note(self, name: str | None) -> None:
        """Rename the current phase (e.g. with how far a long phase has got)."""
        with self._lock:
            self._phase = name

    @contextlib.contextmanager
    def ticking(self, t0: float) -> Iterator[None]:
        """Inside the block, a line at least every ``interval`` seconds (time since ``t0``)."""
        if self.verbose <= 0:
            yield
            return
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(min(0.25, self.interval / 4)):
                with self._lock:
                    if stop.is_set():
                        return
                    if time.perf_counter() - self._last >= self.interval:
                        self._tick(time.perf_counter() - t0)

        thread = threading.Thread(target=tick, name="sparsecert-progress", daemon=True)
        with self._lock:
            self._last = max(self._last, time.perf_counter())
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
