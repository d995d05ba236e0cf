"""The revision whose hooks last ran, kept in the state dir: hooks run once per revision,
in a new process too. The GitSource status says it where the target serves GitSource
objects; a cluster without the CRD keeps no status, so without this record every
`run --once` ran the PreSync migration again. The record names the target (the uid of
its `kube-system` namespace): a state dir pointed at another cluster runs the hooks
there."""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson

from gitkrm.store import Store
from gitkrm.sync.parsecache import write_private

from .lastsync import store_position


def _read(path: Path) -> tuple[str, str] | None:
    """(revision, store id) of the record, or None (absent or not ours to read)."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    revision, store_id = data.get("revision"), data.get("store_id")
    if not isinstance(revision, str) or not isinstance(store_id, str) or not store_id:
        return None
    return revision, store_id


async def load(path: Path, *, store: Store) -> str | None:
    """The revision recorded for this target, or None."""
    record = _read(path)
    if record is None:
        return None
    found, _ = await store_position(store)
    return record[0] if found == record[1] else None


async def save(path: Path, revision: str, *, store: Store) -> None:
    """Record `revision` (a failure only means the hooks run again next time)."""
    store_id, _ = await store_position(store)
    if store_id:
        with contextlib.suppress(OSError):
            write_private(path, orjson.dumps({"revision": revision, "store_id": store_id}))
