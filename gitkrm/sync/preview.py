"""What `gitkrm plan` shows of a revision (pure): the plan, the hooks that would run in
each phase, the rendered objects (to compare two revisions' renderings by object key), the
prune budget and the commit's approval, and how the steps fall into waves.

The engine fills it in without writing anything (`SyncEngine.preview`); the CLI turns it
into text, JSON or Markdown, and `--simulate` applies its plan to a copy of the store."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gitkrm.sync.desired import Desired
from gitkrm.sync.hooks import NO_HOOKS, Hooks, Phase
from gitkrm.sync.options import DEFAULT_PRUNE_BUDGET, PruneBudget
from gitkrm.sync.order import describe_stage
from gitkrm.sync.plan import Plan
from gitkrm.sync.steps import Op, Step

HOOK_PHASES = (Phase.PRE_SYNC, Phase.SYNC, Phase.POST_SYNC, Phase.SYNC_FAIL)


@dataclass(frozen=True, slots=True)
class Wave:
    """One stage of the apply order (the Namespaces and CRDs first, then each wave) and the
    steps in it that write."""

    name: str
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Preview:
    """A revision's plan and what comes with it (see the module docstring)."""

    plan: Plan
    hooks: Hooks = NO_HOOKS
    objects: tuple[Desired, ...] = ()  # the synced objects, in apply order
    budget: PruneBudget = DEFAULT_PRUNE_BUDGET
    allow_prune: int | None = None  # the commit's Gitkrm-Allow-Prune trailer
    warnings: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        """A guard refused the revision (`plan` exit 3)."""
        return bool(self.plan.guard)

    def waves(self) -> list[Wave]:
        """The writing steps by stage, in apply order (prunes are not in waves: they run
        last, in reverse order)."""
        out: dict[tuple[int, int], list[Step]] = {}
        for s in self.plan.steps:
            if s.desired is not None and s.op in (Op.CREATE, Op.PATCH):
                out.setdefault(s.stage, []).append(s)
        return [Wave(describe_stage(k), tuple(v)) for k, v in sorted(out.items())]

    def renders(self) -> dict[str, str]:
        """Each rendered object (hooks too) by object key: what it applies, as JSON."""
        out = {d.key: d.applied for ds in self.hooks.by_phase.values() for d in ds}
        out.update((d.key, d.applied) for d in self.objects)
        return out

    def hook_phases(self) -> list[tuple[Phase, tuple[Desired, ...]]]:
        return [(p, self.hooks.of(p)) for p in HOOK_PHASES if self.hooks.of(p)]


def rendering_changes(base: Mapping[str, str], head: Mapping[str, str]) -> dict[str, list[str]]:
    """Which objects' renderings differ between two revisions, by object key: `added`
    (only in head), `removed` (only in base), `changed` (both, rendered differently)."""
    return {
        "added": sorted(head.keys() - base.keys()),
        "removed": sorted(base.keys() - head.keys()),
        "changed": sorted(k for k in head.keys() & base.keys() if head[k] != base[k]),
    }
