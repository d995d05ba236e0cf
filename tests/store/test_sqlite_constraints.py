"""LimitRanges and ResourceQuotas on the store's writes, as kube-apiserver's LimitRanger and
ResourceQuota admission plugins apply them: defaults and bounds on Pods and claims, charges
and refusals by quotas, nothing at all in a namespace that holds neither.

The messages are kube-apiserver's: plugin/pkg/admission/limitranger/admission.go
(minConstraint, maxConstraint, limitRequestRatioConstraint, maxRequestConstraint) and
plugin/pkg/admission/resourcequota/controller.go (CheckRequest: "exceeded quota: %s,
requested: %s, used: %s, limited: %s", "failed quota: %s: %v"), with
pkg/quota/v1/evaluator/core/pods.go (Constraints: "must specify %s").
"""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Forbidden, Invalid
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store.sqlite import SqliteStore
from tests.store.store_objects import deployment
from tests.support import builders

QUOTA = ObjectRef(group="", kind="ResourceQuota", namespace="default", name="compute")


def pod(name: str = "p", **resources: Any) -> Obj:
    container: dict[str, Any] = {"name": "web", "image": "nginx:1"}
    if resources:
        container["resources"] = resources
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container]},
    }


def limit_range(*items: Obj, name: str = "limits") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"limits": list(items)},
    }


async def quota(store: SqliteStore, hard: dict[str, str], used: dict[str, str]) -> Obj:
    """A quota whose status the resource-quota controller has written."""
    q = await store.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute", "namespace": "default"},
            "spec": {"hard": hard},
        }
    )
    q["status"] = {"hard": hard, "used": used}
    return await store.update_status(q)


async def test_container_defaults_and_the_annotation(mem: SqliteStore) -> None:
    lr = await mem.create(
        limit_range(
            {
                "type": "Container",
                "default": {"cpu": "500m", "memory": "256Mi"},
                "defaultRequest": {"cpu": "100m"},
            }
        )
    )
    # SetDefaults_LimitRangeItem: a default request for what has only a default limit.
    assert lr["spec"]["limits"][0]["defaultRequest"] == {"cpu": "100m", "memory": "256Mi"}
    created = await mem.create(pod(requests={"memory": "64Mi"}))
    resources = created["spec"]["containers"][0]["resources"]
    assert resources == {
        "requests": {"memory": "64Mi", "cpu": "100m"},
        "limits": {"cpu": "500m", "memory": "256Mi"},
    }
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container web; cpu, memory limit for container web"
    )
    assert created["status"]["qosClass"] == "Burstable"


async def test_init_containers_are_defaulted_too(mem: SqliteStore) -> None:
    await mem.create(limit_range({"type": "Container", "defaultRequest": {"cpu": "50m"}}))
    p = pod()
    p["spec"]["initContainers"] = [{"name": "setup", "image": "busybox:1"}]
    created = await mem.create(p)
    assert created["spec"]["initContainers"][0]["resources"]["requests"] == {"cpu": "50m"}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container web; "
        "cpu request for init container setup"
    )


async def test_a_deployment_template_is_not_defaulted(mem: SqliteStore) -> None:
    await mem.create(limit_range({"type": "Container", "default": {"cpu": "1"}}))
    d = await mem.create(deployment("web"))
    assert "resources" not in d["spec"]["template"]["spec"]["containers"][0] or (
        "limits" not in d["spec"]["template"]["spec"]["containers"][0]["resources"]
    )


