"""`copy_store`: a consistent copy of a store file that writes nothing to it, with its writer
running (read through its `-wal`) or closed (no `-wal` or `-shm` created)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.errors import NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.sqlite import SqliteStore, db
from gitkrm.store.sqlite.backup import copy_store
from tests.support.builders import configmap

CONFIGMAPS = GVK(group="", version="v1", kind="ConfigMap")


def _files(db: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of the store file and its -wal (what a copy must not touch)."""
    out = {}
    for p in (db, Path(f"{db}-wal")):
        if p.exists():
            out[p.name] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


async def _names(path: Path) -> dict[str, str]:
    store = SqliteStore.open(str(path))
    try:
        items = (await store.list(CONFIGMAPS, namespace="default"))["items"]
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}
    finally:
        await store.close()


async def test_a_copy_while_the_writer_runs_reads_its_wal_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer's own checkpoints would change the file during the test: none meanwhile,
    # so the writes stay in the WAL and any change to either file is the copy's.
    monkeypatch.setattr(db, "CHECKPOINT_INTERVAL", 3600.0)
    live = tmp_path / "live" / "store.db"
    live.parent.mkdir()
    writer = SqliteStore.open(str(live))
    try:
        for i in range(20):
            await writer.create(configmap(f"cm-{i}", data={"i": str(i)}))
        await writer.delete(ObjectRef(group="", kind="ConfigMap", name="cm-0", namespace="default"))
        before = _files(live)
        assert "store.db-wal" in before  # the writes are (at least partly) in the WAL
        copy_store(live, tmp_path / "copy.db")
        assert _files(live) == before
        expected = {
            o["metadata"]["name"]: o["metadata"]["resourceVersion"]
            for o in (await writer.list(CONFIGMAPS, namespace="default"))["items"]
        }
    finally:
        await writer.close()
    assert await _names(tmp_path / "copy.db") == expected
    assert len(expected) == 19


async def test_a_copy_of_a_closed_store_creates_no_wal_beside_it(tmp_path: Path) -> None:
    live = tmp_path / "live" / "store.db"
    live.parent.mkdir()
    writer = SqliteStore.open(str(live))
    await writer.create(configmap("only", data={"a": "1"}))
    await writer.close()
    assert sorted(p.name for p in live.parent.iterdir()) == ["store.db", "store.db.lock"]
    before = _files(live)
    copy_store(live, tmp_path / "copy.db")
    assert _files(live) == before
    assert sorted(p.name for p in live.parent.iterdir()) == ["store.db", "store.db.lock"]
    assert list(await _names(tmp_path / "copy.db")) == ["only"]


def test_a_missing_store_is_named(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        copy_store(tmp_path / "none.db", tmp_path / "copy.db")
