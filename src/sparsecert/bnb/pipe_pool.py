"""The engine's pool of worker processes: tasks written straight to each worker's pipe.

:class:`PipePool` is the executor of ``backend="processes"`` (on POSIX systems). It differs
from :class:`concurrent.futures.ProcessPoolExecutor` where the engine's caller-runs scheme
(:class:`sparsecert.bnb.evaluate.OutcomeStream`) needs it to:

* the engine's thread writes each task to the workers' pipes when it submits it, and reads
  the outcomes when it asks for them: no thread of the engine's process moves tasks or
  outcomes, so none competes with the engine's thread (which runs node tasks too) for the
  interpreter lock, and a worker never waits for such a thread to hand it its next task (a
  ``ProcessPoolExecutor`` queues one task ahead of its workers and moves the next one from its
  own thread when an outcome comes back; on the parallel figure's tree, 2 cores, its worker
  waited 11-35% of the search between tasks);
* every submitted task is in every worker's pipe at once; a task runs where it is first
  *claimed*: the workers and the engine's thread (``future.cancel()``, as the caller-runs
  scheme takes a task no worker has started) claim the tasks in submission order through one
  shared counter, so each task runs exactly once and a worker skips the tasks claimed before
  it reads them.

The engine's process never blocks on a write (its pipe ends do not block; what a full pipe
does not take waits in an outbox, sent whenever the engine's thread waits for an outcome), so
a worker blocked writing an outcome cannot deadlock with it. On Linux the pipes are enlarged to
1 MiB where the system allows (a worker can then write several outcomes while the engine's
thread runs a task of its own). The workers ignore SIGINT: a Ctrl-C reaches the engine, which
stops the search and shuts the pool down (the workers skip every task not started, finish the
one they run and exit). A worker that dies makes every outcome still expected from the pool
raise :class:`WorkerDied`, also one killed while it held the claim lock (then the engine stops
waiting for the lock and shutdown ends the other workers).

Used from one thread (the engine's); :func:`available` says whether the system supports it.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable
from typing import Any

__all__ = ["PipePool", "WorkerDied", "available"]

#: a frame's header: the task's sequence number and the payload's length in bytes
_HEADER = struct.Struct("<qq")
#: the claim counter's value once the pool is shut down: no task is claimed any more
_CLOSED = 2**62
#: seconds the engine waits for the claim lock before it asks whether a worker died holding it
_LOCK_PATIENCE = 0.5
#: the pipe size asked for on Linux (``F_SETPIPE_SZ``; the system's maximum caps it)
PIPE_SIZE = 1 << 20


def available() -> bool:
    """Whether this system runs the pool (POSIX pipes, ``select`` on them)."""
    return os.name == "posix"


class WorkerDied(RuntimeError):
    """A worker process of the pool ended while the search still expected outcomes of it."""


def _enlarge(fd: int) -> None:
    """Ask for a 1 MiB pipe buffer (Linux; silently nothing elsewhere or when refused)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    except (ImportError, AttributeError, OSError):
        pass


def _read_exact(fd: int, size: int) -> bytes | None:
    """``size`` bytes from a blocking ``fd``; None at end of file."""
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, PIPE_SIZE))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _wait_fds(readable: list[int], writable: list[int], timeout: float | None) -> bool:
    """Wait until one of ``readable`` can be read or one of ``writable`` written (``poll``
    where the system has it: no limit on the descriptors' numbers); False on a timeout."""
    if hasattr(select, "poll"):
        poller = select.poll()
        for fd in readable:
            poller.register(fd, select.POLLIN)
        for fd in writable:
            poller.register(fd, select.POLLOUT)
        return bool(poller.poll(None if timeout is None else max(0, int(timeout * 1000)) + 1))
    r, w, _ = select.select(readable, writable, [], timeout)
    return bool(r or w)


