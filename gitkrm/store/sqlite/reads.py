"""get, list and list_raw: reads, selectors and limit/continue pagination.

A paginated list is consistent at one revision: the continue token carries the list's
revision and the last key, and later pages show that revision even if objects changed
since (history.rows_at). List bodies are spliced from the stored JSON bytes; only objects
a selector has to look into are decoded.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from gitkrm.errors import BadRequest, Expired, NotFound, Timeout
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.krm.fields import FieldSelector, parse_field_selector
from gitkrm.krm.labels import LabelSelector, parse_label_selector
from gitkrm.schema import ResourceInfo
from gitkrm.store.protocol import ListKeywords
from gitkrm.store.sqlite import db
from gitkrm.store.sqlite.core import Core, gc_paused
from gitkrm.store.sqlite.history import Row, count_at, rows_at
from gitkrm.store.sqlite.hub import api_version_prefix, serve_bytes
from gitkrm.store.sqlite.kinds import Kind

_TOKEN_VERSION = "meta.k8s.io/v1"
_COLUMN_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


def encode_continue(rev: int, after: tuple[str, str]) -> str:
    raw = orjson.dumps({"v": _TOKEN_VERSION, "rv": rev, "start": list(after)})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        d = orjson.loads(raw)
        rev, start = d["rv"], d["start"]
        if d.get("v") != _TOKEN_VERSION or not isinstance(rev, int) or rev < 1:
            raise ValueError("bad version or revision")
        ns, name = start
        if not isinstance(ns, str) or not isinstance(name, str):
            raise ValueError("bad start key")
    except (ValueError, KeyError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise BadRequest(f"continue key is not valid: {token!r}") from None
    return rev, (ns, name)


def parse_rv(text: str) -> int:
    try:
        rv = int(text)
    except ValueError:
        raise BadRequest(f'invalid resource version "{text}"') from None
    if rv < 0:
        raise BadRequest(f'invalid resource version "{text}"')
    return rv


@dataclass(frozen=True, slots=True)
class Selectors:
    labels: LabelSelector | None
    fields: FieldSelector | None

    @classmethod
    def parse(cls, info: ResourceInfo, label: str | None, field: str | None) -> Selectors:
        ls = parse_label_selector(label) if label else None
        fs = parse_field_selector(field) if field else None
        if ls is not None and ls.empty:
            ls = None
        if fs is not None:
            fs.check_supported(group=info.group, kind=info.kind, extra=info.selectable_fields)
            if fs.empty:
                fs = None
        return cls(labels=ls, fields=fs)

    @property
    def any(self) -> bool:
        return self.labels is not None or self.fields is not None

    def matches(self, row: Row) -> bool:
        if self.labels is not None:
            labels = orjson.loads(row.labels) if row.labels else {}
            if not self.labels.matches(labels):
                return False
        if self.fields is None:
            return True
        if self.fields.fields() <= _COLUMN_FIELDS:
            md = {"name": row.name, "namespace": row.ns} if row.ns else {"name": row.name}
            return self.fields.matches({"metadata": md})
        return self.fields.matches(orjson.loads(row.data))


@dataclass(frozen=True, slots=True)
class Page:
    items: list[bytes]  # at the served version
    rv: int
    continue_: str | None
    remaining: int | None


def _served_info(core: Core, gvk: GVK) -> tuple[ResourceInfo, Kind]:
    info = core.kinds.served(gvk)
    return info, core.kinds.of(gvk.group, gvk.kind)


def get(core: Core, ref: ObjectRef) -> Obj:
    kind = core.kinds.of(ref.group, ref.kind)
    api_version = kind.storage_api_version
    if ref.version is not None and ref.version != kind.info.version:
        api_version = core.kinds.served(
            GVK(group=ref.group, version=ref.version, kind=ref.kind)
        ).gvk.api_version
    ns = (ref.namespace or "default") if kind.namespaced else ""
    row = core.conn.execute(
        "SELECT data FROM objects WHERE gk = ? AND ns = ? AND name = ?", (kind.key, ns, ref.name)
    ).fetchone()
    if row is None:
        raise NotFound(f'{kind.resource} "{ref.name}" not found')
    obj: Obj = orjson.loads(row[0])
    if obj.get("apiVersion") != api_version:
        obj["apiVersion"] = api_version
    return obj


def page(
    core: Core, gvk: GVK, namespace: str | None, options: ListKeywords
) -> tuple[ResourceInfo, Page]:
    info, kind = _served_info(core, gvk)
    sel = Selectors.parse(info, options.get("label_selector"), options.get("field_selector"))
    limit = options.get("limit")
    continue_ = options.get("continue_")
    resource_version = options.get("resource_version")
    ns = (namespace or None) if kind.namespaced else None
    if limit is not None and limit < 0:
        raise BadRequest(f"limit must be non-negative, got {limit}")
    with db.read_txn(core.conn):
        current = core.current_rv()
        compact_rv = core.current_compact_rv()
        after: tuple[str, str] | None = None
        if continue_:
            if resource_version not in (None, ""):
                raise BadRequest("specifying resource version is not allowed when using continue")
            rev, after = decode_continue(continue_)
            if rev < compact_rv:
                raise Expired(_CONTINUE_EXPIRED)
        elif resource_version not in (None, "", "0"):
            want = parse_rv(str(resource_version))
            if want > current:
                raise Timeout(f"Too large resource version: {want}, current: {current}")
            rev = want if limit else current  # Exact for paged lists, else NotOlderThan
            if rev < compact_rv:
                raise Expired(f"too old resource version: {rev} ({compact_rv})")
        else:
            rev = current
        if not sel.any and not limit and after is None and rev >= current:
            items, last, more = _all_live(core, kind, ns), None, False  # the common case
        else:
            rows = rows_at(core.conn, gk=kind.key, ns=ns, rev=rev, current=current, after=after)
            items, last, more = _take(rows, sel, limit)
        token = None
        remaining = None
        if more and last is not None:
            token = encode_continue(rev, last)
            if not sel.any:
                remaining = count_at(
                    core.conn, gk=kind.key, ns=ns, rev=rev, current=current, after=last
                )
    stored = api_version_prefix(kind.storage_api_version)
    served = api_version_prefix(info.gvk.api_version)
    # Rows are stored at the storage version; only a CRD whose storage version changed can
    # hold rows at another one.
    if stored != served or (kind.custom and not all(d.startswith(served) for d in items)):
        items = [serve_bytes(d, stored_prefix=stored, served_prefix=served) for d in items]
    return info, Page(items=items, rv=rev, continue_=token, remaining=remaining)


def _all_live(core: Core, kind: Kind, ns: str | None) -> list[bytes]:
    """Every object of a kind (in a namespace), straight from the table."""
    if ns is None:
        cur = core.conn.execute(
            "SELECT data FROM objects WHERE gk = ? ORDER BY ns, name", (kind.key,)
        )
    else:
        cur = core.conn.execute(
            "SELECT data FROM objects WHERE gk = ? AND ns = ? ORDER BY name", (kind.key, ns)
        )
    return [r[0] for r in cur]


def _take(
    rows: Iterator[Row], sel: Selectors, limit: int | None
) -> tuple[list[bytes], tuple[str, str] | None, bool]:
    """Up to `limit` matching rows; whether more (matching or not) follow."""
    items: list[bytes] = []
    last: tuple[str, str] | None = None
    if not limit:
        if not sel.any:
            return [r.data for r in rows], None, False
        return [r.data for r in rows if sel.matches(r)], None, False
    for r in rows:
        if len(items) >= limit:
            return items, last, True
        if not sel.any or sel.matches(r):
            items.append(r.data)
        last = (r.ns, r.name)
    return items, last, False


def list_metadata(p: Page) -> dict[str, object]:
    md: dict[str, object] = {"resourceVersion": str(p.rv)}
    if p.continue_:
        md["continue"] = p.continue_
    if p.remaining is not None:
        md["remainingItemCount"] = p.remaining
    return md


def as_dict(info: ResourceInfo, p: Page) -> Obj:
    with gc_paused():
        items = orjson.loads(b"[" + b",".join(p.items) + b"]") if p.items else []
    return {
        "apiVersion": info.gvk.api_version,
        "kind": info.list_kind,
        "metadata": list_metadata(p),
        "items": items,
    }


def as_bytes(info: ResourceInfo, p: Page) -> bytes:
    """The list body in one join: the head and tail ride on the first and last items, so
    the (megabytes of) items are copied once."""
    head = orjson.dumps(
        {"apiVersion": info.gvk.api_version, "kind": info.list_kind, "metadata": list_metadata(p)}
    )
    start = head[:-1] + b',"items":['
    items = p.items
    if not items:
        return start + b"]}"
    if len(items) == 1:
        return start + items[0] + b"]}"
    parts = items.copy()
    parts[0] = start + parts[0]
    parts[-1] = parts[-1] + b"]}"
    return b",".join(parts)
