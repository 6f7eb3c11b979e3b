"""Compilations during a search: seen, said, timed, and kept out of the time limit.

The front door compiles what a search uses before it starts when numba's cache misses the node
kernel (:mod:`sparsecert.firstrun`). The cache can also miss only part of what a search uses:
after the relaxation alone ran (it compiles the node kernel but not the refit or the
heuristics), or after an upgrade that changed some kernel modules and not others. numba then
compiles those kernels on their first call, inside the search. :class:`CompileWatch` listens to
numba's ``numba:compile`` event (fired on a cache miss only, never on a cache load) while the
search runs: it says which kernel is being compiled, times each compilation (the outermost one
of a thread: a kernel's uncompiled callees compile inside it), and hands the seconds to the
search, which reports them with its compile time and moves its deadline by as much.

It sees the compilations of this process only (the threads backend and the caller's own
thread); a worker process of the processes backend compiles on its own, unseen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from numba.core import event

__all__ = ["CompileWatch"]

#: numba's event for a compilation (a cache miss)
COMPILE_EVENT = "numba:compile"


def _kernel_name(data: object) -> str:
    """The compiled function's qualified name, from the event's data (``"a kernel"`` when the
    event does not carry one)."""
    try:
        func = data["dispatcher"].py_func
        return f"{func.__module__.rsplit('.', 1)[-1]}.{func.__qualname__}"
    except Exception:  # noqa: BLE001 - the name is for the log only
        return "a kernel"


class CompileWatch(event.Listener):
    """Time numba's compilations while active (a context manager).

    Parameters
    ----------
    on_start : callable, optional
        ``on_start(name)`` when a compilation starts (the outermost one of its thread).
    on_end : callable, optional
        ``on_end(name, seconds)`` when it ends.

    Attributes
    ----------
    seconds : float
        Seconds spent compiling so far (outermost compilations, summed over threads).
    kernels : list of str
        The kernels compiled, in order of their end.
    """

    def __init__(self, on_start: Callable[[str], None] | None = None,
                 on_end: Callable[[str, float], None] | None = None) -> None:
        self.seconds = 0.0
        self.kernels: list[str] = []
        self._on_start = on_start
        self._on_end = on_end
        self._lock = threading.Lock()
        self._local = threading.local()

    def on_start(self, ev: event.Event) -> None:  # noqa: D102 - numba's Listener interface
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0:
            self._local.name = _kernel_name(ev.data)
            self._local.t0 = time.perf_counter()
            if self._on_start is not None:
                self._on_start(self._local.name)

    def on_end(self, ev: event.Event) -> None:  # noqa: D102 - numba's Listener interface
        self._local.depth = depth = getattr(self._local, "depth", 1) - 1
        if depth > 0 or not hasattr(self._local, "t0"):
            return
        seconds = time.perf_counter() - self._local.t0
        name = self._local.name
        del self._local.t0
        with self._lock:
            self.seconds += seconds
            self.kernels.append(name)
        if self._on_end is not None:
            self._on_end(name, seconds)

    @classmethod
    def for_search(cls, progress, add_seconds: Callable[[float], None]) -> CompileWatch:
        """A watch that says each compilation on ``progress`` (a
        :class:`sparsecert.bnb.progress.ProgressLog`) and hands its seconds to
        ``add_seconds``."""

        def started(kernel: str) -> None:
            progress.message(f"compiling {kernel} (not in numba's cache; the time limit "
                             "waits) ...")

        def ended(kernel: str, seconds: float) -> None:
            add_seconds(seconds)
            progress.message(f"compiled {kernel} in {seconds:.1f} s")

        return cls(started, ended)

    def __enter__(self) -> CompileWatch:
        event.register(COMPILE_EVENT, self)
        return self

    def __exit__(self, *exc) -> None:
        event.unregister(COMPILE_EVENT, self)
