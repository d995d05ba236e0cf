"""kube-apiserver's LimitRanger admission plugin, pure: a namespace's LimitRanges default
the resources of a Pod's (init) containers when it is created, and bound Pods and
PersistentVolumeClaims by their `min`, `max` and `maxLimitRequestRatio`.

Ported from kubernetes plugin/pkg/admission/limitranger/admission.go (1.33): the
`kubernetes.io/limit-ranger` annotation, the messages (minConstraint, maxConstraint,
maxRequestConstraint, limitRequestRatioConstraint) and their aggregation
(utilerrors.NewAggregate: one message alone, several as `[a, b]`). Only Pods are mutated,
never a pod template. The LimitRange's own defaulting (SetDefaults_LimitRangeItem) is here
too: a Container item's `default` comes from `max`, `defaultRequest` from `default`, then
from `min`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gitkrm.krm.quantity import Quantity, QuantityError
from gitkrm.krm.types import Obj

ANNOTATION = "kubernetes.io/limit-ranger"
_MAX_MILLI = 2**63 // 1000  # resource.MaxMilliValue


def default_limit_range(obj: Obj, create: bool) -> None:
    """SetDefaults_LimitRangeItem on every Container item of a LimitRange."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for item in spec.get("limits") or ():
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = item.get("default")
        request = item.get("defaultRequest")
        if default is None:
            default = item["default"] = {}
        if request is None:
            request = item["defaultRequest"] = {}
        if not isinstance(default, dict) or not isinstance(request, dict):
            continue
        for source, target in (("max", default), ("default", request), ("min", request)):
            values = item.get(source)
            if isinstance(values, dict):
                for name, value in values.items():
                    target.setdefault(name, value)
        for key in ("default", "defaultRequest"):
            if not item[key]:
                del item[key]


def _items(ranges: Iterable[Obj], kind: str) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for lr in ranges:
        spec = lr.get("spec")
        for item in spec.get("limits") or () if isinstance(spec, dict) else ():
            if isinstance(item, dict) and item.get("type") == kind:
                out.append(item)
    return out


def _containers(spec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (label, c)
        for key, label in (("containers", "container"), ("initContainers", "init container"))
        for c in spec.get(key) or ()
        if isinstance(c, dict)
    ]


