"""Ctrl-C while a finished search's result is being completed: deferred once.

Ctrl-C during a search stops it, and the search returns its best model with the status
``"interrupted"`` and a certificate of the bound it reached. Completing that result takes
time of its own: the workers finish their node solves, the certificate's bounds are evaluated
rigorously on the data, the command line writes the files. A reflexive second Ctrl-C landing
there would throw the result away. Inside :func:`deferred_interrupt` the first Ctrl-C is
deferred (one line on standard error says so) and the work goes on; a second one raises
:class:`KeyboardInterrupt` as usual, so the user can always abandon it.

Only the main thread can own the handler, and only Python's default handler is replaced: in a
thread, or when the program installed its own handler, the scope changes nothing.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["deferred_interrupt", "DEFERRED_MESSAGE"]

#: the line a deferred Ctrl-C prints
DEFERRED_MESSAGE = ("sparsecert: finishing the result found so far and its certificate; "
                    "press Ctrl-C again to abandon them")


class _Deferral:
    """The handler of one scope: the first SIGINT is noted, the next one raises."""

    def __init__(self) -> None:
        self.pressed = False

    def __call__(self, signum, frame) -> None:
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True
        try:
            print(DEFERRED_MESSAGE, file=sys.stderr, flush=True)
        except (OSError, ValueError):  # no usable standard error: defer silently
            pass


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """A scope in which the first Ctrl-C (SIGINT) is deferred and a second one interrupts.

    Nested scopes share the outer one's handler. Outside the main thread, or when SIGINT is
    not handled by Python's default handler, the scope does nothing.
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    previous = signal.signal(signal.SIGINT, _Deferral())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
