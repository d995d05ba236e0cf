"""ResourceQuota arithmetic, pure: what an object uses of a quota (the evaluators of
kubernetes pkg/quota/v1/evaluator/core and apiserver's generic object count), which quotas
a write is charged to and what they refuse (plugin/pkg/admission/resourcequota/controller.go
CheckRequest, 1.33), and a quota's `status.used` over a namespace's objects (the
resource-quota controller's CalculateUsage).

Quantities are `Quantity` values, so sums and messages print as apimachinery does
(`limits.cpu=2`, `requests.memory=256Mi`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitkrm.errors import Forbidden
from gitkrm.krm.quantity import ZERO, Quantity, QuantityError
from gitkrm.krm.types import Obj
from gitkrm.schema.limitranger import pod_requests_limits
from gitkrm.schema.podspec_defaults import pod_qos_class

Usage = dict[str, Quantity]

_ONE = Quantity.of(1)
_STORAGE_CLASS = ".storageclass.storage.k8s.io/"
# Kinds with an evaluator beyond the object count (group, kind) -> their legacy count name.
_LEGACY = {
    ("", "Pod"): "pods",
    ("", "Service"): "services",
    ("", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("", "ConfigMap"): "configmaps",
    ("", "Secret"): "secrets",
    ("", "ReplicationController"): "replicationcontrollers",
    ("", "ResourceQuota"): "resourcequotas",
}
_POD_RESOURCES = frozenset(
    {
        "pods",
        "count/pods",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    }
)
_SERVICE_RESOURCES = frozenset(
    {"services", "count/services", "services.loadbalancers", "services.nodeports"}
)
# "if we quota cpu or memory, then each container must make an explicit request for the
# resource. this was a mistake." (pods.go validationSet)
_MUST_SPECIFY = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Subject:
    """The kind of object a quota is asked about: its group, kind and plural."""

    group: str
    kind: str
    resource: str

    @property
    def count_name(self) -> str:
        """`count/<resource>.<group>` (`count/<resource>` in the core group)."""
        return f"count/{self.resource}.{self.group}" if self.group else f"count/{self.resource}"

    @property
    def is_pod(self) -> bool:
        return self.group == "" and self.kind == "Pod"

    def matching(self, names: Iterable[str]) -> list[str]:
        """MatchingResources: the quota resource names this kind's usage counts for."""
        return [n for n in names if self._counts(n)]

    def _counts(self, name: str) -> bool:
        gk = (self.group, self.kind)
        if name == self.count_name or name == _LEGACY.get(gk):
            return True
        if gk == ("", "Pod"):
            return (
                name in _POD_RESOURCES
                or name.startswith(("hugepages-", "requests.hugepages-"))
                or (name.startswith("requests.") and "/" in name)
            )
        if gk == ("", "Service"):
            return name in _SERVICE_RESOURCES
        if gk == ("", "PersistentVolumeClaim"):
            return name == "requests.storage" or (
                _STORAGE_CLASS in name
                and name.endswith(("/requests.storage", "/persistentvolumeclaims"))
            )
        return False

    def usage(self, obj: Obj) -> Usage:
        """What one object uses (PodUsageFunc, the service and claim evaluators, or 1)."""
        gk = (self.group, self.kind)
        result: Usage = {self.count_name: _ONE}
        legacy = _LEGACY.get(gk)
        if gk == ("", "Pod"):
            if _charged(obj):
                result["pods"] = _ONE
                result.update(_pod_compute(obj))
            return result
        if legacy is not None:
            result[legacy] = _ONE
        if gk == ("", "Service"):
            result.update(_service(obj))
        elif gk == ("", "PersistentVolumeClaim"):
            result.update(_claim(obj))
        return result


def _charged(pod: Obj) -> bool:
    """QuotaV1Pod: terminal pods use no compute quota (deletion is immediate here)."""
    return (pod.get("status") or {}).get("phase") not in _TERMINAL


def _spec(obj: Obj) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _pod_compute(pod: Obj) -> Usage:
    spec = _spec(pod)
    requests, limits = pod_requests_limits(spec)
    overhead = spec.get("overhead")
    if isinstance(overhead, Mapping):
        for name, raw in overhead.items():
            try:
                q = Quantity.of(raw)
            except (QuantityError, TypeError):
                continue
            requests[name] = requests[name] + q if name in requests else q
            if name in limits:
                limits[name] = limits[name] + q
    return _compute_usage(requests, limits)


