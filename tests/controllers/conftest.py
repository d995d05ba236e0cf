"""Fixtures for the controller tests: a real SQLite store, a ControllerManager with the
simulator's delays near zero, and wait_until (wait on a condition, never sleep-and-hope).
Objects come from tests.support.builders."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.errors import NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.krm.conditions import get_condition
from gitkrm.store.sqlite import SqliteStore
from tests.support.wait import eventually_async

FAST = ControllerOptions(
    pod_start_delay=0.01,
    pod_run_duration=0.05,
    crashloop_backoff=0.05,
    crashloop_backoff_max=0.2,
    failure_backoff=0.02,
    failure_backoff_max=0.1,
    lease_interval=0.2,
    endpoint_batch_period=0.01,
    resync_period=0,
)

Predicate = Callable[[], Any]
REPLICA_SETS = GVK(group="apps", version="v1", kind="ReplicaSet")


async def wait_until(predicate: Predicate, timeout: float = 10.0, what: str = "") -> Any:  # noqa: ASYNC109
    """Poll `predicate` (sync or async) until it returns something truthy; returns it
    (tests.support.wait.eventually_async, polling every 10 ms)."""
    return await eventually_async(
        predicate, timeout=timeout, interval=0.01, message=what or repr(predicate)
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore.open(str(tmp_path / "store.db"))
    yield s
    await s.close()


Start = Callable[..., Awaitable[ControllerManager]]


@pytest.fixture
async def start(store: SqliteStore) -> AsyncIterator[Start]:
    """start(**options) runs a ControllerManager on the store (stopped after the test)."""
    managers: list[ControllerManager] = []

    async def run(**overrides: Any) -> ControllerManager:
        fields = {f: getattr(FAST, f) for f in FAST.__dataclass_fields__}
        fields.update(overrides)
        m = ControllerManager(store=store, options=ControllerOptions(**fields))
        await m.start()
        managers.append(m)
        return m

    yield run
    for m in managers:
        await m.stop()


def ref(kind: str, name: str, namespace: str | None = "default", group: str = "") -> ObjectRef:
    return ObjectRef(group=group, kind=kind, name=name, namespace=namespace)


async def get(
    store: SqliteStore, kind: str, name: str, namespace: str | None = "default", group: str = ""
) -> Obj | None:
    """The object, or None when it does not exist (any other store error is raised: an
    `is None` check must not pass because the store failed)."""
    try:
        return await store.get(ref(kind, name, namespace, group))
    except NotFound:
        return None


async def items(
    store: SqliteStore,
    kind: str,
    namespace: str | None = "default",
    group: str = "",
    version: str = "v1",
    selector: str | None = None,
) -> list[Obj]:
    listed = await store.list(
        GVK(group=group, version=version, kind=kind), namespace=namespace, label_selector=selector
    )
    return list(listed["items"])


def condition(obj: Obj | None, kind: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return dict(c)
    return None


def ready(pod: Obj) -> bool:
    c = condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


async def failing_replica_set(store: SqliteStore) -> Obj | None:
    """A ReplicaSet whose ReplicaFailure condition is True (its pods were refused), or None."""
    items: list[Obj] = (await store.list(REPLICA_SETS))["items"]
    for rs in items:
        cond = get_condition(rs, "ReplicaFailure")
        if cond is not None and cond.get("status") == "True":
            return rs
    return None
