"""The perspective relaxation of k-sparse GLMs: numba kernels, FISTA with restarts, dual bound.

Public names: :class:`RelaxationProblem`, :class:`RelaxationResult`, :func:`solve_node`,
:func:`perspective_relaxation`.
"""

from sparsecert.solvers.perspective.api import (
    DEFAULT_RESTART,
    RESTARTS,
    perspective_relaxation,
    solve_node,
)
from sparsecert.solvers.perspective.problem import RelaxationProblem
from sparsecert.solvers.perspective.result import RelaxationResult

__all__ = [
    "RelaxationProblem",
    "RelaxationResult",
    "solve_node",
    "perspective_relaxation",
    "DEFAULT_RESTART",
    "RESTARTS",
]
