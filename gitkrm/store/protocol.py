"""The Store protocol: the one interface every gitkrm component talks through.

Two implementations exist behind `open_store(url)`: the embedded SQLite store and the
cluster target over aiohttp. Objects are plain dicts (KRM objects); errors are
`gitkrm.errors` classes.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    Protocol,
    TypeAlias,
    TypedDict,
    Unpack,
    runtime_checkable,
)

from gitkrm.errors import BadRequest
from gitkrm.krm import GVK, FieldValidation, Obj, ObjectRef

if TYPE_CHECKING:
    from gitkrm.schema import Registry

PatchType: TypeAlias = Literal["json", "merge", "strategic", "apply"]


class Propagation(StrEnum):
    """DeleteOptions.propagationPolicy."""

    BACKGROUND = "Background"
    FOREGROUND = "Foreground"
    ORPHAN = "Orphan"


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class Preconditions:
    """DeleteOptions.preconditions: the delete only happens if these still hold."""

    uid: str | None = None
    resource_version: str | None = None


class WriteKeywords(TypedDict, total=False):
    """The keywords every write takes (the query parameters of a Kubernetes write):
    `dryRun=All`, `fieldManager`, `force` (apply patches only) and `fieldValidation`."""

    dry_run: bool
    field_manager: str | None
    force: bool
    field_validation: FieldValidation | str


class DeleteKeywords(TypedDict, total=False):
    """The keywords of a delete (DeleteOptions): `propagationPolicy`, `preconditions`
    and `dryRun=All`."""

    propagation: Propagation | str | None
    preconditions: Preconditions | None
    dry_run: bool


def parse_field_validation(v: FieldValidation | str) -> FieldValidation:
    """`fieldValidation` as given (Strict, Warn, Ignore); BadRequest otherwise."""
    if type(v) is FieldValidation:  # the common case, without the enum's lookup
        return v
    try:
        return FieldValidation(v)
    except ValueError:
        allowed = ", ".join(f.value for f in FieldValidation)
        raise BadRequest(f'invalid fieldValidation "{v}": must be one of {allowed}') from None


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """The write keywords as one value, checked once (what implementations pass down)."""

    dry_run: bool = False
    field_manager: str | None = None
    force: bool = False
    field_validation: FieldValidation = FieldValidation.STRICT

    @classmethod
    def of(
        cls,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool = False,
        field_validation: FieldValidation | str = FieldValidation.STRICT,
    ) -> WriteOptions:
        return cls(dry_run, field_manager, force, parse_field_validation(field_validation))


class SelectorKeywords(TypedDict, total=False):
    """The selectors a list and a watch take (`labelSelector`, `fieldSelector`)."""

    label_selector: str | None
    field_selector: str | None


class ListKeywords(SelectorKeywords, total=False):
    """The keywords of a list (the query parameters of a Kubernetes list): the selectors,
    a page (`limit`, `continue`) and the revision to read at (`resourceVersion`)."""

    limit: int | None
    continue_: str | None
    resource_version: str | None


class WatchKeywords(SelectorKeywords, total=False):
    """The keywords of a watch beyond its revision: the selectors and
    `allowWatchBookmarks`."""

    allow_bookmarks: bool


def list_query(options: ListKeywords) -> dict[str, Any]:
    """The list keywords as the query parameters of a Kubernetes list (unset ones None)."""
    return {
        "labelSelector": options.get("label_selector"),
        "fieldSelector": options.get("field_selector"),
        "limit": options.get("limit"),
        "continue": options.get("continue_"),
        "resourceVersion": options.get("resource_version"),
    }


class BatchOpKind(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    UPDATE_STATUS = "update_status"
    PATCH = "patch"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class BatchOp:
    """One write in a batch. `obj` for create/update/update_status; `ref` (and `patch`,
    `patch_type`) for patch; `ref` (and `propagation`, `preconditions`) for delete."""

    op: BatchOpKind
    obj: Obj | None = None
    ref: ObjectRef | None = None
    patch: Any = None
    patch_type: PatchType = "strategic"
    propagation: Propagation | None = None
    preconditions: Preconditions | None = None


@dataclass(slots=True)
class WatchEvent:
    """One watch event. `raw` is the serialized `{"type":..,"object":..}` line, built once
    and shared by every watcher (the HTTP API writes it as is). Treat `obj` as read-only:
    it is shared too."""

    type: EventType
    obj: Obj
    raw: bytes = b""
    warnings: Sequence[str] = field(default_factory=tuple)

    def __iter__(self) -> Any:
        # `async for type_, obj in store.watch(...)` (an iterator of (type, obj)).
        yield self.type
        yield self.obj


@runtime_checkable
class Store(Protocol):
    """A Kubernetes-semantics object store (docs/architecture.md)."""

    @property
    def registry(self) -> Registry | None:
        """The schema registry this store admits writes with (its kinds, versions and
        schemas); None where a server keeps its own (a cluster: ask its discovery)."""
        ...

    async def get(self, ref: ObjectRef) -> Obj: ...

    async def list(
        self, gvk: GVK, namespace: str | None = None, **options: Unpack[ListKeywords]
    ) -> Obj: ...

    async def create(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj: ...

    async def update(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj: ...

    async def update_status(self, obj: Obj, **options: Unpack[WriteKeywords]) -> Obj: ...

    async def patch(
        self, ref: ObjectRef, patch: Any, patch_type: PatchType, **options: Unpack[WriteKeywords]
    ) -> Obj: ...

    async def delete(self, ref: ObjectRef, **options: Unpack[DeleteKeywords]) -> Obj: ...

    def watch(
        self,
        gvk: GVK,
        namespace: str | None = None,
        resource_version: str | None = None,
        **options: Unpack[WatchKeywords],
    ) -> AsyncIterator[WatchEvent]: ...

    async def batch(
        self, ops: Sequence[BatchOp], **options: Unpack[WriteKeywords]
    ) -> builtins.list[Obj]:
        """Many writes; `force` is for the batch's apply patches (other ops ignore it)."""
        ...

    async def close(self) -> None: ...


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The metadata of a raw object (empty when missing)."""
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}
