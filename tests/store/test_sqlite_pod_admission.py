"""The store admits a Pod create as kube-apiserver's default plugins do, and only a Pod: a
pod template (a Deployment's) gains nothing, so Git and the live template agree."""

from __future__ import annotations

import re

import pytest

from gitkrm.errors import Forbidden, NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import deployment

POD = ObjectRef(group="", kind="Pod", namespace="default", name="p")


def pod(**spec: object) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1"}], **spec},
    }


async def test_a_created_pod_is_admitted(mem: SqliteStore) -> None:
    spec = (await mem.create(pod()))["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    (volume,) = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert spec["containers"][0]["volumeMounts"][0]["name"] == volume["name"]


async def test_a_deployment_template_gains_nothing(mem: SqliteStore) -> None:
    d = await mem.create(deployment("web"))
    spec = d["spec"]["template"]["spec"]
    for field in ("serviceAccountName", "tolerations", "priority", "volumes"):
        assert field not in spec


async def test_priority_class_of_the_store(mem: SqliteStore) -> None:
    await mem.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "batch"},
            "value": 50,
            "globalDefault": True,
            "preemptionPolicy": "Never",
        }
    )
    spec = (await mem.create(pod()))["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "batch",
        50,
        "Never",
    )
    other = pod(priorityClassName="system-cluster-critical")
    other["metadata"]["name"] = "q"
    assert (await mem.create(other))["spec"]["priority"] == 2000000000


async def test_a_forbidden_priority_writes_nothing(mem: SqliteStore) -> None:
    with pytest.raises(Forbidden, match='pods "p" is forbidden: the integer value of priority'):
        await mem.create(pod(priority=3))
    with pytest.raises(NotFound):
        await mem.get(POD)


async def test_an_update_without_the_default_tolerations_keeps_them(mem: SqliteStore) -> None:
    live = await mem.create(pod())
    body = {**live, "spec": {**live["spec"], "tolerations": []}}
    updated = await mem.update(body)
    assert len(updated["spec"]["tolerations"]) == 2
    assert updated["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
