"""Fields that may not change on update, as the API server's ValidateXUpdate functions say.

Each check compares the new object with the stored one and reports
`<path>: Invalid value: <new>: field is immutable`.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Final

from gitkrm.errors import Cause
from gitkrm.krm.fields import field_value
from gitkrm.krm.quantity import QuantityError, parse_quantity
from gitkrm.krm.types import Obj
from gitkrm.schema import fielderrors as fe

UpdateRule = Callable[[Obj, Obj], list[Cause]]
_MISSING: Final = object()


def _same(new: Obj, old: Obj, *path: str, out: list[Cause]) -> None:
    a, b = field_value(new, *path), field_value(old, *path)
    if a != b:
        out.append(fe.immutable(".".join(path), a))


def metadata_update(new: Obj, old: Obj) -> list[Cause]:
    """ValidateObjectMetaUpdate: name and namespace never change; uid when both set it."""
    out: list[Cause] = []
    _same(new, old, "metadata", "name", out=out)
    _same(new, old, "metadata", "namespace", out=out)
    new_uid, old_uid = field_value(new, "metadata", "uid"), field_value(old, "metadata", "uid")
    if new_uid and old_uid and new_uid != old_uid:
        out.append(fe.immutable("metadata.uid", new_uid))
    return out


def _selector(new: Obj, old: Obj) -> list[Cause]:
    out: list[Cause] = []
    _same(new, old, "spec", "selector", out=out)
    return out


_STS_MUTABLE = frozenset(
    {
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    }
)


def _stateful_set(new: Obj, old: Obj) -> list[Cause]:
    """ValidateStatefulSetUpdate: only a few spec fields may change (not the selector)."""
    a, b = field_value(new, "spec"), field_value(old, "spec")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return []
    rest_a = {k: v for k, v in a.items() if k not in _STS_MUTABLE}
    rest_b = {k: v for k, v in b.items() if k not in _STS_MUTABLE}
    if rest_a == rest_b:
        return []
    return [
        fe.forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
            "'template', 'updateStrategy', 'revisionHistoryLimit', "
            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )
    ]


def _job(new: Obj, old: Obj) -> list[Cause]:
    out: list[Cause] = []
    _same(new, old, "spec", "selector", out=out)
    # Kubernetes lets a suspended job that never started change its scheduling directives;
    # everything else of the pod template is fixed at creation.
    a, b = field_value(new, "spec", "template"), field_value(old, "spec", "template")
    if a != b and not _only_scheduling_changed(new, old):
        out.append(fe.immutable("spec.template", a))
    _same(new, old, "spec", "completionMode", out=out)
    return out


_SCHEDULING = ("nodeSelector", "affinity", "tolerations", "schedulingGates")


def _only_scheduling_changed(new: Obj, old: Obj) -> bool:
    if not field_value(old, "spec", "suspend") or field_value(old, "status", "startTime"):
        return False
    a, b = field_value(new, "spec", "template"), field_value(old, "spec", "template")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    a_spec, b_spec = a.get("spec") or {}, b.get("spec") or {}
    if not isinstance(a_spec, dict) or not isinstance(b_spec, dict):
        return False
    strip_a = {k: v for k, v in a_spec.items() if k not in _SCHEDULING}
    strip_b = {k: v for k, v in b_spec.items() if k not in _SCHEDULING}
    a_meta, b_meta = a.get("metadata") or {}, b.get("metadata") or {}
    same_meta = {k: v for k, v in a_meta.items() if k not in ("labels", "annotations")} == {
        k: v for k, v in b_meta.items() if k not in ("labels", "annotations")
    }
    return strip_a == strip_b and same_meta


def _cluster_ips(spec: object) -> list[object]:
    if not isinstance(spec, dict):
        return []
    ips = spec.get("clusterIPs")
    if isinstance(ips, list) and ips:
        return ips
    ip = spec.get("clusterIP")
    return [ip] if ip else []


def _service(new: Obj, old: Obj) -> list[Cause]:
    """validateUpgradeDowngradeClusterIPs: allocated cluster IPs may not change (a
    secondary may be added or released); ExternalName and headless services are exempt."""
    out: list[Cause] = []
    if "ExternalName" in (field_value(new, "spec", "type"), field_value(old, "spec", "type")):
        return out
    old_ips, new_ips = _cluster_ips(old.get("spec")), _cluster_ips(new.get("spec"))
    if old_ips[:1] == ["None"] and new_ips[:1] == ["None"]:
        return out
    changed = "may not change once set"
    if len(old_ips) == len(new_ips):
        for i, ip in enumerate(old_ips):
            if ip != new_ips[i]:
                out.append(fe.invalid(f"spec.clusterIPs[{i}]", new_ips, changed))
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            out.append(
                fe.invalid("spec.clusterIPs[0]", new_ips, "primary clusterIP can not be unset")
            )
        elif new_ips[0] != old_ips[0]:
            out.append(fe.invalid("spec.clusterIPs[0]", new_ips, changed))
    elif old_ips and new_ips[0] != old_ips[0]:
        out.append(fe.invalid("spec.clusterIPs[0]", new_ips, changed))
    return out


def _pvc(new: Obj, old: Obj) -> list[Cause]:
    """ValidatePersistentVolumeClaimUpdate: a claim's spec is fixed at creation, except
    that its volumeName may be set once and, when bound, its storage request may grow."""
    out: list[Cause] = []
    a, b = field_value(new, "spec"), field_value(old, "spec")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return out
    bound = (
        field_value(new, "status", "phase") == "Bound"
        or field_value(old, "status", "phase") == "Bound"
    )
    a_rest = _claim_spec(a, drop_volume=not b.get("volumeName"), drop_storage=bound)
    b_rest = _claim_spec(b, drop_volume=not b.get("volumeName"), drop_storage=bound)
    if a_rest != b_rest:
        out.append(
            fe.forbidden_change(
                "spec",
                "spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
            )
        )
    old_size, new_size = _storage(b), _storage(a)
    if bound and old_size is not None and new_size is not None and new_size < old_size:
        out.append(
            fe.forbidden(
                "spec.resources.requests.storage", "field can not be less than previous value"
            )
        )
    return out


def _storage(spec: Obj) -> Decimal | None:
    raw = field_value(spec, "resources", "requests", "storage")
    try:
        return parse_quantity(raw) if raw is not None else None
    except (QuantityError, TypeError):
        return None


def _claim_spec(spec: Obj, *, drop_volume: bool, drop_storage: bool) -> Obj:
    skip = {"volumeAttributesClassName", "volumeName" if drop_volume else ""}
    out = {k: v for k, v in spec.items() if k not in skip}
    resources = spec.get("resources")
    if drop_storage and isinstance(resources, dict):
        requests = resources.get("requests")
        if isinstance(requests, dict):
            out["resources"] = {
                **resources,
                "requests": {k: v for k, v in requests.items() if k != "storage"},
            }
    return out


def _immutable_data(new: Obj, old: Obj, sections: tuple[str, ...]) -> list[Cause]:
    out: list[Cause] = []
    if old.get("immutable") is not True:
        return out
    if new.get("immutable") is not True:
        out.append(fe.forbidden_change("immutable", "field is immutable when `immutable` is set"))
    for section in sections:
        if (new.get(section) or {}) != (old.get(section) or {}):
            out.append(fe.forbidden_change(section, "field is immutable when `immutable` is set"))
    return out


def _config_map(new: Obj, old: Obj) -> list[Cause]:
    return _immutable_data(new, old, ("data", "binaryData"))


def _secret(new: Obj, old: Obj) -> list[Cause]:
    out = _immutable_data(new, old, ("data",))
    if new.get("type") != old.get("type"):
        out.append(fe.immutable("type", new.get("type")))
    return out


def _crd(new: Obj, old: Obj) -> list[Cause]:
    """A CRD's group and scope are fixed: stored objects live under them."""
    out: list[Cause] = []
    _same(new, old, "spec", "group", out=out)
    _same(new, old, "spec", "scope", out=out)
    return out


UPDATE_RULES: dict[tuple[str, str], UpdateRule] = {
    ("apps", "Deployment"): _selector,
    ("apps", "ReplicaSet"): _selector,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _selector,
    ("batch", "Job"): _job,
    ("", "Service"): _service,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "ConfigMap"): _config_map,
    ("", "Secret"): _secret,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}


def validate_update(new: Obj, old: Obj, *, group: str, kind: str) -> list[Cause]:
    """Every immutable-field violation of an update from `old` to `new`."""
    out = metadata_update(new, old)
    rule = UPDATE_RULES.get((group, kind))
    if rule is not None:
        out.extend(rule(new, old))
    return out
