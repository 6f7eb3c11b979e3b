"""Safe-EF: error feedback for non-smooth constrained federated problems.

:mod:`.algorithm` (Safe-EF and its baselines), :mod:`.problems` (shipped problems),
:mod:`.mpi` (``mpiexec -n N python -m sparsecert.distributed.safe_ef.mpi``).
"""

from sparsecert.distributed.safe_ef.algorithm import (
    SafeEFResult,
    ef14_lagrangian,
    ef21_switching,
    safe_ef,
    safe_ef_stochastic,
    switching_subgradient,
    topk_no_ef,
)

__all__ = ["SafeEFResult", "safe_ef", "safe_ef_stochastic", "switching_subgradient",
           "topk_no_ef", "ef21_switching", "ef14_lagrangian"]
