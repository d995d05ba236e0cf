"""Types of raw KRM objects: plain dicts, as they come from YAML or JSON.

`Obj` is what every layer passes around. The TypedDicts below are *views* of the parts
of an object whose shape Kubernetes fixes (ObjectMeta, owner references, conditions, list
metadata, `kind: Status`): code that reads those fields declares the view
(`meta: ObjectMeta = obj.get("metadata") or {}`) and gets checked field names and value
types, at no cost at run time (a TypedDict is a plain dict). The views describe what a
well-formed object holds; code that must survive malformed input still checks types.

`JSONValue` is a JSON value of any shape, for code that walks documents of no fixed shape (the patch
package, schemas): it narrows with `isinstance`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeAlias, TypedDict

Obj: TypeAlias = dict[str, Any]
"""A raw KRM object (`apiVersion`, `kind`, `metadata`, `spec`, `status`, ...)."""

JSONScalar: TypeAlias = bool | int | float | str | None
"""A JSON scalar as Python holds it (`null`, `true`, numbers, strings)."""

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
"""A JSON value of any shape: a scalar, a list of values or an object with string keys."""

JSONObject: TypeAlias = dict[str, JSONValue]
"""A JSON object of no fixed shape."""

FieldsV1: TypeAlias = dict[str, "FieldsV1"]
"""A field set in the FieldsV1 wire shape of `managedFields[].fieldsV1`: path elements
(`f:name`, `k:{...}`, `v:...`, `i:0`, `.`) to child sets."""


class OwnerReference(TypedDict, total=False):
    """An entry of `metadata.ownerReferences`."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ManagedFieldsEntry(TypedDict, total=False):
    """An entry of `metadata.managedFields`."""

    manager: str
    operation: str
    apiVersion: str
    time: str
    fieldsType: str
    fieldsV1: FieldsV1
    subresource: str


class ObjectMeta(TypedDict, total=False):
    """`metadata` of an object (metav1.ObjectMeta)."""

    name: str
    generateName: str
    namespace: str
    selfLink: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
    managedFields: list[ManagedFieldsEntry]


class Condition(TypedDict, total=False):
    """A status condition (metav1.Condition and the older per-kind shapes)."""

    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    lastUpdateTime: str
    lastProbeTime: str | None
    lastHeartbeatTime: str
    observedGeneration: int


ListMeta = TypedDict(
    "ListMeta",
    {"resourceVersion": str, "continue": str, "remainingItemCount": int, "selfLink": str},
    total=False,
)
"""`metadata` of a list (metav1.ListMeta; `continue` is a Python keyword)."""


class KubeList(TypedDict, total=False):
    """A list body (`kind: PodList`, `kind: List`, ...)."""

    apiVersion: str
    kind: str
    metadata: ListMeta
    items: list[Obj]


class StatusCause(TypedDict, total=False):
    """An entry of `details.causes` of a Status (metav1.StatusCause)."""

    reason: str
    message: str
    field: str


class StatusDetails(TypedDict, total=False):
    """`details` of a Status (metav1.StatusDetails)."""

    name: str
    group: str
    kind: str
    uid: str
    causes: list[StatusCause]
    retryAfterSeconds: int


class Status(TypedDict, total=False):
    """A `kind: Status` body (metav1.Status), as API errors and deletions return it."""

    apiVersion: str
    kind: str
    metadata: ListMeta
    status: str
    message: str
    reason: str
    details: StatusDetails
    code: int


class FieldValidation(StrEnum):
    """What a write does with fields the schema does not know (as `fieldValidation=`)."""

    STRICT = "Strict"
    WARN = "Warn"
    IGNORE = "Ignore"
