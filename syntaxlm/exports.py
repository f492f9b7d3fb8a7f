"""Packages whose names are imported from their modules on first use (PEP 562), so that importing
the package loads only what is used: ``import syntaxlm`` loads neither torch nor a model, and
``syntaxlm.inference.methods`` (the names the command line lists) loads no torch."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names ``exports`` maps to the
    modules they live in; each is imported once, when first asked for."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)  # imported once
        return value

    def __dir__() -> list[str]:
        return sorted(sys.modules[package].__all__)

    return __getattr__, __dir__