async def test_container_maximum_refuses_with_the_api_servers_message(mem: SqliteStore) -> None:
    await mem.create(limit_range({"type": "Container", "max": {"cpu": "500m"}}))
    with pytest.raises(Forbidden) as e:
        await mem.create(pod("x", limits={"cpu": "1000m"}))
    assert e.value.code == 403
    assert e.value.message == (
        'pods "x" is forbidden: maximum cpu usage per Container is 500m, but limit is 1'
    )
    # The default limit is the max (SetDefaults_LimitRangeItem), so an unset limit passes.
    created = await mem.create(pod("y"))
    assert created["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "500m"}


async def test_several_violations_are_aggregated(mem: SqliteStore) -> None:
    await mem.create(
        limit_range(
            {"type": "Container", "min": {"memory": "100Mi"}, "maxLimitRequestRatio": {"cpu": "2"}}
        )
    )
    with pytest.raises(Forbidden) as e:
        await mem.create(pod("x", requests={"cpu": "100m", "memory": "50Mi"}, limits={"cpu": "1"}))
    assert e.value.message == (
        'pods "x" is forbidden: [minimum memory usage per Container is 100Mi, but request is '
        "50Mi, cpu max limit to request ratio per Container is 2, but provided ratio is "
        "10.000000]"
    )


async def test_pod_maximum_adds_up_the_containers(mem: SqliteStore) -> None:
    await mem.create(limit_range({"type": "Pod", "max": {"memory": "1Gi"}}))
    p = pod("x", limits={"memory": "768Mi"})
    p["spec"]["containers"].append(
        {"name": "side", "image": "nginx:1", "resources": {"limits": {"memory": "512Mi"}}}
    )
    with pytest.raises(Forbidden) as e:
        await mem.create(p)
    assert e.value.message == (
        'pods "x" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1280Mi'
    )


async def test_a_default_above_the_limit_is_invalid(mem: SqliteStore) -> None:
    await mem.create(limit_range({"type": "Container", "default": {"cpu": "100m"}}))
    with pytest.raises(Invalid, match="must be less than or equal to cpu limit of 100m"):
        await mem.create(pod("x", requests={"cpu": "200m"}))


async def test_claim_storage_bounds(mem: SqliteStore) -> None:
    await mem.create(
        limit_range(
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}}
        )
    )

    def claim(size: str) -> Obj:
        return builders.claim(storage=size)

    with pytest.raises(Forbidden) as e:
        await mem.create(claim("500Mi"))
    assert e.value.message == (
        'persistentvolumeclaims "data" is forbidden: minimum storage usage per '
        "PersistentVolumeClaim is 1Gi, but request is 500Mi"
    )
    with pytest.raises(Forbidden) as e:
        await mem.create(claim("10Gi"))
    assert "maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi" in (
        e.value.message
    )
    await mem.create(claim("2Gi"))


async def test_quota_charges_and_refuses(mem: SqliteStore) -> None:
    await quota(mem, {"limits.cpu": "2", "pods": "10"}, {"limits.cpu": "0", "pods": "0"})
    await mem.create(pod("a", limits={"cpu": "1"}))
    q = await mem.get(QUOTA)
    assert q["status"]["used"] == {"limits.cpu": "1", "pods": "1"}
    with pytest.raises(Forbidden) as e:
        await mem.create(pod("b", limits={"cpu": "2"}))
    assert e.value.code == 403
    assert e.value.message == (
        'pods "b" is forbidden: exceeded quota: compute, requested: limits.cpu=2, '
        "used: limits.cpu=1, limited: limits.cpu=2"
    )
    assert (await mem.get(QUOTA))["status"]["used"] == {"limits.cpu": "1", "pods": "1"}


async def test_a_dry_run_is_not_charged(mem: SqliteStore) -> None:
    await quota(mem, {"pods": "1"}, {"pods": "0"})
    await mem.create(pod("a"), dry_run=True)
    assert (await mem.get(QUOTA))["status"]["used"] == {"pods": "0"}


async def test_a_cpu_quota_wants_every_container_to_say(mem: SqliteStore) -> None:
    await quota(mem, {"limits.cpu": "2", "requests.memory": "1Gi"}, {})
    with pytest.raises(Forbidden) as e:
        await mem.create(pod("x", requests={"cpu": "100m"}))
    assert e.value.message == (
        'pods "x" is forbidden: failed quota: compute: must specify limits.cpu for: web; '
        "requests.memory for: web"
    )


async def test_usage_not_yet_counted_refuses(mem: SqliteStore) -> None:
    await quota(mem, {"pods": "3"}, {})
    with pytest.raises(Forbidden) as e:
        await mem.create(pod("x"))
    assert e.value.message == (
        'pods "x" is forbidden: status unknown for quota: compute, resources: pods'
    )


async def test_a_quota_without_status_restricts_nothing_yet(mem: SqliteStore) -> None:
    await mem.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute", "namespace": "default"},
            "spec": {"hard": {"pods": "0"}},
        }
    )
    await mem.create(pod("x"))


async def test_object_counts_and_service_types(mem: SqliteStore) -> None:
    await quota(
        mem,
        {"configmaps": "1", "services.loadbalancers": "0"},
        {"configmaps": "0", "services.loadbalancers": "0"},
    )

    def cm(name: str) -> Obj:
        md = {"name": name, "namespace": "default"}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}

    await mem.create(cm("one"))
    with pytest.raises(Forbidden) as e:
        await mem.create(cm("two"))
    assert e.value.message == (
        'configmaps "two" is forbidden: exceeded quota: compute, requested: configmaps=1, '
        "used: configmaps=1, limited: configmaps=1"
    )
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    created = await mem.create(svc)
    created["spec"]["type"] = "LoadBalancer"
    with pytest.raises(Forbidden, match=r"services\.loadbalancers=1"):
        await mem.update(created)


async def test_elsewhere_nothing_is_read(mem: SqliteStore) -> None:
    await quota(mem, {"pods": "0"}, {"pods": "0"})
    other = pod("free")
    other["metadata"]["namespace"] = "other"
    await mem.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    created = await mem.create(other)
    assert "kubernetes.io/limit-ranger" not in (created["metadata"].get("annotations") or {})
