"""API-server validation rules of built-in kinds that a JSON schema cannot express.

Dispatch by (group, kind) to the rules of pkg/apis/{core,apps,batch}/validation, worded as
the API server words them. Every rule is defensive about types: the schema check has
already reported wrong types, and rules must not crash on them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gitkrm.errors import BadRequest, Cause
from gitkrm.krm.labels import label_selector_from_dict
from gitkrm.krm.names import is_dns1123_label, is_dns1123_subdomain
from gitkrm.krm.types import Obj
from gitkrm.schema import fielderrors as fe
from gitkrm.schema.crd_validation import validate_crd
from gitkrm.schema.rules_pod import (
    PORT_RANGE_MSG,
    PROTOCOLS,
    port_name_errors,
    valid_port,
    validate_labels,
    validate_pod_spec,
    validate_pod_template,
)

Rule = Callable[[Obj, bool], list[Cause]]

_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+", re.ASCII)
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_NONNEG = "must be greater than or equal to 0"
_MAX_CRONJOB_NAME = 52
_PERCENT = re.compile(r"[0-9]+%", re.ASCII)
_PERCENTS = {f"{n}%": n for n in range(101)}


def _nonneg(spec: Obj, keys: tuple[str, ...], path: str, out: list[Cause]) -> None:
    for key in keys:
        value = spec.get(key)
        if type(value) is int and value < 0:
            out.append(fe.invalid(f"{path}.{key}", value, _NONNEG))


def _selector_matches(
    selector: Obj, labels: Any, path: str, out: list[Cause], fast: bool
) -> bool | None:
    """Whether a structured selector matches `labels`; None when the selector is empty.

    Also validates the selector (label syntax, operators) as ValidateLabelSelector does.
    """
    match_labels = selector.get("matchLabels")
    if not selector.get("matchExpressions") and isinstance(match_labels, dict):
        if not match_labels:
            return None
        if not fast:
            validate_labels(match_labels, path + ".matchLabels", out)
        if not isinstance(labels, dict):
            return False
        return all(labels.get(k) == v for k, v in match_labels.items())
    try:
        compiled = label_selector_from_dict(selector)
    except BadRequest as e:
        out.append(fe.invalid(path, selector, e.message))
        return False
    if compiled.empty:
        return None
    return compiled.matches(labels if isinstance(labels, dict) else {})


def _template_for_selector(
    spec: Obj, path: str, out: list[Cause], *, kind: str, restart: tuple[str, ...], fast: bool
) -> None:
    """Selector required, non-empty and matching the template labels; template rules."""
    selector = spec.get("selector")
    template = spec.get("template")
    tmeta = template.get("metadata") if isinstance(template, dict) else None
    labels = tmeta.get("labels") if isinstance(tmeta, dict) else None
    if not isinstance(selector, dict):
        out.append(fe.required(path + ".selector"))
    else:
        matched = _selector_matches(selector, labels, path + ".selector", out, fast)
        if matched is None:
            out.append(
                fe.invalid(path + ".selector", selector, f"empty selector is invalid for {kind}")
            )
        elif not matched:
            out.append(
                fe.invalid(
                    path + ".template.metadata.labels",
                    labels or {},
                    "`selector` does not match template `labels`",
                )
            )
    if not isinstance(template, dict):
        out.append(fe.required(path + ".template"))
        return
    out.extend(validate_pod_template(template, path + ".template", fast=fast))
    pod = template.get("spec")
    if isinstance(pod, dict):
        policy = pod.get("restartPolicy")
        if policy not in restart:
            out.append(
                fe.not_supported(path + ".template.spec.restartPolicy", policy or "", restart)
            )
        if kind != "job" and pod.get("activeDeadlineSeconds") is not None:
            out.append(
                fe.forbidden(
                    path + ".template.spec.activeDeadlineSeconds",
                    "activeDeadlineSeconds in ReplicaSet is not Supported",
                )
            )


def _int_or_percent(value: Any, path: str, out: list[Cause]) -> int | None:
    """The numeric part of an IntOrString percent/int; records its errors."""
    known = _PERCENTS.get(value) if type(value) is str else None
    if known is not None:
        return known
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if value < 0:
            out.append(fe.invalid(path, value, _NONNEG))
        return value
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            out.append(
                fe.invalid(
                    path,
                    value,
                    "a valid percent string must be a numeric string "
                    "followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                    "validation is '[0-9]+%')",
                )
            )
            return None
        number = int(value[:-1])
        if number > 100:
            out.append(fe.invalid(path, value, "must not be greater than 100%"))
        return number
    return None


def _rolling_update(rolling: Any, path: str, out: list[Cause], *, surge_key: bool = True) -> None:
    if not isinstance(rolling, dict):
        return
    unavailable = _int_or_percent(rolling.get("maxUnavailable"), path + ".maxUnavailable", out)
    surge = _int_or_percent(rolling.get("maxSurge"), path + ".maxSurge", out)
    if surge_key and unavailable == 0 and surge == 0:
        out.append(
            fe.invalid(
                path + ".maxUnavailable",
                rolling.get("maxUnavailable"),
                "may not be 0 when `maxSurge` is 0",
            )
        )


def _deployment(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(
            spec,
            ("replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"),
            "spec",
            out,
        )
    _template_for_selector(spec, "spec", out, kind="deployment", restart=("Always",), fast=fast)
    strategy = spec.get("strategy")
    if isinstance(strategy, dict):
        stype = strategy.get("type")
        if stype == "Recreate" and strategy.get("rollingUpdate") is not None:
            out.append(
                fe.forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
        elif stype == "RollingUpdate":
            _rolling_update(strategy.get("rollingUpdate"), "spec.strategy.rollingUpdate", out)
        elif stype not in (None, "Recreate"):
            out.append(fe.not_supported("spec.strategy.type", stype, ("Recreate", "RollingUpdate")))
    deadline = spec.get("progressDeadlineSeconds")
    ready = spec.get("minReadySeconds") or 0
    if isinstance(deadline, int) and isinstance(ready, int) and deadline <= ready:
        out.append(
            fe.invalid(
                "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
            )
        )
    return out


def _replica_set(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(spec, ("replicas", "minReadySeconds"), "spec", out)
    _template_for_selector(spec, "spec", out, kind="deployment", restart=("Always",), fast=fast)
    return out


def _stateful_set(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(spec, ("replicas", "minReadySeconds", "revisionHistoryLimit"), "spec", out)
    policy = spec.get("podManagementPolicy")
    if policy not in (None, "OrderedReady", "Parallel"):
        out.append(
            fe.not_supported("spec.podManagementPolicy", policy, ("OrderedReady", "Parallel"))
        )
    _template_for_selector(spec, "spec", out, kind="statefulset", restart=("Always",), fast=fast)
    return out


def _daemon_set(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    if not fast:
        _nonneg(spec, ("minReadySeconds", "revisionHistoryLimit"), "spec", out)
    _template_for_selector(spec, "spec", out, kind="daemonset", restart=("Always",), fast=fast)
    strategy = spec.get("updateStrategy")
    if isinstance(strategy, dict) and strategy.get("type") == "RollingUpdate":
        _rolling_update(strategy.get("rollingUpdate"), "spec.updateStrategy.rollingUpdate", out)
    return out


def _job_spec(spec: Any, path: str, out: list[Cause], fast: bool) -> None:
    if not isinstance(spec, dict):
        out.append(fe.required(path))
        return
    _nonneg(
        spec,
        (
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "backoffLimit",
            "ttlSecondsAfterFinished",
        ),
        path,
        out,
    )
    if spec.get("manualSelector") is True or spec.get("selector") is not None:
        _template_for_selector(
            spec, path, out, kind="job", restart=("OnFailure", "Never"), fast=fast
        )
        return
    template = spec.get("template")
    if not isinstance(template, dict):
        out.append(fe.required(path + ".template"))
        return
    pod = template.get("spec")
    out.extend(validate_pod_template(template, path + ".template", fast=fast))
    if isinstance(pod, dict) and pod.get("restartPolicy") not in ("OnFailure", "Never"):
        out.append(
            fe.not_supported(
                path + ".template.spec.restartPolicy",
                pod.get("restartPolicy") or "",
                ("OnFailure", "Never"),
            )
        )


def _job(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    _job_spec(obj.get("spec"), "spec", out, fast)
    return out


def _cron_job(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    name = (obj.get("metadata") or {}).get("name")
    if isinstance(name, str) and len(name) > _MAX_CRONJOB_NAME:
        out.append(
            fe.invalid(
                "metadata.name", name, f"must be no more than {_MAX_CRONJOB_NAME} characters"
            )
        )
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [*out, fe.required("spec")]
    if not spec.get("schedule"):
        out.append(fe.required("spec.schedule"))
    policy = spec.get("concurrencyPolicy")
    if policy not in (None, "Allow", "Forbid", "Replace"):
        out.append(
            fe.not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace"))
        )
    _nonneg(
        spec,
        ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"),
        "spec",
        out,
    )
    job_template = spec.get("jobTemplate")
    job_spec = job_template.get("spec") if isinstance(job_template, dict) else None
    _job_spec(job_spec, "spec.jobTemplate.spec", out, fast)
    return out


def _pod(obj: Obj, fast: bool) -> list[Cause]:
    if "spec" not in obj:
        return [fe.required("spec")]
    return validate_pod_spec(obj.get("spec"), "spec", fast=fast)


def _pod_template(obj: Obj, fast: bool) -> list[Cause]:
    template = obj.get("template")
    if not isinstance(template, dict):
        return [fe.required("template")]
    return validate_pod_template(template, "template", fast=fast)


def _replication_controller(obj: Obj, fast: bool) -> list[Cause]:
    out: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    _nonneg(spec, ("replicas",), "spec", out)
    selector = spec.get("selector")
    template = spec.get("template")
    if not selector:
        out.append(fe.required("spec.selector"))
    if not isinstance(template, dict):
        out.append(fe.required("spec.template"))
        return out
    labels = (template.get("metadata") or {}).get("labels") or {}
    if (
        isinstance(selector, dict)
        and selector
        and isinstance(labels, dict)
        and any(labels.get(k) != v for k, v in selector.items())
    ):
        out.append(
            fe.invalid(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    out.extend(validate_pod_template(template, "spec.template", fast=fast))
    return out


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


def _service_ports(ports: list[Any], stype: Any, out: list[Cause], fast: bool) -> None:
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


RULES: dict[tuple[str, str], Rule] = {
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
    ("", "ConfigMap"): _config_map,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): lambda obj, fast: validate_crd(obj),
}


def validate_rules(obj: Obj, *, group: str, kind: str, fast: bool = False) -> list[Cause]:
    """Every API-server rule violation of `obj` (an empty list when none apply).

    `fast=True` when the fast-path schema (fastpath.py) accepted `obj` before defaulting:
    the rules it encodes are skipped.
    """
    rule = RULES.get((group, kind))
    return rule(obj, fast) if rule is not None else []
