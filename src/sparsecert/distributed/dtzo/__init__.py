"""A DTZO-style distributed trilevel zeroth-order method.

:mod:`.algorithm` (the method), :mod:`.cuts` (cuts, their Jacobians, the level-3 map),
:mod:`.master` (the server's subproblem), :mod:`.diagnostics` (residual check, warning),
:mod:`.baselines` (nested ZO, ZO-FedAvg), :mod:`.trilevel` (problem and worker protocols, result),
:mod:`.zeroth_order` (estimators), :mod:`.problems` and :mod:`.nonquadratic` (shipped problems
P1-P3), :mod:`.mpi` (``mpiexec -n N python -m sparsecert.distributed.dtzo.mpi``).
"""

from sparsecert.distributed.dtzo.algorithm import DTZOConfig, dtzo, dtzo_first_order
from sparsecert.distributed.dtzo.diagnostics import DTZOWarning
from sparsecert.distributed.dtzo.trilevel import DTZOResult, TrilevelProblem, TrilevelWorker

__all__ = ["DTZOConfig", "DTZOResult", "DTZOWarning", "TrilevelProblem", "TrilevelWorker",
           "dtzo", "dtzo_first_order"]
