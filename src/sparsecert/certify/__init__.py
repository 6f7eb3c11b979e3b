"""Certificates of optimality: format, writer, loader, standalone verifier, command line.

Importing this package loads numpy and the standard library only; the command line
(:mod:`sparsecert.certify.cli`) imports the solver lazily, and :mod:`sparsecert.certify.verify`
shares no code with the rest of the package.

The package object is also *callable*: ``sparsecert.certify(X, y, k, lambda2, ...)`` runs
:func:`sparsecert.api.certify` (imported on the first call). The issue asks both for a function
``sparsecert.certify`` and for a subpackage ``sparsecert/certify/``; Python binds the subpackage
to the attribute ``sparsecert.certify`` whenever it is imported, so the subpackage itself does
what the function does, and ``import sparsecert.certify.verify`` keeps working.
"""

import sys
import types

from sparsecert.certify.certificate import Certificate, exact_zero_sum
from sparsecert.certify.schema import FORMAT_NAME, FORMAT_VERSION
from sparsecert.certify.verify import VerificationReport, verify_certificate

__all__ = [
    "Certificate",
    "VerificationReport",
    "verify_certificate",
    "exact_zero_sum",
    "FORMAT_NAME",
    "FORMAT_VERSION",
]


class _CallablePackage(types.ModuleType):
    """This package, callable as :func:`sparsecert.api.certify`."""

    def __call__(self, *args, **kwargs):
        """Solve a k-sparse GLM to certified optimality: see :func:`sparsecert.api.certify`."""
        from sparsecert.api import certify

        return certify(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
