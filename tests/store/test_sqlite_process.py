"""Several processes on one store file: one writer, readers, and kill -9 durability."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gitkrm.errors import Conflict
from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap

SCRIPT = Path(__file__).with_name("store_process.py")
ROOT = Path(__file__).resolve().parents[2]


def spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def readline(proc: subprocess.Popen[str], timeout: float = 60.0) -> str:
    """The next stdout line, or fail (with the child's stderr) when none comes in time."""
    assert proc.stdout is not None
    box: list[str] = []
    stdout = proc.stdout
    t = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if not box or not box[0]:
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        pytest.fail(f"no output from {proc.args!r}: {err}")
    return box[0]


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
    acked: dict[str, tuple[int, int]] = {}  # name -> (rv, value) of the last ack
    for round_ in range(4):
        proc = spawn("write", path, f"r{round_}")
        lines = [readline(proc) for _ in range(rng.randint(5, 300))]
        proc.send_signal(signal.SIGKILL)
        assert proc.stdout is not None
        # Lines printed before the kill were acknowledged too. (Read through the same
        # buffered stream: communicate() would skip what it already buffered.)
        # A line cut by the kill was not a whole acknowledgement: drop it.
        lines += proc.stdout.read().split("\n")[:-1]
        proc.wait(timeout=30)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        for line in lines:
            if not line.strip():
                continue
            rv_text, name, value_text = line.split()
            acked[name] = (int(rv_text), int(value_text))
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.close()
    store = SqliteStore.open(path)
    try:
        for name, (acked_rv, value) in acked.items():
            obj = await store.get(
                ObjectRef(group="", kind="ConfigMap", namespace="default", name=name)
            )
            assert int(obj["metadata"]["resourceVersion"]) >= acked_rv
            assert int(obj["data"]["v"]) >= value
        assert store.resource_version >= max(r for r, _ in acked.values())
    finally:
        await store.close()
