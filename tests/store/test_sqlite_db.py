"""The store file: the WAL stays bounded while writes go on without a pause."""

from __future__ import annotations

import random
import sqlite3
import subprocess
from pathlib import Path

import pytest

from gitkrm.krm import GVK
from gitkrm.store.sqlite import SqliteStore, db
from tests.store.killed_writers import (
    Acked,
    assert_intact,
    assert_kept,
    kill,
    readline,
    record,
    spawn,
)

CONFIGMAPS = GVK(group="", version="v1", kind="ConfigMap")


def _configmap(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"c{i}"},
        "data": {"k": "v" * 3000},
    }


@pytest.mark.parametrize(
    "catch_up",
    [48, -1],
    ids=["catches-up", "outrun"],  # -1: no pass is short, as when a loaded machine slows it
)
async def test_the_wal_restarts_while_writes_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catch_up: int
) -> None:
    monkeypatch.setattr(db, "RESTART_FRAMES", 64)
    monkeypatch.setattr(db, "CATCH_UP_FRAMES", catch_up)
    monkeypatch.setattr(db, "CHECKPOINT_INTERVAL", 0.01)
    restarted = 0
    restart = db.restart_wal

    def counting(conn: sqlite3.Connection) -> bool:
        nonlocal restarted
        done = restart(conn)
        restarted += done
        return done

    monkeypatch.setattr(db, "restart_wal", counting)
    path = str(tmp_path / "store.db")
    store = SqliteStore.open(path)
    try:
        i = 0
        while restarted < 3:
            assert i < 20_000, "the writer never restarted the WAL"
            await store.create(_configmap(i))
            i += 1
        await store.create(_configmap(i))  # the commit after a restart writes the WAL anew
        i += 1
        assert _wal_restarts(Path(path + "-wal")) >= 3
        assert len((await store.list(CONFIGMAPS))["items"]) == i
    finally:
        await store.close()
    reopened = SqliteStore.open(path, read_only=True)
    try:
        assert len((await reopened.list(CONFIGMAPS))["items"]) == i
    finally:
        await reopened.close()


def _wal_restarts(wal: Path) -> int:
    """The checkpoint sequence number of a WAL's header: how often it was restarted."""
    if not wal.exists():
        return 0
    with wal.open("rb") as f:
        return int.from_bytes(f.read(16)[12:16], "big")


@pytest.mark.timeout(10)
def test_restart_gives_up_at_once_while_a_reader_uses_the_wal(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    writer = db.connect(path, read_only=False)
    reader = db.connect(path, read_only=True)
    try:
        writer.execute("INSERT INTO meta (key, value) VALUES ('x', 1)")
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM meta").fetchone()  # holds a WAL snapshot
        writer.execute("INSERT INTO meta (key, value) VALUES ('y', 2)")
        assert not db.restart_wal(writer)
        assert writer.execute("PRAGMA busy_timeout").fetchone()[0] == db.BUSY_TIMEOUT_MS
        reader.execute("COMMIT")
        assert db.restart_wal(writer)
        writer.execute("INSERT INTO meta (key, value) VALUES ('z', 3)")
        assert reader.execute("SELECT count(*) FROM meta WHERE key = 'z'").fetchone()[0] == 1
    finally:
        reader.close()
        writer.close()


def _spawn_writer(path: str, prefix: str) -> subprocess.Popen[str]:
    return spawn(Path(__file__).with_name("wal_process.py"), path, prefix, stdin=False)


async def test_kill_9_while_the_wal_restarts_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    rng = random.Random(20261122)
    acked: Acked = {}
    wal = Path(path + "-wal")
    for round_ in range(3):
        before = _wal_restarts(wal)
        proc = _spawn_writer(path, f"r{round_}")
        lines = [readline(proc) for _ in range(rng.randint(100, 1000))]
        while _wal_restarts(wal) <= before:  # kill it after it restarted the WAL at least once
            assert len(lines) < 100_000, "the writer never restarted the WAL"
            lines += [readline(proc) for _ in range(100)]
        lines += [readline(proc) for _ in range(rng.randint(0, 300))]
        record(acked, lines + kill(proc))
        assert_intact(path)
    await assert_kept(path, acked)
