"""`gitkrm diff` output: a unified YAML diff per object, as `kubectl diff` prints it.

Each object that would change gets `diff -u -N` of its live and its would-be YAML, with
headers naming it `<group>.<version>.<Kind>.<namespace>.<name>` under `live/` and
`merged/`; a created object diffs against nothing, a pruned one against nothing after.
The would-be object is the live one with the plan's patch applied (in server-side mode,
the result of applying the desired object locally, as the plan computed it). Server-managed
`managedFields` are left out; Secrets are redacted (see `redact`). Objects the plan
refuses or can't change are listed as `#` comment lines.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from gitkrm.errors import GitkrmError
from gitkrm.krm import GVK, Obj, ObjectRef, dump_yaml
from gitkrm.patch import PatchMeta, apply_merge_patch, apply_strategic_merge_patch
from gitkrm.sync import keys
from gitkrm.sync.plan import Op, Plan, Step
from gitkrm.sync.redact import redact_pair

MetaLookup = Callable[[GVK], "PatchMeta | None"]


def _name(ref: ObjectRef, version: str) -> str:
    parts = [p for p in (ref.group, version, ref.kind, ref.namespace, ref.name) if p]
    return ".".join(parts)


def _clean(obj: Obj | None) -> Obj | None:
    if obj is None:
        return None
    md = keys.metadata(obj)
    if "managedFields" not in md:
        return obj
    out = dict(obj)
    out["metadata"] = {k: v for k, v in md.items() if k != "managedFields"}
    return out


def would_be(step: Step, meta: MetaLookup) -> Obj | None:
    """The object as it would be after the step (None: absent)."""
    if step.op is Op.CREATE:
        return step.body
    if step.op is Op.PRUNE:
        return None
    if step.after is not None:
        return step.after
    if step.op is Op.PATCH and step.live is not None and step.patch is not None:
        if step.patch_type == "merge":
            merged = apply_merge_patch(step.live, step.patch)
            return merged if isinstance(merged, dict) else None
        gvk = step.desired.gvk if step.desired is not None else None
        m = meta(gvk) if gvk is not None else None
        if m is None:
            return None
        return apply_strategic_merge_patch(step.live, step.patch, m)
    return step.live


def _yaml(obj: Obj | None) -> list[str]:
    return [] if obj is None else dump_yaml(obj).splitlines(keepends=True)


def diff_step(step: Step, meta: MetaLookup) -> str:
    """The unified diff of one step ("" when it changes nothing)."""
    if step.op not in (Op.CREATE, Op.PATCH, Op.PRUNE):
        return ""
    try:
        after = would_be(step, meta)
    except GitkrmError as e:
        return f"# {step.ref}: cannot show the change: {e.message}\n"
    before, after = redact_pair(_clean(step.live), _clean(after))
    version = ""
    if step.desired is not None:
        version = step.desired.gvk.version
    elif step.live is not None:
        version = str(step.live.get("apiVersion", "")).rpartition("/")[2]
    name = _name(step.ref, version)
    left, right = f"live/{name}", f"merged/{name}"
    lines = list(difflib.unified_diff(_yaml(before), _yaml(after), left, right, n=3))
    if not lines:
        return ""
    body = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return f"diff -u -N {left} {right}\n{body}"


def diff_text(plan: Plan, meta: MetaLookup) -> str:
    """The whole plan as kubectl-diff-style text ("" when in sync)."""
    out: list[str] = [f"# {e}\n" for e in plan.errors]
    for step in plan.steps:
        if step.op in (Op.REFUSE, Op.FAIL):
            out.append(f"# {step.ref}: {step.op.value}: {step.message}\n")
            continue
        out.append(diff_step(step, meta))
    return "".join(out)
