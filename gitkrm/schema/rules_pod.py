"""API-server validation of pod specs that a schema cannot express.

Messages and field paths follow pkg/apis/core/validation/validation.go (1.33):
containers required and uniquely named (init containers included), DNS-1123 label
container names, image required, IANA port names unique per container, ports in 1-65535,
well-formed resource quantities with requests <= limits.
"""

from __future__ import annotations

import re
from typing import Any

from gitkrm.errors import Cause
from gitkrm.krm.names import is_dns1123_label
from gitkrm.krm.quantity import QuantityError, parse_quantity
from gitkrm.schema import fielderrors as fe

_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+", re.ASCII)
_HAS_LETTER = re.compile(r".*[a-z]", re.ASCII)
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_POLICIES = ("FallbackToLogsOnError", "File")
PORT_RANGE_MSG = "must be between 1 and 65535, inclusive"


def port_name_errors(name: str) -> list[str]:
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
    return errs


def valid_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def _container_ports(ports: Any, path: str, out: list[Cause]) -> None:
    if not isinstance(ports, list):
        return
    names: set[str] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        p = f"{path}[{i}]"
        name = port.get("name")
        if isinstance(name, str) and name:
            msgs = port_name_errors(name)
            if msgs:
                out.extend(fe.invalid(p + ".name", name, m) for m in msgs)
            elif name in names:
                out.append(fe.duplicate(p + ".name", name))
            else:
                names.add(name)
        number = port.get("containerPort")
        if not number:
            out.append(fe.required(p + ".containerPort"))
        elif not valid_port(number):
            out.append(fe.invalid(p + ".containerPort", number, PORT_RANGE_MSG))
        host = port.get("hostPort")
        if host and not valid_port(host):
            out.append(fe.invalid(p + ".hostPort", host, PORT_RANGE_MSG))
        protocol = port.get("protocol")
        if protocol and protocol not in _PROTOCOLS:
            out.append(fe.not_supported(p + ".protocol", protocol, _PROTOCOLS))


def _quantities(values: Any, path: str, out: list[Cause]) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    if not isinstance(values, dict):
        return parsed
    for name, value in values.items():
        p = f"{path}[{name}]"
        if not (
            name in _STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-") or "/" in name
        ):
            out.append(fe.invalid(p, name, "must be a standard resource for containers"))
            continue
        try:
            q = parse_quantity(value)
        except (QuantityError, TypeError) as e:
            out.append(fe.invalid(p, value, str(e)))
            continue
        if q < 0:
            out.append(fe.invalid(p, value, "must be greater than or equal to 0"))
            continue
        parsed[name] = q
    return parsed


def _resources(resources: Any, path: str, out: list[Cause]) -> None:
    if not isinstance(resources, dict):
        return
    limits = _quantities(resources.get("limits"), path + ".limits", out)
    requests = _quantities(resources.get("requests"), path + ".requests", out)
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is not None and request > limit:
            out.append(
                fe.invalid(
                    f"{path}.requests[{name}]",
                    resources["requests"][name],
                    f"must be less than or equal to {name} limit of {resources['limits'][name]}",
                )
            )


def _enum(
    c: dict[str, Any], key: str, allowed: tuple[str, ...], path: str, out: list[Cause]
) -> None:
    value = c.get(key)
    if value and value not in allowed:
        out.append(fe.not_supported(f"{path}.{key}", value, allowed))


def _container(c: dict[str, Any], path: str, names: set[str], out: list[Cause]) -> None:
    name = c.get("name")
    if not name:
        out.append(fe.required(path + ".name"))
    elif isinstance(name, str):
        msgs = is_dns1123_label(name)
        out.extend(fe.invalid(path + ".name", name, m) for m in msgs)
        if name in names:
            out.append(fe.duplicate(path + ".name", name))
        names.add(name)
    if not c.get("image"):
        out.append(fe.required(path + ".image"))
    _container_ports(c.get("ports"), path + ".ports", out)
    _resources(c.get("resources"), path + ".resources", out)
    _enum(c, "imagePullPolicy", _PULL_POLICIES, path, out)
    _enum(c, "terminationMessagePolicy", _TERMINATION_POLICIES, path, out)
    env_names: Any = c.get("env")
    if isinstance(env_names, list):
        for i, env in enumerate(env_names):
            if isinstance(env, dict) and not env.get("name"):
                out.append(fe.required(f"{path}.env[{i}].name"))


def validate_pod_spec(spec: Any, path: str) -> list[Cause]:
    """Every rule violation of one pod spec, `path` naming it (`spec.template.spec`)."""
    out: list[Cause] = []
    if not isinstance(spec, dict):
        return out
    names: set[str] = set()
    init = spec.get("initContainers")
    if isinstance(init, list):
        for i, c in enumerate(init):
            if isinstance(c, dict):
                _container(c, f"{path}.initContainers[{i}]", names, out)
    containers = spec.get("containers")
    if not containers:
        out.append(fe.required(path + ".containers"))
    elif isinstance(containers, list):
        for i, c in enumerate(containers):
            if isinstance(c, dict):
                _container(c, f"{path}.containers[{i}]", names, out)
    _enum(spec, "restartPolicy", _RESTART_POLICIES, path, out)
    _enum(spec, "dnsPolicy", _DNS_POLICIES, path, out)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        out.append(
            fe.invalid(
                path + ".terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"
            )
        )
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        seen: set[str] = set()
        for i, v in enumerate(volumes):
            if not isinstance(v, dict):
                continue
            vname = v.get("name")
            vpath = f"{path}.volumes[{i}].name"
            if not vname:
                out.append(fe.required(vpath))
            elif isinstance(vname, str):
                out.extend(fe.invalid(vpath, vname, m) for m in is_dns1123_label(vname))
                if vname in seen:
                    out.append(fe.duplicate(vpath, vname))
                seen.add(vname)
    return out
