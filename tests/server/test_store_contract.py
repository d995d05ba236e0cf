"""One contract for every Store: the same tests against `sqlite://`, against the HTTP API
of a real server through `kube://` (KubeStore, over TLS with a bearer token), and through
the official kubernetes client (a second, independent client of the same API)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import pytest

from gitkrm.errors import AlreadyExists, BadRequest, Conflict, Expired, NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.server import ServeOptions, ServerThread
from gitkrm.server.tls import generate_self_signed
from gitkrm.store import (
    BatchOp,
    BatchOpKind,
    EventType,
    Preconditions,
    Propagation,
    Store,
    open_store,
)
from gitkrm.store.kube import KubeStore
from gitkrm.store.sqlite import SqliteStore
from tests.server.kube_store import KubeClientStore
from tests.support.builders import configmap, deployment, namespace
from tests.support.wait import eventually_async

CM = GVK(group="", version="v1", kind="ConfigMap")
DEPLOY = GVK(group="apps", version="v1", kind="Deployment")
_names = itertools.count(1)


@dataclass
class Contract:
    store: Store
    compact: Callable[[], None]
    ns: str


async def _compact_all(s: SqliteStore) -> None:
    s.compact(s.resource_version)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """A server that wants TLS and a bearer token, as a cluster does."""
    state = tmp_path_factory.mktemp("secured")
    tls = generate_self_signed(state, ["127.0.0.1", "localhost"])
    options = ServeOptions(port=0, token="c0ntract", tls=tls, state_dir=state)
    with ServerThread(options=options) as server:
        yield server


@pytest.fixture(params=["sqlite", "kube", "kube-client"])
async def c(
    request: pytest.FixtureRequest, api: ServerThread, secured: ServerThread
) -> AsyncIterator[Contract]:
    if request.param == "sqlite":
        sq = await open_store("sqlite:///:memory:")
        assert isinstance(sq, SqliteStore)
        store: Store = sq
        compact: Callable[[], None] = lambda: sq.compact(sq.resource_version)  # noqa: E731
    elif request.param == "kube":
        assert secured.bound is not None
        assert secured.bound.kubeconfig is not None
        assert secured.url.startswith("https://")
        store = await open_store(f"kube://?kubeconfig={secured.bound.kubeconfig}")
        assert isinstance(store, KubeStore)
        compact = lambda: secured.run(_compact_all)  # noqa: E731
    else:
        assert api.bound is not None
        assert api.bound.kubeconfig is not None
        store = KubeClientStore(str(api.bound.kubeconfig))
        compact = lambda: api.run(_compact_all)  # noqa: E731
    ns = f"contract-{next(_names)}"
    await store.create(namespace(ns))
    yield Contract(store=store, compact=compact, ns=ns)
    await store.close()


def ref(name: str, ns: str, gvk: GVK = CM) -> ObjectRef:
    return ObjectRef(group=gvk.group, kind=gvk.kind, name=name, namespace=ns)


async def test_create_get_and_server_fields(c: Contract) -> None:
    made = await c.store.create(configmap("a", c.ns, k="v"))
    md = made["metadata"]
    assert md["uid"]
    assert md["resourceVersion"]
    assert md["creationTimestamp"]
    got = await c.store.get(ref("a", c.ns))
    assert got["data"] == {"k": "v"}
    assert got["metadata"]["uid"] == md["uid"]
    with pytest.raises(AlreadyExists):
        await c.store.create(configmap("a", c.ns))
    with pytest.raises(NotFound):
        await c.store.get(ref("missing", c.ns))


async def test_update_needs_the_current_resource_version(c: Contract) -> None:
    made = await c.store.create(configmap("u", c.ns, k="1"))
    stale = dict(made, data={"k": "stale"})
    fresh = await c.store.update(dict(made, data={"k": "2"}))
    assert int(fresh["metadata"]["resourceVersion"]) > int(made["metadata"]["resourceVersion"])
    with pytest.raises(Conflict):
        await c.store.update(stale)
    assert (await c.store.get(ref("u", c.ns)))["data"] == {"k": "2"}


async def test_patch_types(c: Contract) -> None:
    await c.store.create(deployment("p", c.ns))
    r = ref("p", c.ns, DEPLOY)
    out = await c.store.patch(r, {"spec": {"replicas": 3}}, "merge")
    assert out["spec"]["replicas"] == 3
    out = await c.store.patch(r, [{"op": "replace", "path": "/spec/replicas", "value": 4}], "json")
    assert out["spec"]["replicas"] == 4
    containers = {"containers": [{"name": "c", "image": "nginx:2"}]}
    out = await c.store.patch(r, {"spec": {"template": {"spec": containers}}}, "strategic")
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert out["metadata"]["generation"] == 4


async def test_list_selectors_and_pages(c: Contract) -> None:
    for i in range(5):
        obj = configmap(f"l{i}", c.ns)
        obj["metadata"]["labels"] = {"parity": "even" if i % 2 == 0 else "odd"}
        await c.store.create(obj)
    evens = await c.store.list(CM, namespace=c.ns, label_selector="parity=even")
    assert [o["metadata"]["name"] for o in evens["items"]] == ["l0", "l2", "l4"]
    one = await c.store.list(CM, namespace=c.ns, field_selector="metadata.name=l3")
    assert [o["metadata"]["name"] for o in one["items"]] == ["l3"]
    first = await c.store.list(CM, namespace=c.ns, limit=2)
    assert [o["metadata"]["name"] for o in first["items"]] == ["l0", "l1"]
    token = first["metadata"]["continue"]
    await c.store.create(configmap("l10", c.ns))  # after the first page: not in this list
    rest = await c.store.list(CM, namespace=c.ns, limit=10, continue_=token)
    assert [o["metadata"]["name"] for o in rest["items"]] == ["l2", "l3", "l4"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_delete_preconditions_and_propagation(c: Contract) -> None:
    made = await c.store.create(configmap("d", c.ns))
    with pytest.raises(Conflict):
        await c.store.delete(ref("d", c.ns), preconditions=Preconditions(uid="other"))
    await c.store.delete(ref("d", c.ns), preconditions=Preconditions(uid=made["metadata"]["uid"]))
    with pytest.raises(NotFound):
        await c.store.get(ref("d", c.ns))
    await c.store.create(configmap("fg", c.ns))
    marked = await c.store.delete(ref("fg", c.ns), propagation=Propagation.FOREGROUND)
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert (await c.store.get(ref("fg", c.ns)))["metadata"]["deletionTimestamp"]


async def test_dry_run_and_field_validation(c: Contract) -> None:
    await c.store.create(configmap("dry", c.ns), dry_run=True)
    with pytest.raises(NotFound):
        await c.store.get(ref("dry", c.ns))
    bad = deployment("bad", c.ns)
    bad["spec"]["bogus"] = 1
    with pytest.raises(BadRequest, match=r'unknown field "spec\.bogus"'):
        await c.store.create(bad, field_validation="Strict")
    made = await c.store.create(bad, field_validation="Ignore")
    assert "bogus" not in made["spec"]


async def test_update_status_touches_only_status(c: Contract) -> None:
    made = await c.store.create(deployment("s", c.ns))
    made["status"] = {"replicas": 1, "observedGeneration": 1}
    made["spec"]["replicas"] = 9
    out = await c.store.update_status(made)
    assert out["status"]["replicas"] == 1
    assert out["spec"]["replicas"] == 1


async def test_watch_from_a_list(c: Contract) -> None:
    await c.store.create(configmap("before", c.ns))
    listed = await c.store.list(CM, namespace=c.ns)
    events = c.store.watch(
        CM, namespace=c.ns, resource_version=listed["metadata"]["resourceVersion"]
    )

    seen: list[tuple[str, str]] = []

    async def collect() -> list[tuple[str, str]]:
        async for ev in events:
            seen.append((ev.type.value, ev.obj["metadata"]["name"]))
            if len(seen) == 3:
                break
        return seen

    task = asyncio.ensure_future(collect())
    await c.store.create(configmap("w", c.ns))
    # The watch runs once it has seen the first write (no sleep hoping it has started).
    await eventually_async(lambda: ("ADDED", "w") in seen, message="the watch to see w added")
    await c.store.patch(ref("w", c.ns), {"data": {"x": "y"}}, "merge")
    await c.store.delete(ref("w", c.ns))
    got = await asyncio.wait_for(task, 10)
    assert got == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_watch_without_revision_starts_with_the_current_objects(c: Contract) -> None:
    await c.store.create(configmap("x1", c.ns))
    await c.store.create(configmap("x2", c.ns))
    events = c.store.watch(CM, namespace=c.ns)
    seen = []
    async for ev in events:
        assert ev.type is EventType.ADDED
        seen.append(ev.obj["metadata"]["name"])
        if len(seen) == 2:
            break
    assert sorted(seen) == ["x1", "x2"]


async def test_watch_from_a_compacted_revision_is_expired(c: Contract) -> None:
    made = await c.store.create(configmap("old", c.ns))
    await c.store.patch(ref("old", c.ns), {"data": {"a": "b"}}, "merge")
    c.compact()

    async def first() -> None:
        async for _ in c.store.watch(
            CM, namespace=c.ns, resource_version=made["metadata"]["resourceVersion"]
        ):
            return

    with pytest.raises(Expired):
        await first()


async def test_batch(c: Contract) -> None:
    out = await c.store.batch(
        [
            BatchOp(op=BatchOpKind.CREATE, obj=configmap("b1", c.ns)),
            BatchOp(
                op=BatchOpKind.PATCH,
                ref=ref("b1", c.ns),
                patch={"data": {"k": "v"}},
                patch_type="merge",
            ),
            BatchOp(op=BatchOpKind.DELETE, ref=ref("b1", c.ns)),
        ]
    )
    assert len(out) == 3
    with pytest.raises(NotFound):
        await c.store.get(ref("b1", c.ns))
