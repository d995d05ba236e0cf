"""`gitkrm get KIND [NAME]`: objects of the store, as `kubectl get` shows them.

The rows come from the API server's Table printers (the same columns `kubectl get` shows
against `gitkrm serve`); this module only resolves the kind and lays the table out as text.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from gitkrm.errors import BadRequest, NotFound
from gitkrm.krm import Obj, ObjectRef, dump_yaml
from gitkrm.schema import Registry, ResourceInfo
from gitkrm.store import Store
from gitkrm.store.sqlite import SqliteStore

from .reader import open_reader
from .source_flags import add_state_flag


class _Intermixed(argparse.ArgumentParser):
    """Options and positionals in any order (`get cm -n ns NAME`, as kubectl takes it)."""

    _inner = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._inner:
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False


def add_parser(sub: Any) -> None:
    default_class = sub._parser_class
    sub._parser_class = _Intermixed
    try:
        p: argparse.ArgumentParser = sub.add_parser(
            "get",
            help="show objects of the store",
            description="Show objects of the embedded store (works while an agent runs on it).",
        )
    finally:
        sub._parser_class = default_class
    p.add_argument("kind", metavar="KIND", help="e.g. deployments, deploy, cm, gitsources")
    p.add_argument("name", metavar="NAME", nargs="?")
    ns = p.add_mutually_exclusive_group()
    ns.add_argument("-n", "--namespace", metavar="NS", help="namespace (default: default)")
    ns.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    p.add_argument("-o", "--output", choices=("table", "yaml", "json", "name"), default="table")
    add_state_flag(p)
    p.set_defaults(func=run)


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


def kind_name(info: ResourceInfo) -> str:
    """`deployment.apps` (the `-o name` prefix)."""
    return f"{info.kind.lower()}.{info.group}" if info.group else info.kind.lower()


def run(args: argparse.Namespace) -> int:
    result: int = asyncio.run(_run(args))
    return result


async def _run(args: argparse.Namespace) -> int:
    store = await open_reader(args.state)
    try:
        return await _get(store, args)
    finally:
        await store.close()


async def _get(store: Store, args: argparse.Namespace) -> int:
    assert isinstance(store, SqliteStore)
    info = resolve_kind(store.registry, args.kind)
    namespace: str | None = None
    if info.namespaced and not args.all_namespaces:
        namespace = args.namespace or "default"
    if args.name is not None:
        if args.all_namespaces:
            raise BadRequest("a resource cannot be retrieved by name across all namespaces")
        ref = ObjectRef(
            group=info.group,
            kind=info.kind,
            name=args.name,
            namespace=namespace,
            version=info.version,
        )
        try:
            items = [await store.get(ref)]
        except NotFound:
            plural = f"{info.plural}.{info.group}" if info.group else info.plural
            print(
                f'Error from server (NotFound): {plural} "{args.name}" not found', file=sys.stderr
            )
            return 1
    else:
        items = await _list_all(store, info, namespace)
        if not items and args.output in ("table", "name"):
            where = f" in {namespace} namespace" if namespace else ""
            print(f"No resources found{where}.", file=sys.stderr)
            return 0
    await _print(store, info, items, args)
    return 0


async def _list_all(store: Store, info: ResourceInfo, namespace: str | None) -> list[Obj]:
    items: list[Obj] = []
    token: str | None = None
    while True:
        page = await store.list(info.gvk, namespace, limit=500, continue_=token)
        items.extend(page.get("items", []))
        token = (page.get("metadata") or {}).get("continue") or None
        if not token:
            return items


async def _print(
    store: Store, info: ResourceInfo, items: list[Obj], args: argparse.Namespace
) -> None:
    for obj in items:
        obj.setdefault("apiVersion", info.gvk.api_version)
        obj.setdefault("kind", info.kind)
    single = args.name is not None
    if args.output == "name":
        for obj in items:
            print(f"{kind_name(info)}/{obj['metadata']['name']}")
    elif args.output in ("yaml", "json"):
        doc: Obj = (
            items[0]
            if single
            else {
                "apiVersion": "v1",
                "kind": "List",
                "items": items,
                "metadata": {"resourceVersion": ""},
            }
        )
        if args.output == "json":
            print(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
        else:
            print(dump_yaml(doc), end="")
    else:
        from gitkrm.server.tables import Tables, table  # the server's imports are heavy

        assert isinstance(store, SqliteStore)
        printer = await Tables(store).printer(info)
        t = table(printer, items, include_object="Metadata")
        print(layout(t, with_namespace=info.namespaced and args.all_namespaces), end="")


def _text(cell: Any) -> str:
    if cell is None:
        return "<none>"
    if isinstance(cell, bool):
        return str(cell).lower()
    return str(cell)


def layout(t: Obj, *, with_namespace: bool) -> str:
    """A Table as kubectl prints it: priority-0 columns, upper-case headers, 3 spaces apart."""
    cols: Sequence[Obj] = t.get("columnDefinitions") or []
    keep = [i for i, c in enumerate(cols) if not c.get("priority")]
    lines = [[str(cols[i]["name"]).upper() for i in keep]]
    if with_namespace:
        lines[0].insert(0, "NAMESPACE")
    for row in t.get("rows") or []:
        cells = row.get("cells") or []
        line = [_text(cells[i]) if i < len(cells) else "<none>" for i in keep]
        if with_namespace:
            meta = (row.get("object") or {}).get("metadata") or {}
            line.insert(0, str(meta.get("namespace") or ""))
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for line in lines:
        padded = [c.ljust(w) for c, w in zip(line[:-1], widths[:-1], strict=True)]
        out.append("   ".join([*padded, line[-1]]).rstrip() + "\n")
    return "".join(out)
