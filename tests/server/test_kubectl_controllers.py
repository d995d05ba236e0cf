"""kubectl against `gitkrm serve` with its bundled controllers: what needs a control plane.

`kubectl rollout status` follows a Deployment through an image change, and `kubectl delete
--cascade=foreground|orphan` is carried out by the garbage collector, as on a cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.server.conftest import Kubectl
from tests.support.builders import deployment
from tests.support.manifests import yaml_text
from tests.support.wait import eventually


def web(tag: str, name: str = "web") -> str:
    """A Deployment of three nginx:`tag` pods that rolls one new pod at a time."""
    rolling = {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    obj = deployment(name, replicas=3, container="web", image=f"nginx:{tag}", strategy=rolling)
    return yaml_text(obj)


def wait_until(check: Callable[[], bool], *, timeout: float = 30.0, what: str) -> None:
    eventually(check, timeout=timeout, interval=0.1, message=what)


def names(kube: Kubectl, kind: str, selector: str) -> list[str]:
    out = kube("get", kind, "-n", "default", "-l", selector, "-o", "json")
    return sorted(i["metadata"]["name"] for i in json.loads(out)["items"])


def test_rollout_status_follows_an_image_change(kube: Kubectl) -> None:
    kube("apply", "-f", "-", input=web("1.25"))
    out = kube("rollout", "status", "deployment/web", "-n", "default", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in out
    first_rs = names(kube, "replicasets", "app=web")
    assert len(first_rs) == 1

    kube("apply", "-f", "-", input=web("1.27"))
    out = kube("rollout", "status", "deployment/web", "-n", "default", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in out
    dep = json.loads(kube("get", "deployment", "web", "-n", "default", "-o", "json"))
    assert dep["status"]["updatedReplicas"] == 3
    assert dep["status"]["availableReplicas"] == 3
    assert len(names(kube, "replicasets", "app=web")) == 2  # the old one kept, scaled to 0
    pods = json.loads(kube("get", "pods", "-n", "default", "-l", "app=web", "-o", "json"))
    images = {p["spec"]["containers"][0]["image"] for p in pods["items"]}
    assert images == {"nginx:1.27"}


def test_delete_cascade_foreground_and_orphan(kube: Kubectl) -> None:
    kube("apply", "-f", "-", input=web("1.25", "fg"))
    kube("rollout", "status", "deployment/fg", "-n", "default", "--timeout=60s")
    assert len(names(kube, "pods", "app=fg")) == 3
    kube("delete", "deployment", "fg", "-n", "default", "--cascade=foreground", "--wait")
    # Foreground: the Deployment is gone only after its ReplicaSets and pods.
    assert names(kube, "replicasets", "app=fg") == []
    wait_until(lambda: names(kube, "pods", "app=fg") == [], what="fg pods to be deleted")

    kube("apply", "-f", "-", input=web("1.25", "orph"))
    kube("rollout", "status", "deployment/orph", "-n", "default", "--timeout=60s")
    rs = names(kube, "replicasets", "app=orph")
    kube("delete", "deployment", "orph", "-n", "default", "--cascade=orphan", "--wait")
    # Orphan: the ReplicaSet stays, without its owner reference.
    assert names(kube, "replicasets", "app=orph") == rs
    got = json.loads(kube("get", "replicaset", rs[0], "-n", "default", "-o", "json"))
    assert not got["metadata"].get("ownerReferences")
    assert len(names(kube, "pods", "app=orph")) == 3
