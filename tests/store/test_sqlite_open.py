"""Opening a store read-only while its writer has not created the schema yet."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from gitkrm.errors import ServiceUnavailable
from gitkrm.store.sqlite import SqliteStore, db
from gitkrm.store.sqlite.db import WriterLock


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


def test_a_forked_child_does_not_keep_the_writer_lock(tmp_path: Path) -> None:
    """A render worker forked by the agent outlives a `kill -9` of the agent: it must not
    hold the lock, or the restarted agent is refused."""
    path = str(tmp_path / "store.db")
    lock = WriterLock.acquire(path)
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: say it is running, then live on (like an orphaned worker)
        os.write(ready_w, b"x")
        time.sleep(30)
        os._exit(0)
    try:
        assert os.read(ready_r, 1) == b"x"
        fd = lock.handle.fileno()
        lock.handle.close()  # the parent dies (kill -9: its fds close, no LOCK_UN)
        db._HELD.discard(fd)
        again = WriterLock.acquire(path)  # the child, still alive, must not block this
        again.release()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(ready_w)
