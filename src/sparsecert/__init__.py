"""sparsecert: certified k-sparse GLMs and distributed optimisation methods."""

from sparsecert._version import __version__

__all__ = ["__version__"]
