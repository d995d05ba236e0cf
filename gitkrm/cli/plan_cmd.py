"""`gitkrm plan`: what merging a branch, a commit or any ref would do to the target, as
text, JSON or Markdown (exit 0 nothing to do, 1 changes, 2 error, 3 refused by a guard).

Each source is validated and rendered as a sync renders it (`SyncEngine.preview`), planned
against the live target without writing anything (`sourcerun`, shared with `gitkrm diff`),
then described (`plan_report`: one document, three spellings in `plan_text`). With
`--base REF` the base is rendered too and the objects whose rendering differs are listed.
`plan_source` is the boundary further sections plug into: it returns a `SourcePlan`,
whose `extra` holds what they add (`--simulate`)."""

from __future__ import annotations

import argparse
import functools
import re
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gitkrm.errors import BadRequest

from . import plan_simulate
from .source_flags import add_source_flags, sources, target_url

if TYPE_CHECKING:  # imported by the command, not by the parser
    from gitkrm.agent.config import SourceConfig
    from gitkrm.agent.lastsync import LastSync
    from gitkrm.krm import ObjectRef
    from gitkrm.source import GitRef

    from .plan_report import SourcePlan
    from .sourcerun import Opened

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
OUTPUTS = ("text", "json", "markdown")


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "plan",
        help="what a branch or commit would change (exit 0 nothing, 1 changes, 2 error, "
        "3 refused by a guard)",
        description="Validate and render a revision as a sync would, and print what it would "
        "do to the target: objects created, configured (with the diff), pruned, unchanged "
        "and refused, hooks and waves, and the guards' verdict. Nothing is written.",
    )
    add_source_flags(p)
    p.add_argument(
        "--base",
        metavar="REF",
        help="also render this branch, commit or ref (refs/...) and list the objects "
        "whose rendering differs",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        default="text",
        help="text (default), json (docs/schemas/plan.schema.json) or markdown (a "
        "pull-request comment)",
    )
    plan_simulate.add_flags(p)
    p.set_defaults(func=run)


def base_ref(text: str) -> GitRef:
    """`--base`: a full sha is a commit, `refs/...` a ref, anything else a branch."""
    from gitkrm.source import GitRef

    if _SHA.match(text):
        return GitRef.from_flags(commit=text)
    if text.startswith("refs/"):
        return GitRef.from_flags(ref=text)
    return GitRef.from_flags(branch=text)


def run(args: argparse.Namespace) -> int:
    from .sourcerun import each_source

    url = target_url(args)
    simulate_for = plan_simulate.budget(args, url=url)
    configs = sources(args)
    base = None
    if args.base is not None:
        base = base_ref(args.base)
        if any(c.ref is None for c in configs):
            raise BadRequest("--base needs a Git repository (a plain directory has no history)")
    simulator = None if simulate_for is None else plan_simulate.Simulator(simulate_for)
    planner = _Planner(base=base, simulator=simulator)
    each_source(
        args,
        visit=planner.visit,
        unchanged=None if base is not None else planner.unchanged,
        url=url,
        configs=configs,
        around=None if simulator is None else simulator.session,
    )
    names = {sp.source for sp in planner.found}
    for config in configs:  # a source that could not be fetched (said on stderr)
        if config.name not in names:
            planner.found.append(_failed(config))
    return emit(planner.found, output=args.output, target="cluster" if url else "embedded")


@dataclass
class _Planner:
    """One `gitkrm plan` run: each source's plan, then those of the child sources its
    revision declares (`plan_tree`), in the order they were planned; with `--simulate`,
    each applied to the run's one twin as it is planned."""

    base: GitRef | None
    simulator: plan_simulate.Simulator | None
    found: list[SourcePlan] = field(default_factory=list)
    declared: dict[str, ObjectRef] = field(default_factory=dict)
    lineage: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> ancestors

    async def visit(self, opened: Opened, parent: SourcePlan | None = None) -> int:
        sp = await plan_source(opened, base=self.base)
        if parent is not None:
            sp.parent, sp.declared_by = parent.source, self.declared.get(sp.source)
        if self.simulator is not None:
            await self.simulator.add(opened, sp)
        self.found.append(sp)
        if sp.preview is not None and not sp.preview.plan.errors:
            await self._children(opened, sp)
        return sp.code

    def unchanged(self, config: SourceConfig, same: LastSync) -> int:
        sp = _unchanged(config, same)
        if self.simulator is not None:
            sp.extra["simulation"] = plan_simulate.nothing_changed()
        self.found.append(sp)
        return 0

    async def _children(self, opened: Opened, sp: SourcePlan) -> None:
        from . import plan_tree
        from .plan_report import SourcePlan
        from .sourcerun import open_child

        assert sp.preview is not None
        ancestors = (*self.lineage.get(sp.source, ()), sp.source)
        store = opened.engine.store
        for d in await plan_tree.children(opened.config, sp.revision, sp.preview, store):
            name = d.spec.config.name if d.spec is not None else d.declared_by.name
            error = d.error
            if name in ancestors or len(ancestors) > plan_tree.MAX_DEPTH:
                error = f"a cycle of sources, or more than {plan_tree.MAX_DEPTH} levels"
            before = len(self.found)
            if d.spec is not None and not error:
                self.declared[name], self.lineage[name] = d.declared_by, ancestors
                why: list[str] = []
                visit = functools.partial(self.visit, parent=sp)
                await open_child(opened, d.spec.config, visit, errors=why)
                error = why[0] if why else "the source could not be read"  # nothing planned
            if len(self.found) == before:
                ref = _ref_text(d.spec.config) if d.spec is not None else ""
                self.found.append(
                    SourcePlan(source=name, ref=ref, errors=[error], parent=sp.source,
                               declared_by=d.declared_by)
                )  # fmt: skip


