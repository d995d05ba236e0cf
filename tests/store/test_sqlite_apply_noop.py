"""Server-side apply without churn (#22): an apply whose result, once defaulted, is the live
object is a no-op (same resourceVersion, no event, managedFields untouched), for the
shapes Git leaves the server to default (`strategy: {}`, a pod template's
`creationTimestamp: null`, an env `fieldRef` without `apiVersion`, `volumeClaimTemplates`
without `volumeMode`/`status`) and for a custom resource whose schema has defaults; the
API server's IgnoreManagedFieldsTimestampsTransformer (a write that only moves the time
of managedFields entries is none)."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from gitkrm.krm import ObjectRef
from gitkrm.store.sqlite import SqliteStore, managed
from tests.support.defaultable import deployment, gadget, gadget_crd, statefulset

Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every managedFields time a new second, so an entry whose time moves is seen."""
    seconds = itertools.count()
    monkeypatch.setattr(
        managed,
        "stamp",
        lambda _clock: f"2030-01-01T00:{next(seconds) // 60 % 60:02d}:{next(seconds) % 60:02d}Z",
    )


DEPLOY = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")
STS = ObjectRef(group="apps", kind="StatefulSet", namespace="default", name="db")
GADGET = ObjectRef(group="example.com", kind="Gadget", namespace="default", name="g")


async def reapplied(store: SqliteStore, ref: ObjectRef, config: Obj) -> tuple[Obj, Obj]:
    first = await store.patch(ref, copy.deepcopy(config), "apply", field_manager="gitops")
    again = await store.patch(ref, copy.deepcopy(config), "apply", field_manager="gitops")
    return first, again


@pytest.mark.parametrize(
    ("ref", "config"),
    [
        (DEPLOY, deployment()),
        (DEPLOY, deployment(creationTimestamp=None)),
        (STS, statefulset()),
    ],
    ids=["deployment", "creationTimestamp-null", "volumeClaimTemplates"],
)
async def test_reapplying_what_the_server_defaults_is_a_no_op(
    mem: SqliteStore, ref: ObjectRef, config: Obj
) -> None:
    first, again = await reapplied(mem, ref, config)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again == first
    assert again["metadata"]["generation"] == 1


async def test_the_defaults_are_the_servers(mem: SqliteStore) -> None:
    first, _ = await reapplied(mem, DEPLOY, deployment(creationTimestamp=None))
    spec = first["spec"]
    assert spec["strategy"]["type"] == "RollingUpdate"
    [c] = spec["template"]["spec"]["containers"]
    ref = c["env"][0]["valueFrom"]["fieldRef"]
    assert ref == {"apiVersion": "v1", "fieldPath": "metadata.name"}
    sts, _ = await reapplied(mem, STS, statefulset())
    [vct] = sts["spec"]["volumeClaimTemplates"]
    assert vct["spec"]["volumeMode"] == "Filesystem"


async def test_a_custom_resource_with_schema_defaults(mem: SqliteStore) -> None:
    crd_ref = ObjectRef(
        group="apiextensions.k8s.io", kind="CustomResourceDefinition", name="gadgets.example.com"
    )
    await mem.patch(crd_ref, gadget_crd(), "apply", field_manager="gitops")
    first, again = await reapplied(mem, GADGET, gadget())
    assert first["spec"] == {"size": 3, "ports": [{"port": 80, "protocol": "TCP"}]}
    assert again == first


async def test_an_object_created_with_a_null_keeps_it(mem: SqliteStore) -> None:
    """Created by a plain create (kubectl create, client-side apply) with the null Go
    writes, then applied with it (force, as gitkrm applies: the atomic `fieldRef` the
    server completed with `apiVersion` is the creator's, a conflict on kube-apiserver too):
    the pod template is unchanged, so is the generation."""
    config = deployment(creationTimestamp=None)
    created = await mem.create(copy.deepcopy(config), field_manager="kubectl-create")
    again = await mem.patch(
        DEPLOY, copy.deepcopy(config), "apply", field_manager="gitops", force=True
    )
    assert again["spec"]["template"] == created["spec"]["template"]
    assert again["metadata"]["generation"] == 1


async def test_a_real_change_still_writes_and_moves_the_time(mem: SqliteStore) -> None:
    await reapplied(mem, STS, statefulset())
    bigger = statefulset()
    bigger["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "2Gi"
    with pytest.raises(Exception, match="Forbidden"):  # volumeClaimTemplates are immutable
        await mem.patch(STS, bigger, "apply", field_manager="gitops")
    more = deployment()
    await reapplied(mem, DEPLOY, more)
    before = await mem.get(DEPLOY)
    more["spec"]["replicas"] = 4
    after = await mem.patch(DEPLOY, more, "apply", field_manager="gitops")
    assert after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    [entry] = after["metadata"]["managedFields"]
    assert entry["time"] != before["metadata"]["managedFields"][0]["time"]


async def test_a_write_that_moves_only_times_is_no_write(mem: SqliteStore) -> None:
    """An update that sends the live object back with other managedFields times."""
    first, _ = await reapplied(mem, DEPLOY, deployment())
    body = copy.deepcopy(first)
    body["metadata"]["managedFields"][0]["time"] = "2031-01-01T00:00:00Z"
    out = await mem.update(body, field_manager="gitops")
    assert out["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert out["metadata"]["managedFields"] == first["metadata"]["managedFields"]
