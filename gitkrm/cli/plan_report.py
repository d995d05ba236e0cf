"""A plan as data: the JSON document of `gitkrm plan -o json` (docs/schemas/plan.schema.json),
from which the text and Markdown outputs are written too (one model, three spellings).

Every string that leaves here goes through `krm.masking` at the end (the outputs mask the
whole text), and Secret data is redacted in the diffs (`sync.redact`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from gitkrm.krm import ObjectRef
    from gitkrm.sync.plan import Step
    from gitkrm.sync.preview import Preview

API_VERSION: Final = "gitkrm.io/v1alpha1"
KIND: Final = "Plan"

EXIT_NOTHING = 0
EXIT_CHANGES = 1
EXIT_ERROR = 2
EXIT_REFUSED = 3

# Step ops as the plan names them, and the order they are listed in.
ACTIONS: Final = {
    "create": "create",
    "patch": "configure",
    "prune": "prune",
    "refuse": "refuse",
    "fail": "fail",
    "skip": "skip",
    "orphan": "orphan",
}
COUNT_KEYS: Final = (
    "create",
    "configure",
    "prune",
    "unchanged",
    "refuse",
    "fail",
    "skip",
    "orphan",
)


@dataclass(slots=True)
class SourcePlan:
    """One source's plan as the command found it: the engine's preview (None when the
    source could not be planned, or nothing changed since the last sync), each writing
    step's diff, and the comparison with `--base`. `extra` holds further sections
    (`--simulate` adds one) copied into the JSON document as they are."""

    source: str
    ref: str  # what was asked for (branch 'x', commit ..., ref ...)
    revision: str = ""
    preview: Preview | None = None
    diffs: dict[str, str] = field(default_factory=dict)  # step key -> unified diff
    base: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    unchanged_since_last_sync: int | None = None  # objects, when nothing changed at all
    parent: str = ""  # the source whose revision declares this one (`plan_tree`)
    declared_by: ObjectRef | None = None  # the object that declares it
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> int:
        if self.errors and (self.preview is None or not self.preview.refused):
            return EXIT_ERROR
        if self.preview is None:
            return EXIT_NOTHING
        if self.preview.refused:
            return EXIT_REFUSED
        return EXIT_NOTHING if self.preview.plan.in_sync else EXIT_CHANGES


def exit_code(plans: list[SourcePlan]) -> int:
    """2 when any source errs, else 3 when a guard refused any, else 1 for any change."""
    codes = {p.code for p in plans}
    for code in (EXIT_ERROR, EXIT_REFUSED, EXIT_CHANGES):
        if code in codes:
            return code
    return EXIT_NOTHING


def ref_dict(ref: ObjectRef) -> dict[str, str]:
    out = {"group": ref.group, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        out["namespace"] = ref.namespace
    return out


def _step(step: Step, diff: str) -> dict[str, Any]:
    d = step.desired
    out: dict[str, Any] = {"action": ACTIONS[step.op.value], **ref_dict(step.ref)}
    if d is not None:
        out["version"] = d.gvk.version
        if d.path:
            out["path"] = d.path
        if d.line:
            out["line"] = d.line
        out["wave"] = d.wave
    if step.message:
        out["message"] = step.message
    if step.adopt:
        out["adopt"] = True
    if diff:
        out["diff"] = diff
    return out


def _counts(p: Preview) -> dict[str, int]:
    out = dict.fromkeys(COUNT_KEYS, 0)
    for s in p.plan.steps:
        if s.op.value == "unchanged":
            out["unchanged"] += 1
        elif s.op.value in ACTIONS:
            out[ACTIONS[s.op.value]] += 1
    return out


def _budget(p: Preview) -> dict[str, Any]:
    from gitkrm.sync.guards import prunes

    inventory = len(p.plan.inventory)
    out: dict[str, Any] = {
        "count": p.budget.count,
        "percent": p.budget.percent,
        "inventory": inventory,
        "limit": p.budget.limit(inventory),
        "prunes": prunes(p.plan.steps),
    }
    if p.allow_prune is not None:
        out["allowedByTrailer"] = p.allow_prune
    return out


def _hooks(p: Preview) -> list[dict[str, Any]]:
    from gitkrm.sync.hooks import policies_of

    return [
        {
            "phase": phase.value,
            **ref_dict(d.ref),
            **({"path": d.path} if d.path else {}),
            **({"line": d.line} if d.line else {}),
            "deletePolicies": sorted(x.value for x in policies_of(d)),
        }
        for phase, ds in p.hook_phases()
        for d in ds
    ]


def _result(sp: SourcePlan) -> str:
    return {
        EXIT_NOTHING: "nothing-to-do",
        EXIT_CHANGES: "changes",
        EXIT_ERROR: "error",
        EXIT_REFUSED: "refused",
    }[sp.code]


def source_doc(sp: SourcePlan) -> dict[str, Any]:
    """One source's section of the document."""
    out: dict[str, Any] = {"source": sp.source, "ref": sp.ref, "revision": sp.revision}
    if sp.parent:
        out["parent"] = sp.parent
    if sp.declared_by is not None:
        out["declaredBy"] = ref_dict(sp.declared_by)
    out["result"] = _result(sp)
    out["errors"] = list(sp.errors)
    p = sp.preview
    counts = dict.fromkeys(COUNT_KEYS, 0)
    if p is None:
        counts["unchanged"] = sp.unchanged_since_last_sync or 0
        out |= {"counts": counts, "objects": [], "hooks": [], "waves": [], "warnings": []}
    else:
        plan = p.plan
        if plan.guard:
            out["guard"] = {"name": plan.guard, "message": plan.errors[0] if plan.errors else ""}
        out["counts"] = _counts(p)
        out["pruneBudget"] = _budget(p)
        out["objects"] = [
            _step(s, sp.diffs.get(s.key, "")) for s in plan.steps if s.op.value in ACTIONS
        ]
        out["hooks"] = _hooks(p)
        out["waves"] = [
            {"name": w.name, "objects": [ref_dict(s.ref) for s in w.steps]} for w in p.waves()
        ]
        out["warnings"] = list(p.warnings)
    if sp.base is not None:
        out["base"] = sp.base
    out.update(sp.extra)
    return out


def document(plans: list[SourcePlan], *, target: str) -> dict[str, Any]:
    """The whole `-o json` document."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "target": target,
        "exitCode": exit_code(plans),
        "sources": [source_doc(sp) for sp in plans],
    }


def describe(ref: Mapping[str, Any]) -> str:
    """`Kind namespace/name` (group-qualified kinds as `Kind.group`)."""
    kind = f"{ref['kind']}.{ref['group']}" if ref.get("group") else str(ref["kind"])
    ns = ref.get("namespace")
    return f"{kind} {ns}/{ref['name']}" if ns else f"{kind} {ref['name']}"
