"""Certificates of optimality: format, writer, loader, standalone verifier, command line.

``sparsecert.certify.verify`` (and this package's import) depends on numpy and the standard
library only; the command line (:mod:`sparsecert.certify.cli`) imports the solver lazily.
"""

import sys as _sys
import types as _types

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


class _CallableModule(_types.ModuleType):
    """This package is also the function :func:`sparsecert.api.certify`.

    ``sparsecert.certify(X, y, k, lambda2, ...)`` solves and certifies, while
    ``from sparsecert.certify import Certificate`` and ``import sparsecert.certify.verify`` keep
    working: one name, no shadowing between a function and a subpackage.
    """

    def __call__(self, *args, **kwargs):
        from sparsecert.api import certify

        return certify(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
