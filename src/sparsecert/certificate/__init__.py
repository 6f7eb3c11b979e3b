"""Certificates of optimality: the format, the writer/loader and the standalone verifier.

Importing this package loads numpy and the standard library only.
:mod:`sparsecert.certificate.verify` shares no code with the rest of the package (the writer
included): it is an independent implementation of ``docs/certificate-format.md``.
"""

from sparsecert.certificate.document import Certificate, sidecar_path
from sparsecert.certificate.schema import FORMAT_NAME, FORMAT_VERSION
from sparsecert.certificate.verify import VerificationReport, verify_certificate

__all__ = [
    "Certificate",
    "VerificationReport",
    "verify_certificate",
    "sidecar_path",
    "FORMAT_NAME",
    "FORMAT_VERSION",
]
