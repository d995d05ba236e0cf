"""Fixtures for every test package (tests/conftest.py registers this module as a plugin).

`store`: a real SQLite store in memory, closed after the test. A package or module that
needs another store (a file, the HTTP one, preloaded objects) defines its own `store`
fixture, which pytest prefers to this one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gitkrm.store import Store, open_store


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    s = await open_store("sqlite:///:memory:")
    yield s
    await s.close()
