"""list / list_raw: selectors, pagination at one revision, Expired after compaction."""

from __future__ import annotations

import orjson
import pytest

from gitkrm.errors import BadRequest, Expired, NotFound, Timeout
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, deployment, namespace

CMS = GVK(group="", version="v1", kind="ConfigMap")
DEPLOYS = GVK(group="apps", version="v1", kind="Deployment")


def names(lst: dict[str, object]) -> list[str]:
    items = lst["items"]
    assert isinstance(items, list)
    return [i["metadata"]["name"] for i in items]


async def fill(store: SqliteStore, n: int, ns: str = "default") -> None:
    for i in range(n):
        await store.create(configmap(f"c{i:02d}", ns, i=str(i)))


async def test_list_shape_and_namespaces(store: SqliteStore) -> None:
    await store.create(namespace("other"))
    await fill(store, 3)
    await store.create(configmap("x", "other"))
    everything = await store.list(CMS)
    assert everything["apiVersion"] == "v1"
    assert everything["kind"] == "ConfigMapList"
    assert everything["metadata"] == {"resourceVersion": str(store.resource_version)}
    assert names(everything) == ["c00", "c01", "c02", "x"]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in everything["items"])
    assert names(await store.list(CMS, namespace="other")) == ["x"]
    assert names(await store.list(CMS, namespace="nobody")) == []


async def test_list_raw_is_the_list_serialized(store: SqliteStore) -> None:
    await fill(store, 5)
    for kwargs in ({}, {"limit": 2}, {"label_selector": "a!=b"}):
        raw = await store.list_raw(CMS, **kwargs)
        assert orjson.loads(raw) == await store.list(CMS, **kwargs)


async def test_selectors(store: SqliteStore) -> None:
    await store.create(deployment("a", tier="web"))
    await store.create(deployment("b", tier="db"))
    await store.create(deployment("c"))
    assert names(await store.list(DEPLOYS, label_selector="tier=web")) == ["a"]
    assert names(await store.list(DEPLOYS, label_selector="tier in (web,db),app!=b")) == ["a"]
    assert names(await store.list(DEPLOYS, label_selector="!tier")) == ["c"]
    assert names(await store.list(DEPLOYS, field_selector="metadata.name=b")) == ["b"]
    assert names(await store.list(DEPLOYS, field_selector="metadata.namespace!=default")) == []
    with pytest.raises(BadRequest, match=r"field label not supported: spec\.replicas"):
        await store.list(DEPLOYS, field_selector="spec.replicas=1")
    with pytest.raises(BadRequest):
        await store.list(DEPLOYS, label_selector="tier in (web")


async def test_field_selector_on_object_content(mem: SqliteStore) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "", "tls.key": ""},
    }
    await mem.create(secret)
    opaque = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "o"}, "data": {}}
    await mem.create(opaque)
    secrets = GVK(group="", version="v1", kind="Secret")
    assert names(await mem.list(secrets, field_selector="type=kubernetes.io/tls")) == ["s"]
    assert names(await mem.list(secrets, field_selector="type=Opaque")) == ["o"]


async def test_pagination(store: SqliteStore) -> None:
    await fill(store, 7)
    seen: list[str] = []
    page = await store.list(CMS, limit=3)
    assert page["metadata"]["remainingItemCount"] == 4
    seen += names(page)
    while page["metadata"].get("continue"):
        page = await store.list(CMS, limit=3, continue_=page["metadata"]["continue"])
        seen += names(page)
    assert seen == [f"c{i:02d}" for i in range(7)]
    assert "remainingItemCount" not in page["metadata"]
    with pytest.raises(BadRequest, match="continue key is not valid"):
        await store.list(CMS, limit=3, continue_="garbage")
    with pytest.raises(BadRequest, match="specifying resource version is not allowed"):
        await store.list(
            CMS, limit=3, continue_=page["metadata"].get("continue") or "x", resource_version="5"
        )


async def test_pagination_with_selector_fills_pages(mem: SqliteStore) -> None:
    for i in range(10):
        await mem.create(deployment(f"d{i}", parity="even" if i % 2 == 0 else "odd"))
    page = await mem.list(DEPLOYS, limit=2, label_selector="parity=odd")
    assert names(page) == ["d1", "d3"]
    page = await mem.list(
        DEPLOYS, limit=2, label_selector="parity=odd", continue_=page["metadata"]["continue"]
    )
    assert names(page) == ["d5", "d7"]


