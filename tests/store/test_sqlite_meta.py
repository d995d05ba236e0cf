"""Server-managed metadata: uids."""

from __future__ import annotations

import os
import uuid

from gitkrm.store.sqlite.meta import new_uid


def test_uids_are_distinct_version_4_uuids() -> None:
    uids = [new_uid() for _ in range(2000)]  # several refills of the pool
    assert len(set(uids)) == len(uids)
    for u in uids:
        parsed = uuid.UUID(u)
        assert str(parsed) == u
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_a_forked_child_draws_its_own_uids() -> None:
    new_uid()  # the pool holds uids drawn before the fork
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        os.write(write, ",".join(new_uid() for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = f.read().split(",")
    os.waitpid(pid, 0)
    parent = [new_uid() for _ in range(5)]
    assert len(child) == 5
    assert not set(child) & set(parent)
