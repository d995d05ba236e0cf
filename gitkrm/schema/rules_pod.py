"""API-server validation of pod specs that a schema cannot express.

Messages and field paths follow pkg/apis/core/validation/validation.go (1.33):
containers required and uniquely named (init containers included), DNS-1123 label
container and volume names, image required, IANA port names unique per container, ports
in 1-65535, well-formed resource quantities with requests <= limits, volume mounts naming
a volume, template labels well formed.

This runs on every write of every workload, so field paths are only built when a rule
fails, and name checks are memoized (the same few names recur across objects).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from gitkrm.errors import Cause
from gitkrm.krm.names import is_dns1123_label, is_qualified_name, is_valid_label_value
from gitkrm.krm.quantity import QuantityError, parse_quantity
from gitkrm.schema import fielderrors as fe

_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+", re.ASCII)
_HAS_LETTER = re.compile(r".*[a-z]", re.ASCII)
PROTOCOLS = ("SCTP", "TCP", "UDP")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_POLICIES = ("FallbackToLogsOnError", "File")
PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"
NONNEG_MSG = "must be greater than or equal to 0"


@lru_cache(maxsize=8192)
def dns_label_errors(name: str) -> tuple[str, ...]:
    return tuple(is_dns1123_label(name))


# apimachinery's label value syntax, used only to skip the (message-building) full check
# for the common valid value; values are unique per object, so they are not memoized.
_LABEL_VALUE = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", re.ASCII)


@lru_cache(maxsize=8192)
def label_key_errors(key: str) -> tuple[str, ...]:
    return tuple(is_qualified_name(key))


def label_errors(key: str, value: str) -> list[tuple[str, str]]:
    """(bad part, message) pairs of one label: key (a qualified name) and value."""
    out = [(key, m) for m in label_key_errors(key)]
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        out.extend((value, m) for m in is_valid_label_value(value))
    return out


@lru_cache(maxsize=4096)
def port_name_errors(name: str) -> tuple[str, ...]:
    """apimachinery IsValidPortName (IANA_SVC_NAME)."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _HAS_LETTER.match(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return tuple(errs)


def valid_port(value: object) -> bool:
    return type(value) is int and 1 <= value <= 65535


def validate_labels(labels: object, path: str, out: list[Cause]) -> None:
    """ValidateLabels: keys are qualified names, values label values."""
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        if isinstance(key, str) and isinstance(value, str):
            for bad, msg in label_errors(key, value):
                out.append(fe.invalid(path, bad, msg))


def _container_ports(ports: list[object], path: str, out: list[Cause], fast: bool) -> None:
    names: set[str] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        name = port.get("name")
        if fast:
            if name:
                if name in names:
                    out.append(fe.duplicate(f"{path}[{i}].name", name))
                names.add(name)
            continue
        if name and isinstance(name, str):
            msgs = port_name_errors(name)
            if msgs:
                out.extend(fe.invalid(f"{path}[{i}].name", name, m) for m in msgs)
            elif name in names:
                out.append(fe.duplicate(f"{path}[{i}].name", name))
            else:
                names.add(name)
        number = port.get("containerPort")
        if not number:
            out.append(fe.required(f"{path}[{i}].containerPort"))
        elif not valid_port(number):
            out.append(fe.invalid(f"{path}[{i}].containerPort", number, PORT_RANGE_MSG))
        host = port.get("hostPort")
        if host and not valid_port(host):
            out.append(fe.invalid(f"{path}[{i}].hostPort", host, PORT_RANGE_MSG))
        protocol = port.get("protocol")
        if protocol and protocol not in PROTOCOLS:
            out.append(fe.not_supported(f"{path}[{i}].protocol", protocol, PROTOCOLS))


def _quantities(values: dict[str, Any], path: str, out: list[Cause]) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for name, value in values.items():
        if not (
            name in _STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-") or "/" in name
        ):
            out.append(
                fe.invalid(f"{path}[{name}]", name, "must be a standard resource for containers")
            )
            continue
        try:
            q = parse_quantity(value)
        except (QuantityError, TypeError) as e:
            out.append(fe.invalid(f"{path}[{name}]", value, str(e)))
            continue
        if q < 0:
            out.append(fe.invalid(f"{path}[{name}]", value, NONNEG_MSG))
            continue
        parsed[name] = q
    return parsed


def _resources(resources: dict[str, Any], path: str, out: list[Cause]) -> None:
    raw_limits = resources.get("limits")
    raw_requests = resources.get("requests")
    limits = _quantities(raw_limits, path + ".limits", out) if raw_limits else {}
    requests = _quantities(raw_requests, path + ".requests", out) if raw_requests else {}
    if not limits:
        return
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is not None and request > limit:
            out.append(
                fe.invalid(
                    f"{path}.requests[{name}]",
                    raw_requests[name],  # type: ignore[index]
                    f"must be less than or equal to {name} limit of {raw_limits[name]}",  # type: ignore[index]
                )
            )


