"""The proof producer: a search becomes certified claims and their certificate.

One module per step: the directed rounding every rigorous quantity is computed with
(:mod:`~sparsecert.proof.rounding`, also the search's reduced-cost fixing's), the rigorous
evaluation of bounds (:mod:`~sparsecert.proof.bounds`), the bounds of the regions fixings cut off
(:mod:`~sparsecert.proof.regions`), the claim margins (:mod:`~sparsecert.proof.claims`), the
witnesses (:mod:`~sparsecert.proof.witnesses`), the recorder the search streams its closed nodes
to (:mod:`~sparsecert.proof.recorder`), the status the claims allow
(:mod:`~sparsecert.proof.status`) and the producer that completes the certificate after the
search (:mod:`~sparsecert.proof.producer`). The producer shares no code with
the standalone verifier (:mod:`sparsecert.certificate.verify`): each has its own copy of the
maths, and ``tests/test_proof_pairing.py`` checks that every producer bound is one the verifier
proves.

Importing this package loads nothing: its modules are imported where they are used.
"""
