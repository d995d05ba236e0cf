"""A consistent copy of a store file that never writes to it: the twin of `plan --simulate`.

SQLite's online backup reads the source through a read-only connection (`mode=ro`) in one
step, so the copy is one snapshot even while the agent writes. A read-only connection to a
WAL database whose `-wal` file is absent would create an empty `-wal` and `-shm` beside it;
then the database file alone holds every committed write, and it is read as `immutable`
(no files created, no locks taken), checking afterwards that no writer appeared meanwhile
(a writer writes to a new `-wal` first, and into the file only at a checkpoint). If one did,
the copy is made again through its `-wal`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from gitkrm.errors import InternalError, NotFound

_ATTEMPTS = 3


def _signature(path: Path) -> tuple[int, int, bool]:
    st = path.stat()
    return (st.st_size, st.st_mtime_ns, Path(f"{path}-wal").exists())


def _backup(source_uri: str, target: Path) -> None:
    src = sqlite3.connect(source_uri, uri=True, isolation_level=None)
    try:
        dst = sqlite3.connect(target, isolation_level=None)
        try:
            src.backup(dst)  # pages=-1: every page in one step, one read snapshot
        finally:
            dst.close()
    finally:
        src.close()


def copy_store(source: Path, target: Path) -> None:
    """Copy the store file `source` (with its `-wal`) to `target`, a new file, without
    writing to `source`, its `-wal` or its `-shm` being created."""
    source = source.resolve()
    if not source.is_file():
        raise NotFound(f"store {source} does not exist")
    uri = source.as_uri()
    for _ in range(_ATTEMPTS):
        before = _signature(source)
        if before[2]:  # a -wal file: read through it (the -shm is SQLite's shared index)
            _backup(f"{uri}?mode=ro", target)
            return
        _backup(f"{uri}?mode=ro&immutable=1", target)
        if _signature(source) == before:
            return
        with contextlib.suppress(FileNotFoundError):  # a writer came: copy again
            os.unlink(target)
    raise InternalError(f"store {source} kept changing while it was copied")
