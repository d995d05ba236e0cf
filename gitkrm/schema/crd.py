"""CustomResourceDefinition registration: the kinds a CRD serves, and its status.

`custom_versions` turns a validated CRD into one `CustomVersion` per served version;
`names_conflict` finds a clash with kinds already served in the same group; `set_status`
writes `acceptedNames`, the NamesAccepted and Established conditions and `storedVersions`
the way the API server's naming and establishing controllers leave them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from gitkrm.krm.clock import now_rfc3339
from gitkrm.krm.types import Condition, Obj
from gitkrm.schema.custom import CustomVersion
from gitkrm.schema.resources import ResourceInfo

CRD_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")


def crd_name(crd: Obj) -> str:
    return str((crd.get("metadata") or {}).get("name") or "")


class CRDNames(TypedDict, total=False):
    """`spec.names` (and `status.acceptedNames`) of a CustomResourceDefinition."""

    plural: str
    singular: str
    shortNames: list[str]
    kind: str
    listKind: str
    categories: list[str]


def _names(crd: Obj) -> CRDNames:
    names: CRDNames = crd["spec"]["names"]
    return names


def custom_versions(crd: Obj) -> list[CustomVersion]:
    """One entry per served version of a (validated, defaulted) CRD."""
    spec = crd["spec"]
    names = _names(crd)
    versions = spec["versions"]
    storage = next(v["name"] for v in versions if v.get("storage") is True)
    out: list[CustomVersion] = []
    for v in versions:
        if v.get("served") is not True:
            continue
        subresources = v.get("subresources") or {}
        info = ResourceInfo(
            group=spec["group"],
            version=v["name"],
            kind=names["kind"],
            plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(),
            namespaced=spec["scope"] == "Namespaced",
            list_kind=names.get("listKind") or names["kind"] + "List",
            verbs=CRD_VERBS,
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=frozenset(k for k in ("status", "scale") if k in subresources),
            generation=True,
            custom=True,
            storage_version=storage,
            selectable_fields=tuple(
                f["jsonPath"].lstrip(".") for f in v.get("selectableFields") or ()
            ),
        )
        out.append(CustomVersion.of(info, v["schema"]["openAPIV3Schema"], crd_name(crd)))
    return out


def names_conflict(crd: Obj, others: Iterable[ResourceInfo]) -> tuple[str, str] | None:
    """(reason, message) when a name of `crd` is used by another kind of its group."""
    spec = crd["spec"]
    names = _names(crd)
    group = spec["group"]
    plural, kind = names["plural"], names["kind"]
    list_kind = names.get("listKind") or kind + "List"
    short = set(names.get("shortNames") or ())
    for info in others:
        if info.group != group:
            continue
        if info.plural == plural or info.singular == plural:
            return "PluralConflict", f'"{plural}" is already in use'
        if info.kind == kind:
            return "KindConflict", f'"{kind}" is already in use'
        if info.list_kind == list_kind:
            return "ListKindConflict", f'"{list_kind}" is already in use'
        clash = short & {info.plural, info.singular, *info.short_names}
        if clash:
            return "ShortNamesConflict", f'"{sorted(clash)[0]}" is already in use'
    return None


def _condition(
    old: list[object], ctype: str, status: str, reason: str, message: str, now: str
) -> Condition:
    previous = next((c for c in old if isinstance(c, dict) and c.get("type") == ctype), None)
    since = now
    if previous is not None and previous.get("status") == status:
        since = previous.get("lastTransitionTime") or now
    return {
        "type": ctype,
        "status": status,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


def set_status(crd: Obj, conflict: tuple[str, str] | None) -> None:
    """Write acceptedNames, NamesAccepted/Established conditions and storedVersions."""
    status = crd.get("status")
    if not isinstance(status, dict):
        status = crd["status"] = {}
    raw = status.get("conditions")
    old: list[object] = raw if isinstance(raw, list) else []
    now = now_rfc3339()
    names = _names(crd)
    if conflict is None:
        accepted = {
            k: v
            for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
            if (v := names.get(k))
        }
        status["acceptedNames"] = accepted
        conditions = [
            _condition(old, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now),
            _condition(
                old,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                now,
            ),
        ]
    else:
        reason, message = conflict
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        conditions = [
            _condition(old, "NamesAccepted", "False", reason, message, now),
            _condition(
                old, "Established", "False", "NotAccepted", "not all names are accepted", now
            ),
        ]
    keep = [
        c
        for c in old
        if isinstance(c, dict) and c.get("type") not in ("NamesAccepted", "Established")
    ]
    status["conditions"] = conditions + keep
    stored = status.get("storedVersions")
    stored = list(stored) if isinstance(stored, list) else []
    storage = next(
        (v.get("name") for v in crd["spec"]["versions"] if v.get("storage") is True), None
    )
    if storage and storage not in stored:
        stored.append(storage)
    status["storedVersions"] = stored
