"""QODA: quantized optimistic dual averaging with layer-wise adaptive quantization.

:mod:`.algorithm` (QODA, ODA, quantized extra-gradient), :mod:`.problems` (shipped games),
:mod:`.mpi` (``mpiexec -n N python -m sparsecert.distributed.qoda.mpi``).
"""

from sparsecert.distributed.qoda.algorithm import (
    QODAResult,
    StepSchedule,
    oda,
    qoda,
    quantized_extragradient,
)

__all__ = ["QODAResult", "StepSchedule", "qoda", "oda", "quantized_extragradient"]
