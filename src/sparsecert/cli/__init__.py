"""The ``sparsecert`` command: ``certify``, ``verify`` and ``show``."""

from sparsecert.cli.main import main

__all__ = ["main"]
