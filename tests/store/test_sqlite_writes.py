"""create / update / update_status semantics of the SQLite store."""

from __future__ import annotations

import re

import pytest

from gitkrm.errors import AlreadyExists, BadRequest, Conflict, Forbidden, Invalid, NotFound
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import configmap, deployment, namespace

NS = GVK(group="", version="v1", kind="Namespace")
DEPLOY = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")


async def test_initial_namespaces(store: SqliteStore) -> None:
    lst = await store.list(NS)
    names = [i["metadata"]["name"] for i in lst["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    for ns in lst["items"]:
        assert ns["spec"]["finalizers"] == ["kubernetes"]
        assert ns["status"] == {"phase": "Active"}
        assert ns["apiVersion"] == "v1"
        assert ns["kind"] == "Namespace"
    assert lst["kind"] == "NamespaceList"


async def test_create_sets_server_metadata(store: SqliteStore) -> None:
    before = store.resource_version
    d = await store.create(deployment("web"))
    cm = await store.create(configmap("cfg", a="1"))
    md = d["metadata"]
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", md["uid"]
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", md["creationTimestamp"])
    assert md["generation"] == 1
    assert "generation" not in cm["metadata"]
    assert int(md["resourceVersion"]) == before + 1
    assert int(cm["metadata"]["resourceVersion"]) == before + 2  # one counter for all kinds
    assert d["spec"]["strategy"]["type"] == "RollingUpdate"  # admission defaulted it
    assert await store.get(DEPLOY) == d


async def test_create_does_not_change_the_callers_object(mem: SqliteStore) -> None:
    obj = deployment("web")
    await mem.create(obj)
    assert obj == deployment("web")


async def test_create_errors(store: SqliteStore) -> None:
    await store.create(deployment("web"))
    with pytest.raises(AlreadyExists, match=r'^deployments.apps "web" already exists$'):
        await store.create(deployment("web"))
    with pytest.raises(NotFound, match=r'^deployments.apps "nope" not found$'):
        await store.get(
            ObjectRef(group="apps", kind="Deployment", namespace="default", name="nope")
        )
    with pytest.raises(NotFound, match=r'^namespaces "nope" not found$'):
        await store.create(deployment("web", "nope"))
    obj = deployment("x")
    obj["metadata"]["resourceVersion"] = "5"
    with pytest.raises(BadRequest, match="resourceVersion should not be set"):
        await store.create(obj)
    with pytest.raises(NotFound, match="no matches for kind"):
        await store.create(
            {"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "x"}}
        )


async def test_invalid_object_writes_nothing(store: SqliteStore) -> None:
    rv = store.resource_version
    bad = deployment("web")
    bad["spec"]["replicas"] = -1
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(Invalid) as err:
        await store.create(bad)
    assert len(err.value.causes) >= 2  # every cause, not just the first
    assert store.resource_version == rv
    with pytest.raises(NotFound):
        await store.get(DEPLOY)


async def test_generate_name(mem: SqliteStore) -> None:
    obj = configmap("")
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "cfg-"
    a = await mem.create(obj)
    b = await mem.create(obj)
    assert re.fullmatch(r"cfg-[a-z0-9]{5}", a["metadata"]["name"])
    assert a["metadata"]["name"] != b["metadata"]["name"]
    del obj["metadata"]["generateName"]
    with pytest.raises(Invalid, match="name or generateName is required"):
        await mem.create(obj)


async def test_terminating_namespace_refuses_new_content(mem: SqliteStore) -> None:
    await mem.create(namespace("team"))
    await mem.delete(ObjectRef(group="", kind="Namespace", name="team"))
    with pytest.raises(
        Forbidden,
        match=r"^unable to create new content in namespace team because it is being terminated$",
    ):
        await mem.create(configmap("cfg", "team"))


async def test_update_optimistic_concurrency(store: SqliteStore) -> None:
    d = await store.create(deployment("web"))
    d["spec"]["replicas"] = 2
    d2 = await store.update(d)
    assert int(d2["metadata"]["resourceVersion"]) > int(d["metadata"]["resourceVersion"])
    assert d2["metadata"]["generation"] == 2
    d["spec"]["replicas"] = 5  # d still carries the old resourceVersion
    with pytest.raises(Conflict) as err:
        await store.update(d)
    assert err.value.message == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    del d["metadata"]["resourceVersion"]  # unconditional update
    d3 = await store.update(d)
    assert d3["spec"]["replicas"] == 5
    assert d3["metadata"]["generation"] == 3
    assert d3["metadata"]["uid"] == d2["metadata"]["uid"]
    assert d3["metadata"]["creationTimestamp"] == d2["metadata"]["creationTimestamp"]


async def test_update_generation_only_on_spec_change(mem: SqliteStore) -> None:
    d = await mem.create(deployment("web"))
    d["metadata"]["labels"]["extra"] = "yes"
    d2 = await mem.update(d)
    assert d2["metadata"]["generation"] == 1
    assert d2["metadata"]["labels"]["extra"] == "yes"


async def test_noop_update_keeps_revision(mem: SqliteStore) -> None:
    d = await mem.create(deployment("web"))
    rv = mem.resource_version
    same = await mem.update(d)
    assert same["metadata"]["resourceVersion"] == d["metadata"]["resourceVersion"]
    assert mem.resource_version == rv


async def test_update_missing_or_uid_mismatch(mem: SqliteStore) -> None:
    with pytest.raises(NotFound, match=r'deployments\.apps "web" not found'):
        await mem.update(deployment("web"))
    d = await mem.create(deployment("web"))
    d["metadata"]["uid"] = "other"
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: other"):
        await mem.update(d)


async def test_status_subresource(store: SqliteStore) -> None:
    d = await store.create(deployment("web"))
    assert "status" not in d
    d["status"] = {"replicas": 1, "observedGeneration": 1}
    d["spec"]["replicas"] = 4
    d2 = await store.update(d)
    assert "status" not in d2
    assert d2["spec"]["replicas"] == 4
    d2["status"] = {"replicas": 3}
    d2["spec"]["replicas"] = 9
    d2["metadata"]["labels"]["x"] = "y"
    d3 = await store.update_status(d2)
    assert d3["status"] == {"replicas": 3}
    assert d3["spec"]["replicas"] == 4
    assert "x" not in d3["metadata"]["labels"]
    assert d3["metadata"]["generation"] == d2["metadata"]["generation"]


async def test_kind_without_status_subresource(mem: SqliteStore) -> None:
    cm = await mem.create(configmap("cfg", a="1"))
    cm["data"]["a"] = "2"
    assert (await mem.update(cm))["data"] == {"a": "2"}
    with pytest.raises(NotFound, match="configmaps/status"):
        await mem.update_status(cm)


async def test_dry_run(store: SqliteStore) -> None:
    rv = store.resource_version
    out = await store.create(deployment("web"), dry_run=True)
    assert out["metadata"]["uid"]
    assert "resourceVersion" not in out["metadata"]
    assert store.resource_version == rv
    with pytest.raises(NotFound):
        await store.get(DEPLOY)
    d = await store.create(deployment("web"))
    d["spec"]["replicas"] = 7
    dry = await store.update(d, dry_run=True)
    assert dry["spec"]["replicas"] == 7
    assert dry["metadata"]["resourceVersion"] == d["metadata"]["resourceVersion"]
    assert (await store.get(DEPLOY))["spec"]["replicas"] == 1


async def test_field_validation(mem: SqliteStore) -> None:
    obj = deployment("web")
    obj["spec"]["bogus"] = 1
    with pytest.raises(BadRequest, match=r'unknown field "spec\.bogus"'):
        await mem.create(obj)
    warnings: list[str] = []
    out = await mem.create(obj, field_validation="Warn", warnings=warnings)
    assert warnings == ['unknown field "spec.bogus"']
    assert "bogus" not in out["spec"]
    obj["metadata"]["name"] = "web2"
    out = await mem.create(obj, field_validation="Ignore", field_manager="me")
    assert "bogus" not in out["spec"]
    with pytest.raises(BadRequest, match="invalid fieldValidation"):
        await mem.create(obj, field_validation="Loose")


async def test_cluster_scoped_objects_lose_namespace(mem: SqliteStore) -> None:
    obj = namespace("team")
    obj["metadata"]["namespace"] = "default"
    out = await mem.create(obj)
    assert "namespace" not in out["metadata"]
    assert out["spec"]["finalizers"] == ["kubernetes"]


async def test_read_only_store_refuses_writes(tmp_path: object) -> None:
    from pathlib import Path

    from gitkrm.errors import MethodNotAllowed

    path = str(Path(str(tmp_path)) / "s.db")
    w = SqliteStore.open(path)
    r = SqliteStore.open(path, read_only=True)
    try:
        with pytest.raises(MethodNotAllowed, match="read-only"):
            await r.create(configmap("x"))
        await w.create(configmap("x"))
        assert await r.get(ObjectRef(group="", kind="ConfigMap", namespace="default", name="x"))
    finally:
        await r.close()
        await w.close()


async def test_job_selector_is_generated_from_the_stored_uid(mem: SqliteStore) -> None:
    job = await mem.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "default"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            },
        }
    )
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"]["matchLabels"] == {"batch.kubernetes.io/controller-uid": uid}
    assert (
        job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == uid
    )


async def test_generated_name_that_is_taken_is_drawn_again(mem: SqliteStore) -> None:
    import random

    obj = configmap("")
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "cfg-"
    random.seed(7)
    first = await mem.create(obj)
    random.seed(7)  # the same first draw again: it collides and must be drawn again
    second = await mem.create(obj)
    assert first["metadata"]["name"] != second["metadata"]["name"]
    assert second["metadata"]["name"].startswith("cfg-")


async def test_objects_nested_too_deeply_are_refused(mem: SqliteStore) -> None:
    # Found by tests/fuzz/test_fuzz_http.py: an object 249 levels deep passed the store's
    # JSON check, then its managedFields took it past orjson's 254 levels (TypeError).
    deep: object = "x"
    for _ in range(249):
        deep = [deep]
    with pytest.raises(BadRequest, match=r"nested too deeply \(more than 200 levels\)"):
        await mem.create({**configmap("deep"), "extra": deep})
