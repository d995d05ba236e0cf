"""A simulation as `plan` prints it: the `simulation` section of `-o json` (its schema is
docs/schemas/simulation.schema.json), text lines, and a Markdown section for a pull-request
comment. Pure: values in, text out; messages were masked when the verdict was read."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final

from gitkrm.agent.duration import format_duration
from gitkrm.krm import ObjectRef

from .verdict import NoEndpoints, Simulation, Unschedulable

MARKDOWN_ROWS: Final = 50  # per list; what is cut is said


def _ref(ref: ObjectRef | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    out: dict[str, Any] = {"group": ref.group, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        out["namespace"] = ref.namespace
    return out


def verdict_word(sim: Simulation) -> str:
    return "ok" if sim.ok else "problems"


def to_json(sim: Simulation) -> dict[str, Any]:
    """The `simulation` section of `gitkrm plan -o json`."""
    return {
        "verdict": verdict_word(sim),
        "elapsedSeconds": sim.elapsed,
        "budgetSeconds": sim.budget,
        "settled": sim.settled,
        "clock": "wall",
        "objects": [
            {
                "source": o.source,
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
        "servicesWithoutEndpoints": [
            {"service": _ref(n.service), "endpointsBefore": n.before, "new": n.new}
            for n in sim.no_endpoints
        ],
        "failedHooks": [
            {
                "source": h.source,
                "phase": h.phase,
                "object": _ref(h.ref),
                "state": h.state,
                "message": h.message,
            }
            for h in sim.hooks
        ],
        "denials": [
            {
                "stage": d.stage.value,
                "source": d.source,
                "object": _ref(d.ref),
                "message": d.message,
            }
            for d in sim.denials
        ],
        "errors": list(sim.errors),
    }


def _headline(sim: Simulation) -> str:
    how = (
        f"settled after {format_duration(sim.elapsed)}"
        if sim.settled
        else f"the budget of {format_duration(sim.budget)} ended "
        f"(after {format_duration(sim.elapsed)})"
    )
    word = "no problem predicted" if sim.ok else "problems predicted"
    return f"simulation on a twin of the embedded store: {word}; {how}"


def _pods_by_owner(items: tuple[Unschedulable, ...]) -> list[tuple[str, int, str]]:
    """(owner or pod, how many pods, the scheduler's messages) per workload."""
    groups: dict[str, list[Unschedulable]] = defaultdict(list)
    for u in items:
        groups[str(u.owner) if u.owner is not None else str(u.pod)].append(u)
    return [
        (who, len(us), "; ".join(sorted({u.message for u in us}))) for who, us in groups.items()
    ]


def _endpoints_text(n: NoEndpoints) -> str:
    if n.before:
        return f"had {n.before} ready endpoint(s), would have none"
    return "new, would have no ready endpoint"


def _sections(sim: Simulation) -> list[tuple[str, list[str]]]:
    """The lists both text and Markdown show, each a title and its lines."""
    bad = [o for o in sim.objects if o.bad]
    return [
        ("errors", list(sim.errors)),
        (
            "admission denials",
            [
                f"{d.stage.value}: {d.ref}: {d.message}"
                if d.ref
                else f"{d.stage.value}: {d.message}"
                for d in sim.denials
            ],
        ),
        (
            "objects not Current after the rollout",
            [
                f"{o.ref} ({o.action}): {o.health.value}"
                + (f" ({o.reason}: {o.message})" if o.reason else f" ({o.message})")
                for o in bad
            ],
        ),
        (
            "pods that would not schedule",
            [f"{who}: {n} pod(s): {msg}" for who, n, msg in _pods_by_owner(sim.unschedulable)],
        ),
        (
            "Services without endpoints",
            [f"{n.service}: {_endpoints_text(n)}" for n in sim.no_endpoints],
        ),
        (
            "hooks that would fail",
            [f"{h.phase} hook {h.ref} {h.state.lower()}: {h.message}" for h in sim.hooks],
        ),
    ]


def to_text(sim: Simulation) -> str:
    lines = [_headline(sim)]
    current = sum(1 for o in sim.objects if not o.bad)
    lines.append(
        f"  {current} of {len(sim.objects)} object(s) Current (or pruned) after the rollout"
    )
    for title, items in _sections(sim):
        if items:
            lines.append(f"  {title}:")
            lines.extend(f"    {line}" for line in items)
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'").replace("\n", " ")


def to_markdown(sim: Simulation) -> str:
    """The section after the plan's summary: a verdict line, then one list per kind of
    problem (at most MARKDOWN_ROWS lines each, saying how many were cut)."""
    icon = ":white_check_mark:" if sim.ok else ":warning:"
    out = ["### Simulation", "", f"{icon} {_md(_headline(sim))}", ""]
    current = sum(1 for o in sim.objects if not o.bad)
    out.append(f"{current} of {len(sim.objects)} object(s) Current (or pruned) after the rollout.")
    out.append("")
    for title, items in _sections(sim):
        if not items:
            continue
        out.append(f"**{title[0].upper()}{title[1:]}**")
        out.append("")
        out.extend(f"- `{_md(line)}`" for line in items[:MARKDOWN_ROWS])
        if len(items) > MARKDOWN_ROWS:
            out.append(f"- ... and {len(items) - MARKDOWN_ROWS} more (cut)")
        out.append("")
    return "\n".join(out)