def _container(
    c: dict[str, Any],
    path: str,
    names: set[str],
    volumes: set[str] | None,
    out: list[Cause],
    fast: bool,
) -> None:
    if fast:
        _container_fast(c, path, names, volumes, out)
        return
    name = c.get("name")
    if not name:
        out.append(fe.required(path + ".name"))
    elif isinstance(name, str):
        msgs = dns_label_errors(name)
        if msgs:
            out.extend(fe.invalid(path + ".name", name, m) for m in msgs)
        if name in names:
            out.append(fe.duplicate(path + ".name", name))
        names.add(name)
    if not c.get("image"):
        out.append(fe.required(path + ".image"))
    ports = c.get("ports")
    if ports and isinstance(ports, list):
        _container_ports(ports, path + ".ports", out, False)
    resources = c.get("resources")
    if resources and isinstance(resources, dict):
        _resources(resources, path + ".resources", out)
    policy = c.get("imagePullPolicy")
    if policy and policy not in _PULL_POLICIES:
        out.append(fe.not_supported(path + ".imagePullPolicy", policy, _PULL_POLICIES))
    policy = c.get("terminationMessagePolicy")
    if policy and policy not in _TERMINATION_POLICIES:
        out.append(
            fe.not_supported(path + ".terminationMessagePolicy", policy, _TERMINATION_POLICIES)
        )
    env = c.get("env")
    if env and isinstance(env, list):
        for i, var in enumerate(env):
            if isinstance(var, dict) and not var.get("name"):
                out.append(fe.required(f"{path}.env[{i}].name"))
    mounts = c.get("volumeMounts")
    if mounts and isinstance(mounts, list):
        _mounts(mounts, path + ".volumeMounts", volumes or set(), out)


def _container_fast(
    c: dict[str, Any], path: str, names: set[str], volumes: set[str] | None, out: list[Cause]
) -> None:
    """The rules left once the fast-path schema (fastpath.py) accepted the container."""
    name = c["name"]
    if name in names:
        out.append(fe.duplicate(path + ".name", name))
    names.add(name)
    ports = c.get("ports")
    if ports and len(ports) > 1:
        _container_ports(ports, path + ".ports", out, True)
    resources = c.get("resources")
    if resources and resources.get("limits"):
        _resources(resources, path + ".resources", out)
    mounts = c.get("volumeMounts")
    if mounts:
        _mounts(mounts, path + ".volumeMounts", volumes or set(), out)


def _mounts(mounts: list[object], path: str, volumes: set[str], out: list[Cause]) -> None:
    targets: set[str] = set()
    for i, m in enumerate(mounts):
        if not isinstance(m, dict):
            continue
        name = m.get("name")
        if not name:
            out.append(fe.required(f"{path}[{i}].name"))
        elif name not in volumes:
            out.append(fe.not_found(f"{path}[{i}].name", name))
        target = m.get("mountPath")
        if not target:
            out.append(fe.required(f"{path}[{i}].mountPath"))
        elif target in targets:
            out.append(fe.invalid(f"{path}[{i}].mountPath", target, "must be unique"))
        else:
            targets.add(target)


def _volumes(volumes: list[object], path: str, out: list[Cause], fast: bool) -> set[str]:
    seen: set[str] = set()
    for i, v in enumerate(volumes):
        if not isinstance(v, dict):
            continue
        name = v.get("name")
        if fast and isinstance(name, str):
            if name in seen:
                out.append(fe.duplicate(f"{path}[{i}].name", name))
            seen.add(name)
        elif not name:
            out.append(fe.required(f"{path}[{i}].name"))
        elif isinstance(name, str):
            out.extend(fe.invalid(f"{path}[{i}].name", name, m) for m in dns_label_errors(name))
            if name in seen:
                out.append(fe.duplicate(f"{path}[{i}].name", name))
            seen.add(name)
    return seen


def validate_pod_spec(spec: object, path: str, *, fast: bool = False) -> list[Cause]:
    """Every rule violation of one pod spec, `path` naming it (`spec.template.spec`).

    `fast=True` when the fast-path schema accepted the object: only the rules it cannot
    express run.
    """
    out: list[Cause] = []
    if not isinstance(spec, dict):
        return out
    raw_volumes = spec.get("volumes")
    volumes = (
        _volumes(raw_volumes, path + ".volumes", out, fast)
        if raw_volumes and isinstance(raw_volumes, list)
        else None
    )
    names: set[str] = set()
    init = spec.get("initContainers")
    if init and isinstance(init, list):
        for i, c in enumerate(init):
            if isinstance(c, dict):
                _container(c, f"{path}.initContainers[{i}]", names, volumes, out, fast)
    containers = spec.get("containers")
    if not containers:
        out.append(fe.required(path + ".containers"))
    elif isinstance(containers, list):
        for i, c in enumerate(containers):
            if isinstance(c, dict):
                _container(c, f"{path}.containers[{i}]", names, volumes, out, fast)
    if fast:
        return out
    policy = spec.get("restartPolicy")
    if policy and policy not in _RESTART_POLICIES:
        out.append(fe.not_supported(path + ".restartPolicy", policy, _RESTART_POLICIES))
    policy = spec.get("dnsPolicy")
    if policy and policy not in _DNS_POLICIES:
        out.append(fe.not_supported(path + ".dnsPolicy", policy, _DNS_POLICIES))
    grace = spec.get("terminationGracePeriodSeconds")
    if type(grace) is int and grace < 0:
        out.append(fe.invalid(path + ".terminationGracePeriodSeconds", grace, NONNEG_MSG))
    return out


def validate_pod_template(
    template: object, path: str, *, fast: bool = False, labels_defaulted: bool = False
) -> list[Cause]:
    """ValidatePodTemplateSpec: template labels, then the pod spec.

    `labels_defaulted`: defaulting added labels after the fast-path schema checked them
    (a Job's job-name and controller-uid), so they are checked even when `fast`.
    """
    if not isinstance(template, dict):
        return [fe.required(path)]
    out: list[Cause] = []
    meta = template.get("metadata")
    if (not fast or labels_defaulted) and isinstance(meta, dict):
        labels = meta.get("labels")
        if labels:
            validate_labels(labels, path + ".metadata.labels", out)
    out.extend(validate_pod_spec(template.get("spec"), path + ".spec", fast=fast))
    return out
