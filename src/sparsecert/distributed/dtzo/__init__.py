"""A DTZO-style distributed trilevel zeroth-order method.

:mod:`.algorithm` (the method), :mod:`.baselines` (nested ZO, ZO-FedAvg), :mod:`.trilevel` (the
problem protocol and result), :mod:`.zeroth_order` (estimators), :mod:`.problems` (shipped
problems), :mod:`.mpi` (``mpiexec -n N python -m sparsecert.distributed.dtzo.mpi``).
"""

from sparsecert.distributed.dtzo.algorithm import DTZOConfig, dtzo, dtzo_first_order
from sparsecert.distributed.dtzo.trilevel import DTZOResult, TrilevelProblem

__all__ = ["DTZOConfig", "DTZOResult", "TrilevelProblem", "dtzo", "dtzo_first_order"]
