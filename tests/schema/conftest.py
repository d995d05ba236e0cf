"""Fixtures of the schema tests."""

from __future__ import annotations

import pytest

from gitkrm.schema import Registry


@pytest.fixture
def registry() -> Registry:
    return Registry.builtin()
