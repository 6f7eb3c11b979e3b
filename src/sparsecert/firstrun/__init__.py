"""The first run: compiling the numerical kernels once, on both cores, and saying so.

numba compiles the kernels on their first call and caches them on disk, so only the first run
of a configuration pays. This room holds everything about that, apart from the search it
prepares:

* :mod:`~sparsecert.firstrun.cache` -- is a kernel already compiled for these argument types?
  (numba's cache index, read-only);
* :mod:`~sparsecert.firstrun.precompile` -- what to compile for a configuration, on a tiny
  problem of that kind, and the second process that compiles the node kernel;
* :mod:`~sparsecert.firstrun.warmup` -- the orchestration: both processes, then a silent tiny
  search, and :func:`compile_first_run`, which the front door (``certify``,
  ``certify_path``) calls before the search, with the search's progress log.

The search itself (``sparsecert.bnb``) does not import this room; the room imports the search
only for its tiny search. Importing this package loads nothing else (the compiling process
imports ``precompile`` alone).
"""

from sparsecert._lazy import lazy_names

_LAZY = {
    "compile_first_run": "sparsecert.firstrun.warmup",
    "needs_compiling": "sparsecert.firstrun.warmup",
    "warm_up": "sparsecert.firstrun.warmup",
    "prestart": "sparsecert.firstrun.precompile",
    "discard_prestarted": "sparsecert.firstrun.precompile",
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [*_LAZY]
