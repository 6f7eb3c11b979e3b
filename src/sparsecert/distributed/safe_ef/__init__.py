"""Safe-EF: error feedback for non-smooth constrained federated problems.

:mod:`.workers` (what a worker holds; mean and averaged-quantity constraints), :mod:`.run`
(run options, results, the server-side round machinery), :mod:`.algorithm` (Safe-EF and its
stochastic variant), :mod:`.baselines`, :mod:`.problems` (shipped problems), :mod:`.mpi`
(``mpiexec -n N python -m sparsecert.distributed.safe_ef.mpi``).
"""

from sparsecert.distributed.safe_ef.algorithm import (
    METHODS,
    safe_ef,
    safe_ef_stochastic,
)
from sparsecert.distributed.safe_ef.baselines import (
    ef14_lagrangian,
    ef21_switching,
    switching_subgradient,
    topk_no_ef,
)
from sparsecert.distributed.safe_ef.run import RoundInfo, RunOptions, SafeEFResult
from sparsecert.distributed.safe_ef.workers import (
    AveragedConstraint,
    AveragedWorker,
    FunctionWorker,
    StochasticWorker,
    Worker,
)

__all__ = ["SafeEFResult", "RunOptions", "RoundInfo", "Worker", "StochasticWorker",
           "AveragedWorker", "AveragedConstraint", "FunctionWorker", "safe_ef",
           "safe_ef_stochastic", "switching_subgradient", "topk_no_ef", "ef21_switching",
           "ef14_lagrangian", "METHODS"]
