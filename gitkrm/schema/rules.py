"""API-server validation rules of built-in kinds that a JSON schema cannot express.

Dispatch by (group, kind) to the rules of pkg/apis/{core,apps,batch}/validation, worded as
the API server words them. Every rule is defensive about types: the schema check has
already reported wrong types, and rules must not crash on them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gitkrm.errors import Cause
from gitkrm.krm.names import is_dns1123_label, is_dns1123_subdomain
from gitkrm.krm.quantity import QuantityError, parse_quantity
from gitkrm.krm.types import Obj
from gitkrm.schema import fielderrors as fe
from gitkrm.schema import rules_cluster as cluster
from gitkrm.schema import rules_workloads as workloads
from gitkrm.schema.crd_validation import validate_crd
from gitkrm.schema.rules_pod import (
    PORT_RANGE_MSG,
    PROTOCOLS,
    port_name_errors,
    valid_port,
)

Rule = Callable[[Obj, bool], list[Cause]]

_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+", re.ASCII)
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _service(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    stype = spec.get("type")
    if stype not in _SERVICE_TYPES:
        out.append(fe.not_supported("spec.type", stype, _SERVICE_TYPES))
    ports = spec.get("ports")
    if stype == "ExternalName":
        external = spec.get("externalName")
        if not external:
            out.append(fe.required("spec.externalName"))
        elif isinstance(external, str):
            out.extend(
                fe.invalid("spec.externalName", external, m)
                for m in is_dns1123_subdomain(external.rstrip("."))
            )
    elif not ports and spec.get("clusterIP") != "None":
        out.append(fe.required("spec.ports"))
    if isinstance(ports, list):
        _service_ports(ports, stype, out, fast)
    affinity = spec.get("sessionAffinity")
    if affinity not in (None, "None", "ClientIP"):
        out.append(fe.not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    return out


def _service_ports(ports: list[object], stype: object, out: list[Cause], fast: bool) -> None:
    names: set[str] = set()
    need_names = len(ports) > 1
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        p = f"spec.ports[{i}]"
        name = port.get("name")
        if need_names and not name:
            out.append(fe.required(p + ".name"))
        elif isinstance(name, str) and name:
            if not fast:
                out.extend(fe.invalid(p + ".name", name, m) for m in is_dns1123_label(name))
            if name in names:
                out.append(fe.duplicate(p + ".name", name))
            names.add(name)
        node_port = port.get("nodePort")
        if node_port and stype == "ClusterIP":
            out.append(fe.forbidden(p + ".nodePort", "may not be used when `type` is 'ClusterIP'"))
        if fast:
            continue
        number = port.get("port")
        if not valid_port(number):
            out.append(fe.invalid(p + ".port", number, PORT_RANGE_MSG))
        protocol = port.get("protocol")
        if protocol and protocol not in PROTOCOLS:
            out.append(fe.not_supported(p + ".protocol", protocol, PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, int) and not isinstance(target, bool):
            if not valid_port(target):
                out.append(fe.invalid(p + ".targetPort", target, PORT_RANGE_MSG))
        elif isinstance(target, str) and target:
            out.extend(fe.invalid(p + ".targetPort", target, m) for m in port_name_errors(target))
        if node_port and not valid_port(node_port):
            out.append(fe.invalid(p + ".nodePort", node_port, PORT_RANGE_MSG))


def _config_keys(obj: Obj, keys: tuple[str, ...]) -> list[Cause]:
    out: list[Cause] = []
    seen: set[str] = set()
    for section in keys:
        data = obj.get(section)
        if not isinstance(data, dict):
            continue
        for key in data:
            path = f"{section}[{key}]"
            if len(key) > 253:
                out.append(fe.invalid(path, key, "must be no more than 253 characters"))
            if not _CONFIG_KEY.fullmatch(key):
                out.append(
                    fe.invalid(
                        path,
                        key,
                        _CONFIG_KEY_MSG
                        + " (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
                        "used for validation is '[-._a-zA-Z0-9]+')",
                    )
                )
            elif key in (".", ".."):
                out.append(fe.invalid(path, key, f"must not be '{key}'"))
            elif key.startswith(".."):
                out.append(fe.invalid(path, key, "must not start with '..'"))
            if key in seen:
                out.append(
                    fe.invalid(
                        path,
                        key,
                        "duplicate of key present in "
                        + ("binaryData" if section == "data" else "data"),
                    )
                )
            seen.add(key)
    return out


def _config_map(obj: Obj, fast: bool) -> list[Cause]:
    return _config_keys(obj, ("data", "binaryData"))


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/service-account-token": (),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/basic-auth": (),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def _secret(obj: Obj, fast: bool) -> list[Cause]:
    out = _config_keys(obj, ("data",))
    stype = obj.get("type")
    raw = obj.get("data")
    data: dict[str, object] = raw if isinstance(raw, dict) else {}
    for key in _SECRET_REQUIRED_KEYS.get(stype, ()) if isinstance(stype, str) else ():
        if key not in data:
            out.append(fe.required(f"data[{key}]"))
    if stype == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            out.append(fe.required("metadata.annotations[kubernetes.io/service-account.name]"))
    return out


def _namespace(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    finalizers = (obj.get("spec") or {}).get("finalizers")
    if isinstance(finalizers, list):
        for i, f in enumerate(finalizers):
            if isinstance(f, str) and "/" not in f and f != "kubernetes":
                out.append(
                    fe.invalid(
                        f"spec.finalizers[{i}]",
                        f,
                        "name is neither a standard finalizer name nor is it fully qualified",
                    )
                )
    return out


_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


def _pvc(obj: Obj, fast: bool) -> list[Cause]:
    """ValidatePersistentVolumeClaimSpec: access modes and a storage request."""
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    modes = spec.get("accessModes")
    if not modes:
        out.append(fe.required("spec.accessModes", "at least 1 access mode is required"))
    elif isinstance(modes, list):
        out.extend(
            fe.not_supported("spec.accessModes", m, _ACCESS_MODES)
            for m in modes
            if m not in _ACCESS_MODES
        )
    resources = spec.get("resources")
    requests = resources.get("requests") if isinstance(resources, dict) else None
    storage = requests.get("storage") if isinstance(requests, dict) else None
    if storage is None:
        out.append(fe.required("spec.resources[storage]"))
    else:
        try:
            if parse_quantity(storage) <= 0:
                out.append(
                    fe.invalid("spec.resources[storage]", storage, "must be greater than zero")
                )
        except (QuantityError, TypeError) as e:
            out.append(fe.invalid("spec.resources.requests[storage]", storage, str(e)))
    return out


def _hpa(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if type(low) is int and low < 1:
        out.append(fe.invalid("spec.minReplicas", low, "must be greater than or equal to 1"))
    if type(high) is int and type(low) is int and high < low:
        out.append(
            fe.invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`")
        )
    return out


def _pdb(obj: Obj, fast: bool) -> list[Cause]:
    spec = obj.get("spec")
    if (
        isinstance(spec, dict)
        and spec.get("minAvailable") is not None
        and spec.get("maxUnavailable") is not None
    ):
        return [fe.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")]
    return []


RULES: dict[tuple[str, str], Rule] = {
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
    ("", "ConfigMap"): _config_map,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("", "PersistentVolumeClaim"): _pvc,
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): lambda obj, fast: validate_crd(obj),
    ("apiregistration.k8s.io", "APIService"): cluster.api_service,
    ("node.k8s.io", "RuntimeClass"): cluster.runtime_class,
}


def validate_rules(obj: Obj, *, group: str, kind: str, fast: bool = False) -> list[Cause]:
    """Every API-server rule violation of `obj` (an empty list when none apply).

    `fast=True` when the fast-path schema (fastpath.py) accepted `obj` before defaulting:
    the rules it encodes are skipped.
    """
    rule = RULES.get((group, kind))
    return rule(obj, fast) if rule is not None else []


def rule_for(group: str, kind: str) -> Rule | None:
    """validate_rules of one kind, looked up once (`rule(obj, fast)`)."""
    return RULES.get((group, kind))