async def test_pages_are_consistent_at_one_revision(store: SqliteStore) -> None:
    await fill(store, 6)
    first = await store.list(CMS, limit=2)
    rev = first["metadata"]["resourceVersion"]
    token = first["metadata"]["continue"]
    # Change the collection after the first page.
    c3 = await store.get(ObjectRef(group="", kind="ConfigMap", namespace="default", name="c03"))
    c3["data"] = {"changed": "yes"}
    await store.update(c3)
    await store.delete(ObjectRef(group="", kind="ConfigMap", namespace="default", name="c04"))
    await store.create(configmap("c025"))  # sorts into the remaining range
    await store.create(configmap("c99"))
    rest: list[dict[str, object]] = []
    page = await store.list(CMS, limit=2, continue_=token)
    while True:
        assert page["metadata"]["resourceVersion"] == rev
        rest += page["items"]
        if not page["metadata"].get("continue"):
            break
        page = await store.list(CMS, limit=2, continue_=page["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in rest] == ["c02", "c03", "c04", "c05"]  # type: ignore[index]
    assert rest[1]["data"] == {"i": "3"}
    # A fresh list shows the present.
    assert names(await store.list(CMS)) == ["c00", "c01", "c02", "c025", "c03", "c05", "c99"]


async def test_resource_version_semantics(mem: SqliteStore) -> None:
    await fill(mem, 3)
    old = mem.resource_version
    await mem.delete(ObjectRef(group="", kind="ConfigMap", namespace="default", name="c00"))
    # Exact with limit: the list as it was.
    past = await mem.list(CMS, limit=10, resource_version=str(old))
    assert names(past) == ["c00", "c01", "c02"]
    assert past["metadata"]["resourceVersion"] == str(old)
    # Without limit: not older than -> the current state.
    assert names(await mem.list(CMS, resource_version=str(old))) == ["c01", "c02"]
    assert names(await mem.list(CMS, resource_version="0")) == ["c01", "c02"]
    with pytest.raises(Timeout, match="Too large resource version"):
        await mem.list(CMS, resource_version=str(mem.resource_version + 10))
    with pytest.raises(BadRequest, match="invalid resource version"):
        await mem.list(CMS, resource_version="abc")


async def test_continue_expires_after_compaction(store: SqliteStore) -> None:
    await fill(store, 4)
    first = await store.list(CMS, limit=2)
    c2 = await store.get(ObjectRef(group="", kind="ConfigMap", namespace="default", name="c02"))
    await store.update({**c2, "data": {"v": "2"}})
    store.compact(store.resource_version)
    with pytest.raises(Expired, match="continue parameter is too old"):
        await store.list(CMS, limit=2, continue_=first["metadata"]["continue"])
    with pytest.raises(Expired, match="too old resource version"):
        await store.list(CMS, limit=2, resource_version=str(store.resource_version - 1))


async def test_history_survives_compaction_for_newer_revisions(mem: SqliteStore) -> None:
    await fill(mem, 3)
    for i in range(5):
        c1 = await mem.get(ObjectRef(group="", kind="ConfigMap", namespace="default", name="c01"))
        await mem.update({**c1, "data": {"v": str(i)}})
    at = mem.resource_version
    await mem.delete(ObjectRef(group="", kind="ConfigMap", namespace="default", name="c01"))
    await mem.delete(ObjectRef(group="", kind="ConfigMap", namespace="default", name="c02"))
    mem.compact(at)
    past = await mem.list(CMS, limit=10, resource_version=str(at))
    assert names(past) == ["c00", "c01", "c02"]
    assert past["items"][1]["data"] == {"v": "4"}


async def test_get_at_other_version_and_unknown_kind(mem: SqliteStore) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 3,
        },
    }
    await mem.create(hpa)
    got = await mem.get(
        ObjectRef(
            group="autoscaling",
            kind="HorizontalPodAutoscaler",
            namespace="default",
            name="h",
            version="v1",
        )
    )
    assert got["apiVersion"] == "autoscaling/v1"
    lst = await mem.list(GVK(group="autoscaling", version="v1", kind="HorizontalPodAutoscaler"))
    assert lst["apiVersion"] == "autoscaling/v1"
    assert lst["items"][0]["apiVersion"] == "autoscaling/v1"
    with pytest.raises(NotFound):
        await mem.list(GVK(group="nope.io", version="v1", kind="Thing"))


async def test_pages_show_deleted_and_recreated_objects_as_they_were(mem: SqliteStore) -> None:
    await fill(mem, 4)
    first = await mem.list(CMS, limit=1)
    for name in ("c02", "c03"):
        await mem.delete(ObjectRef(group="", kind="ConfigMap", namespace="default", name=name))
    await mem.create(configmap("c02", new="yes"))  # same name, a new object
    mem.compact(int(first["metadata"]["resourceVersion"]))  # history after the list is kept
    rest = await mem.list(CMS, limit=10, continue_=first["metadata"]["continue"])
    assert names(rest) == ["c01", "c02", "c03"]
    assert rest["items"][1]["data"] == {"i": "2"}
