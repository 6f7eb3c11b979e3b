"""sparsecert: certified k-sparse GLMs and distributed optimisation methods.

Main entry points
-----------------
certify(X, y, k, lambda2, ...)
    Solve a k-sparse GLM to proven optimality; returns the model and its certificate.
verify(path, X, y)
    Re-check a certificate with the standalone, numpy-only verifier.
certified_gap(X, y, coef, intercept, k=..., lambda2=...)
    How far any given model is from the optimum: a proven bound, the gap, a certificate.
perspective_relaxation(X, y, k, lambda2, ...)
    The convex relaxation with a lower bound valid at every iterate.

The package has two wings: the certified GLMs (:mod:`sparsecert.api`, :mod:`sparsecert.bnb`,
:mod:`sparsecert.solvers`, :mod:`sparsecert.certificate`, :mod:`sparsecert.cli`) and the
distributed methods (:mod:`sparsecert.distributed`).
"""

from sparsecert._lazy import lazy_names
from sparsecert._version import __version__
from sparsecert.api import CertifyResult, certify, verify

# Importing ``sparsecert`` (and hence the standalone verifier) must not load numba or scipy:
# the solver-side names are resolved on first use.
_LAZY = {  # in the order of __all__
    "perspective_relaxation": "sparsecert.solvers.perspective",
    "RelaxationResult": "sparsecert.solvers.perspective",
    "certify_path": "sparsecert.path",
    "PathResult": "sparsecert.path",
    "certified_gap": "sparsecert.gap",
    "GapResult": "sparsecert.gap",
    "KSparseCV": "sparsecert.path",
    "KSparseLinearRegressionCV": "sparsecert.path",
    "KSparseLinearRegression": "sparsecert.estimators",
    "KSparseLogisticRegression": "sparsecert.estimators",
    "KSparsePoissonRegression": "sparsecert.estimators",
    "KSparseHingeClassifier": "sparsecert.estimators",
    "KSparseHuberRegressor": "sparsecert.estimators",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = ["__version__", "certify", "verify", "CertifyResult", *_LAZY]