def _compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> Usage:
    """podComputeUsageHelper."""
    out: Usage = {}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = q
        elif "/" in name and not name.startswith("kubernetes.io/"):
            out[f"requests.{name}"] = q
    return out


def _service(svc: Obj) -> Usage:
    spec = _spec(svc)
    ports = spec.get("ports")
    count = len(ports) if isinstance(ports, list) else 0
    out: Usage = {"services.loadbalancers": ZERO, "services.nodeports": ZERO}
    kind = spec.get("type")
    if kind == "NodePort":
        out["services.nodeports"] = Quantity.of(count)
    elif kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is False:
            explicit = [p for p in ports or () if isinstance(p, Mapping) and p.get("nodePort")]
            out["services.nodeports"] = Quantity.of(len(explicit))
        else:
            out["services.nodeports"] = Quantity.of(count)
        out["services.loadbalancers"] = _ONE
    return out


def _claim(pvc: Obj) -> Usage:
    spec = _spec(pvc)
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    storage_class = spec.get("storageClassName") or annotations.get(
        "volume.beta.kubernetes.io/storage-class", ""
    )
    out: Usage = {}
    if storage_class:
        out[f"{storage_class}{_STORAGE_CLASS}persistentvolumeclaims"] = _ONE
    resources = spec.get("resources")
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    raw = requests.get("storage") if isinstance(requests, Mapping) else None
    allocated = ((pvc.get("status") or {}).get("allocatedResources") or {}).get("storage")
    stored = None
    for value in (raw, allocated):
        try:
            q = Quantity.of(value) if value is not None else None
        except (QuantityError, TypeError):
            q = None
        if q is not None and (stored is None or q.value > stored.value):
            stored = q
    if stored is not None:
        out["requests.storage"] = stored
        if storage_class:
            out[f"{storage_class}{_STORAGE_CLASS}requests.storage"] = stored
    return out


# -- scopes (pods only; a scoped quota matches nothing else) -----------------------------


def _selectors(quota: Obj) -> list[Mapping[str, Any]]:
    spec = _spec(quota)
    out: list[Mapping[str, Any]] = [
        {"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()
    ]
    selector = spec.get("scopeSelector")
    if isinstance(selector, Mapping):
        out += [e for e in selector.get("matchExpressions") or () if isinstance(e, Mapping)]
    return out


def _pod_in_scope(pod: Obj, selector: Mapping[str, Any]) -> bool:
    spec = _spec(pod)
    scope = str(selector.get("scopeName"))
    if scope in ("Terminating", "NotTerminating"):
        terminating = isinstance(spec.get("activeDeadlineSeconds"), int)
        return terminating == (scope == "Terminating")
    if scope in ("BestEffort", "NotBestEffort"):
        best_effort = pod_qos_class(dict(spec)) == "BestEffort"
        return best_effort == (scope == "BestEffort")
    if scope == "PriorityClass":
        name = spec.get("priorityClassName") or ""
        op = selector.get("operator")
        values = selector.get("values") or ()
        if op == "Exists":
            return bool(name)
        if op == "DoesNotExist":
            return not name
        if op == "In":
            return bool(name) and name in list(values)
        if op == "NotIn":
            return not name or name not in list(values)
    return False


def matches(quota: Obj, subject: Subject, obj: Obj, names: Iterable[str]) -> bool:
    """generic.Matches: the quota tracks something of this kind and its scopes hold."""
    if not subject.matching(names):
        return False
    return all(subject.is_pod and _pod_in_scope(obj, s) for s in _selectors(quota))


# -- admission (CheckRequest) ------------------------------------------------------------


def _resource_list(values: object) -> Usage:
    out: Usage = {}
    if isinstance(values, Mapping):
        for name, raw in values.items():
            try:
                out[str(name)] = Quantity.of(raw)
            except (QuantityError, TypeError):
                continue
    return out


def text(values: Mapping[str, Quantity]) -> dict[str, str]:
    return {k: str(values[k]) for k in sorted(values)}


def _pretty(values: Mapping[str, Quantity]) -> str:
    return ",".join(f"{k}={values[k]}" for k in sorted(values))


def _missing(pod: Obj, required: set[str]) -> str | None:
    """podEvaluator.Constraints: each (init) container must state what the quota tracks of
    cpu and memory."""
    need = required & _MUST_SPECIFY
    if not need:
        return None
    spec = _spec(pod)
    missing: dict[str, set[str]] = {}
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            if not isinstance(c, Mapping):
                continue
            res = c.get("resources")
            res = res if isinstance(res, Mapping) else {}
            have = _compute_usage(
                _resource_list(res.get("requests")), _resource_list(res.get("limits"))
            )
            for name in need - set(have):
                missing.setdefault(name, set()).add(str(c.get("name")))
    if not missing:
        return None
    parts = [f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing)]
    return "must specify " + "; ".join(parts)


