"""Health-gated waves through the engine: a wave starts once the one before it is healthy
(on a store with the bundled controllers), a timeout stops the sync naming what was not
ready, a new revision cancels the wait, and pruning goes wave by wave in reverse."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gitkrm.krm import GVK
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.results import Action, SyncStatus
from tests.support.wait import eventually_async
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import Remote, configmap, deployment, namespace
from tests.sync.test_engine import actions, cm_ref, deploy_ref, get, pruned, sync

DEPLOYMENTS = GVK(group="apps", version="v1", kind="Deployment")
CONFIGMAPS = GVK(group="", version="v1", kind="ConfigMap")


def wave(n: int) -> str:
    return f"    argocd.argoproj.io/sync-wave: '{n}'\n"


def in_wave(name: str, n: int) -> str:
    """ConfigMap apps/`name` of sync wave `n`."""
    return configmap(name, extra="  annotations:\n" + wave(n))


def two_waves(*, db_replicas: int) -> dict[str, str]:
    """Deployment apps/db in wave 0, ConfigMap apps/app in wave 1 (files for commit_apps)."""
    return {
        "db.yaml": deployment("db", replicas=db_replicas, annotations=wave(0)),
        "app.yaml": in_wave("app", 1),
    }


def commit_apps(remote: Remote, files: dict[str, str]) -> None:
    """Commit the namespace `apps` (ns.yaml) and `files` (path: manifest)."""
    remote.write("ns.yaml", namespace("apps"))
    for path, text in files.items():
        remote.write(path, text)
    remote.commit()


def available(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)


class Recorder:
    """Every change of Deployments and ConfigMaps, in store order (a watch of each)."""

    def __init__(self, store: Store) -> None:
        self.events: list[tuple[int, str, dict[str, Any]]] = []
        self.tasks = [
            asyncio.create_task(self._watch(store, gvk)) for gvk in (DEPLOYMENTS, CONFIGMAPS)
        ]

    async def _watch(self, store: Store, gvk: GVK) -> None:
        async for ev in store.watch(gvk, namespace="apps"):
            rv = int(ev.obj["metadata"]["resourceVersion"])
            self.events.append((rv, ev.type, ev.obj))

    def _first(self, kind: str, name: str, type_: str, when: Any) -> int | None:
        for rv, t, obj in sorted(self.events, key=lambda e: e[0]):
            same = obj["kind"] == kind and obj["metadata"]["name"] == name and t == type_
            if same and (when is None or when(obj)):
                return rv
        return None

    async def first(self, kind: str, name: str, type_: str, when: Any = None) -> int:
        """The resourceVersion of the first such event (waiting for the watch to see it)."""

        async def seen() -> int | None:
            return self._first(kind, name, type_, when)

        found = await eventually_async(
            seen, timeout=10, message=f"a {type_} event of {kind} {name}"
        )
        assert found is not None
        return found

    async def __aenter__(self) -> Recorder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


@pytest.mark.usefixtures("controllers")
async def test_wave_one_waits_for_wave_zero_to_be_available(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    commit_apps(remote, two_waves(db_replicas=2))
    async with Recorder(store) as recorder:
        engine = make_engine(health_timeout=30.0)
        result = await sync(engine, source)
        assert result.ok, result.problems()
        ready = await recorder.first("Deployment", "db", "MODIFIED", available)
        created = await recorder.first("ConfigMap", "app", "ADDED")
    assert ready < created  # wave 1 was written only once wave 0's Deployment was Available


@pytest.mark.usefixtures("controllers")
async def test_a_health_timeout_stops_the_sync_naming_objects_and_messages(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    stuck = deployment("db", replicas=1, annotations=wave(0)).replace(
        "      labels: {app: db}\n",
        "      labels: {app: db}\n      annotations: {gitkrm.io/simulate: pending}\n",
    )
    alarm = configmap("alarm", extra="  annotations: {argocd.argoproj.io/hook: SyncFail}\n")
    commit_apps(remote, {"db.yaml": stuck, "app.yaml": in_wave("app", 1), "fail.yaml": alarm})
    engine = make_engine(health_timeout=1.0)
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    assert result.errors[0] == (
        "wave 0 not healthy within 1s: Deployment.apps apps/db: InProgress (Available: 0/1)"
    )
    assert actions(result)["ConfigMap/app"] is Action.SKIPPED
    assert await get(store, cm_ref("app")) is None
    assert await get(store, cm_ref("alarm")) is not None  # SyncFail hooks ran
    assert [h.phase.value for h in result.hooks] == ["SyncFail"]


async def test_a_wave_waits_for_its_objects_already_in_sync(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    # No controllers: the Deployment never becomes Available. Alone (one wave) it is
    # applied without a gate; once a wave 1 joins it, wave 0's Deployment, unchanged by
    # that commit, must still be healthy before wave 1 is written.
    commit_apps(remote, {"db.yaml": deployment("db", replicas=1, annotations=wave(0))})
    engine = make_engine(health_timeout=0.5)
    assert (await sync(engine, source)).ok
    remote.write("app.yaml", in_wave("app", 1))
    remote.commit()
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    assert actions(result)["Deployment/db"] is Action.UNCHANGED
    assert result.errors[0].startswith("wave 0 not healthy within 0.5s: Deployment.apps apps/db")
    assert actions(result)["ConfigMap/app"] is Action.SKIPPED
    assert await get(store, cm_ref("app")) is None


async def test_a_cancelled_wait_stops_the_sync(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    # No controllers: the Deployment of wave 0 never becomes Available.
    commit_apps(remote, two_waves(db_replicas=1))
    engine = make_engine(health_timeout=300.0)
    cancel = asyncio.Event()
    running = asyncio.create_task(engine.sync(await source.snapshot(), cancel=cancel))
    await eventually_async(lambda: get(store, deploy_ref("db")), timeout=10, message="wave 0")
    assert not running.done()  # waiting on wave 0
    cancel.set()
    result = await asyncio.wait_for(running, 10)
    assert "cancelled: a new revision arrived" in result.errors[0]
    assert await get(store, cm_ref("app")) is None


async def test_pruning_goes_wave_by_wave_in_reverse(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    waves = {f"w{n}.yaml": in_wave(f"w{n}", n) for n in (0, 1, 2)}
    commit_apps(remote, {**waves, "keep.yaml": in_wave("keep", 5)})
    engine = make_engine(health_timeout=30.0)
    assert (await sync(engine, source)).ok
    async with Recorder(store) as recorder:
        await recorder.first("ConfigMap", "w0", "ADDED")  # the watch is under way
        for n in (0, 1, 2):
            remote.remove(f"w{n}.yaml")
        remote.commit("prune three waves")
        result = await sync(engine, source)
        assert result.ok, result.problems()
        # The prunes follow the apply, in reverse wave order, each gone before the next.
        assert pruned(result) == ["w2", "w1", "w0"]
        deleted = [await recorder.first("ConfigMap", f"w{n}", "DELETED") for n in (2, 1, 0)]
    assert deleted == sorted(deleted)


@pytest.mark.usefixtures("controllers")
async def test_depends_on_waits_for_the_dependency_to_be_current(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    # Same wave: the ConfigMap is written once the Deployment it depends on is Available.
    dep = "  annotations: {config.kubernetes.io/depends-on: apps/namespaces/apps/Deployment/db}\n"
    commit_apps(
        remote, {"db.yaml": deployment("db", replicas=2), "app.yaml": configmap("app", extra=dep)}
    )
    async with Recorder(store) as recorder:
        result = await sync(make_engine(health_timeout=30.0), source)
        assert result.ok, result.problems()
        ready = await recorder.first("Deployment", "db", "MODIFIED", available)
        created = await recorder.first("ConfigMap", "app", "ADDED")
    assert ready < created
