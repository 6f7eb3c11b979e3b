"""The first run: compile the kernels a search needs, once, on both cores, and say so.

numba compiles the node solver, the refit and the heuristics' kernels on their first call and
caches them on disk (next to the package), so only the first run of a configuration (loss,
box, intercept, eigen shift) pays. :func:`needs_compiling` reads numba's cache to tell; then
:func:`warm_up` compiles what a search of that configuration uses, on a tiny problem of the
same configuration, so that the caller can announce the compilation and time it:
:func:`compile_first_run` does both, with the search's progress log, and is what the front
door (``certify``, ``certify_path``) calls before the search.

numba compiles one function at a time per process, so :func:`warm_up` shares the work with a
second process through numba's on-disk cache (see
:mod:`sparsecert.firstrun.precompile`), and compiles no kernel twice: the second
process compiles the kernels that the node kernel and the bound evaluation both call and says
so, while this process compiles the proximal operator; then both take the node kernel's other
callees (the loss value, ``X b``, the polishing schedule, the intercept's dual), each claiming
the next one in a directory so that whichever process is free first compiles it, and this
process lets the second one compile the node kernel itself, loading all its callees from the
cache. Meanwhile this process compiles what only it uses (the relaxed indicators, the refit
and the heuristics, the z-space loop when the problem's nodes can take it: the search then
races both node strategies on one node) and the bound evaluation.
The tiny search that follows loads everything from the cache. Should the second process fail
or be slow, this process compiles what is missing itself: only the time differs.

The command line starts the second process before it reads the data
(:func:`sparsecert.firstrun.precompile.prestart`), so that its interpreter start and
imports overlap this process's; :func:`warm_up` then sends it the configuration, and a run with
nothing to compile ends it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time

import numpy as np

from sparsecert.firstrun.cache import node_kernels_cached, zspace_applies
from sparsecert.firstrun.precompile import (
    SHARED_DONE,
    compile_node_callees,
    compile_node_kernel,
    compile_zspace,
    configure,
    discard_prestarted,
    spawn,
    take_prestarted,
    tiny_problem,
)

__all__ = ["compile_first_run", "needs_compiling", "warm_up", "tiny_config", "tiny_problem",
           "compile_node_kernel", "discard_prestarted"]

#: the tiny problems' shape (n >= p, so that a shifted configuration gets its shift)
TINY_SHAPE = (8, 6)
#: seconds to wait for the compiling process before compiling here
_CHILD_TIMEOUT = 300.0


def needs_compiling(problem) -> bool:
    """True when numba's cache misses a node kernel a search of ``problem`` uses."""
    return node_kernels_cached(problem) is False


def compile_first_run(problem, progress) -> float:
    """On a first run (no node kernel of ``problem``'s configuration in numba's cache) and
    with ``progress.verbose >= 1``: say so, compile what a search of the configuration uses
    (:func:`warm_up`) with ``progress`` (a :class:`sparsecert.bnb.progress.ProgressLog`)
    ticking, and say how long it took. Otherwise end the compiling process the command line
    may have started early (a quiet run compiles as it goes). Returns the seconds spent
    compiling (0.0 when nothing was), which the caller hands to the engine
    (``BranchAndBound.compile_time``: the result reports it apart from the search)."""
    if progress.verbose < 1 or not needs_compiling(problem):
        discard_prestarted()
        return 0.0
    progress.message("compiling the numerical kernels (first run only: numba caches them for "
                     "later runs) ...")
    t0 = time.perf_counter()
    with progress.ticking(t0), progress.phase("compiling"):
        seconds = warm_up(problem)
    progress.message(f"kernels compiled in {seconds:.1f} s")
    return time.perf_counter() - t0


def tiny_config(problem) -> tuple:
    """``(loss, boxed, fit_intercept, shifted, n, p)`` of a tiny problem of ``problem``'s
    configuration: its kernels take the same argument types."""
    return (problem.loss, bool(problem.M < np.inf), bool(problem.fit_intercept),
            bool(problem.mu > 0.0), *TINY_SHAPE)


def _spawn(config: tuple, claims: str | None = None) -> subprocess.Popen | None:
    """Start the process that compiles the node kernel (``None`` if it cannot be started);
    see :func:`sparsecert.firstrun.precompile.spawn`."""
    return spawn(config, claims)


def _child_for(config: tuple, claims: str | None) -> subprocess.Popen | None:
    """The compiling process for ``config``: the one the command line started early, if it is
    still waiting, else a new one."""
    child = take_prestarted()
    if child is not None:
        if configure(child, config, claims):
            return child
        child.kill()
        child.wait()
    return _spawn(config, claims)


