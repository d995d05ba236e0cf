"""`gitkrm plan` as text (the default) and as Markdown for a pull-request comment, both
written from the JSON document of `plan_report`.

The Markdown starts with a summary table, then one collapsed `<details>` diff per object,
within `MARKDOWN_LIMIT` characters in all (GitHub refuses comments over 65,536): what does
not fit is cut and the comment says so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .plan_report import describe

MARKDOWN_LIMIT: Final = 60_000
_SUMMARY = (
    ("create", "to create"),
    ("configure", "to configure"),
    ("prune", "to prune"),
    ("unchanged", "unchanged"),
    ("refuse", "refused"),
    ("fail", "failed"),
    ("skip", "skipped"),
    ("orphan", "left in place"),
)


def summary(counts: Mapping[str, int]) -> str:
    shown = [f"{counts.get(k, 0)} {label}" for k, label in _SUMMARY if counts.get(k, 0)]
    return ", ".join(shown) or "no objects"


def _where(o: Mapping[str, Any]) -> str:
    parts = []
    if o.get("path"):
        parts.append(f"{o['path']}:{o['line']}" if o.get("line") else str(o["path"]))
    if o.get("wave"):
        parts.append(f"wave {o['wave']}")
    return f" ({', '.join(parts)})" if parts else ""


def _head(s: Mapping[str, Any]) -> str:
    rev = s["revision"][:12] or "?"
    head = f"source {s['source']}: revision {rev} ({s['ref']})"
    if "declaredBy" in s:
        head += f", declared by {describe(s['declaredBy'])} of source {s['parent']}"
    return head


def text(doc: Mapping[str, Any]) -> str:
    """The plan for a terminal: per source, its summary, guard, objects, hooks, waves,
    the comparison with the base, then the diffs."""
    out: list[str] = []
    for s in doc["sources"]:
        out.append(_head(s))
        out.append(f"  plan: {summary(s['counts'])}")
        if "guard" in s:
            out.append(f"  REFUSED by the {s['guard']['name']} guard: {s['guard']['message']}")
        out.extend(f"  error: {e}" for e in s["errors"] if "guard" not in s)
        for o in s["objects"]:
            tail = f": {o['message']}" if o.get("message") else ""
            out.append(f"  {o['action']:<10} {describe(o)}{_where(o)}{tail}")
        if s["hooks"]:
            out.append("  hooks that would run:")
            for h in s["hooks"]:
                out.append(f"    {h['phase']:<9} {describe(h)}{_where(h)}")
        if len(s["waves"]) > 1:
            out.append("  wave order:")
            for w in s["waves"]:
                names = ", ".join(describe(r) for r in w["objects"][:5])
                more = f" and {len(w['objects']) - 5} more" if len(w["objects"]) > 5 else ""
                out.append(f"    {w['name']}: {names}{more}")
        base = s.get("base")
        if base is not None:
            out.append(f"  rendering against base {base['ref']} ({base['revision'][:12]}): "
                       f"{_changes(base)}")  # fmt: skip
            for what in ("added", "changed", "removed"):
                out.extend(f"    {what:<8} {describe(r)}" for r in base[what])
        b = s.get("pruneBudget")
        if b is not None and b["prunes"]:
            out.append(
                f"  prune budget: {b['prunes']} prunes, {b['limit']} allowed ({b['count']} "
                f"objects or {b['percent']}% of {b['inventory']})"
                + (f", trailer allows {b['allowedByTrailer']}" if "allowedByTrailer" in b else "")
            )
        for w in s["warnings"]:
            out.append(f"  warning: {w}")
        if "simulation" in s:
            from gitkrm.agent.simulate import text_lines

            out.extend(text_lines(s["simulation"], source=s["source"]))
        for key, value in s.items():
            if isinstance(value, str) and key not in _KNOWN:
                out.append(f"  {key}: {value}")
        diffs = [o["diff"] for o in s["objects"] if o.get("diff")]
        if diffs:
            out.append("")
            out.extend(d.rstrip("\n") for d in diffs)
        out.append("")
    return "\n".join(out)


_KNOWN = frozenset({"source", "ref", "revision", "result", "parent"})


def _changes(base: Mapping[str, Any]) -> str:
    return (
        f"{len(base['added'])} added, {len(base['changed'])} changed, "
        f"{len(base['removed'])} removed"
    )


def markdown(doc: Mapping[str, Any], *, limit: int = MARKDOWN_LIMIT) -> str:
    """A pull-request comment: a summary table, guards and errors, then collapsed diffs
    within `limit` characters in all."""
    verdict = {0: "nothing to do", 1: "changes", 2: "error", 3: "refused by a guard"}
    lines = [f"### gitkrm plan: {verdict.get(doc['exitCode'], '?')}", ""]
    lines.append("| source | revision | create | configure | prune | unchanged | refused |")
    lines.append("|---|---|---:|---:|---:|---:|---:|")
    for s in doc["sources"]:
        c = s["counts"]
        lines.append(
            f"| {s['source']} | `{s['revision'][:12]}` | {c['create']} | {c['configure']} | "
            f"{c['prune']} | {c['unchanged']} | {c['refuse']} |"
        )
    lines.append("")
    several = len(doc["sources"]) > 1
    for s in doc["sources"]:
        if "guard" in s:
            lines.append(f"> **Refused** ({s['source']}, {s['guard']['name']}): "
                         f"{s['guard']['message']}")  # fmt: skip
            lines.append("")
        for e in s["errors"] if "guard" not in s else ():
            lines.append(f"> **Error** ({s['source']}): {_inline(e)}")
            lines.append("")
        items: list[str] = []
        for o in s["objects"]:
            if o["action"] in ("refuse", "fail"):
                items.append(f"- **{o['action']}** {describe(o)}: {_inline(o.get('message', ''))}")
        if s["hooks"]:
            hooks = ", ".join(f"{h['phase']} {describe(h)}" for h in s["hooks"])
            items.append(f"- hooks that would run: {hooks}")
        base = s.get("base")
        if base is not None:
            items.append(f"- rendering against `{base['ref']}`: {_changes(base)}")
        if items:
            if several:  # whose they are, in a plan of several sources (a tree)
                lines.append(f"**{s['source']}**")
                lines.append("")
            lines.extend(items)
            lines.append("")
    for s in doc["sources"]:
        if "simulation" in s:
            from gitkrm.agent.simulate import markdown_lines

            lines.extend(markdown_lines(s["simulation"], s["source"]))
    head = "\n".join(lines)
    return head + _details(doc, limit - len(head))


def _inline(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _details(doc: Mapping[str, Any], room: int) -> str:
    """The collapsed diffs that fit in `room` characters, and a line on what was cut."""
    blocks: list[str] = []
    items = [(s, o) for s in doc["sources"] for o in s["objects"] if o.get("diff")]
    reserve = 200  # for the line saying what was cut
    used = 0
    cut = 0
    for s, o in items:
        title = f"{o['action']} {describe(o)}"
        if len(doc["sources"]) > 1:
            title = f"{s['source']}: {title}"
        block = f"<details><summary>{title}</summary>\n\n````diff\n{o['diff']}````\n</details>\n"
        if used + len(block) + reserve > room:
            cut += 1
            continue
        blocks.append(block)
        used += len(block)
    if cut:
        blocks.append(
            f"\n_{cut} of {len(items)} diffs not shown: the comment is kept under "
            f"{MARKDOWN_LIMIT:,} characters. Run `gitkrm plan` for all of them._\n"
        )
    return "".join(blocks)
