"""Opening a store read-only while its writer has not created the schema yet."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gitkrm.errors import ServiceUnavailable
from gitkrm.store.sqlite import SqliteStore


def test_a_reader_of_a_store_still_being_created_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    conn = sqlite3.connect(path)  # a database file whose tables are not there yet
    conn.execute("CREATE TABLE other (a)")
    conn.commit()
    conn.close()
    with pytest.raises(ServiceUnavailable, match="is being initialized"):
        SqliteStore.open(str(path), read_only=True)


async def test_a_reader_of_an_initialized_store_opens_it(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    writer = SqliteStore.open(path)
    try:
        reader = SqliteStore.open(path, read_only=True)
        await reader.close()
    finally:
        await writer.close()
