"""What `gitkrm get` reads and how it prints it, as kubectl 1.32 does against `gitkrm serve`.

Imported by `get_cmd` when the command runs (the store, the schemas and the server's
printers are heavy imports). The table rows come from the API server's printers, so the
columns are those `kubectl get` shows; this module lays them out as kubectl's tab writer
does, several kinds as several tables (`deployment.apps/web` names, a blank line between).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from gitkrm.cli.get_cmd import Request
from gitkrm.cli.reader import open_reader
from gitkrm.errors import BadRequest, NotFound
from gitkrm.krm import Obj, ObjectRef, dump_yaml
from gitkrm.patch.fieldmanager.fieldsv1 import go_escape
from gitkrm.schema import Registry, ResourceInfo
from gitkrm.server.crds import crd_version
from gitkrm.server.discovery import Layout
from gitkrm.server.printing import Printer, format_labels
from gitkrm.server.tables import BUILTIN, DEFAULT, custom_printer
from gitkrm.store import Store

PAGE = 500  # kubectl's --chunk-size


@dataclass
class Result:
    """Objects of one kind, printed as one table: a list, or objects got by name."""

    info: ResourceInfo
    items: list[Obj] = field(default_factory=list)


async def get(state: Path, req: Request) -> int:
    store = await open_reader(state)
    try:
        return await run(store, req)
    finally:
        await store.close()


def registry_of(store: Store) -> Registry:
    """The kinds the store serves (the embedded store has them at hand)."""
    registry = store.registry
    if registry is None:
        raise BadRequest("gitkrm get reads the embedded store only")
    return registry


async def run(store: Store, req: Request) -> int:
    registry = registry_of(store)
    results: list[Result] = []
    missing: list[str] = []
    gets = 0
    for target in req.targets:
        infos = expand(registry, target.kinds)
        for info in infos:
            namespace = req.namespace if info.namespaced else None
            if not target.names:
                items = await list_all(store, info, namespace, req)
                results.append(Result(info, items))
                continue
            for name in target.names:
                gets += 1
                try:
                    obj = await store.get(_ref(info, name, namespace))
                except NotFound:
                    missing.append(f'{resource_name(info)} "{name}" not found')
                    continue
                if results and results[-1].info == info:
                    results[-1].items.append(obj)  # one table, as kubectl's printer is kept
                else:
                    results.append(Result(info, [obj]))
    for r in results:
        for obj in r.items:
            obj.setdefault("apiVersion", r.info.gvk.api_version)
            obj.setdefault("kind", r.info.kind)
    single = gets == 1 and all(t.names for t in req.targets)
    if req.output in ("table", "wide"):
        printers = {r.info: await printer_of(store, r.info) for r in results}
        out = tables(results, printers, req)
    else:
        out = document(results, req.output, single=single)
    sys.stdout.write(out)
    sys.stdout.flush()
    for line in missing:
        print(f"Error from server (NotFound): {line}", file=sys.stderr)
    if not out and not missing and req.output in ("table", "wide"):
        namespaced = req.namespace is not None and all(r.info.namespaced for r in results)
        where = f" in {req.namespace} namespace." if namespaced else ""
        print(f"No resources found{where}", file=sys.stderr)
    return 1 if missing else 0


def _ref(info: ResourceInfo, name: str, namespace: str | None) -> ObjectRef:
    return ObjectRef(
        group=info.group, kind=info.kind, name=name, namespace=namespace, version=info.version
    )


def resource_name(info: ResourceInfo) -> str:
    """`deployments.apps` (kubectl's NotFound message)."""
    return f"{info.plural}.{info.group}" if info.group else info.plural


def kind_name(info: ResourceInfo) -> str:
    """`deployment.apps` (the `-o name` prefix and the NAME of several kinds' tables)."""
    return f"{info.kind.lower()}.{info.group}" if info.group else info.kind.lower()


# ---- kinds ----------------------------------------------------------------------------


def expand(registry: Registry, kinds: Iterable[str]) -> list[ResourceInfo]:
    """The kinds asked for, a category (`all`) replaced by its members in discovery's order
    (as kubectl expands it), each kind once."""
    out: dict[tuple[str, str], ResourceInfo] = {}
    for text in kinds:
        members = category(registry, text)
        for info in members or [resolve_kind(registry, text)]:
            out.setdefault((info.group, info.plural), info)
    return list(out.values())


def category(registry: Registry, name: str) -> list[ResourceInfo]:
    """The preferred version of every kind whose discovery `categories` include `name`."""
    found: dict[tuple[str, str], None] = {}
    for group, versions in Layout(registry.infos()).groups:
        for _, infos in versions:
            for info in infos:
                if name in info.categories:
                    found.setdefault((group, info.plural), None)
    return [
        resolve_kind(registry, f"{plural}.{group}" if group else plural) for group, plural in found
    ]


def resolve_kind(registry: Registry, text: str) -> ResourceInfo:
    """A kind as kubectl takes it: plural, singular, short name or kind, with an optional
    `.group` (or `.version.group`) suffix; the preferred version of the match."""
    name, _, qualifier = text.lower().partition(".")
    candidates: list[ResourceInfo] = []
    for info in registry.infos():
        if "/" in info.plural:
            continue  # subresources
        names = {info.plural, info.singular, info.kind.lower(), *info.short_names}
        if name not in names:
            continue
        qualified = {info.group, f"{info.version}.{info.group}"}
        if not info.group:
            qualified.add(info.version)  # `namespaces.v1`: the core group has no name
        if qualifier and qualifier not in qualified:
            continue
        candidates.append(info)
    if not candidates:
        raise BadRequest(f'the server doesn\'t have a resource type "{text}"')
    # kubectl's preference: the core group, then built-in groups, then the rest by name.
    best = min(candidates, key=lambda i: (i.group != "", i.custom, i.group))
    return registry.versions_of(best.group_kind)[0]


# ---- reading ----------------------------------------------------------------------------


async def list_all(
    store: Store, info: ResourceInfo, namespace: str | None, req: Request
) -> list[Obj]:
    items: list[Obj] = []
    token: str | None = None
    while True:
        try:
            page = await store.list(
                info.gvk,
                namespace,
                label_selector=req.label_selector,
                field_selector=req.field_selector,
                limit=PAGE,
                continue_=token,
            )
        except BadRequest as e:
            raise BadRequest(f"{resource_name(info)}: {_selectors(req)}: {e.message}") from e
        items.extend(page.get("items", []))
        token = (page.get("metadata") or {}).get("continue") or None
        if not token:
            return items


def _selectors(req: Request) -> str:
    parts = []
    if req.label_selector:
        parts.append(f'label selector "{req.label_selector}"')
    if req.field_selector:
        parts.append(f'field selector "{req.field_selector}"')
    return ", ".join(parts) or "list"


async def printer_of(store: Store, info: ResourceInfo) -> Printer:
    """The server's printer of a kind: kube-apiserver's columns, a CRD's printer columns."""
    if not info.custom:
        return BUILTIN.get((info.group, info.kind), DEFAULT)
    _, version = await crd_version(store, info)
    return custom_printer(version.get("additionalPrinterColumns") or ())


# ---- printing ---------------------------------------------------------------------------


def tables(
    results: Sequence[Result], printers: Mapping[ResourceInfo, Printer], req: Request
) -> str:
    """kubectl's human-readable output: one table per kind with objects (an empty kind prints
    nothing), a blank line between two tables, `kind.group/name` names when several kinds
    were asked for (a list counts when empty, a get only when found)."""
    with_kind = len({r.info.gvk for r in results}) > 1
    now = time.time()
    out: list[str] = []
    for r in results:
        if not r.items:
            continue
        if out:
            out.append("\n")
        out.append(
            table(
                printers[r.info],
                r.items,
                now=now,
                wide=req.output == "wide",
                namespace=req.namespace is None and r.info.namespaced,
                kind=kind_name(r.info) if with_kind else None,
                show_labels=req.show_labels,
            )
        )
    return "".join(out)


def table(
    printer: Printer,
    items: Iterable[Obj],
    *,
    now: float,
    wide: bool = False,
    namespace: bool = False,
    kind: str | None = None,
    show_labels: bool = False,
) -> str:
    """One table: priority-0 columns (every column when `wide`), NAMESPACE first, LABELS
    last, upper-case headers."""
    keep = [i for i, c in enumerate(printer.columns) if wide or not c.priority]
    header = [printer.columns[i].name.upper() for i in keep]
    if namespace:
        header.insert(0, "NAMESPACE")
    if show_labels:
        header.append("LABELS")
    lines = [header]
    for obj in items:
        cells = printer.cells(obj, now)
        line = [cell_text(cells[i]) if i < len(cells) else "" for i in keep]
        meta = obj.get("metadata") or {}
        if kind is not None and line:
            line[0] = f"{kind}/{line[0]}"
        if namespace:
            line.insert(0, str(meta.get("namespace") or ""))
        if show_labels:
            line.append(format_labels(meta.get("labels")))
        lines.append(line)
    return tabwrite(lines)


def cell_text(cell: Any) -> str:
    """A cell as kubectl prints the JSON value: null as nothing (a CRD column whose path
    is missing), whole numbers without a fraction."""
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return str(cell).lower()
    if isinstance(cell, float) and cell.is_integer():
        return str(int(cell))
    return str(cell)


def tabwrite(lines: Sequence[Sequence[str]]) -> str:
    """Go's text/tabwriter as kubectl sets it up (minimal width 6, padding 3, spaces): every
    cell but a line's last is padded to its column's width."""
    if not lines:
        return ""
    columns = max(len(line) for line in lines) - 1
    widths = [
        max(6, *(len(line[i]) + 3 for line in lines if i < len(line) - 1)) for i in range(columns)
    ]
    out = []
    for line in lines:
        padded = [c.ljust(w) for c, w in zip(line[:-1], widths, strict=False)]
        out.append("".join(padded) + (line[-1] if line else "") + "\n")
    return "".join(out)


def document(results: Sequence[Result], output: str, *, single: bool) -> str:
    """`-o name`, or `-o yaml|json`: the object when one was asked for by name, else one
    List of every object; keys sorted and managedFields left out, as kubectl prints."""
    items = [obj for r in results for obj in r.items]
    if output == "name":
        return "".join(
            f"{kind_name(r.info)}/{obj['metadata']['name']}\n" for r in results for obj in r.items
        )
    if single and not items:
        return ""
    for obj in items:
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    doc: Obj = (
        items[0]
        if single
        else {
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
    )
    if output == "json":
        return go_json(doc)
    return dump_yaml(sorted_keys(doc))


def sorted_keys(value: Any) -> Any:
    """Mappings with their keys in order, at every depth (Go marshals maps so)."""
    if isinstance(value, Mapping):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def go_json(doc: Any) -> str:
    """JSON as Go's `json.MarshalIndent(v, "", "    ")` writes it: sorted keys, 4 spaces,
    HTML characters escaped (they only occur inside strings)."""
    text = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    lines = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        lines.append(" " * (2 * (len(line) - len(body))) + body)
    return go_escape("\n".join(lines)) + "\n"
