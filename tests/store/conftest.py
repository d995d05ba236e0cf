"""Fixtures for the store tests: real SQLite stores, in memory and in files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gitkrm.store.sqlite import SqliteStore


@pytest.fixture(params=["memory", "file"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqliteStore]:
    path = ":memory:" if request.param == "memory" else str(tmp_path / "store.db")
    s = SqliteStore.open(path)
    yield s
    await s.close()


@pytest.fixture
async def mem() -> AsyncIterator[SqliteStore]:
    s = SqliteStore.open(":memory:")
    yield s
    await s.close()