def _release(child: subprocess.Popen | None) -> None:
    """Let ``child`` compile the node kernel (its other callees are in the cache now)."""
    if child is not None and child.stdin is not None:
        try:
            child.stdin.close()
        except OSError:
            pass


def _end(child: subprocess.Popen | None, wait: bool) -> None:
    """Let ``child`` finish the node kernel (``wait``), or stop it at once: when this process
    is interrupted (Ctrl-C, a notebook's interrupt, which reaches this process only) or failed,
    nobody waits for the kernel, and the child is not left compiling on its own."""
    if child is None:
        return
    _release(child)
    if wait:
        try:
            child.wait(timeout=_CHILD_TIMEOUT)
            return
        except subprocess.TimeoutExpired:
            pass
    child.kill()
    child.wait()


def _watch(child: subprocess.Popen | None) -> threading.Event:
    """An event set when ``child`` has compiled the shared kernels, ended, or was never started."""
    done = threading.Event()
    if child is None or child.stdout is None:
        done.set()
        return done

    def read() -> None:
        try:
            for line in child.stdout:
                if line.strip() == SHARED_DONE:
                    break
        except (OSError, ValueError):
            pass
        finally:
            done.set()
        try:
            child.stdout.read()  # drain, so that the child never blocks on a full pipe
        except (OSError, ValueError):
            pass

    threading.Thread(target=read, name="sparsecert-compile-watch", daemon=True).start()
    return done


def _compile_first(tiny, zspace: bool) -> None:
    """What only this process's kernels call, compiled while the other process compiles the
    node kernel: the relaxed indicators, the refit and the heuristics (and the z-space loop
    when ``zspace``)."""
    from sparsecert.solvers.heuristics import SupportRefitter, beam_search, swap_search
    from sparsecert.solvers.perspective._gfun import relaxed_z_into
    from sparsecert.solvers.perspective._prox import prox_node

    p = tiny.n_features
    state = np.full(p, 2, dtype=np.int8)
    prox_node(np.zeros(p), state, 1, 1.0, float(tiny.M))  # from the cache if compiled above
    relaxed_z_into(np.zeros(p), state, 1, np.zeros(p))
    if zspace:
        compile_zspace(tiny)
    refitter = SupportRefitter.for_problem(tiny)
    swap_search(refitter, beam_search(refitter, 2), 2)


def _compile_bound(tiny) -> None:
    """The bound evaluation (its callees shared with the node kernel come from the cache) and a
    working set's step-size estimate."""
    from sparsecert.solvers.perspective._linalg import design_norm_sq, xb
    from sparsecert.solvers.perspective.evaluate import full_bound, objective

    p = tiny.n_features
    state = np.full(p, 2, dtype=np.int8)
    b = np.zeros(p)
    ub = xb(tiny.design, b)
    objective(tiny, state, 2, b, ub)
    full_bound(tiny, state, 2, b, ub)
    design_norm_sq(tiny.design)


def _compile_polish(tiny, problem) -> None:
    """The Newton polish, for a problem whose full FISTA nodes polish (enough columns, no
    intercept carried as a variable); its loss kernels come from the cache."""
    from sparsecert.solvers.perspective.polish import POLISH_MIN_COLUMNS, newton_candidate

    if problem.n_features < POLISH_MIN_COLUMNS or problem.icpt:
        return
    p = tiny.n_features
    state = np.full(p, 2, dtype=np.int8)
    newton_candidate(tiny.design, tiny.y, tiny.loss_spec, float(tiny.lam_eff), float(tiny.mu),
                     np.ones(p), state, 1, 1)


def warm_up(problem) -> float:
    """Compile what a search of ``problem``'s configuration uses, then run a silent search on a
    tiny problem like it; returns the seconds it took."""
    from sparsecert.bnb.search import BnBSettings, BranchAndBound

    t0 = time.perf_counter()
    config = tiny_config(problem)
    try:
        claims = tempfile.mkdtemp(prefix="sparsecert-compile-")
    except OSError:  # no temporary directory: both processes compile every callee
        claims = None
    child = _child_for(config, claims)
    shared_done = _watch(child)
    tiny = tiny_problem(*config)
    finished = False
    try:
        if child is not None:
            compile_node_callees(tiny, claims)  # the callees the other process has not taken
            _release(child)
        _compile_first(tiny, zspace_applies(problem))
        # the shared kernels: loaded from the cache once the other process has them (should it
        # take too long or fail, compiled here: only the time differs)
        shared_done.wait(timeout=_CHILD_TIMEOUT)
        _compile_bound(tiny)
        _compile_polish(tiny, problem)
        finished = True
    finally:
        _end(child, finished)
        if claims is not None:
            shutil.rmtree(claims, ignore_errors=True)
    BranchAndBound(tiny, 2, BnBSettings(verbose=0)).run()
    return time.perf_counter() - t0
