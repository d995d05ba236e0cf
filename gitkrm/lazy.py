"""Package exports loaded on first use (PEP 562).

A package's `__init__` names its public API for readers and type checkers, but importing
one of its modules must not import all of them: `gitkrm --help` would otherwise load the
agent, the server and aiohttp before parsing a flag. Each package lists its exports under
`TYPE_CHECKING` and hands the same names to `exports`, which imports a module the first
time one of its names is used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def exports(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """The module `__getattr__` of `package`: `names` maps each export to its module
    (relative to the package)."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value

    return __getattr__
