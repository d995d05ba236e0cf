"""A simulation as `gitkrm plan` shows it: the `simulation` section of a source in
`-o json` (`$defs/simulation` of docs/schemas/plan.schema.json), and the text and Markdown
written from that section (one model, three spellings, as the rest of the plan). Pure:
values in, text out; messages were masked when the verdict was read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Final

from gitkrm.agent.duration import format_duration
from gitkrm.krm import ObjectRef

from .verdict import Simulation

MARKDOWN_ROWS: Final = 50  # lines per list at most; what is cut is said
Section = Mapping[str, Any]


def _ref(ref: ObjectRef | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    out: dict[str, Any] = {"group": ref.group, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        out["namespace"] = ref.namespace
    return out


def to_json(sim: Simulation) -> dict[str, Any]:
    """The `simulation` section of a source in `gitkrm plan -o json`."""
    return {
        "verdict": "ok" if sim.ok else "problems",
        "elapsedSeconds": sim.elapsed,
        "budgetSeconds": sim.budget,
        "settled": sim.settled,
        "clock": "simulated",
        "simulatedSeconds": sim.simulated,
        "settledAfterSeconds": sim.settled_after,
        "twinSources": list(sim.sources),
        "objects": [
            {
                "object": _ref(o.ref),
                "action": o.action,
                "health": o.health.value,
                "reason": o.reason,
                "message": o.message,
            }
            for o in sim.objects
        ],
        "unschedulable": [
            {"pod": _ref(u.pod), "owner": _ref(u.owner), "message": u.message}
            for u in sim.unschedulable
        ],
        "failingPods": [
            {"pod": _ref(f.pod), "owner": _ref(f.owner), "reason": f.reason, "message": f.message}
            for f in sim.failing
        ],
        "servicesWithoutEndpoints": [
            {"service": _ref(n.service), "endpointsBefore": n.before, "new": n.new}
            for n in sim.no_endpoints
        ],
        "failedHooks": [
            {"phase": h.phase, "object": _ref(h.ref), "state": h.state, "message": h.message}
            for h in sim.hooks
        ],
        "denials": [
            {"stage": d.stage.value, "object": _ref(d.ref), "message": d.message}
            for d in sim.denials
        ],
        "errors": list(sim.errors),
    }


def skipped(reason: str) -> dict[str, Any]:
    """The section when nothing was simulated (the revision is invalid or refused)."""
    return {"verdict": "skipped", "reason": reason}


def _describe(ref: Mapping[str, Any] | None) -> str:
    if not ref:
        return "?"
    kind = f"{ref['kind']}.{ref['group']}" if ref.get("group") else str(ref["kind"])
    ns = ref.get("namespace")
    return f"{kind} {ns}/{ref['name']}" if ns else f"{kind} {ref['name']}"


def _bad(o: Section) -> bool:
    if o["action"] == "pruned":
        return bool(o["health"] != "NotFound")
    return bool(o["health"] != "Current")


def headline(section: Section, source: str = "") -> str:
    if section["verdict"] == "skipped":
        return f"simulation skipped: {section['reason']}"
    elapsed = format_duration(section["elapsedSeconds"])
    window = format_duration(section["budgetSeconds"])
    simulated = format_duration(section.get("simulatedSeconds") or 0.0)
    after = section.get("settledAfterSeconds")
    if section["settled"]:
        quiet = f"settled after {format_duration(after)}; " if after is not None else ""
        how = f"{quiet}{window} simulated in {elapsed}"
    elif section.get("simulatedSeconds", 0.0) >= section["budgetSeconds"]:
        how = f"the window of {window} ended while the twin still changed (simulated in {elapsed})"
    else:
        how = f"the wall-time limit ended it after {simulated} of {window} simulated ({elapsed})"
    word = "no problem predicted" if section["verdict"] == "ok" else "problems predicted"
    objects = section["objects"]
    good = sum(1 for o in objects if not _bad(o))
    shared = [s for s in section.get("twinSources") or () if s != source]
    together = f" (together with {', '.join(shared)})" if shared else ""
    return (
        f"simulation on a twin of the embedded store{together}: {word}; {how}; "
        f"{good} of {len(objects)} object(s) Current at the end"
    )


def _pods(items: list[Section]) -> list[str]:
    """One line per workload: how many of its pods would not schedule (or would fail),
    and why."""
    groups: dict[str, list[str]] = defaultdict(list)
    for u in items:
        why = f"{u['reason']}: {u['message']}" if u.get("reason") else u["message"]
        groups[_describe(u["owner"] or u["pod"])].append(why)
    return [
        f"{who}: {len(msgs)} pod(s): {'; '.join(sorted(set(msgs)))}" for who, msgs in groups.items()
    ]


def _endpoints(n: Section) -> str:
    if n["endpointsBefore"]:
        return (
            f"{_describe(n['service'])}: had {n['endpointsBefore']} ready endpoint(s), none after"
        )
    return f"{_describe(n['service'])}: new, no ready endpoint"


def _object(o: Section) -> str:
    why = f"{o['reason']}: {o['message']}" if o["reason"] else o["message"]
    return f"{_describe(o['object'])} ({o['action']}): {o['health']} ({why})"


def _denial(d: Section) -> str:
    where = f"{_describe(d['object'])}: " if d["object"] else ""
    return f"{d['stage']}: {where}{d['message']}"


def sections(section: Section) -> list[tuple[str, list[str]]]:
    """The lists text and Markdown both show: a title and its lines each."""
    if section["verdict"] == "skipped":
        return []
    return [
        ("errors", list(section["errors"])),
        ("admission denials", [_denial(d) for d in section["denials"]]),
        ("objects not Current", [_object(o) for o in section["objects"] if _bad(o)]),
        ("pods that would not schedule", _pods(section["unschedulable"])),
        ("pods that would fail", _pods(section["failingPods"])),
        (
            "Services without endpoints",
            [_endpoints(n) for n in section["servicesWithoutEndpoints"]],
        ),
        (
            "hooks that would fail",
            [
                f"{h['phase']} hook {_describe(h['object'])} {h['state'].lower()}: {h['message']}"
                for h in section["failedHooks"]
            ],
        ),
    ]


def text_lines(section: Section, indent: str = "  ", source: str = "") -> list[str]:
    """The section for a terminal, indented under its source (`source`)."""
    lines = [indent + headline(section, source)]
    for title, items in sections(section):
        if items:
            lines.append(f"{indent}  {title}:")
            lines.extend(f"{indent}    {line}" for line in items)
    return lines


def to_text(sim: Simulation) -> str:
    return "\n".join(text_lines(to_json(sim), indent="")) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'").replace("\n", " ")


def markdown_lines(section: Section, source: str) -> list[str]:
    """A source's simulation for a pull-request comment: the verdict line, then one list
    per kind of problem (at most MARKDOWN_ROWS lines each, saying how many were cut)."""
    icon = {"ok": ":white_check_mark:", "problems": ":warning:"}.get(section["verdict"], "")
    out = [
        f"#### Simulation ({source})",
        "",
        f"{icon} {_md(headline(section, source))}".strip(),
        "",
    ]
    for title, items in sections(section):
        if not items:
            continue
        out.append(f"**{title[0].upper()}{title[1:]}**")
        out.append("")
        out.extend(f"- {_md(line)}" for line in items[:MARKDOWN_ROWS])
        if len(items) > MARKDOWN_ROWS:
            out.append(f"- ... and {len(items) - MARKDOWN_ROWS} more (cut: see `gitkrm plan`)")
        out.append("")
    return out
