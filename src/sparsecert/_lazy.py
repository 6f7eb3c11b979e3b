"""Package names imported on first use (PEP 562), so that importing a package stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_names(package: str, where: dict[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for the package ``package``: the name ``n`` of ``where`` is
    imported from the module ``where[n]`` on first use and then kept in the package."""

    def __getattr__(name: str):
        if name in where:
            value = getattr(importlib.import_module(where[name]), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
