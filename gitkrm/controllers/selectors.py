"""Selectors the controllers evaluate: label selectors (parsed once per object version),
node selectors and node affinity, taints and tolerations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitkrm.krm import LabelSelector, Obj, label_selector_from_dict

_cache: dict[tuple[str, str, tuple[str, ...]], LabelSelector] = {}
_CACHE_MAX = 100_000


def selector_of(obj: Obj, path: tuple[str, ...] = ("spec", "selector")) -> LabelSelector:
    """The parsed label selector at `path` of an object, cached per uid and generation (or
    resourceVersion, for kinds without generations). A missing selector selects nothing."""
    md = obj["metadata"]
    version = md.get("generation") or md.get("resourceVersion") or ""
    key = (str(md.get("uid") or ""), str(version), path)
    found = _cache.get(key)
    if found is not None:
        return found
    raw: object = obj
    for p in path:
        raw = raw.get(p) if isinstance(raw, Mapping) else None
    if isinstance(raw, Mapping):
        sel = label_selector_from_dict(raw)
    else:
        sel = LabelSelector.nothing()
    if len(_cache) >= _CACHE_MAX:
        _cache.clear()
    _cache[key] = sel
    return sel


def _requirement(req: Mapping[str, Any], value: str | None) -> bool:
    op = req.get("operator")
    values = [str(v) for v in req.get("values") or ()]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _term_matches(term: Mapping[str, Any], node: Obj) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches no objects
    node_labels = node["metadata"].get("labels") or {}
    for req in exprs:
        if not isinstance(req, Mapping) or not _requirement(req, node_labels.get(req.get("key"))):
            return False
    for req in fields:
        if not isinstance(req, Mapping):
            return False
        value = node["metadata"]["name"] if req.get("key") == "metadata.name" else None
        if not _requirement(req, value):
            return False
    return True


def node_affinity_matches(pod_spec: Mapping[str, object], node: Obj) -> bool:
    """The pod's nodeSelector and requiredDuringSchedulingIgnoredDuringExecution terms."""
    node_labels = node["metadata"].get("labels") or {}
    selector = pod_spec.get("nodeSelector") or {}
    for k, v in selector.items() if isinstance(selector, Mapping) else ():
        if node_labels.get(k) != v:
            return False
    affinity = pod_spec.get("affinity")
    required = (
        ((affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"))
        if isinstance(affinity, Mapping)
        else None
    )
    if not isinstance(required, Mapping):
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(isinstance(t, Mapping) and _term_matches(t, node) for t in terms)


def tolerates(tolerations: object, taint: Mapping[str, object]) -> bool:
    """Whether some toleration tolerates the taint (v1helper.TolerationsTolerateTaint)."""
    for t in tolerations if isinstance(tolerations, list) else ():
        if not isinstance(t, Mapping):
            continue
        effect = t.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = t.get("key")
        op = t.get("operator") or "Equal"
        if not key:
            if op == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if op == "Exists" or (
            op == "Equal" and (t.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False
