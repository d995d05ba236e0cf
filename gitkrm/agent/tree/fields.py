"""Reading the fields of declaring objects (Flux's, Argo CD's): one error form naming the
source, the object and the field, and the checks every interpreter makes of a value."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Final

from gitkrm.errors import ManifestError
from gitkrm.krm import Obj

from ..config import SourceConfig
from .model import Unhonoured

Fail = Callable[[str, str], Exception]
"""Builds the error for a field of the declaring object: (field, message)."""
UNKNOWN_FIELD: Final = "not a field gitkrm knows"
REMOTE_CLUSTER: Final = (
    "its objects are for another cluster (the kubeconfig it names); gitkrm applies to its "
    "own target only, so they are applied neither there nor here"
)
"""Why a Flux object with `spec.kubeConfig` (hub and spoke) runs no child: applying a
spoke's objects to the hub (namespaces, cluster-admin bindings) would be worse than none."""


class FieldErrors:
    """A `Fail` naming the source that applied `obj`, and `obj` as `Kind namespace/name`."""

    def __init__(self, obj: Obj, parent: SourceConfig) -> None:
        md = obj.get("metadata") or {}
        kind = obj.get("kind") or "object"
        self.object = f"{kind} {md.get('namespace') or ''}/{md.get('name') or ''}"
        self.path = f"source {parent.name}"

    def __call__(self, field: str, message: str) -> ManifestError:
        return ManifestError(f"{field}: {message}", path=self.path, object=self.object)


def str_map(value: object, field: str, fail: Fail) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise fail(field, "must be a map of strings")
    return tuple((str(k), str(v)) for k, v in value.items())


def as_list(value: object, field: str, fail: Fail) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(field, "must be a list")
    return value


def objects(
    value: object, field: str, fail: Fail, *, fields: str
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The entries of the list at `field`, each with where it stands (`field[i]`); an entry
    that is not an object is an error naming the `fields` an entry takes."""
    for i, item in enumerate(as_list(value, field, fail)):
        at = f"{field}[{i}]"
        if not isinstance(item, Mapping):
            raise fail(at, f"must be an object ({fields})")
        yield at, item


def components(value: object, field: str, fail: Fail, *, relative_to: str) -> tuple[str, ...]:
    """kustomize `components`: paths relative to `relative_to`, never absolute nor URLs."""
    out = []
    for i, c in enumerate(as_list(value, field, fail)):
        if not isinstance(c, str) or not c or c.startswith("/") or "://" in c:
            raise fail(f"{field}[{i}]", f"{c!r}: a path relative to {relative_to}")
        out.append(c)
    return tuple(out)


def unhonoured_fields(
    value: Mapping[str, Any],
    *,
    at: str,
    known: Collection[str],
    reasons: Mapping[str, str] | None = None,
) -> list[Unhonoured]:
    """The fields of `value` (the object at `at`, e.g. `spec`) gitkrm does not honour, in
    their order: those `reasons` names, with the reason, and those not `known` at all."""
    why = reasons or {}
    return [
        Unhonoured(f"{at}.{k}", why.get(k, UNKNOWN_FIELD))
        for k in value
        if k in why or k not in known
    ]


def source_path(value: object, fail: Fail, *, at: str = "spec.path") -> str:
    """A path relative to the repository's top (`./x`, `x/`, `/x` alike; `.` or none is
    the top); one that leaves the repository is an error of the field `at`."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise fail(at, "must be a string")
    p = posixpath.normpath(value.strip().lstrip("/") or ".")
    if p == ".." or p.startswith("../"):
        raise fail(at, f"{value!r} leaves the repository")
    return "" if p == "." else p
