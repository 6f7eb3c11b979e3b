"""sparsecert: certified k-sparse GLMs and distributed optimisation methods.

Main entry points
-----------------
certify(X, y, k, lambda2, ...)
    Solve a k-sparse GLM to proven optimality; returns the model and its certificate.
verify(path, X, y)
    Re-check a certificate with the standalone, numpy-only verifier.
perspective_relaxation(X, y, k, lambda2, ...)
    The convex relaxation with a lower bound valid at every iterate.

Note: ``sparsecert.certify`` is the *function*; the certificate subpackage is reachable as
``sparsecert.certify`` only through ``import sparsecert.certify.<module>`` forms such as
``from sparsecert.certify import Certificate`` (both work: the subpackage is imported first and
the function is bound afterwards).
"""

import sparsecert.certify as _certify_pkg  # noqa: F401  (load the subpackage before the function)
from sparsecert._version import __version__
from sparsecert.api import CertifyResult, certify, verify
from sparsecert.solvers.perspective import RelaxationResult, perspective_relaxation

__all__ = [
    "__version__",
    "certify",
    "verify",
    "CertifyResult",
    "perspective_relaxation",
    "RelaxationResult",
]
