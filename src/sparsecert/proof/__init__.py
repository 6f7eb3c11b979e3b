"""The proof producer: a finished search becomes certified claims and their certificate.

One module per step (:mod:`~sparsecert.proof.producer` runs them in order): the directed
rounding every rigorous quantity is computed with (:mod:`~sparsecert.proof.rounding`, also the
search's reduced-cost fixing's), the rigorous evaluation of bounds
(:mod:`~sparsecert.proof.bounds`), the bounds of the regions fixings cut off
(:mod:`~sparsecert.proof.regions`), the claim margins (:mod:`~sparsecert.proof.claims`), the
tree (:mod:`~sparsecert.proof.tree`), the witnesses (:mod:`~sparsecert.proof.witnesses`) and
the status the claims allow (:mod:`~sparsecert.proof.status`). The producer shares no code with
the standalone verifier (:mod:`sparsecert.certificate.verify`): each has its own copy of the
maths, and ``tests/test_proof_pairing.py`` checks that every producer bound is one the verifier
proves.

Importing this package loads nothing: its modules are imported where they are used.
"""
