"""Pod template hashes, revisions and the ReplicaSet a Deployment creates for a template.

The hash is a CRC-32 of the template's JSON with sorted keys and the collision count
(Kubernetes uses FNV-32a over Go's printing of the struct), written as Kubernetes writes it
(rand.SafeEncodeString of the decimal number), so names look like `web-5d4f8c7b9`. Which
ReplicaSet belongs to the current template is decided by comparing templates without the
hash label, as the Deployment controller does, so the hash only has to be stable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from gitkrm.controllers.objects import annotations_of
from gitkrm.krm import Obj
from gitkrm.krm.clock import parse_timestamp

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
_HISTORY_CHARS = 2000  # maxRevHistoryLengthInChars
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_SKIP_COPY = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: Mapping[str, object], collision_count: int | None = None) -> str:
    """ComputeHash: a short, name-safe hash of a pod template."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += str(collision_count).encode()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in str(zlib.crc32(data)).encode())


def without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(template)
    md = dict(out.get("metadata") or {})
    lab = dict(md.get("labels") or {})
    lab.pop(HASH_LABEL, None)
    md["labels"] = lab
    out["metadata"] = md
    return out


_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _go_value(value: Any) -> Any:
    """A value as Go's semantic equality sees it: nulls and empty lists are absent (a nil
    slice equals an empty one; a null is the zero value)."""
    if isinstance(value, dict):
        return {k: _go_value(v) for k, v in value.items() if v is not None and v != []}
    if isinstance(value, list):
        return [_go_value(v) for v in value]
    return value


def _comparable(template: Mapping[str, Any]) -> dict[str, Any]:
    """EqualIgnoreHash's view of a template: a container's `resources` is a struct, not a
    pointer, in Go, so `resources: {}` (what a Go client such as `kubectl rollout undo`
    writes back) is the same as none at all."""
    out: dict[str, Any] = _go_value(without_hash(template))
    spec = out.get("spec")
    if isinstance(spec, dict):
        for key in _CONTAINER_LISTS:
            for c in spec.get(key) or ():
                if isinstance(c, dict) and not any((c.get("resources") or {}).values()):
                    c.pop("resources", None)
    return out


def same_template(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """EqualIgnoreHash (apimachinery's semantic equality of the templates without the hash
    label), so an undo finds the ReplicaSet of the revision it goes back to."""
    return a == b or _comparable(a) == _comparable(b)


def revision(obj: Obj) -> int:
    try:
        return int(annotations_of(obj).get(REVISION) or 0)
    except ValueError:
        return 0


def with_old_revision(notes: Mapping[str, str]) -> str:
    """SetNewReplicaSetAnnotations: the revision-history annotation of a ReplicaSet rolled
    back to, its old revision appended (the oldest dropped past 2,000 characters)."""
    old = notes[REVISION]
    history = notes.get(REVISION_HISTORY) or ""
    if not history:
        return old
    kept = history.split(",")
    total = len(history) + len(old) + 1
    start = 0
    while total > _HISTORY_CHARS and start < len(kept):
        total -= len(kept[start]) + 1
        start += 1
    if total > _HISTORY_CHARS:
        return history
    return ",".join([*kept[start:], old])


def max_revision(sets: Iterable[Obj]) -> int:
    return max((revision(rs) for rs in sets), default=0)


def copied_annotations(deployment: Obj) -> dict[str, str]:
    """The Deployment's annotations that its ReplicaSets carry too."""
    return {k: v for k, v in annotations_of(deployment).items() if k not in _SKIP_COPY}


def by_creation(rs: Obj) -> tuple[float, str]:
    return (parse_timestamp(rs["metadata"].get("creationTimestamp")) or 0.0, rs["metadata"]["name"])


def new_replica_set(
    deployment: Obj, template_hash_value: str, replicas: int, new_revision: int, max_surge: int
) -> Obj:
    """The ReplicaSet for the Deployment's current template."""
    md = deployment["metadata"]
    spec = deployment.get("spec") or {}
    template = dict(spec.get("template") or {})
    tmeta = dict(template.get("metadata") or {})
    tlabels = dict(tmeta.get("labels") or {})
    tlabels[HASH_LABEL] = template_hash_value
    tmeta["labels"] = tlabels
    template["metadata"] = tmeta
    selector = dict(spec.get("selector") or {})
    selector["matchLabels"] = {
        **(selector.get("matchLabels") or {}),
        HASH_LABEL: template_hash_value,
    }
    notes = copied_annotations(deployment)
    notes[REVISION] = str(new_revision)
    want = int(spec.get("replicas", 1))
    notes[DESIRED_REPLICAS] = str(want)
    notes[MAX_REPLICAS] = str(want + max_surge)
    rs_spec: dict[str, Any] = {"replicas": replicas, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{md['name']}-{template_hash_value}",
            "namespace": md.get("namespace"),
            "labels": dict(tlabels),
            "annotations": notes,
            "ownerReferences": [
                {
                    "apiVersion": deployment["apiVersion"],
                    "kind": deployment["kind"],
                    "name": md["name"],
                    "uid": md["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": rs_spec,
    }
