"""`gitkrm status`: each source's sync state, read from its GitSource object."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .source_flags import add_state_flag

if TYPE_CHECKING:
    from gitkrm.krm import Obj

COUNTS = ("created", "configured", "pruned", "unchanged", "failed", "refused")


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "status",
        help="show each source's sync state",
        description="Show each source's last sync: revision, result, counts and last error "
        "(works while an agent runs on the same --state).",
    )
    add_state_flag(p)
    p.add_argument("-o", "--output", choices=("table", "yaml", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import orjson

    from gitkrm.krm import dump_yaml
    from gitkrm.report import status_health_text

    items = asyncio.run(_list(args))
    summaries = [summarize(o) for o in items]
    if args.output == "json":
        print(orjson.dumps({"sources": summaries}, option=orjson.OPT_INDENT_2).decode())
    elif args.output == "yaml":
        print(dump_yaml({"sources": summaries}), end="")
    elif not summaries:
        print(f"No sources in {args.state}.")
    else:
        print(table(summaries), end="")
        health = status_health_text(args.state)
        if health:
            print()
            print(health, end="" if health.endswith("\n") else "\n")
    return 0


async def _list(args: argparse.Namespace) -> list[Obj]:
    from gitkrm.agent.crd import GITSOURCE_GVK, NAMESPACE
    from gitkrm.errors import NotFound

    from .reader import open_reader

    store = await open_reader(args.state)
    try:
        listed = await store.list(GITSOURCE_GVK, NAMESPACE)
    except NotFound:
        return []  # no agent has installed the GitSource kind yet
    finally:
        await store.close()
    items: list[Obj] = listed.get("items", [])
    return tree_order(items)


def _parent(obj: Obj) -> str | None:
    labels = obj["metadata"].get("labels") or {}
    parent = labels.get("gitkrm.io/parent")
    return str(parent) if parent else None


def tree_order(items: list[Obj]) -> list[Obj]:
    """By name, each child source right under its parent (source trees)."""
    by_name = {o["metadata"]["name"]: o for o in items}

    def lineage(obj: Obj) -> list[str]:
        names = [obj["metadata"]["name"]]
        parent = _parent(obj)
        while parent is not None and parent in by_name and parent not in names:
            names.append(parent)
            parent = _parent(by_name[parent])
        return names[::-1]

    return sorted(items, key=lineage)


def summarize(obj: Obj) -> dict[str, Any]:
    """A source's state in a few stable fields (the -o yaml|json shape)."""
    from gitkrm.agent.status import READY
    from gitkrm.krm.conditions import get_condition

    spec: Mapping[str, Any] = obj.get("spec") or {}
    status: Mapping[str, Any] = obj.get("status") or {}
    ready: Mapping[str, Any] = get_condition(obj, READY) or {}
    ref = spec.get("ref") or {}
    out: dict[str, Any] = {
        "name": obj["metadata"]["name"],
        "parent": _parent(obj),
        "url": spec.get("url", ""),
        "ref": next((f"{k} {v}" for k, v in ref.items()), "directory"),
        "path": spec.get("path", ""),
        "suspended": bool(spec.get("suspend")),
        "revision": status.get("lastSyncedRevision"),
        "lastAttemptedRevision": status.get("lastAttemptedRevision"),
        "result": status.get("result"),
        "ready": ready.get("status", "Unknown"),
        "reason": ready.get("reason"),
        "message": ready.get("message"),
        "lastSyncTime": status.get("lastSyncTime"),
        "counts": {k: int((status.get("counts") or {}).get(k, 0)) for k in COUNTS},
        "lastError": status.get("lastError"),
        "errors": list(status.get("errors") or []),
        "timingsMs": dict(status.get("timingsMs") or {}),
        "health": dict(status.get("health") or {}),
        "report": dict(status.get("report") or {}),
        "conditions": list(status.get("conditions") or []),
    }
    return out


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    from gitkrm.agent.status import short
    from gitkrm.report.table import aligned

    headers = ["NAME", "PARENT", "REVISION", "READY", "HEALTH", "SUSPENDED", "RESULT"]
    headers += [c.upper() for c in COUNTS]
    headers += ["LAST SYNC", "MESSAGE"]
    lines = [headers]
    for r in rows:
        counts = r["counts"]
        lines.append(
            [
                r["name"],
                r.get("parent") or "-",
                short(r["revision"]),
                r["ready"],
                (r.get("health") or {}).get("status") or "-",
                str(r["suspended"]).lower(),
                r["result"] or "-",
                *[str(counts[c]) for c in COUNTS],
                r["lastSyncTime"] or "-",
                (r["message"] or "").replace("\n", " "),
            ]
        )
    return "".join(aligned(lines))
