"""Several processes on one store file: one writer, readers, and kill -9 durability."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from gitkrm.errors import Conflict
from gitkrm.store.sqlite import SqliteStore
from tests.store import killed_writers
from tests.store.killed_writers import Acked, assert_intact, assert_kept, kill, readline, record
from tests.store.store_objects import configmap

SCRIPT = Path(__file__).with_name("store_process.py")


def spawn(*args: str) -> subprocess.Popen[str]:
    return killed_writers.spawn(SCRIPT, *args)


async def test_second_writer_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    holder = spawn("hold", path)
    try:
        assert readline(holder).strip() == "ready"
        with pytest.raises(Conflict) as err:
            SqliteStore.open(path)
        assert err.value.message == (
            f"store {path} is in use by another gitkrm process (pid {holder.pid})"
        )
        reader = SqliteStore.open(path, read_only=True)  # readers are welcome
        assert reader.resource_version == 4
        await reader.close()
    finally:
        holder.communicate(timeout=30)  # closing stdin lets it exit
    store = SqliteStore.open(path)  # the lock went with the process
    with pytest.raises(Conflict, match="is in use by another gitkrm process"):
        SqliteStore.open(path)  # a second writer in the same process too
    await store.close()


async def test_reader_process_while_writer_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    store = SqliteStore.open(path)
    try:
        reader = spawn("read", path, str(store.resource_version), "30")
        for i in range(30):
            await store.create(configmap(f"c{i}"))
        out, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        assert out.strip() == "ok 30"
    finally:
        await store.close()


async def test_kill_9_never_loses_an_acknowledged_write(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    rng = random.Random(20240601)
    acked: Acked = {}
    for round_ in range(4):
        proc = spawn("write", path, f"r{round_}")
        lines = [readline(proc) for _ in range(rng.randint(5, 300))]
        record(acked, lines + kill(proc))
        assert_intact(path)
    await assert_kept(path, acked)
