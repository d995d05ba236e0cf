"""Hooks and phases through the engine, on real Git repositories and a store with the
bundled controllers (Jobs run their pods to completion, or fail them when told to)."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.krm import GVK, ObjectRef
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.hooks import HookState, Phase
from gitkrm.sync.results import SyncResult, SyncStatus
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import Remote, configmap, namespace
from tests.sync.test_engine import cm_ref, get, inventory_keys, sync

INVENTORY = ObjectRef(
    group="", kind="ConfigMap", name="gitkrm-inventory-src", namespace="gitkrm-system"
)
JOBS = GVK(group="batch", version="v1", kind="Job")


def job(
    name: str,
    phase: str,
    *,
    policy: str = "",
    fail: bool = False,
    generate: bool = False,
    wave: int | None = None,
) -> str:
    """A hook Job (`generate`: named by generateName) whose pod succeeds, or fails."""
    annotations = [f"argocd.argoproj.io/hook: {phase}"]
    if policy:
        annotations.append(f"argocd.argoproj.io/hook-delete-policy: {policy}")
    if wave is not None:
        annotations.append(f"argocd.argoproj.io/sync-wave: '{wave}'")
    named = f"generateName: {name}-" if generate else f"name: {name}"
    simulate = "\n      annotations: {gitkrm.io/simulate: fail}" if fail else ""
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  {named}
  namespace: apps
  annotations: {{{", ".join(annotations)}}}
spec:
  backoffLimit: 0
  template:
    metadata:{simulate or " {}"}
    spec:
      restartPolicy: Never
      containers:
      - {{name: main, image: busybox, command: ["true"]}}
"""


def hook_cm(name: str, phase: str) -> str:
    return configmap(name, extra=f"  annotations: {{argocd.argoproj.io/hook: {phase}}}\n")


def runs(result: SyncResult) -> list[tuple[str, str, str]]:
    return [(h.phase.value, h.ref.name, h.state.value) for h in result.hooks]


async def jobs(store: Store) -> dict[str, dict[str, Any]]:
    listed = await store.list(JOBS, namespace="apps")
    return {j["metadata"]["name"]: j for j in listed["items"]}


@pytest.fixture
def engine(apps: None, make_engine: EngineFactory) -> SyncEngine:
    """An engine that waits up to 30 s for hooks, on the store with the bundled controllers
    and the namespace apps."""
    return make_engine(health_timeout=30.0)


def job_ref(name: str) -> ObjectRef:
    return ObjectRef(group="batch", version="v1", kind="Job", name=name, namespace="apps")


async def test_a_failing_presync_hook_applies_nothing_and_runs_syncfail(
    store: Store, remote: Remote, source: GitSource, engine: SyncEngine
) -> None:
    remote.write("app.yaml", configmap("app"))
    remote.write("pre.yaml", job("migrate", "PreSync", fail=True))
    remote.write("fail.yaml", hook_cm("on-failure", "SyncFail"))
    remote.commit()
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    assert runs(result) == [
        ("PreSync", "migrate", "Failed"),
        ("SyncFail", "on-failure", "Succeeded"),
    ]
    assert "a PreSync hook failed" in result.problems()[0]
    assert "pre.yaml:1: PreSync hook" in "\n".join(result.problems())
    assert await get(store, cm_ref("app")) is None  # nothing of the Sync phase
    assert await get(store, cm_ref("on-failure")) is not None
    # Not even the inventory was written: nothing of the Sync phase was.
    assert await get(store, INVENTORY) is None
    uid = (await jobs(store))["migrate"]["metadata"]["uid"]
    # The same revision again (the agent's retry of a failed sync): no hook runs again.
    again = await sync(engine, source)
    assert again.status is SyncStatus.FAILED
    assert runs(again) == runs(result)
    assert (await jobs(store))["migrate"]["metadata"]["uid"] == uid
    assert await get(store, cm_ref("app")) is None


