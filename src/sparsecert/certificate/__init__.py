"""Certificates of optimality: the format, the writer/loader and the standalone verifier.

Importing this package loads numpy and the standard library only.
:mod:`sparsecert.certificate.verify` shares no code with the rest of the package (the writer
included): it is an independent implementation of ``docs/certificate-format.md``.
"""

import importlib

from sparsecert.certificate.document import Certificate, sidecar_path
from sparsecert.certificate.schema import FORMAT_NAME, FORMAT_VERSION

_FROM_VERIFY = ("VerificationReport", "verify_certificate")


def __getattr__(name: str):
    # The verifier's names are looked up in its module on each use, not imported here: with
    # the module imported by this package, ``python -m sparsecert.certificate.verify`` warned
    # (runpy's "found in sys.modules ... unpredictable behaviour").
    if name in _FROM_VERIFY:
        return getattr(importlib.import_module("sparsecert.certificate.verify"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM_VERIFY))


__all__ = [
    "Certificate",
    "VerificationReport",
    "verify_certificate",
    "sidecar_path",
    "FORMAT_NAME",
    "FORMAT_VERSION",
]