def default_pod(pod: Obj, ranges: Sequence[Obj]) -> bool:
    """PodMutateLimitFunc of each LimitRange in turn: fill the resources containers lack
    from the Container items' `default` (limits) and `defaultRequest` (requests), and say so
    in the annotation. True when something was set."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return False
    changed = False
    for lr in ranges:
        limits: dict[str, Any] = {}
        requests: dict[str, Any] = {}
        for item in _items((lr,), "Container"):
            for source, target in (("defaultRequest", requests), ("default", limits)):
                values = item.get(source)
                if isinstance(values, dict):
                    target.update(values)
        if not limits and not requests:
            continue
        notes: list[str] = []
        for label, c in _containers(spec):
            resources = c.get("resources")
            if resources is None:
                resources = c["resources"] = {}
            if not isinstance(resources, dict):
                continue
            set_requests = _merge(resources, "requests", requests)
            set_limits = _merge(resources, "limits", limits)
            name = c.get("name")
            if set_requests:
                notes.append(f"{', '.join(set_requests)} request for {label} {name}")
            if set_limits:
                notes.append(f"{', '.join(set_limits)} limit for {label} {name}")
        if notes:
            md = pod.setdefault("metadata", {})
            annotations = md.get("annotations")
            if not isinstance(annotations, dict):
                annotations = md["annotations"] = {}
            annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
            changed = True
    return changed


def _merge(resources: dict[str, Any], key: str, defaults: Mapping[str, Any]) -> list[str]:
    if not defaults:
        return []
    have = resources.get(key)
    if have is None:
        have = resources[key] = {}
    if not isinstance(have, dict):
        return []
    added = sorted(name for name in defaults if name not in have)
    for name in added:
        have[name] = defaults[name]
    return added


def _q(values: object, name: str) -> Quantity | None:
    raw = values.get(name) if isinstance(values, Mapping) else None
    if raw is None:
        return None
    try:
        return Quantity.of(raw)
    except (QuantityError, TypeError):
        return None


def _compared(*qs: Quantity | None) -> list[int]:
    """requestLimitEnforcedValues: milli-values when none overflows them, else values."""
    values = [q.value if q is not None else 0 for q in qs]
    if all(v <= _MAX_MILLI for v in values):
        return [q.milli() if q is not None else 0 for q in qs]
    return [int(q.value) if q is not None else 0 for q in qs]


def _min(kind: str, name: str, enforced: Quantity, req: object, lim: object) -> str | None:
    r, li = _q(req, name), _q(lim, name)
    rv, lv, ev = _compared(r, li, enforced)
    if r is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if rv < ev:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {r}"
    if li is not None and lv < ev:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {li}"
    return None


def _max(kind: str, name: str, enforced: Quantity, req: object, lim: object) -> str | None:
    r, li = _q(req, name), _q(lim, name)
    rv, lv, ev = _compared(r, li, enforced)
    if li is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if lv > ev:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {li}"
    if r is not None and rv > ev:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {r}"
    return None


def _max_request(kind: str, name: str, enforced: Quantity, req: object) -> str | None:
    r = _q(req, name)
    rv, _, ev = _compared(r, None, enforced)
    if r is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if rv > ev:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {r}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, req: object, lim: object) -> str | None:
    r, li = _q(req, name), _q(lim, name)
    rv, lv, _ = _compared(r, li, enforced)
    if r is None or rv == 0:
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, "
            "but no request is specified or request is 0"
        )
    if li is None or lv == 0:
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, "
            "but no limit is specified or limit is 0"
        )
    observed = lv / rv
    if enforced.value <= _MAX_MILLI:
        over = observed * 1000 > enforced.milli()
    else:
        over = observed > float(enforced.value)
    if over:
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, "
            f"but provided ratio is {observed:f}"
        )
    return None


def _bounds(item: Mapping[str, Any], kind: str, req: object, lim: object) -> list[str]:
    errs: list[str | None] = []
    for key, check in (("min", _min), ("max", _max), ("maxLimitRequestRatio", _ratio)):
        for name, enforced in _quantities(item.get(key)):
            errs.append(check(kind, name, enforced, req, lim))
    return [e for e in errs if e is not None]


def _quantities(values: object) -> list[tuple[str, Quantity]]:
    if not isinstance(values, Mapping):
        return []
    out = []
    for name in values:
        q = _q(values, str(name))
        if q is not None:
            out.append((str(name), q))
    return out


def _resources(c: Mapping[str, Any]) -> tuple[object, object]:
    res = c.get("resources")
    if not isinstance(res, Mapping):
        return None, None
    return res.get("requests"), res.get("limits")


def pod_requests_limits(spec: Mapping[str, Any]) -> tuple[dict[str, Quantity], dict[str, Quantity]]:
    """A pod's requests and limits as the API server adds them up (component-helpers'
    PodRequests/PodLimits without overhead): containers and restartable init containers
    (sidecars) add up, a regular init container counts with the sidecars started before it
    and the larger of the two wins."""
    totals: list[dict[str, Quantity]] = []
    for which in ("requests", "limits"):
        total: dict[str, Quantity] = {}
        sidecars: dict[str, Quantity] = {}
        init_max: dict[str, Quantity] = {}
        for c in spec.get("containers") or ():
            if isinstance(c, Mapping):
                _add_into(total, _list(c, which))
        for c in spec.get("initContainers") or ():
            if not isinstance(c, Mapping):
                continue
            values = _list(c, which)
            if c.get("restartPolicy") == "Always":
                _add_into(sidecars, values)
                continue
            for name, q in values.items():
                with_sidecars = q + sidecars[name] if name in sidecars else q
                if name not in init_max or with_sidecars.value > init_max[name].value:
                    init_max[name] = with_sidecars
        _add_into(total, sidecars)
        for name, q in init_max.items():
            if name not in total or q.value > total[name].value:
                total[name] = q
        totals.append(total)
    return totals[0], totals[1]


def _list(c: Mapping[str, Any], which: str) -> dict[str, Quantity]:
    res = c.get("resources")
    values = res.get(which) if isinstance(res, Mapping) else None
    return dict(_quantities(values))


def _add_into(into: dict[str, Quantity], values: Mapping[str, Quantity]) -> None:
    for name, q in values.items():
        into[name] = into[name] + q if name in into else q


def check_pod(pod: Obj, ranges: Sequence[Obj]) -> str | None:
    """PodValidateLimitFunc per LimitRange: the first LimitRange's aggregated message, or
    None when the pod is within every range."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return None
    for lr in ranges:
        errs: list[str] = []
        for item in _items((lr,), "Container"):
            for key in ("containers", "initContainers"):
                for c in spec.get(key) or ():
                    if isinstance(c, Mapping):
                        errs += _bounds(item, "Container", *_resources(c))
        for item in _items((lr,), "Pod"):
            requests, limits = pod_requests_limits(spec)
            errs += _bounds(item, "Pod", _texts(requests), _texts(limits))
        if errs:
            return aggregate(errs)
    return None


def _texts(values: Mapping[str, Quantity]) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


def check_claim(pvc: Obj, ranges: Sequence[Obj]) -> str | None:
    """PersistentVolumeClaimValidateLimitFunc: `min` and `max` of the claim's requests."""
    spec = pvc.get("spec")
    res = spec.get("resources") if isinstance(spec, Mapping) else None
    requests = res.get("requests") if isinstance(res, Mapping) else None
    for lr in ranges:
        errs: list[str] = []
        for item in _items((lr,), "PersistentVolumeClaim"):
            for name, enforced in _quantities(item.get("min")):
                err = _min("PersistentVolumeClaim", name, enforced, requests, {})
                if err is not None:
                    errs.append(err)
            for name, enforced in _quantities(item.get("max")):
                err = _max_request("PersistentVolumeClaim", name, enforced, requests)
                if err is not None:
                    errs.append(err)
        if errs:
            return aggregate(errs)
    return None


def aggregate(messages: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): distinct messages, bracketed when several."""
    distinct = list(dict.fromkeys(messages))
    if len(messages) == 1 or len(distinct) == 1:
        return distinct[0]
    return "[" + ", ".join(distinct) + "]"