async def test_hooks_run_once_per_revision_in_phase_order(
    store: Store, remote: Remote, source: GitSource, engine: SyncEngine
) -> None:
    remote.write("app.yaml", configmap("app"))
    remote.write("pre.yaml", job("pre", "PreSync"))
    remote.write("sync.yaml", job("during", "Sync"))
    remote.write("post.yaml", job("post", "PostSync"))
    remote.write("fail.yaml", hook_cm("on-failure", "SyncFail"))
    remote.write("skip.yaml", hook_cm("skipped", "Skip"))
    remote.commit()
    result = await sync(engine, source)
    assert result.ok, result.problems()
    assert runs(result) == [
        ("PreSync", "pre", "Succeeded"),
        ("Sync", "during", "Succeeded"),
        ("PostSync", "post", "Succeeded"),
    ]
    assert [f"{o.ref.kind}/{o.ref.name}" for o in result.objects] == ["ConfigMap/app"]
    assert await get(store, cm_ref("on-failure")) is None  # SyncFail: only on failure
    assert await get(store, cm_ref("skipped")) is None  # Skip: never applied
    created = {n: j["metadata"]["uid"] for n, j in (await jobs(store)).items()}
    for j in (await jobs(store)).values():  # done means complete, not just started
        assert any(c["type"] == "Complete" for c in j["status"]["conditions"])
    keys = await inventory_keys(store)
    assert not any(n in k for k in keys for n in ("pre", "during", "post"))
    # A drift check and the same revision again run no hook.
    assert (await engine.check_drift()).hooks == ()
    assert (await sync(engine, source)).hooks == ()
    assert {n: j["metadata"]["uid"] for n, j in (await jobs(store)).items()} == created
    # A sync request runs them again (BeforeHookCreation: each Job is deleted, then made anew).
    asked = await engine.sync(await source.snapshot(), run_hooks=True)
    assert [r[0] for r in runs(asked)] == ["PreSync", "Sync", "PostSync"]
    renewed = {n: j["metadata"]["uid"] for n, j in (await jobs(store)).items()}
    assert renewed.keys() == created.keys()
    assert all(renewed[n] != created[n] for n in created)
    # A new revision runs them again; the hooks are never pruned as drift.
    remote.write("app.yaml", configmap("app", data="a: '2'"))
    remote.commit("new revision")
    new = await sync(engine, source)
    assert [r[0] for r in runs(new)] == ["PreSync", "Sync", "PostSync"]
    assert not any(o.action.value == "pruned" for o in new.objects)


def _waved(name: str, n: int) -> str:
    return configmap(name, extra=f"  annotations: {{argocd.argoproj.io/sync-wave: '{n}'}}\n")


async def test_sync_hooks_run_inside_their_wave(
    store: Store, remote: Remote, source: GitSource, engine: SyncEngine
) -> None:
    """Argo CD orders Sync hooks with the objects by wave: a wave-1 hook Job completes
    after wave 0 is written and before wave 2 is."""
    remote.write("a.yaml", _waved("first", 0))
    remote.write("hook.yaml", job("between", "Sync", wave=1))
    remote.write("b.yaml", _waved("last", 2))
    remote.commit()
    result = await sync(engine, source)
    assert result.ok, result.problems()
    assert runs(result) == [("Sync", "between", "Succeeded")]
    first, last = await get(store, cm_ref("first")), await get(store, cm_ref("last"))
    hook = (await jobs(store))["between"]
    assert first is not None
    assert last is not None
    rv = {
        name: int(o["metadata"]["resourceVersion"])
        for name, o in (("first", first), ("last", last))
    }
    started = int(hook["metadata"]["resourceVersion"])  # its last write: completed
    assert rv["first"] < started < rv["last"]


