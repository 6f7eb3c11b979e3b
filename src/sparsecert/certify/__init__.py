"""Certificates of optimality: format, writer, loader, standalone verifier, command line.

``sparsecert.certify.verify`` (and this package's import) depends on numpy and the standard
library only; the command line (:mod:`sparsecert.certify.cli`) imports the solver lazily.
"""

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
