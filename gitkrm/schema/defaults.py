"""Built-in defaulting: the fields a real 1.33 cluster fills in (pkg/apis/*/v1/defaults.go).

Defaulting runs on every write, so it only ever adds absent fields with `setdefault` on the
dicts already there (no copies) and is idempotent: defaulting a defaulted object changes
nothing. It is defensive about types, because it runs before rule validation.
"""

from __future__ import annotations

from collections.abc import Callable

from gitkrm.krm.types import Obj
from gitkrm.schema.podspec_defaults import (
    default_pod_spec,
    default_pod_template,
    image_tag,
    pod_qos_class,
)

__all__ = ["apply_defaults", "image_tag"]

Defaulter = Callable[[Obj, bool], None]


def _dict(parent: Obj, key: str) -> Obj | None:
    """parent[key] when it is a dict; creates `{}` when absent or null."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _spec(obj: Obj) -> Obj | None:
    return _dict(obj, "spec")


def _template_spec(spec: Obj, key: str = "template") -> None:
    template = spec.get(key)
    if isinstance(template, dict):
        default_pod_template(template)


def _deployment(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _dict(spec, "strategy")
    if strategy is not None:
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = _dict(strategy, "rollingUpdate")
            if rolling is not None:
                if rolling.get("maxUnavailable") is None:
                    rolling["maxUnavailable"] = "25%"
                if rolling.get("maxSurge") is None:
                    rolling["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _template_spec(spec)


def _replica_set(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _template_spec(spec)


def _replication_controller(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _dict(obj, "metadata")
        if meta is not None and not meta.get("labels"):
            meta["labels"] = dict(labels)
    _replica_set(obj, create)


def _stateful_set(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("podManagementPolicy") is None:
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = _dict(spec, "updateStrategy")
    if strategy is not None:
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = _dict(strategy, "rollingUpdate")
            if rolling is not None and rolling.get("partition") is None:
                rolling["partition"] = 0
    policy = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    if policy is not None:
        policy.setdefault("whenDeleted", "Retain")
        policy.setdefault("whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    for claim in spec.get("volumeClaimTemplates") or ():
        if isinstance(claim, dict):
            claim_spec = _dict(claim, "spec")
            if claim_spec is not None and claim_spec.get("volumeMode") is None:
                claim_spec["volumeMode"] = "Filesystem"
            claim_status = _dict(claim, "status")
            if claim_status is not None and claim_status.get("phase") is None:
                claim_status["phase"] = "Pending"
    _template_spec(spec)


def _daemon_set(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    strategy = _dict(spec, "updateStrategy")
    if strategy is not None:
        if strategy.get("type") is None:
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = _dict(strategy, "rollingUpdate")
            if rolling is not None:
                if rolling.get("maxUnavailable") is None:
                    rolling["maxUnavailable"] = 1
                if rolling.get("maxSurge") is None:
                    rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _template_spec(spec)


def _job_spec(spec: Obj) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("podReplacementPolicy") is None:
        failed_only = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = "Failed" if failed_only else "TerminatingOrFailed"
    _template_spec(spec)


def _job(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    _job_spec(spec)
    template = spec.get("template")
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    meta = _dict(obj, "metadata")
    if isinstance(labels, dict) and labels and meta is not None and not meta.get("labels"):
        meta["labels"] = dict(labels)
    if create and spec.get("manualSelector") is not True and meta is not None:
        _generate_job_selector(spec, meta)


def _generate_job_selector(spec: Obj, meta: Obj) -> None:
    """PrepareForCreate's generateSelector: label the pods with the job's name and uid and
    select them by uid. Needs the uid, so the store admits new Jobs after assigning it."""
    uid, name = meta.get("uid"), meta.get("name")
    template = spec.get("template")
    if not uid or not isinstance(template, dict):
        return
    tmeta = _dict(template, "metadata")
    labels = _dict(tmeta, "labels") if tmeta is not None else None
    if labels is None:
        return
    for key in ("job-name", "batch.kubernetes.io/job-name"):
        labels.setdefault(key, name)
    for key in ("controller-uid", "batch.kubernetes.io/controller-uid"):
        labels.setdefault(key, uid)
    selector = _dict(spec, "selector")
    match = _dict(selector, "matchLabels") if selector is not None else None
    if match is not None:
        match.setdefault("batch.kubernetes.io/controller-uid", uid)


def _cron_job(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("concurrencyPolicy") is None:
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        job_spec = job_template.get("spec")
        if isinstance(job_spec, dict):
            _template_spec(job_spec)


def _pod(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    default_pod_spec(spec, pod=True)
    if create:
        # PrepareForCreate: a new Pod is Pending, with its QoS class computed once.
        status = _dict(obj, "status")
        if status is not None:
            if not status.get("phase"):
                status["phase"] = "Pending"
            if not status.get("qosClass"):
                status["qosClass"] = pod_qos_class(spec)


def _pod_template(obj: Obj, create: bool) -> None:
    template = obj.get("template")
    if isinstance(template, dict):
        default_pod_template(template)


def _service(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("sessionAffinity") is None:
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "ClientIP":
        config = _dict(spec, "sessionAffinityConfig")
        client_ip = _dict(config, "clientIP") if config is not None else None
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
    spec = _spec(obj)
    if spec is not None:
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            spec["finalizers"] = ["kubernetes"]
        elif "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
    status = _dict(obj, "status")
    if status is not None and status.get("phase") in (None, ""):
        status["phase"] = "Active"


def _pvc(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is not None and spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"
    status = _dict(obj, "status")
    if status is not None and status.get("phase") is None:
        status["phase"] = "Pending"


def _pv(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
    if spec is not None:
        if spec.get("persistentVolumeReclaimPolicy") is None:
            spec["persistentVolumeReclaimPolicy"] = "Retain"
        if spec.get("volumeMode") is None:
            spec["volumeMode"] = "Filesystem"
    status = _dict(obj, "status")
    if status is not None and status.get("phase") is None:
        status["phase"] = "Pending"


def _storage_class(obj: Obj, create: bool) -> None:
    if obj.get("reclaimPolicy") is None:
        obj["reclaimPolicy"] = "Delete"
    if obj.get("volumeBindingMode") is None:
        obj["volumeBindingMode"] = "Immediate"


def _priority_class(obj: Obj, create: bool) -> None:
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"


def _network_policy(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
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
            if kind in ("User", "Group"):
                subject["apiGroup"] = "rbac.authorization.k8s.io"
            elif kind == "ServiceAccount":
                subject["apiGroup"] = ""


def _hpa(obj: Obj, create: bool) -> None:
    spec = _spec(obj)
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
    spec = _spec(obj)
    if spec is None:
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        if not names.get("singular"):
            names["singular"] = names["kind"].lower()
        if not names.get("listKind"):
            names["listKind"] = names["kind"] + "List"
    conversion = _dict(spec, "conversion")
    if conversion is not None and conversion.get("strategy") is None:
        conversion["strategy"] = "None"


_DEFAULTERS: dict[tuple[str, str], Defaulter] = {
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replica_set,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cron_job,
    ("", "Pod"): _pod,
    ("", "PodTemplate"): _pod_template,
    ("", "ReplicationController"): _replication_controller,
    ("", "Service"): _service,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "PersistentVolume"): _pv,
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


def has_defaults(*, group: str, kind: str) -> bool:
    return (group, kind) in _DEFAULTERS
