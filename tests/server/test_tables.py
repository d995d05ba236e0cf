"""Table rows as kube-apiserver prints them, ages, and the JSONPath of printer columns."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import BadRequest
from gitkrm.server.humanize import human_duration, since
from gitkrm.server.jsonpath import find, go_text
from gitkrm.server.tables import BUILTIN, DEFAULT, custom_printer, table

NOW = 1_700_000_000.0
T0 = "2023-11-14T22:13:20Z"  # NOW


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 86400, "8d"),
        (2 * 365 * 86400, "2y"),
        (2 * 365 * 86400 + 86400, "2y1d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_since() -> None:
    assert since(T0, NOW + 90) == "90s"
    assert since(None, NOW) == "<unknown>"
    assert since("garbage", NOW) == "<unknown>"


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "creationTimestamp": T0, **extra}


def cells(group: str, kind: str, obj: dict[str, Any]) -> list[Any]:
    return BUILTIN[(group, kind)].cells(obj, NOW + 65)


def test_pod_rows() -> None:
    pod = {
        "kind": "Pod",
        "metadata": meta("p"),
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": "10.0.0.5"}],
            "containerStatuses": [
                {
                    "name": "a",
                    "ready": True,
                    "restartCount": 2,
                    "state": {"running": {}},
                    "lastState": {"terminated": {"finishedAt": T0}},
                },
                {
                    "name": "b",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                },
            ],
        },
    }
    assert cells("", "Pod", pod) == [
        "p",
        "1/2",
        "CrashLoopBackOff",
        "2 (65s ago)",
        "65s",
        "10.0.0.5",
        "n1",
        "<none>",
        "<none>",
    ]
    pending = {
        "kind": "Pod",
        "metadata": meta("q"),
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Pending"},
    }
    assert cells("", "Pod", pending)[:4] == ["q", "0/1", "Pending", "0"]
    init = {
        "kind": "Pod",
        "metadata": meta("i"),
        "spec": {"initContainers": [{"name": "x"}], "containers": [{"name": "a"}]},
        "status": {
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "x", "state": {"waiting": {"reason": "PodInitializing"}}}
            ],
        },
    }
    assert cells("", "Pod", init)[2] == "Init:0/1"
    gone = {**pending, "metadata": meta("g", deletionTimestamp=T0)}
    assert cells("", "Pod", gone)[2] == "Terminating"


def test_workload_rows() -> None:
    spec = {"containers": [{"name": "web", "image": "nginx"}, {"name": "side", "image": "envoy"}]}
    d = {
        "kind": "Deployment",
        "metadata": meta("d"),
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "d"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            },
            "template": {"spec": spec},
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    assert cells("apps", "Deployment", d) == [
        "d",
        "2/3",
        3,
        2,
        "65s",
        "web,side",
        "nginx,envoy",
        "app=d,tier in (a,b)",
    ]
    sts = {
        "kind": "StatefulSet",
        "metadata": meta("s"),
        "spec": {"replicas": 2, "template": {"spec": spec}},
    }
    assert cells("apps", "StatefulSet", sts) == ["s", "0/2", "65s", "web,side", "nginx,envoy"]
    job = {
        "kind": "Job",
        "metadata": meta("j"),
        "spec": {"completions": 3, "template": {"spec": spec}},
        "status": {
            "succeeded": 3,
            "startTime": T0,
            "completionTime": "2023-11-14T22:14:00Z",
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    assert cells("batch", "Job", job)[:5] == ["j", "Complete", "3/3", "40s", "65s"]
    cj = {
        "kind": "CronJob",
        "metadata": meta("c"),
        "spec": {
            "schedule": "*/5 * * * *",
            "suspend": False,
            "jobTemplate": {"spec": {"template": {"spec": spec}}},
        },
    }
    assert cells("batch", "CronJob", cj)[:7] == [
        "c",
        "*/5 * * * *",
        "<none>",
        "False",
        0,
        "<none>",
        "65s",
    ]


def test_core_rows() -> None:
    svc = {
        "kind": "Service",
        "metadata": meta("s"),
        "spec": {
            "type": "NodePort",
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "ports": [
                {"port": 80, "nodePort": 30080, "protocol": "TCP"},
                {"port": 53, "protocol": "UDP"},
            ],
            "selector": {"b": "2", "a": "1"},
        },
    }
    assert cells("", "Service", svc) == [
        "s",
        "NodePort",
        "10.96.0.10",
        "<none>",
        "80:30080/TCP,53/UDP",
        "65s",
        "a=1,b=2",
    ]
    lb = {"kind": "Service", "metadata": meta("l"), "spec": {"type": "LoadBalancer"}}
    assert cells("", "Service", lb)[3] == "<pending>"
    assert cells(
        "", "ConfigMap", {"metadata": meta("c"), "data": {"a": "1"}, "binaryData": {"b": ""}}
    ) == ["c", 2, "65s"]
    assert cells(
        "",
        "Secret",
        {"metadata": meta("s"), "type": "kubernetes.io/tls", "data": {"a": "", "b": ""}},
    ) == ["s", "kubernetes.io/tls", 2, "65s"]
    assert cells("", "Namespace", {"metadata": meta("n"), "status": {"phase": "Active"}}) == [
        "n",
        "Active",
        "65s",
    ]
    node = {
        "metadata": meta("n1", labels={"node-role.kubernetes.io/control-plane": ""}),
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.0.2"}],
            "nodeInfo": {"kubeletVersion": "v1.33.0"},
        },
    }
    assert cells("", "Node", node)[:6] == [
        "n1",
        "Ready,SchedulingDisabled",
        "control-plane",
        "65s",
        "v1.33.0",
        "192.168.0.2",
    ]
    ev = {
        "metadata": meta("e"),
        "type": "Warning",
        "reason": "BackOff",
        "message": " failing ",
        "involvedObject": {"kind": "Pod", "name": "p"},
        "firstTimestamp": T0,
        "lastTimestamp": T0,
        "count": 3,
        "source": {"component": "kubelet", "host": "n1"},
    }
    assert cells("", "Event", ev) == [
        "65s",
        "Warning",
        "BackOff",
        "pod/p",
        "",
        "kubelet, n1",
        "failing",
        "65s",
        3,
        "e",
    ]
    ing = {
        "metadata": meta("i"),
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.com"}], "tls": [{}]},
    }
    assert cells("networking.k8s.io", "Ingress", ing) == [
        "i",
        "nginx",
        "a.com",
        "",
        "80, 443",
        "65s",
    ]


def test_default_and_custom_tables() -> None:
    t = table(
        DEFAULT,
        [{"metadata": meta("x", namespace="ns")}],
        list_metadata={"resourceVersion": "7"},
        now=NOW,
    )
    assert t["columnDefinitions"][1]["type"] == "date"
    assert t["rows"][0]["cells"] == ["x", T0]
    assert t["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"name": "x", "creationTimestamp": T0, "namespace": "ns"},
    }
    assert t["metadata"] == {"resourceVersion": "7"}
    printer = custom_printer(
        [
            {
                "name": "Ready",
                "type": "string",
                "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
            },
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
            {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
            {"name": "Since", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]
    )
    obj = {
        "metadata": meta("w"),
        "spec": {"size": 2.0, "tags": ["a", "b"]},
        "status": {
            "conditions": [
                {"type": "Other", "status": "False"},
                {"type": "Ready", "status": "True"},
            ]
        },
    }
    assert printer.cells(obj, NOW + 65) == ["w", "True", 2, "[a b]", "65s"]
    assert printer.cells({"metadata": meta("v")}, NOW) == ["v", None, None, None, "0s"]
    assert [c.priority for c in printer.columns] == [0, 0, 1, 0, 0]
    assert [c.name for c in custom_printer([]).columns] == ["Name", "Age"]


def test_jsonpath() -> None:
    obj = {"a": {"b.c": [1, {"d": "x"}], "e": [{"k": "1", "v": 1}, {"k": "2", "v": 2}]}}
    assert find(obj, ".a['b.c'][1].d") == ["x"]
    assert find(obj, "{.a.e[*].k}") == ["1", "2"]
    assert find(obj, '.a.e[?(@.k=="2")].v') == [2]
    assert find(obj, ".a.e[?(@.v!=1)].k") == ["2"]
    assert find(obj, ".a.e[-1].k") == ["2"]
    assert find(obj, ".missing.path") == []
    with pytest.raises(BadRequest):
        find(obj, ".a[")
    assert go_text({"b": 1, "a": [True, None]}) == "map[a:[true <nil>] b:1]"


def test_policy_rbac_and_storage_rows() -> None:
    pdb = {
        "metadata": meta("p"),
        "spec": {"minAvailable": "50%"},
        "status": {"disruptionsAllowed": 1},
    }
    assert cells("policy", "PodDisruptionBudget", pdb) == ["p", "50%", "N/A", 1, "65s"]
    rb = {
        "metadata": meta("rb"),
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "bob"},
            {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
        ],
    }
    assert cells("rbac.authorization.k8s.io", "RoleBinding", rb) == [
        "rb",
        "ClusterRole/view",
        "65s",
        "bob",
        "",
        "ns/sa",
    ]
    pc = {"metadata": meta("pc"), "value": 100}
    assert cells("scheduling.k8s.io", "PriorityClass", pc) == [
        "pc",
        100,
        False,
        "65s",
        "PreemptLowerPriority",
    ]
    sc = {
        "metadata": meta("sc", annotations={"storageclass.kubernetes.io/is-default-class": "true"}),
        "provisioner": "p",
    }
    assert cells("storage.k8s.io", "StorageClass", sc)[:2] == ["sc (default)", "p"]
    q = {
        "metadata": meta("q"),
        "spec": {"hard": {"pods": "2", "limits.cpu": "1"}},
        "status": {"used": {"pods": "1"}},
    }
    assert cells("", "ResourceQuota", q) == ["q", "65s", "pods: 1/2", "limits.cpu: 0/1"]


def test_cluster_level_ga_rows() -> None:
    svc = {
        "metadata": meta("v1beta1.metrics.k8s.io"),
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {
            "conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]
        },
    }
    assert cells("apiregistration.k8s.io", "APIService", svc) == [
        "v1beta1.metrics.k8s.io",
        "kube-system/metrics-server",
        "False (MissingEndpoints)",
        "65s",
    ]
    local = {"metadata": meta("v1.apps"), "spec": {}}
    assert cells("apiregistration.k8s.io", "APIService", local)[1:3] == ["Local", "Unknown"]
    csr = {
        "metadata": meta("alice"),
        "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "expirationSeconds": 86400},
        "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Yw=="},
    }
    assert cells("certificates.k8s.io", "CertificateSigningRequest", csr) == [
        "alice",
        "65s",
        "kubernetes.io/kube-apiserver-client",
        "",
        "24h",
        "Approved,Issued",
    ]
    fs = {"metadata": meta("fs"), "spec": {"priorityLevelConfiguration": {"name": "pl"}}}
    assert cells("flowcontrol.apiserver.k8s.io", "FlowSchema", fs) == [
        "fs",
        "pl",
        1000,
        "<none>",
        "65s",
        "?",
    ]
    pl = {
        "metadata": meta("pl"),
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 10,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 16}},
            },
        },
    }
    assert cells("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", pl) == [
        "pl",
        "Limited",
        10,
        16,
        8,
        50,
        "65s",
    ]
    rc = {"metadata": meta("gvisor"), "handler": "runsc"}
    assert cells("node.k8s.io", "RuntimeClass", rc) == ["gvisor", "runsc", "65s"]
