"""Frozen value types that name kinds, resources and objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gitkrm.errors import BadRequest


def split_api_version(api_version: str) -> tuple[str, str]:
    """`apps/v1` -> (`apps`, `v1`); `v1` -> (``, `v1`) (the core group)."""
    if not isinstance(api_version, str) or not api_version:
        raise BadRequest(f"apiVersion must be a non-empty string, got {api_version!r}")
    group, sep, version = api_version.rpartition("/")
    if sep and (not group or not version or "/" in group):
        raise BadRequest(f"malformed apiVersion {api_version!r}")
    return group, version


def join_api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


@dataclass(frozen=True, slots=True)
class GVK:
    """A group, version and kind; `group=""` is the core group."""

    group: str
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GVK:
        group, version = split_api_version(api_version)
        return cls(group=group, version=version, kind=kind)

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> GVK:
        """The GVK of a raw object; BadRequest when apiVersion or kind is missing."""
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise BadRequest("object has no kind")
        return cls.from_api_version(obj.get("apiVersion", ""), kind)

    @property
    def api_version(self) -> str:
        return join_api_version(self.group, self.version)

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(group=self.group, kind=self.kind)

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class GroupKind:
    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass(frozen=True, slots=True)
class GVR:
    """A group, version and resource (the plural used in REST paths)."""

    group: str
    version: str
    resource: str

    @property
    def api_version(self) -> str:
        return join_api_version(self.group, self.version)

    def __str__(self) -> str:
        return (
            f"{self.resource}.{self.version}.{self.group}"
            if self.group
            else (f"{self.resource}.{self.version}")
        )


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Names one object. Version is optional: an object is the same object at any version."""

    group: str
    kind: str
    name: str
    namespace: str | None = None
    version: str | None = None

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        """The ref of a raw object (keeps its version)."""
        gvk = GVK.of(obj)
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        return cls(
            group=gvk.group,
            kind=gvk.kind,
            name=name,
            namespace=meta.get("namespace") or None,
            version=gvk.version,
        )

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(group=self.group, kind=self.kind)

    @property
    def key(self) -> ResourceKey:
        """The versionless key of the object (`ResourceKey`)."""
        return ResourceKey(self.group, self.kind, self.namespace or "", self.name)

    def without_version(self) -> ObjectRef:
        if self.version is None:
            return self
        return ObjectRef(group=self.group, kind=self.kind, name=self.name, namespace=self.namespace)

    def __str__(self) -> str:
        gk = str(self.group_kind)
        return f"{gk} {self.namespace}/{self.name}" if self.namespace else f"{gk} {self.name}"


class ResourceKey(NamedTuple):
    """The identity of an object at any version: group, kind, namespace ("" when cluster
    scoped) and name. The one key for objects in maps and sets (a tuple: it hashes and
    compares at C speed, 10,000 objects are keyed in milliseconds). `ObjectRef` names an
    object for a request (it may carry a version); `ref.key` is its key."""

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ResourceKey:
        """The key of a raw object (its apiVersion's group, its kind, namespace and name);
        fields that are missing or not strings are empty."""
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        namespace, name = meta.get("namespace"), meta.get("name")
        return cls(
            api_version.rpartition("/")[0] if isinstance(api_version, str) else "",
            kind if isinstance(kind, str) else "",
            namespace if isinstance(namespace, str) else "",
            name if isinstance(name, str) else "",
        )

    @classmethod
    def in_kind(cls, group_kind: GroupKind, obj: Mapping[str, Any]) -> ResourceKey:
        """The key of an object known to be of `group_kind` (a watch event's object)."""
        meta = obj.get("metadata") or {}
        return cls(
            group_kind.group, group_kind.kind, meta.get("namespace") or "", meta.get("name") or ""
        )

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(group=self.group, kind=self.kind)

    def ref(self, version: str | None = None) -> ObjectRef:
        return ObjectRef(
            group=self.group,
            kind=self.kind,
            name=self.name,
            namespace=self.namespace or None,
            version=version,
        )

    def __str__(self) -> str:
        return str(self.ref())
