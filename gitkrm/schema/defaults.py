"""Built-in defaulting: the fields a real 1.33 cluster fills in (pkg/apis/*/v1/defaults.go).

Defaulting runs on every write, so it only ever adds absent fields with `setdefault` on the
dicts already there (no copies) and is idempotent: defaulting a defaulted object changes
nothing. It is defensive about types, because it runs before rule validation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from gitkrm.krm.types import JSONScalar, Obj
from gitkrm.schema import defaults_workloads as workloads
from gitkrm.schema.defaults_workloads import child_dict, fill, spec_of
from gitkrm.schema.limitranger import default_limit_range

__all__ = ["Defaulter", "apply_defaults", "defaulter_for"]

Defaulter = Callable[[Obj, bool], None]


# Scalar defaults, filled in where absent (`fill`).
_PV: Final[Mapping[str, JSONScalar]] = {
    "persistentVolumeReclaimPolicy": "Retain",
    "volumeMode": "Filesystem",
}
_STORAGE_CLASS: Final[Mapping[str, JSONScalar]] = {
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate",
}


def _service(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    if spec.get("sessionAffinity") is None:
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "ClientIP":
        config = child_dict(spec, "sessionAffinityConfig")
        client_ip = child_dict(config, "clientIP") if config is not None else None
        if client_ip is not None and client_ip.get("timeoutSeconds") is None:
            client_ip["timeoutSeconds"] = 10800
    if spec.get("type") is None:
        spec["type"] = "ClusterIP"
    kind = spec["type"]
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            if port.get("protocol") is None:
                port["protocol"] = "TCP"
            if port.get("targetPort") in (None, 0, "") and "port" in port:
                port["targetPort"] = port["port"]
    external = kind in ("NodePort", "LoadBalancer") or (
        spec.get("externalIPs") and kind != "ClusterIP"
    )
    if external and spec.get("externalTrafficPolicy") is None:
        spec["externalTrafficPolicy"] = "Cluster"
    if kind != "ExternalName":
        if spec.get("internalTrafficPolicy") is None:
            spec["internalTrafficPolicy"] = "Cluster"
        if create and spec.get("ipFamilyPolicy") is None:
            spec["ipFamilyPolicy"] = "SingleStack"
        if create and not spec.get("ipFamilies"):
            spec["ipFamilies"] = ["IPv4"]
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _secret(obj: Obj, create: bool) -> None:
    if obj.get("type") in (None, ""):
        obj["type"] = "Opaque"


def _namespace(obj: Obj, create: bool) -> None:
    if not create:
        return
    spec = spec_of(obj)
    if spec is not None:
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            spec["finalizers"] = ["kubernetes"]
        elif "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
    status = child_dict(obj, "status")
    if status is not None and status.get("phase") in (None, ""):
        status["phase"] = "Active"


def _pv(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is not None:
        fill(spec, _PV)
    status = child_dict(obj, "status")
    if status is not None and status.get("phase") is None:
        status["phase"] = "Pending"


def _storage_class(obj: Obj, create: bool) -> None:
    fill(obj, _STORAGE_CLASS)


def _priority_class(obj: Obj, create: bool) -> None:
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"


def _network_policy(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    for rule_key, peer_key in (("ingress", "ports"), ("egress", "ports")):
        for rule in spec.get(rule_key) or ():
            for port in (rule.get(peer_key) or ()) if isinstance(rule, dict) else ():
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


def _binding_subjects(obj: Obj, create: bool) -> None:
    for subject in obj.get("subjects") or ():
        if isinstance(subject, dict) and subject.get("apiGroup") is None:
            kind = subject.get("kind")
            # A ServiceAccount's default is "" (SetDefaults_Subject), which the API leaves out
            # (omitempty): storing it would make every sync see a change.
            if kind in ("User", "Group"):
                subject["apiGroup"] = "rbac.authorization.k8s.io"


def _hpa(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if obj.get("apiVersion") == "autoscaling/v2" and not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]


def _crd(obj: Obj, create: bool) -> None:
    spec = spec_of(obj)
    if spec is None:
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        if not names.get("singular"):
            names["singular"] = names["kind"].lower()
        if not names.get("listKind"):
            names["listKind"] = names["kind"] + "List"
    conversion = child_dict(spec, "conversion")
    if conversion is not None and conversion.get("strategy") is None:
        conversion["strategy"] = "None"


_DEFAULTERS: dict[tuple[str, str], Defaulter] = {
    ("apps", "Deployment"): workloads.deployment,
    ("apps", "ReplicaSet"): workloads.replica_set,
    ("apps", "StatefulSet"): workloads.stateful_set,
    ("apps", "DaemonSet"): workloads.daemon_set,
    ("batch", "Job"): workloads.job,
    ("batch", "CronJob"): workloads.cron_job,
    ("", "Pod"): workloads.pod,
    ("", "PodTemplate"): workloads.pod_template,
    ("", "ReplicationController"): workloads.replication_controller,
    ("", "Service"): _service,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "PersistentVolumeClaim"): workloads.persistent_volume_claim,
    ("", "PersistentVolume"): _pv,
    ("", "LimitRange"): default_limit_range,
    ("storage.k8s.io", "StorageClass"): _storage_class,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
    ("networking.k8s.io", "NetworkPolicy"): _network_policy,
    ("rbac.authorization.k8s.io", "RoleBinding"): _binding_subjects,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _binding_subjects,
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}


def apply_defaults(obj: Obj, *, group: str, kind: str, create: bool) -> None:
    """Fill in the built-in defaults of `obj` in place (a no-op for kinds without any)."""
    defaulter = _DEFAULTERS.get((group, kind))
    if defaulter is not None:
        defaulter(obj, create)


def defaulter_for(group: str, kind: str) -> Defaulter | None:
    """apply_defaults of one kind, looked up once (`defaulter(obj, create)`)."""
    return _DEFAULTERS.get((group, kind))
