"""Applications in the shapes of Argo CD's end-to-end test data for hooks and sync waves
(written here, see tests/corpus/argocd-hooks-lookalike/README.md), each application
directory committed to a real Git repository and synced by the engine on a store with the
bundled controllers, as an Argo CD Application with the destination namespace `apps` would
be."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from gitkrm.krm import ObjectRef
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.hooks import HookState, Phase
from gitkrm.sync.results import Action, SyncResult, SyncStatus
from tests.sync.conftest import EngineFactory, SourceFactory
from tests.sync.sync_helpers import Remote
from tests.sync.test_engine import actions, get, pruned, sync

TESTDATA = Path(__file__).parent.parent / "corpus" / "argocd-hooks-lookalike"


def commit(remote: Remote, app: str) -> None:
    for f in sorted((TESTDATA / app).iterdir()):
        if f.suffix == ".yaml":
            remote.write(f.name, f.read_bytes())
    remote.commit(app)


AppSync = Callable[[str], Awaitable[SyncResult]]


@pytest.fixture
def sync_app(apps: None, remote: Remote, source: GitSource, make_engine: EngineFactory) -> AppSync:
    """Commits an application directory and syncs it as an Argo CD Application with the
    destination namespace apps (hooks waited for up to 30 s); the sync must succeed."""

    async def run(app: str) -> SyncResult:
        commit(remote, app)
        result = await sync(make_engine(default_namespace="apps", health_timeout=30.0), source)
        assert result.ok, result.problems()
        return result

    return run


def ref(kind: str, name: str, group: str = "", namespace: str | None = "apps") -> ObjectRef:
    return ObjectRef(group=group, kind=kind, name=name, namespace=namespace)


async def test_hook(store: Store, sync_app: AppSync) -> None:
    result = await sync_app("sync-hook")
    assert [(h.phase, h.ref.kind, h.ref.name, h.state) for h in result.hooks] == [
        (Phase.SYNC, "Pod", "smoke-check", HookState.SUCCEEDED)
    ]
    assert actions(result) == {"Pod/worker": Action.CREATED}  # the hook is not a synced object
    hook = await store.get(ref("Pod", "smoke-check"))
    assert hook["status"]["phase"] == "Succeeded"  # a hook Pod is done once it completed


async def test_hook_and_deployment(store: Store, sync_app: AppSync) -> None:
    result = await sync_app("job-hook-with-deployment")
    assert [(h.phase, h.ref.name, h.state) for h in result.hooks] == [
        (Phase.SYNC, "schema-migrate", HookState.SUCCEEDED)
    ]
    job = await store.get(ref("Job", "schema-migrate", group="batch"))
    assert any(c["type"] == "Complete" for c in job["status"]["conditions"])
    assert actions(result) == {"Deployment/shop-api": Action.CREATED}


async def test_sync_waves(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    commit(remote, "waves")
    result = await sync(make_engine(default_namespace="apps"), source)
    assert result.ok, result.problems()
    assert [o.ref.name for o in result.objects] == ["settings-first", "settings-second"]
    rv = [
        int((await store.get(ref("ConfigMap", n)))["metadata"]["resourceVersion"])
        for n in ("settings-first", "settings-second")
    ]
    assert rv == sorted(rv)


async def test_syncwaves_prune_order(
    store: Store, apps: None, remote: Remote, make_source: SourceFactory, make_engine: EngineFactory
) -> None:
    commit(remote, "reverse-prune")
    engine, source = (
        make_engine(default_namespace="apps", health_timeout=2.0),
        make_source(remote.url),
    )
    created = await sync(engine, source)
    assert created.ok, created.problems()
    assert [o.ref.name for o in created.objects] == [
        "janitor",
        "janitor-pods",
        "janitor-pods-binding",
        "guarded",
    ]
    for name in ("guarded.yaml", "access.yaml"):
        remote.remove(name)
    remote.write("keep.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\n")
    remote.commit("remove the application")
    # Reverse waves: the Pod (wave 2) first. Its finalizer is removed only by its preStop
    # hook in a real cluster, which the simulator does not run: it stays Terminating, so
    # the RoleBinding (wave 1) and the ServiceAccount and Role (wave 0) are not touched yet.
    stuck = await sync(engine, source)
    assert stuck.status is SyncStatus.FAILED
    assert stuck.errors[0].startswith(
        "pruning wave 2 not healthy within 2s: Pod apps/guarded: Terminating"
    )
    outcome = {o.ref.name: o.action for o in stuck.objects if o.ref.name != "keep"}
    assert outcome == {
        "guarded": Action.PRUNED,
        "janitor-pods-binding": Action.FAILED,
        "janitor-pods": Action.FAILED,
        "janitor": Action.FAILED,
    }
    assert await get(
        store, ref("RoleBinding", "janitor-pods-binding", group="rbac.authorization.k8s.io")
    )
    # What the preStop hook does: the finalizer goes, the Pod is gone, the rest is pruned.
    await store.patch(
        ref("Pod", "guarded"),
        [{"op": "remove", "path": "/metadata/finalizers"}],
        "json",
    )
    done = await sync(engine, source)
    assert done.ok, done.problems()
    assert pruned(done) == ["janitor-pods-binding", "janitor-pods", "janitor"]


async def test_multi_namespace_hook(store: Store, sync_app: AppSync) -> None:
    result = await sync_app("hooks-in-two-namespaces")
    assert actions(result) == {  # the hooks' Namespace was made before the hooks ran
        "Namespace/reports": Action.UNCHANGED,
        "Deployment/frontend": Action.CREATED,
    }
    assert sorted((h.phase, h.ref.namespace, h.state, h.deleted) for h in result.hooks) == [
        (Phase.POST_SYNC, "apps", HookState.SUCCEEDED, True),
        (Phase.POST_SYNC, "reports", HookState.SUCCEEDED, True),
    ]
    for ns in ("apps", "reports"):  # HookSucceeded: deleted
        pod = await get(store, ref("Pod", "notify", namespace=ns))
        assert pod is None or pod["metadata"].get("deletionTimestamp")
