"""Every package whose exports load on first use resolves each name it exports."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import gitkrm
from gitkrm.lazy import exports


def _is_lazy(package: str) -> bool:
    spec = importlib.util.find_spec(package)
    origin = spec.origin if spec is not None else None
    return origin is not None and "from gitkrm.lazy import exports" in Path(origin).read_text()


LAZY = sorted(
    m.name for m in pkgutil.iter_modules(gitkrm.__path__, "gitkrm.") if m.ispkg and _is_lazy(m.name)
)


def test_the_lazy_packages_are_found() -> None:
    assert {"gitkrm.agent", "gitkrm.store", "gitkrm.sync"} <= set(LAZY)


@pytest.mark.parametrize("package", LAZY)
def test_every_export_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_an_unknown_name_is_an_attribute_error() -> None:
    getattr_ = exports("gitkrm", {})
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        getattr_("nope")


@pytest.mark.parametrize("package", LAZY)
def test_no_export_is_named_like_a_module_of_its_package(package: str) -> None:
    """Importing a submodule sets the package attribute of its name, shadowing a lazy
    export of the same name for good (`from gitkrm.server import serve` gave the module)."""
    module = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module.__all__)
