"""The Pod admission plugins' mutations (ServiceAccount, DefaultTolerationSeconds,
Priority), as kube-apiserver 1.33 makes them on a Pod create."""

from __future__ import annotations

import pytest

from gitkrm.errors import Forbidden
from gitkrm.krm import Obj
from gitkrm.schema.pod_admission import (
    NO_CLASS,
    TOKEN_MOUNT_PATH,
    Priority,
    admit_pod_create,
    admit_tolerations,
    token_volume,
)

NOT_READY = {
    "effect": "NoExecute",
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "tolerationSeconds": 300,
}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}


def pod(**spec: object) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def admit(p: Obj, classes: dict[str, Priority] | None = None) -> Obj:
    def priority(name: str) -> Priority | None:
        return (classes or {}).get(name, NO_CLASS if not name else None)

    admit_pod_create(p, priority=priority, volume_name=lambda: "kube-api-access-abcde")
    return p


def test_a_bare_pod_gets_what_kube_apiserver_adds() -> None:
    spec = admit(pod())["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    assert spec["tolerations"] == [NOT_READY, UNREACHABLE]
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert "priorityClassName" not in spec
    assert spec["volumes"] == [{"name": "kube-api-access-abcde", "projected": token_volume()}]
    assert spec["containers"][0]["volumeMounts"] == [
        {"mountPath": TOKEN_MOUNT_PATH, "name": "kube-api-access-abcde", "readOnly": True}
    ]
    sources = spec["volumes"][0]["projected"]["sources"]
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"


def test_named_service_account_and_no_automount() -> None:
    spec = admit(pod(serviceAccountName="builder", automountServiceAccountToken=False))["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "builder"
    assert "volumes" not in spec
    assert "volumeMounts" not in spec["containers"][0]


def test_token_mounted_in_init_containers_but_not_over_an_own_mount() -> None:
    own = {"name": "mine", "mountPath": TOKEN_MOUNT_PATH}
    spec = admit(
        pod(
            initContainers=[{"name": "i", "image": "busybox"}],
            containers=[{"name": "c", "image": "nginx", "volumeMounts": [own]}],
            volumes=[{"name": "mine", "emptyDir": {}}],
        )
    )["spec"]
    assert spec["containers"][0]["volumeMounts"] == [own]
    assert spec["initContainers"][0]["volumeMounts"][0]["name"] == "kube-api-access-abcde"
    assert [v["name"] for v in spec["volumes"]] == ["mine", "kube-api-access-abcde"]


def test_an_existing_token_volume_is_reused() -> None:
    vol = {"name": "kube-api-access-zzzzz", "projected": token_volume()}
    spec = admit(pod(volumes=[vol]))["spec"]
    assert spec["volumes"] == [vol]
    assert spec["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-zzzzz"


@pytest.mark.parametrize(
    ("given", "added"),
    [
        ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}], [UNREACHABLE]),
        ([{"operator": "Exists"}], []),  # tolerates everything
        ([{"operator": "Exists", "effect": "NoSchedule"}], [NOT_READY, UNREACHABLE]),
        ([{**UNREACHABLE, "tolerationSeconds": 5}], [NOT_READY]),
    ],
)
def test_default_tolerations_only_when_not_tolerated(given: list[Obj], added: list[Obj]) -> None:
    spec: Obj = {"tolerations": [dict(t) for t in given]}
    admit_tolerations(spec)
    assert spec["tolerations"] == [*given, *added]


def test_priority_from_a_named_or_global_default_class() -> None:
    high = Priority(class_name="high", value=1000, preemption_policy="Never")
    spec = admit(pod(priorityClassName="high"), {"high": high})["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    spec = admit(pod(), {"": high})["spec"]
    assert spec["priorityClassName"] == "high"
    assert spec["priority"] == 1000


def test_an_unknown_class_is_left_alone() -> None:
    spec = admit(pod(priorityClassName="nowhere"))["spec"]
    assert "priority" not in spec


def test_a_priority_other_than_the_class_value_is_forbidden() -> None:
    with pytest.raises(Forbidden, match=r"integer value of priority \(7\) must not be provided"):
        admit(pod(priority=7))


def test_a_mirror_pod_gets_no_service_account() -> None:
    p = pod()
    p["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    spec = admit(p)["spec"]
    assert "serviceAccountName" not in spec
    assert spec["tolerations"] == [NOT_READY, UNREACHABLE]