def _worker(tasks, outcomes, claim, lock, initializer, initargs, inherited) -> None:
    """A worker process: read every task frame, run those it claims, write their outcomes.
    ``inherited``: the engine's pipe ends a forked worker holds copies of (closed here, so
    that closing the engine's end of a task pipe ends its worker's input)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the engine's process handles Ctrl-C
    for fd in inherited:
        with contextlib.suppress(OSError):
            os.close(fd)
    if initializer is not None:
        initializer(*initargs)
    rfd, wfd = tasks.fileno(), outcomes.fileno()
    while True:
        head = _read_exact(rfd, _HEADER.size)
        if head is None:
            break
        seq, size = _HEADER.unpack(head)
        body = _read_exact(rfd, size)
        if body is None:
            break
        with lock:  # tasks are claimed in submission order: the counter is the next one
            mine = claim.value == seq
            if mine:
                claim.value = seq + 1
        if not mine:
            continue
        try:
            fn, args, kwargs = pickle.loads(body)
            payload = pickle.dumps((True, fn(*args, **kwargs)), pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - the engine re-raises it
            try:
                payload = pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                payload = pickle.dumps((False, RuntimeError(repr(exc))))
        _write_all(wfd, _HEADER.pack(seq, len(payload)) + payload)


class _Future(cf.Future):
    """A task's future: ``cancel`` claims the task for the caller, ``done`` and ``result``
    read what the workers sent."""

    def __init__(self, pool: PipePool, seq: int) -> None:
        super().__init__()
        self._pool, self._seq = pool, seq

    def cancel(self) -> bool:
        if self.running() or super().done():
            return super().cancel()  # False, or True for a cancelled one
        if not self._pool._claim(self._seq):
            if not super().done():  # (done: failed with the pool, see _claim)
                self.set_running_or_notify_cancel()  # a worker has it
            return False
        return super().cancel()

    def done(self) -> bool:
        if not super().done():
            self._pool._pump(block=False)
        return super().done()

    def _wait(self, timeout: float | None) -> None:
        end = None if timeout is None else time.monotonic() + timeout
        while not super().done():
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                raise cf.TimeoutError()
            self._pool._pump(block=True, timeout=left)

    def result(self, timeout=None):
        self._wait(timeout)
        return super().result(0)

    def exception(self, timeout=None):
        self._wait(timeout)
        return super().exception(0)


class _Worker:
    """The engine's side of one worker: the process, its pipe ends, the unsent and unread
    bytes."""

    def __init__(self, process, tasks_w, outcomes_r) -> None:
        self.process, self.tasks_w, self.outcomes_r = process, tasks_w, outcomes_r
        self.wfd, self.rfd = tasks_w.fileno(), outcomes_r.fileno()
        os.set_blocking(self.wfd, False)
        os.set_blocking(self.rfd, False)
        self.outbox = bytearray()
        self.inbox = bytearray()
        self.open = True  # its outcome pipe has not reached end of file


class PipePool(cf.Executor):
    """``max_workers`` worker processes fed through pipes (see the module's docstring).

    Parameters
    ----------
    max_workers : int
        Worker processes (>= 1).
    initializer, initargs
        Called in each worker before its first task (as for ``ProcessPoolExecutor``).
    mp_context : multiprocessing context, optional
        How the workers start (default: the platform's default).
    """

    def __init__(self, max_workers: int, initializer: Callable | None = None,
                 initargs: tuple = (), mp_context=None) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        ctx = mp_context if mp_context is not None else mp.get_context()
        self._claim_counter = ctx.RawValue("q", 0)
        self._lock = ctx.Lock()
        self._seq = 0
        self._futures: dict[int, _Future] = {}
        self._workers: list[_Worker] = []
        self._shut = False
        self._lock_lost = False  # a worker died holding the claim lock
        try:
            for _ in range(max_workers):
                tasks_r, tasks_w = ctx.Pipe(duplex=False)
                outcomes_r, outcomes_w = ctx.Pipe(duplex=False)
                for conn in (tasks_w, outcomes_w):
                    _enlarge(conn.fileno())
                # a forked worker inherits every pipe end the engine holds
                inherited = ([tasks_w.fileno(), outcomes_r.fileno()]
                             + [fd for w in self._workers for fd in (w.wfd, w.rfd)]
                             if ctx.get_start_method() == "fork" else [])
                proc = ctx.Process(target=_worker, daemon=True, name="sparsecert-worker",
                                   args=(tasks_r, outcomes_w, self._claim_counter, self._lock,
                                         initializer, initargs, inherited))
                proc.start()
                tasks_r.close()  # the worker's ends: closed here, so that end of file shows
                outcomes_w.close()
                self._workers.append(_Worker(proc, tasks_w, outcomes_r))
        except BaseException:
            self.shutdown(wait=False)
            raise

    # -- claims ------------------------------------------------------------------------------
    def _hold(self) -> bool:
        """Take the claim lock; False when it is lost. A worker killed between taking and
        releasing it (a window of a few instructions) leaves it held for ever: when the lock
        stays taken while a worker is dead, every pending task fails with
        :class:`WorkerDied` instead of the engine waiting for ever."""
        while not self._lock.acquire(timeout=_LOCK_PATIENCE):
            if any(not w.process.is_alive() for w in self._workers):
                if self._lock.acquire(timeout=_LOCK_PATIENCE):
                    return True
                self._lock_lost = True
                return False
        return True

    def _claim(self, seq: int) -> bool:
        """Claim task ``seq`` for the calling thread: True when no worker has it (it is the
        next one in order); its outcome is then no longer expected from the workers."""
        if not self._hold():
            self._fail_pending("a worker process of the search died holding the pool's "
                               "claim lock")
            return False
        try:
            if self._claim_counter.value != seq:
                return False
            self._claim_counter.value = seq + 1
        finally:
            self._lock.release()
        self._futures.pop(seq, None)
        return True

    def _close_claims(self) -> None:
        """No task is claimed any more (the counter's closed value; written without the
        lock when it is lost, as nobody can take it then)."""
        if self._lock_lost or not self._hold():
            self._claim_counter.value = _CLOSED
            return
        try:
            self._claim_counter.value = _CLOSED
        finally:
            self._lock.release()

    # -- the executor ------------------------------------------------------------------------
    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        if self._shut:
            raise RuntimeError("cannot submit to a pool that was shut down")
        seq = self._seq
        self._seq += 1
        body = pickle.dumps((fn, args, kwargs), pickle.HIGHEST_PROTOCOL)
        frame = _HEADER.pack(seq, len(body)) + body
        fut = _Future(self, seq)
        self._futures[seq] = fut
        for w in self._workers:
            w.outbox += frame
        self._pump(block=False)
        return fut

    def _pump(self, block: bool, timeout: float | None = None) -> None:
        """Write what the pipes take, read what the workers sent; with ``block``, wait until
        something was read (or a worker ended, or ``timeout`` seconds passed)."""
        while True:
            readable = self._flush_and_read()
            if readable or not block:
                return
            if not self._futures:
                return
            rlist = [w.rfd for w in self._workers if w.open]
            wlist = [w.wfd for w in self._workers if w.outbox and w.open]
            if not rlist:
                self._fail_pending("the pool's worker processes have ended")
                return
            if not _wait_fds(rlist, wlist, timeout) and timeout is not None:
                return

    def _flush_and_read(self) -> bool:
        got = False
        for w in self._workers:
            if w.outbox and w.open:
                try:
                    n = os.write(w.wfd, w.outbox)
                    del w.outbox[:n]
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    w.outbox.clear()
            while w.open:
                try:
                    chunk = os.read(w.rfd, PIPE_SIZE)
                except BlockingIOError:
                    break
                if not chunk:
                    w.open = False
                    got = True
                    self._worker_ended(w)
                    break
                w.inbox += chunk
                got = self._parse(w) or got
        return got

    def _parse(self, w: _Worker) -> bool:
        got = False
        while len(w.inbox) >= _HEADER.size:
            seq, size = _HEADER.unpack_from(w.inbox)
            end = _HEADER.size + size
            if len(w.inbox) < end:
                break
            ok, value = pickle.loads(memoryview(w.inbox)[_HEADER.size:end])
            del w.inbox[:end]
            fut = self._futures.pop(seq, None)
            got = True
            if fut is None or fut.cancelled():
                continue
            if not fut.running():
                fut.set_running_or_notify_cancel()
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)
        return got

    def _worker_ended(self, w: _Worker) -> None:
        """A worker's outcome pipe reached end of file: expected after shutdown; otherwise the
        worker died, and no outcome still expected can be trusted to come."""
        if self._shut:
            return
        w.process.join(timeout=1.0)
        self._fail_pending(f"a worker process of the search ended unexpectedly (exit code "
                           f"{w.process.exitcode})")

    def _fail_pending(self, message: str) -> None:
        self._close_claims()  # the other workers start nothing more
        for fut in self._futures.values():
            if not fut.done():
                if not fut.running():
                    fut.set_running_or_notify_cancel()
                fut.set_exception(WorkerDied(message))
        self._futures.clear()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the workers: tasks not claimed yet are cancelled (whatever
        ``cancel_futures``: the pool serves one search), the workers finish the task they run
        and exit; ``wait`` waits for them (reading and dropping their outcomes meanwhile)."""
        if self._shut:
            return
        self._shut = True
        self._close_claims()
        if self._lock_lost:  # the live workers would wait for the lock for ever
            for w in self._workers:
                if w.process.is_alive():
                    w.process.kill()
        for fut in self._futures.values():
            cf.Future.cancel(fut)  # (not a claim: a pending one is simply cancelled)
        for w in self._workers:
            w.outbox.clear()
            w.tasks_w.close()  # end of file after the frames already sent: the worker exits
        if wait:
            while any(w.open for w in self._workers):
                self._flush_and_read()
                rlist = [w.rfd for w in self._workers if w.open]
                if rlist:
                    _wait_fds(rlist, [], 0.5)
                for w in self._workers:  # a worker gone without end of file (killed)
                    if w.open and not w.process.is_alive():
                        self._flush_and_read()
                        w.open = False
            for w in self._workers:
                w.process.join()
        for w in self._workers:
            w.outcomes_r.close()
        self._futures.clear()

    def __reduce__(self) -> Any:  # pragma: no cover - a pool does not travel
        raise TypeError("a PipePool cannot be pickled")
