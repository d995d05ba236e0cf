"""managedFields entries: reading them (checked, as the API server decodes them), their
identity, their order on the wire, and the cap on Update entries.

An entry is identified, as in apimachinery's BuildManagerIdentifier, by its manager,
operation and subresource, plus its apiVersion for Update entries (one applier keeps one
Apply entry whatever version it applies at).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import orjson

from gitkrm.errors import BadRequest
from gitkrm.krm.types import ManagedFieldsEntry
from gitkrm.patch.fieldmanager.fieldpath import Tree, difference, from_paths, union
from gitkrm.patch.fieldmanager.fieldsv1 import parse_fields_v1

APPLY: Final = "Apply"
UPDATE: Final = "Update"
FIELDS_V1: Final = "FieldsV1"
MAX_UPDATE_MANAGERS: Final = 10
ANCIENT_CHANGES: Final = "ancient-changes"
_ZERO_TIME: Final = "0001-01-01T00:00:00Z"
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

# What stripmeta.go takes out of every manager's set: fields the server owns.
STRIP: Final[Tree] = from_paths(
    ("f:apiVersion",),
    ("f:kind",),
    ("f:metadata",),
    ("f:metadata", "f:name"),
    ("f:metadata", "f:namespace"),
    ("f:metadata", "f:creationTimestamp"),
    ("f:metadata", "f:selfLink"),
    ("f:metadata", "f:uid"),
    ("f:metadata", "f:clusterName"),
    ("f:metadata", "f:generation"),
    ("f:metadata", "f:managedFields"),
    ("f:metadata", "f:resourceVersion"),
)

Ident = tuple[str, str, str, str]


@dataclass(slots=True)
class Entry:
    """One manager's field set while an operation works on it (mutable on purpose)."""

    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: Tree
    raw: ManagedFieldsEntry | None = None
    """The wire entry this was read from, reused as long as nothing changed."""

    @property
    def ident(self) -> Ident:
        av = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, av, self.subresource)

    def identifier(self) -> str:
        """The JSON identifier apimachinery keys managers by (sorts conflict messages)."""
        d: dict[str, str] = {}
        if self.manager:
            d["manager"] = self.manager
        d["operation"] = self.operation
        if self.operation != APPLY and self.api_version:
            d["apiVersion"] = self.api_version
        if self.subresource:
            d["subresource"] = self.subresource
        return orjson.dumps(d).decode()

    def set_fields(self, fields: Tree) -> None:
        self.fields = fields
        self.raw = None

    def to_wire(self) -> ManagedFieldsEntry:
        if self.raw is not None:
            return self.raw
        out: ManagedFieldsEntry = {}
        if self.manager:
            out["manager"] = self.manager
        out["operation"] = self.operation
        if self.api_version:
            out["apiVersion"] = self.api_version
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = FIELDS_V1
        out["fieldsV1"] = self.fields
        if self.subresource:
            out["subresource"] = self.subresource
        return out


Managers = dict[Ident, Entry]


def decode(entries: object, *, trusted: bool = False) -> Managers:
    """Read a managedFields list. `trusted`: written by us (no checks, sets reused as they
    are); otherwise each entry is checked as decodeManagedFields does (BadRequest) and
    its set put in canonical order, without the server-owned fields."""
    out: Managers = {}
    if not entries:
        return out
    if not isinstance(entries, list):
        raise BadRequest("metadata.managedFields: expected a list")
    for i, raw in enumerate(entries):
        e = _trusted(raw) if trusted else _checked(raw, i)
        out[e.ident] = e  # a later entry of the same identity wins, as in a Go map
    return out


def _trusted(raw: ManagedFieldsEntry) -> Entry:
    return Entry(
        manager=raw.get("manager", ""),
        operation=raw.get("operation", ""),
        api_version=raw.get("apiVersion", ""),
        subresource=raw.get("subresource", ""),
        time=raw.get("time"),
        fields=raw.get("fieldsV1") or {},
        raw=raw,
    )


def _checked(raw: object, i: int) -> Entry:
    where = f"metadata.managedFields[{i}]"
    if not isinstance(raw, dict):
        raise BadRequest(f"{where}: expected an object")
    op = raw.get("operation")
    if op not in (APPLY, UPDATE):
        raise BadRequest(f"{where}.operation: operation must be `Apply` or `Update`")
    av = raw.get("apiVersion")
    if not isinstance(av, str) or not av:
        raise BadRequest(f"{where}.apiVersion: apiVersion must not be empty")
    ft = raw.get("fieldsType")
    if not ft:
        raise BadRequest(f"missing fieldsType in managed fields entry {i}")
    if ft != FIELDS_V1:
        raise BadRequest(f'invalid fieldsType "{ft}" in managed fields entry {i}')
    manager = raw.get("manager", "")
    sub = raw.get("subresource", "")
    if not isinstance(manager, str) or not isinstance(sub, str):
        raise BadRequest(f"{where}: manager and subresource must be strings")
    if len(manager) > 128:
        raise BadRequest(f"{where}.manager: must have at most 128 bytes")
    t = raw.get("time")
    if t is not None and (not isinstance(t, str) or not _TIME.match(t)):
        raise BadRequest(f"{where}.time: not an RFC 3339 time: {t!r}")
    fields = difference(parse_fields_v1(raw.get("fieldsV1"), where=f"{where}.fieldsV1"), STRIP)
    return Entry(
        manager=manager, operation=op, api_version=av, subresource=sub, time=t, fields=fields
    )


def encode(managers: Managers) -> list[ManagedFieldsEntry]:
    """The wire list in the API server's order: Apply entries first, then by time, manager,
    apiVersion and subresource."""
    ordered = sorted(
        managers.values(),
        key=lambda e: (
            e.operation != APPLY,
            e.time or _ZERO_TIME,
            e.manager,
            e.api_version,
            e.subresource,
        ),
    )
    return [e.to_wire() for e in ordered]


def cap_updates(managers: Managers, *, limit: int = MAX_UPDATE_MANAGERS) -> bool:
    """capmanagers.go: past `limit` Update entries, the oldest merge into one
    `ancient-changes` entry per apiVersion. True when anything merged."""
    updaters = [e for e in managers.values() if e.operation != APPLY]
    if len(updaters) <= limit:
        return False
    updaters.sort(key=lambda e: (_seconds(e.time), e.identifier()))
    first_of: dict[str, Entry] = {}
    length = len(updaters)
    changed = False
    for e in updaters:
        if length <= limit:
            break
        version = e.api_version
        first = first_of.get(version)
        if first is None:
            first_of[version] = e
            continue
        bucket_key: Ident = (ANCIENT_CHANGES, UPDATE, version, "")
        bucket = managers.get(bucket_key)
        if bucket is None:
            managers.pop(first.ident, None)
            bucket = Entry(
                manager=ANCIENT_CHANGES,
                operation=UPDATE,
                api_version=version,
                subresource="",
                time=first.time,
                fields=first.fields,
            )
            managers[bucket_key] = bucket
            first_of[version] = bucket
        bucket.set_fields(union(bucket.fields, e.fields))
        bucket.time = e.time
        managers.pop(e.ident, None)
        length -= 1
        changed = True
    return changed


def _seconds(t: str | None) -> str:
    return (t or _ZERO_TIME)[:19]
