"""Compiling the node solver's kernels for a configuration, on a tiny problem of that kind.

A configuration is ``(loss, boxed, fit_intercept, shifted, n, p)``: the argument types of the
numba kernels depend on it (not on the shape). When z-space applies to a configuration, the
first process also compiles the z-space loop (:func:`compile_zspace`): the search then races
both node strategies on one node. The first run of a search
compiles in two processes (see :mod:`sparsecert.firstrun.warmup`), which share their work through
numba's on-disk cache. The second process runs :func:`child_main`, which imports only this
module's dependencies (numpy, numba, the kernels): it compiles the kernels that both processes'
top-level kernels call (:func:`compile_shared`) and says so on its standard output; meanwhile
the first process compiles the other callees of the FISTA node kernel
(:func:`compile_node_callees`) and then closes the second process's standard input; the second
process then compiles the node kernel itself (:func:`compile_node_kernel`), loading all its
callees from the cache.

The command line starts that process before it has read the data (:func:`prestart`), so that
its interpreter start and imports overlap the first process's; it then waits for its
configuration on its standard input, and :func:`take_prestarted` hands it to the warm-up (or
:func:`discard_prestarted` ends it when nothing is to be compiled). This module imports only
numpy and the standard library at load time, so the command line can start the process first.
"""

from __future__ import annotations

import atexit
import glob
import hashlib
import os
import subprocess
import sys

import numpy as np

from sparsecert.solvers.losses import DEFAULT_LOSS

__all__ = ["tiny_problem", "shared_calls", "compile_shared", "callee_calls", "compile_claimed",
           "compile_prox", "compile_node_callees", "compile_node_kernel", "zspace_calls",
           "compile_zspace", "child_main", "spawn", "configure", "prestart", "take_prestarted",
           "discard_prestarted", "node_kernel_cached_somewhere", "SHARED_DONE", "SHARED_CONFIG",
           "KERNEL_DIR"]

#: the folder of the node kernel's source (numba's cache of it is next to it, or named after it)
KERNEL_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "solvers", "perspective")
#: the line the compiling process prints once the shared kernels are in numba's cache
SHARED_DONE = "shared-kernels-compiled"
#: the eigenvalue shift of a shifted tiny problem (far below its smallest eigenvalue)
TINY_SHIFT = 1e-3
#: a configuration whose shared kernels (:func:`compile_shared`) have every configuration's
#: argument types
SHARED_CONFIG = (DEFAULT_LOSS, False, False, False, 8, 6)


