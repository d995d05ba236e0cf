"""API-server rules of the cluster-level GA kinds the schemas cannot express:
APIService (kube-aggregator's ValidateAPIService) and RuntimeClass (ValidateRuntimeClass).

An APIService is only data in gitkrm (it never registers an aggregated API server), but a
manifest that a real API server would refuse is refused here too, so `validate` predicts a
cluster.
"""

from __future__ import annotations

from collections.abc import Callable

from gitkrm.errors import Cause
from gitkrm.krm.names import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain
from gitkrm.krm.types import Obj
from gitkrm.schema import fielderrors as fe


def _name_like(path: str, value: str, check: Callable[[str], list[str]], out: list[Cause]) -> None:
    out.extend(fe.invalid(path, value, msg) for msg in check(value))


def _bounded(spec: dict[str, object], key: str, high: int, out: list[Cause]) -> None:
    value = spec.get(key)
    if type(value) is int and not 0 < value <= high:
        out.append(fe.invalid(f"spec.{key}", value, f"must be positive and less than {high}"))


def _local_tls(spec: dict[str, object], out: list[Cause]) -> None:
    if spec.get("service") is None:
        if spec.get("caBundle"):
            out.append(
                fe.invalid("spec.caBundle", "<bytes>", "local APIServices do not have certificates")
            )
        if spec.get("insecureSkipTLSVerify") is True:
            out.append(
                fe.invalid(
                    "spec.insecureSkipTLSVerify", True, "local APIServices do not have certificates"
                )
            )
    elif spec.get("insecureSkipTLSVerify") is True and spec.get("caBundle"):
        out.append(
            fe.invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present")
        )


def api_service(obj: Obj, fast: bool) -> list[Cause]:
    """The name is `<version>.<group>`; priorities are bounded; a local one has no TLS."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    group, version = spec.get("group") or "", spec.get("version") or ""
    if not isinstance(group, str) or not isinstance(version, str):
        return []
    out: list[Cause] = []
    name = (obj.get("metadata") or {}).get("name")
    wanted = f"{version}.{group}"
    if isinstance(name, str) and name and name != wanted:
        detail = f'must be `spec.version+"."+spec.group`: "{wanted}"'
        out.append(fe.invalid("metadata.name", name, detail))
    if not group and version != "v1":
        detail = "only v1 may have an empty group and it better be legacy kube"
        out.append(fe.required("spec.group", detail))
    if group:
        _name_like("spec.group", group, is_dns1123_subdomain, out)
    _name_like("spec.version", version, is_dns1035_label, out)
    _bounded(spec, "groupPriorityMinimum", 20000, out)
    _bounded(spec, "versionPriority", 1000, out)
    _local_tls(spec, out)
    return out


def runtime_class(obj: Obj, fast: bool) -> list[Cause]:
    """The handler names a CRI configuration: a DNS-1123 label."""
    handler = obj.get("handler")
    out: list[Cause] = []
    if isinstance(handler, str):
        _name_like("handler", handler, is_dns1123_label, out)
    return out