def _ref_text(config: SourceConfig) -> str:
    """What is planned: a Git ref, a chart (a HelmRelease's child), an OCI artifact, or a
    plain directory."""
    if config.chart is not None:
        return f"chart {config.chart.name} {config.chart.version} of {config.chart.repository}"
    if config.oci is not None:
        return f"artifact {config.oci.url}"
    return "directory" if config.ref is None else str(config.ref)


def _unchanged(config: SourceConfig, same: LastSync) -> SourcePlan:
    from .plan_report import SourcePlan

    return SourcePlan(
        source=config.name,
        ref=_ref_text(config),
        revision=same.revision,
        unchanged_since_last_sync=same.objects,
    )


def _failed(config: SourceConfig) -> SourcePlan:
    from .plan_report import SourcePlan

    return SourcePlan(
        source=config.name, ref=_ref_text(config), errors=["the source could not be read"]
    )


async def plan_source(opened: Opened, *, base: GitRef | None = None) -> SourcePlan:
    """One source's plan: the preview of its revision, the diff of each writing step and,
    with `base`, the objects whose rendering differs from the base's."""
    from gitkrm.sync.steps import WRITES

    from .plan_report import SourcePlan

    engine = opened.engine
    preview = await engine.preview(opened.snapshot, settled=opened.settled)
    plan = preview.plan
    sp = SourcePlan(
        source=opened.config.name,
        ref=_ref_text(opened.config),
        revision=opened.snapshot.revision,
        preview=preview,
        errors=list(plan.errors),
    )
    for step in plan.steps:
        if step.op in WRITES:
            text = engine.diff_step(step)
            if text:
                sp.diffs[step.key] = text
    if base is not None:
        sp.base = await _against_base(opened, base, preview.renders())
    return sp


async def _against_base(opened: Opened, ref: GitRef, head: dict[str, str]) -> dict[str, Any]:
    """Render the base revision (its own engine and Git cache) and compare by object key."""
    from gitkrm.agent.config import sync_options
    from gitkrm.agent.sources import open_source
    from gitkrm.agent.state import parse_cache_file
    from gitkrm.sync.engine import SyncEngine
    from gitkrm.sync.objkey import parse_key
    from gitkrm.sync.parsecache import ParseCache
    from gitkrm.sync.preview import rendering_changes

    from .plan_report import ref_dict

    config = replace(opened.config, ref=ref)
    source = open_source(config, git_cache=opened.tmp / f"{config.name}.base")
    options = sync_options(config, agent_name=opened.agent, apply_mode=opened.apply_mode)
    cache = ParseCache(parse_cache_file(opened.state, config.name), read_only=True)
    engine = SyncEngine(store=opened.engine.store, options=options, parse_cache=cache)
    try:
        snapshot = await source.snapshot()
        preview = await engine.preview(snapshot, plan=False)
    finally:
        await engine.close()
        await source.close()
    out: dict[str, Any] = {"ref": str(ref), "revision": snapshot.revision}
    if not preview.objects and preview.plan.errors and not preview.plan.guard:
        out["errors"] = list(preview.plan.errors)
    changes = rendering_changes(preview.renders(), head)
    for what, keys in changes.items():
        out[what] = [ref_dict(parse_key(k)) for k in keys]
    return out


def emit(plans: list[SourcePlan], *, output: str, target: str) -> int:
    """Print the plans as asked (every value from a Secret masked) and give the exit code."""
    from gitkrm.krm import masking

    from .plan_report import document
    from .plan_text import markdown, text

    doc = document(plans, target=target)
    if output == "json":
        import json

        out = json.dumps(doc, indent=2) + "\n"
    elif output == "markdown":
        out = markdown(doc)
    else:
        out = text(doc)
    sys.stdout.write(masking.mask(out))
    code: int = doc["exitCode"]
    return code