def tiny_problem(loss: str, boxed: bool, fit_intercept: bool, shifted: bool, n: int, p: int):
    """A tiny problem of the given configuration (deterministic: the same in every process)."""
    from sparsecert.solvers.losses import get_loss
    from sparsecert.solvers.perspective.problem import RelaxationProblem

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, p))
    u = X[:, 0] - X[:, 1]
    target = get_loss(loss).target
    if target == "real":
        y = u + 0.5 * rng.standard_normal(n)
    elif target == "counts":
        y = rng.poisson(np.exp(0.3 * u)).astype(float)
    else:
        y = np.where(u + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
        y[:2] = (1.0, -1.0)
    # a fixed shift (proven by from_data) instead of "auto": the types are what matter here, and
    # no eigen-solver (scipy) has to be loaded by the compiling process
    shift = TINY_SHIFT if shifted and get_loss(loss).takes_shift and n >= p else None
    return RelaxationProblem.from_data(X, y, 1.0, loss=loss, max_abs_coef=1.0 if boxed else None,
                                       eig_shift=shift, fit_intercept=fit_intercept)


def shared_calls(config: tuple) -> list[tuple]:
    """``(kernel, args)`` of the kernels that both the node kernel and the bound evaluation
    call, with the argument types those callers pass for ``config``'s problems."""
    from sparsecert.solvers.loss_kernels import loss_value_grad
    from sparsecert.solvers.perspective._gfun import g_node, gstar_node
    from sparsecert.solvers.perspective._linalg import rmatvec

    prob = tiny_problem(*config)
    n, p = prob.n_samples, prob.n_features
    b, u, z = np.zeros(p), np.zeros(n), np.zeros(n)
    state = np.full(p, 2, dtype=np.int8)
    M = float(prob.M)
    return [(g_node, (b, state, 1, M)), (gstar_node, (b, state, 1, M)),
            (loss_value_grad, (prob.loss_spec, u, prob.y, z)), (rmatvec, (prob.design, z, b))]


def compile_shared(config: tuple) -> None:
    """Compile the kernels that both the node kernel and the bound evaluation call
    (:func:`shared_calls`), so that either process finds them in numba's on-disk cache."""
    for kernel, args in shared_calls(config):
        kernel(*args)


def callee_calls(prob) -> list[tuple]:
    """``(name, kernel, args)`` of the node kernel's callees that the bound evaluation does not
    call, other than the proximal operator (the loss value, ``X b``, the polishing schedule;
    the intercept's dual when ``prob`` carries one), with the argument types the node kernel
    passes for ``prob`` (a tiny problem of the configuration). Either process compiles them
    (:func:`compile_claimed`)."""
    from sparsecert.solvers.loss_kernels import conjugate_sum, loss_value
    from sparsecert.solvers.perspective._bound import icpt_grad_dual
    from sparsecert.solvers.perspective._fista import _polish_due, new_iterate
    from sparsecert.solvers.perspective._linalg import matvec

    n, p = prob.n_samples, prob.n_features
    b, u = np.zeros(p), np.zeros(n)
    it = new_iterate(b, u, 1.0, 0.0)
    it.set("pol_n", n)
    it.set("pol_active", p)
    calls = [("polish_due", _polish_due, (it.x, it.sig, it.sc[0])),
             ("loss_value", loss_value, (prob.loss_spec, u, prob.y)),
             ("matvec", matvec, (prob.design, b, np.zeros(n)))]
    if prob.icpt:
        calls += [("icpt_grad_dual", icpt_grad_dual,
                   (prob.design, prob.y, prob.loss_spec, u, prob.Xty, np.zeros(p),
                    np.zeros(n), np.zeros(p))),
                  ("conjugate_sum", conjugate_sum, (prob.loss_spec, u, prob.y))]
    return calls


def _claim(claims: str | None, name: str) -> bool:
    """Claim the kernel ``name`` for this process (the file ``claims/name`` is created by
    exactly one process); without a claims directory, or if it cannot be written, every
    process claims everything (only the time differs)."""
    if claims is None:
        return True
    try:
        os.close(os.open(os.path.join(claims, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


def compile_claimed(prob, claims: str | None) -> None:
    """Compile, in order, the kernels of :func:`callee_calls` that no other process has
    claimed in the directory ``claims``: both processes run this once their own share is done,
    so whichever is free first takes the next kernel."""
    for name, kernel, args in callee_calls(prob):
        if _claim(claims, name):
            kernel(*args)


def compile_prox(prob) -> None:
    """Compile the proximal operator (with its sort) for ``prob``'s argument types."""
    from sparsecert.solvers.perspective._prox import prox_node

    p = prob.n_features
    prox_node(np.zeros(p), np.full(p, 2, dtype=np.int8), 1, 1.0, float(prob.M))


def compile_node_callees(prob, claims: str | None = None) -> None:
    """Compile the node kernel's callees that the bound evaluation does not call: the proximal
    operator, then those of :func:`callee_calls` not claimed by the other process."""
    compile_prox(prob)
    compile_claimed(prob, claims)


def compile_node_kernel(config: tuple) -> None:
    """Compile the FISTA node kernel for the argument types of ``config``'s problems."""
    from sparsecert.solvers.perspective._fista import (
        fista_chunk,
        fista_data,
        intercept,
        new_iterate,
    )
    from sparsecert.solvers.perspective._prox import prox_node

    prob = tiny_problem(*config)
    n, p = prob.n_samples, prob.n_features
    state = np.full(p, 2, dtype=np.int8)
    prox_node(np.zeros(p), state, 1, 1.0, float(prob.M))
    it = new_iterate(np.zeros(p), np.zeros(n), 1.0, 0.0)
    fista_chunk(fista_data(prob), intercept(prob), state, 1, it, 1e-6, 0, np.inf, 1e-6)


def zspace_calls(prob) -> list[tuple]:
    """``(kernel, args)`` of the z-space loop with the argument types its strategy passes for
    ``prob`` (a problem to which z-space applies: least squares, no box, shift or carried
    intercept)."""
    from sparsecert.solvers.perspective._fista import fista_data
    from sparsecert.solvers.perspective._linalg import sub_design
    from sparsecert.solvers.perspective._zspace import ZColumns, new_ziterate, zspace_chunk

    n, m = prob.n_samples, 2
    DA = sub_design(prob.design, np.arange(m))
    state = np.full(m, 2, dtype=np.int8)
    cols = ZColumns(np.flatnonzero(state == 2), np.ones(m))
    it = new_ziterate(np.zeros(m), n, m)
    return [(zspace_chunk, (fista_data(prob, DA), cols, state, 1, it, 1e-6, 0, np.inf, 1e-6))]


def compile_zspace(prob) -> None:
    """Compile the z-space loop (:func:`zspace_calls`)."""
    for kernel, args in zspace_calls(prob):
        kernel(*args)


def config_args(config: tuple, claims: str | None = None) -> list[str]:
    """``config`` (and the claims directory, see :func:`compile_claimed`) as the compiling
    process's arguments (see :func:`child_main`)."""
    loss, boxed, icpt, shifted, n, p = config
    args = [loss, *("1" if b else "0" for b in (boxed, icpt, shifted)), str(n), str(p)]
    return args if claims is None else [*args, claims]


def child_main(argv: list[str]) -> None:
    """The compiling process: ``argv = [loss, boxed, fit_intercept, shifted, n, p]`` (0/1),
    optionally followed by a claims directory (:func:`compile_claimed`), or empty: then it
    compiles the shared kernels at once and reads the same fields from the first line of its
    standard input (a process started early, see :func:`prestart`; it ends if its input ends
    first).

    After the shared kernels it compiles the node kernel's callees that the other process has
    not claimed, waits for its standard input to reach its end (the other process closes it
    once its own share of the callees is in the cache; should that process end, the input
    ends too), then compiles the node kernel.
    """
    if not argv:
        # the shared kernels' argument types are the same for every configuration of the
        # FISTA node kernel: compile them before the configuration is known
        compile_shared(SHARED_CONFIG)
        print(SHARED_DONE, flush=True)
        try:
            argv = sys.stdin.readline().rstrip("\n").split(maxsplit=6)
        except (OSError, ValueError, AttributeError):
            return
        if not argv:
            return
    config = (argv[0], argv[1] == "1", argv[2] == "1", argv[3] == "1", int(argv[4]),
              int(argv[5]))
    claims = argv[6] if len(argv) > 6 else None
    compile_shared(config)  # (loaded, or already in memory, after the lines above)
    print(SHARED_DONE, flush=True)
    compile_claimed(tiny_problem(*config), claims)
    try:
        sys.stdin.read()
    except (OSError, ValueError, AttributeError):
        pass
    compile_node_kernel(config)


def spawn(config: tuple | None, claims: str | None = None) -> subprocess.Popen | None:
    """Start the compiling process for ``config`` and the claims directory ``claims``
    (``config = None``: it waits for both on its standard input, see :func:`configure`);
    ``None`` if it cannot be started.

    It prints :data:`SHARED_DONE` on its standard output once the shared kernels are in
    numba's cache, and compiles the node kernel once its standard input is closed.
    """
    code = ("import sys; from sparsecert.firstrun.precompile import child_main; "
            "child_main(sys.argv[1:])")
    args = [] if config is None else config_args(config, claims)
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([pkg_root, *filter(None, [env.get("PYTHONPATH")])])
    try:
        return subprocess.Popen([sys.executable, "-c", code, *args], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
    except (OSError, ValueError):
        return None


def configure(child: subprocess.Popen, config: tuple, claims: str | None = None) -> bool:
    """Send ``config`` and ``claims`` to a process started without them; False if it has
    gone."""
    if child.poll() is not None or child.stdin is None:
        return False
    try:
        child.stdin.write(" ".join(config_args(config, claims)) + "\n")
        child.stdin.flush()
    except (OSError, ValueError):
        return False
    return True


_prestarted: list[subprocess.Popen] = []


def node_kernel_cached_somewhere() -> bool | None:
    """Whether numba's cache holds the FISTA node kernel for some configuration, read from the
    file system without importing numba (a hint: numba's cache layout is not a public API).

    Only an index for this Python version, written after the kernel's source file, counts:
    numba ignores an index older than its source (a package upgraded in place), so such a
    run compiles everything, as a first run does.

    ``None`` when the cache is not where this looks (numba then uses a per-user directory
    because the package's own is not writable).
    """
    here = KERNEL_DIR
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    if cache_dir:  # numba: <NUMBA_CACHE_DIR>/<parent>_<sha1 of the source's directory>
        sub = os.path.basename(here) + "_" + hashlib.sha1(here.encode()).hexdigest()
        where = os.path.join(cache_dir, sub)
    elif os.access(here, os.W_OK):
        where = os.path.join(here, "__pycache__")
    else:
        return None
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    try:
        source = os.path.getmtime(os.path.join(here, "_fista.py"))
        return any(os.path.getmtime(f) >= source for f in glob.glob(
            os.path.join(glob.escape(where), f"_fista.fista_chunk-*.{tag}.nbi")))
    except OSError:  # a file gone between the listing and its date, or no source file
        return None


def prestart() -> None:
    """Start the compiling process now, before its configuration is known, when numba's cache
    holds no node kernel yet (a first run); the command line calls this before it reads the
    data, and :func:`take_prestarted` hands the process over."""
    if not _prestarted and node_kernel_cached_somewhere() is False:
        child = spawn(None)
        if child is not None:
            _prestarted.append(child)


def take_prestarted() -> subprocess.Popen | None:
    """The process :func:`prestart` started, if it is still waiting (then it is the caller's)."""
    while _prestarted:
        child = _prestarted.pop()
        if child.poll() is None:
            return child
    return None


def discard_prestarted() -> None:
    """End the process :func:`prestart` started, if nobody took it (nothing to compile)."""
    child = take_prestarted()
    if child is not None:
        # at most it has written shared kernels to numba's cache, each file replaced
        # atomically: killing it loses nothing
        child.kill()
        child.wait()


atexit.register(discard_prestarted)


if __name__ == "__main__":
    child_main(sys.argv[1:])
