"""The distributed wing: Safe-EF, QODA and a DTZO-style trilevel method.

At this level: the communication layer (:mod:`~sparsecert.distributed.comm`: ``SimComm``
in-process, ``MPIComm`` over MPI) and the encoders that produce the bits it counts
(:mod:`~sparsecert.distributed.compress`, :mod:`~sparsecert.distributed.quantize`). One folder
per method holds its algorithm and baselines, its shipped problems and its MPI entry point:
:mod:`~sparsecert.distributed.safe_ef`, :mod:`~sparsecert.distributed.qoda`,
:mod:`~sparsecert.distributed.dtzo`. Nothing here imports the certified-GLM wing.
"""
