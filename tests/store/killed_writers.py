"""Killing a writer process with SIGKILL and checking that the store file kept every write
it acknowledged: the shared half of the kill -9 durability tests (store_process.py's and
wal_process.py's writers print one `<resourceVersion> <name> <value>` line per write)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.support.processes import close_pipes

ROOT = Path(__file__).resolve().parents[2]

Acked = dict[str, tuple[int, int]]
"""name -> (resourceVersion, value) of the last write acknowledged for it."""


def spawn(script: Path, *args: str, stdin: bool = True) -> subprocess.Popen[str]:
    """`script` run by this Python with the repository importable, its pipes open."""
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.PIPE if stdin else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
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


def kill(proc: subprocess.Popen[str]) -> list[str]:
    """SIGKILL the writer; the whole lines it printed before dying (acknowledged too).

    Read through the same buffered stream: communicate() would skip what it already
    buffered. A line cut by the kill was not a whole acknowledgement: it is dropped."""
    proc.send_signal(signal.SIGKILL)
    assert proc.stdout is not None
    lines = proc.stdout.read().split("\n")[:-1]
    proc.wait(timeout=30)
    close_pipes(proc)
    return lines


def record(acked: Acked, lines: Iterable[str]) -> None:
    """The acknowledgements in `lines`, a later one of a name replacing an earlier."""
    for line in lines:
        if line.strip():
            rv_text, name, value_text = line.split()
            acked[name] = (int(rv_text), int(value_text))


def assert_intact(path: str) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()


async def assert_kept(path: str, acked: Acked) -> None:
    """Every acknowledged write is in the store, or a later one of the same object."""
    store = SqliteStore.open(path)
    try:
        for name, (acked_rv, value) in acked.items():
            ref = ObjectRef(group="", kind="ConfigMap", namespace="default", name=name)
            obj = await store.get(ref)
            assert int(obj["metadata"]["resourceVersion"]) >= acked_rv
            assert int(obj["data"]["v"]) >= value
        assert store.resource_version >= max(rv for rv, _ in acked.values())
    finally:
        await store.close()