def charge(
    quotas: Sequence[Obj], subject: Subject, obj: Obj, old: Obj | None = None
) -> list[tuple[Obj, dict[str, str]]]:
    """CheckRequest: refuse (Forbidden, the message without the `<resource> "<name>" is
    forbidden: ` prefix) what would exceed a quota, else the quotas to charge and their new
    `status.used`."""
    interesting: list[tuple[Obj, Usage, Usage]] = []
    for q in sorted(quotas, key=lambda q: str((q.get("metadata") or {}).get("name"))):
        status = q.get("status") or {}
        hard = _resource_list(status.get("hard"))
        if not matches(q, subject, obj, hard):
            continue
        name = (q.get("metadata") or {}).get("name")
        restricted = subject.matching(hard)
        if subject.is_pod and (err := _missing(obj, set(restricted))) is not None:
            raise Forbidden(f"failed quota: {name}: {err}")
        used = _resource_list(status.get("used"))
        if any(r not in used for r in restricted):
            names = ",".join(sorted(restricted))
            raise Forbidden(f"status unknown for quota: {name}, resources: {names}")
        interesting.append((q, hard, used))
    if not interesting:
        return []
    delta = subject.usage(obj)
    if old is not None:
        # An update is charged what it adds (SubtractWithNonNegativeResult).
        before = subject.usage(old)
        delta = {k: v - before[k] if k in before else v for k, v in delta.items()}
        delta = {k: v if v.value > 0 else ZERO for k, v in delta.items()}
    if all(v.value == 0 for v in delta.values()):
        return []
    out = []
    for q, hard, used in interesting:
        requested = {k: v for k, v in delta.items() if k in hard}
        new = dict(used)
        for k, v in requested.items():
            new[k] = new[k] + v if k in new else v
        exceeded = sorted(k for k in requested if new[k].value > hard[k].value)
        if exceeded:
            raise Forbidden(
                f"exceeded quota: {(q.get('metadata') or {}).get('name')}, "
                f"requested: {_pretty({k: requested[k] for k in exceeded})}, "
                f"used: {_pretty({k: used[k] for k in exceeded if k in used})}, "
                f"limited: {_pretty({k: hard[k] for k in exceeded})}"
            )
        out.append((q, text(new)))
    return out


# -- the controller (CalculateUsage) -----------------------------------------------------


def hard_of(quota: Obj) -> dict[str, str]:
    """`status.hard`: spec.hard in canonical form."""
    return text(_resource_list(_spec(quota).get("hard")))


def used_of(quota: Obj, members: Mapping[Subject, Iterable[Obj]]) -> dict[str, str]:
    """`status.used` of the hard resources over `members` (the namespace's objects of each
    kind the quota tracks); a resource no kind tracks keeps what the status said."""
    hard = _resource_list(_spec(quota).get("hard"))
    previous = _resource_list((quota.get("status") or {}).get("used"))
    used: Usage = {k: v for k, v in previous.items() if k in hard}
    for subject, objs in members.items():
        names = subject.matching(hard)
        if not names:
            continue
        total: Usage = dict.fromkeys(names, ZERO)
        for obj in objs:
            if not matches(quota, subject, obj, names):
                continue
            for k, v in subject.usage(obj).items():
                if k in total:
                    total[k] = total[k] + v
        used.update(total)
    return text(used)


def subjects_of(names: Iterable[str]) -> tuple[set[tuple[str, str]], set[str]]:
    """The kinds (group, kind) whose objects `names` count, and the `count/...` resources
    named for other kinds (the caller resolves those)."""
    kinds: set[tuple[str, str]] = set()
    counted: set[str] = set()
    for name in names:
        for gk, legacy in _LEGACY.items():
            subject = Subject(gk[0], gk[1], legacy)
            if subject.matching((name,)):
                kinds.add(gk)
                break
        else:
            if name.startswith("count/"):
                counted.add(name[len("count/") :])
    return kinds, counted
