"""The perspective relaxation of k-sparse GLMs: numba kernels, FISTA with restarts, dual bound.

Public names: :class:`RelaxationProblem`, :class:`RelaxationResult`, :func:`solve_node`,
:func:`perspective_relaxation`.

They are imported on first use, so that importing one kernel module (as the process that
compiles kernels on a first run does) does not load the solvers.
"""

from sparsecert._lazy import lazy_names

_LAZY = {  # in the order of __all__
    "RelaxationProblem": "sparsecert.solvers.perspective.problem",
    "RelaxationResult": "sparsecert.solvers.perspective.result",
    "solve_node": "sparsecert.solvers.perspective.api",
    "perspective_relaxation": "sparsecert.solvers.perspective.api",
    "DEFAULT_RESTART": "sparsecert.solvers.perspective.api",
    "RESTARTS": "sparsecert.solvers.perspective.api",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [*_LAZY]