async def test_a_failing_sync_hook_stops_the_later_waves(
    store: Store, remote: Remote, source: GitSource, engine: SyncEngine
) -> None:
    remote.write("a.yaml", _waved("first", 0))
    remote.write("hook.yaml", job("broken", "Sync", wave=0, fail=True))
    remote.write("b.yaml", _waved("last", 1))
    remote.write("fail.yaml", hook_cm("on-failure", "SyncFail"))
    remote.commit()
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    assert runs(result)[0] == ("Sync", "broken", "Failed")
    assert "a Sync hook failed: the later waves were not applied" in result.errors
    assert await get(store, cm_ref("first")) is not None  # its own wave: written with it
    assert await get(store, cm_ref("last")) is None
    assert await get(store, cm_ref("on-failure")) is not None  # SyncFail ran


async def test_delete_policies(
    store: Store, remote: Remote, source: GitSource, engine: SyncEngine
) -> None:
    remote.write("app.yaml", configmap("app"))
    remote.write("a.yaml", job("kept", "PreSync"))  # BeforeHookCreation by default
    remote.write("b.yaml", job("gone-ok", "PreSync", policy="HookSucceeded"))
    remote.write("c.yaml", job("kept-ok", "PreSync", policy="HookFailed"))
    remote.write("d.yaml", job("gone-bad", "SyncFail", policy="HookFailed", fail=True))
    remote.write("e.yaml", job("kept-bad", "SyncFail", policy="HookSucceeded", fail=True))
    remote.write("f.yaml", job("broken", "PostSync", fail=True))
    remote.commit()
    result = await sync(engine, source)
    assert result.status is SyncStatus.FAILED
    by_name = {h.ref.name: h for h in result.hooks}
    assert by_name["gone-ok"].deleted
    assert by_name["gone-ok"].state is HookState.SUCCEEDED
    assert by_name["gone-bad"].deleted
    assert by_name["gone-bad"].state is HookState.FAILED
    assert not by_name["kept"].deleted
    assert not by_name["kept-ok"].deleted
    assert not by_name["kept-bad"].deleted
    assert by_name["broken"].phase is Phase.POST_SYNC
    assert by_name["broken"].state is HookState.FAILED
    left = await jobs(store)
    assert "gone-ok" not in left
    assert "gone-bad" not in left
    assert {"kept", "kept-ok", "kept-bad", "broken"} <= left.keys()
    # BeforeHookCreation: a new run of "kept" replaces the old Job; HookSucceeded and
    # HookFailed alone leave an earlier run's object in place (it is not made again).
    before = {n: left[n]["metadata"]["uid"] for n in ("kept", "kept-ok")}
    await engine.sync(await source.snapshot(), run_hooks=True)
    after = await jobs(store)
    assert after["kept"]["metadata"]["uid"] != before["kept"]
    assert after["kept-ok"]["metadata"]["uid"] == before["kept-ok"]


async def test_generate_name_hooks_synced_twice_in_a_row(
    store: Store, remote: Remote, source: GitSource, engine: SyncEngine
) -> None:
    remote.write("hook.yaml", job("migrate", "PreSync", generate=True))
    remote.write("app.yaml", configmap("app"))
    remote.commit()
    first = await sync(engine, source)
    assert first.ok, first.problems()
    remote.write("app.yaml", configmap("app", data="a: '2'"))
    remote.commit("second")
    second = await sync(engine, source)
    assert second.ok, second.problems()
    names = [first.hooks[0].ref.name, second.hooks[0].ref.name]
    assert all(n.startswith("migrate-") and len(n) > len("migrate-") for n in names)
    assert names[0] != names[1]
    assert set(names) <= (await jobs(store)).keys()  # each run made its own Job


async def test_generate_name_without_a_hook_is_an_error(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("cm.yaml", configmap("x").replace("name: x", "generateName: x-"))
    remote.commit()
    result = await sync(make_engine(), source)
    assert result.status is SyncStatus.FAILED
    assert "cm.yaml:1" in result.errors[0]
    assert "only hooks, annotated argocd.argoproj.io/hook, may use it" in result.errors[0]
