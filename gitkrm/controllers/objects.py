"""Helpers on raw objects that several controllers share: owner references, conditions,
times, pod states. Cached objects are shared and read-only, so the writers here copy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from gitkrm.krm import GVK, Obj
from gitkrm.krm.clock import parse_timestamp
from gitkrm.krm.conditions import get_condition
from gitkrm.krm.types import ObjectMeta, OwnerReference


def meta(obj: Obj) -> ObjectMeta:
    md: ObjectMeta = obj["metadata"]
    return md


def uid(obj: Obj) -> str:
    return str(obj["metadata"].get("uid") or "")


def labels(obj: Obj) -> Mapping[str, str]:
    found = obj["metadata"].get("labels")
    return found if isinstance(found, dict) else {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    found = obj["metadata"].get("annotations")
    return found if isinstance(found, dict) else {}


def being_deleted(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


# -- owner references --------------------------------------------------------------------


def owner_refs(obj: Obj) -> list[OwnerReference]:
    """The owner references of `obj` (only the entries that are maps)."""
    found = obj["metadata"].get("ownerReferences")
    if not isinstance(found, list):
        return []
    return cast("list[OwnerReference]", [r for r in found if isinstance(r, dict)])


def controller_ref(obj: Obj) -> OwnerReference | None:
    for r in owner_refs(obj):
        if r.get("controller") is True:
            return r
    return None


def controller_uid(obj: Obj) -> str | None:
    ref = controller_ref(obj)
    return str(ref.get("uid")) if ref is not None else None


def owner_ref(owner: Obj, *, controller: bool = True, block: bool = True) -> OwnerReference:
    """An ownerReference to `owner`, as controllers set it on what they create."""
    md = owner["metadata"]
    ref: OwnerReference = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": md["name"],
        "uid": md["uid"],
    }
    if controller:
        ref["controller"] = True
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


def owner_index(obj: Obj) -> tuple[str, ...]:
    """Index function: the uid of an object's controller."""
    ref = controller_ref(obj)
    return (str(ref.get("uid")),) if ref is not None else ()


def gvk_of(obj: Obj) -> GVK:
    return GVK.of(obj)


# -- conditions --------------------------------------------------------------------------


def job_finished(job: Obj) -> str | None:
    """ "Complete" or "Failed" once the Job is done (the Job and CronJob controllers)."""
    for kind in ("Complete", "Failed"):
        c = get_condition(job, kind)
        if c is not None and c.get("status") == "True":
            return kind
    return None


# -- pods --------------------------------------------------------------------------------


def pod_phase(pod: Obj) -> str:
    status = pod.get("status")
    return str(status.get("phase") or "") if isinstance(status, dict) else ""


def pod_terminal(pod: Obj) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def pod_active(pod: Obj) -> bool:
    """Counted by workload controllers: not finished and not being deleted."""
    return not pod_terminal(pod) and not being_deleted(pod)


def pod_ready(pod: Obj) -> bool:
    c = get_condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def pod_ready_since(pod: Obj) -> float | None:
    c = get_condition(pod, "Ready")
    if c is None or c.get("status") != "True":
        return None
    return parse_timestamp(c.get("lastTransitionTime"))


def pod_available_in(pod: Obj, min_ready_seconds: int, now: float) -> float | None:
    """0 when the pod is available now, the seconds until it is, None if it is not ready."""
    since = pod_ready_since(pod)
    if since is None:
        return None
    if min_ready_seconds <= 0:
        return 0.0
    return max(0.0, since + min_ready_seconds - now)


def with_status(obj: Obj, status: Mapping[str, object]) -> Obj:
    """A shallow copy of `obj` carrying `status` (for update_status)."""
    out = dict(obj)
    out["status"] = status
    return out


def node_index(pod: Obj) -> tuple[str, ...]:
    """Index function: the node a pod is bound to."""
    spec = pod.get("spec")
    name = spec.get("nodeName") if isinstance(spec, dict) else None
    return (name,) if name else ()


NODE_INDEX = "node"
OWNER_INDEX = "owner"
