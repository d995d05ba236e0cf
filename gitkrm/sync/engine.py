"""The sync engine: keeps a store equal to what one source's revisions say, safely.

`sync(snapshot)`: render and validate the revision (all or nothing), read the inventory
and the live objects that may have changed, plan, write the inventory as the union of
old and new, apply in order, prune, narrow the inventory. `check_drift()` does the same
for the last synced revision: only objects changed since the last apply are read and
diffed, and a quiet interval (same revision, no drift, inventory untouched) costs a few
reads. `plan(snapshot)` is the dry run behind `gitkrm diff`.

After a sync that settled everything with nobody else writing meanwhile, `settled_at` is
the store's revision after the sync's own writes: while the store stays at it, the store
still holds exactly what that revision says (the agent's `run --once` trusts it; see
`gitkrm.agent.lastsync`). A `ParseCache` keeps parsed files on disk across processes.

One engine per source and store; syncs of one engine never overlap. Call `close()` to
stop its drift watches. Its steps live beside it, one module each (as Flux's ssa manager
and gitops-engine's sync context split by step): `engine_render`, `engine_plan`,
`engine_apply`, `engine_gates` and `engine_hooks`, sharing `engine_parts.EngineParts`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from gitkrm.cache import WatchCache
from gitkrm.krm import GVK, Obj, ObjectRef, ResourceKey, masking
from gitkrm.source.snapshot import Snapshot
from gitkrm.store import Store
from gitkrm.sync.diff import diff_step, diff_text
from gitkrm.sync.drift import DriftTracker, Seen
from gitkrm.sync.engine_apply import ApplyStep
from gitkrm.sync.engine_gates import EngineGates
from gitkrm.sync.engine_hooks import HookPhases
from gitkrm.sync.engine_parts import EngineParts
from gitkrm.sync.engine_plan import Planner
from gitkrm.sync.engine_render import RenderStep
from gitkrm.sync.memo import EngineMemo
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.plan import Plan, Step
from gitkrm.sync.pool import gc_paused
from gitkrm.sync.preview import Preview
from gitkrm.sync.progress import ProgressFn, no_progress
from gitkrm.sync.refusal import Refusal
from gitkrm.sync.results import SyncResult, make_result


class SyncEngine:
    """Syncs one source into one store (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        options: SyncOptions,
        parse_cache: ParseCache | None = None,
        cache: WatchCache | None = None,
        track_drift: bool = True,
    ) -> None:
        """`cache`: the store's shared watch cache (drift detection reads the source's
        scope of it); a private one otherwise. `track_drift` False: a one-shot sync that
        no drift check follows (`run --once`) follows no kind."""
        self.store = store
        self.options = options
        self._parts = parts = EngineParts(
            store=store,
            options=options,
            memo=EngineMemo(),
            tracker=DriftTracker(
                store, source=options.source_name, cache=cache, enabled=track_drift
            ),
            cache=cache,
        )
        self._memo = parts.memo
        self._tracker = parts.tracker
        self._render = RenderStep(parts, parse_cache=parse_cache)
        self._planner = Planner(parts)
        self._gates = EngineGates(parts)
        self._apply = ApplyStep(
            parts, render=self._render, planner=self._planner, gates=self._gates
        )
        self._phases = HookPhases(parts, render=self._render, apply=self._apply, gates=self._gates)
        self._lock = asyncio.Lock()

    @property
    def before_wait(self) -> Callable[[], Awaitable[None]] | None:
        """Called before a sync first waits on health (the agent starts the embedded
        target's controllers, which `run --once` runs only when something waits)."""
        return self._parts.before_wait

    @before_wait.setter
    def before_wait(self, call: Callable[[], Awaitable[None]] | None) -> None:
        self._parts.before_wait = call

    @property
    def synced_revision(self) -> str | None:
        """The revision last applied (the state drift checks restore)."""
        return self._memo.synced.revision if self._memo.synced is not None else None

    def settled_objects(self) -> tuple[Mapping[str, Seen], tuple[GVK, ...]] | None:
        """What the last sync left when it settled every object and nothing drifted since:
        the owned objects as it saw them and the kinds of its revision (`owned`); None
        otherwise."""
        memo = self._memo
        if not memo.settled or memo.synced is None or self._tracker.dirty:
            return None
        kinds = tuple(gvk for gvk in memo.synced.kinds.values() if gvk.version)
        return dict(self._tracker.seen), kinds

    def take_live(self) -> dict[str, Obj]:
        """The live objects the last sync wrote or read, by object key, once: the agent
        judges their health from them instead of reading 10,000 objects again."""
        live, self._apply.live_after = self._apply.live_after, {}
        return live

    @property
    def settled_at(self) -> str | None:
        """The store's revision right after the last sync (or drift check that wrote),
        when it settled every object and every write to the store from its start on was
        its own; None otherwise. The store holds what `synced_revision` says while its
        revision stays here."""
        return self._memo.settled_at

    # -- public API ------------------------------------------------------------------

    @property
    def hooked_revision(self) -> str | None:
        """The revision whose hooks last ran (they run once per revision)."""
        return self._memo.hooked

    @hooked_revision.setter
    def hooked_revision(self, revision: str | None) -> None:
        """What an earlier process recorded (the GitSource status): its hooks ran."""
        self._memo.hooked = revision

    async def sync(
        self,
        snapshot: Snapshot,
        *,
        progress: ProgressFn = no_progress,
        run_hooks: bool = False,
        cancel: asyncio.Event | None = None,
        settled: bool = False,
    ) -> SyncResult:
        """Render, validate, plan and apply one revision; `progress` hears the phase and
        how many writes of how many are done (for a bar on a terminal). The revision's
        hooks run when it is not the one they last ran for, or with `run_hooks` (a sync
        request). `cancel`, once set (a new revision arrived), stops a wait on health.
        `settled`: as `preview`'s (a twin copied from a settled store: `plan --simulate`)."""
        async with self._lock:
            self._planner.allow_prune = (snapshot.revision, snapshot.allow_prune)
            with gc_paused():
                progress("rendering", None, None)
                rendered = await self._render.render(snapshot)
                result = (
                    rendered
                    if isinstance(rendered, Refusal)
                    else await self._phases.run(
                        *rendered,
                        progress=progress,
                        run_hooks=run_hooks,
                        cancel=cancel,
                        settled=settled,
                    )
                )
            if isinstance(result, Refusal):
                self._memo.settled_at = None
                return result.result(snapshot.revision)
            return result

    async def check_drift(self, *, progress: ProgressFn = no_progress) -> SyncResult:
        """Re-apply the last synced revision to the objects changed since the last apply
        (a result without objects when nothing was synced yet)."""
        async with self._lock:
            synced = self._memo.synced
            if synced is None:
                return make_result(revision="")
            self._memo.started_at = ""  # nothing read before the plan
            with gc_paused():
                result = await self._apply.apply(
                    synced, {"git": 0.0, "render": 0.0}, progress=progress
                )
            return result.result(synced.revision) if isinstance(result, Refusal) else result

    async def inputs_changed(self) -> bool:
        """Whether the post-build inputs the store holds (`substituteFrom` values, the
        decryption Secret's keys) differ from those of the last render: then the same
        revision needs a full sync, not only a drift check (Flux reads them every time)."""
        return await self._render.inputs_changed()

    async def plan(self, snapshot: Snapshot, *, settled: bool = False) -> Plan:
        """What `sync` would do, without writing anything (errors: why it can't)."""
        return (await self.preview(snapshot, settled=settled)).plan

    async def preview(
        self, snapshot: Snapshot, *, settled: bool = False, plan: bool = True
    ) -> Preview:
        """The plan of `snapshot` with its hooks, rendered objects and the guards' verdict
        (`gitkrm plan`), without writing anything. `settled`: the store holds exactly what
        a settled sync of this source's settings left (`agent.lastsync.settled`), so
        objects whose last-applied configuration is unchanged need no three-way diff.
        `plan` False: the rendering only (a plan without steps)."""
        o = self.options
        async with self._lock:
            self._planner.allow_prune = (snapshot.revision, snapshot.allow_prune)
            with gc_paused():
                found = await self._render.render(snapshot)
                if isinstance(found, Refusal):
                    refused = found.plan(snapshot.revision)
                    return Preview(refused, budget=o.prune_budget, allow_prune=snapshot.allow_prune)
                rendered, timings = found
                planned = Plan(revision=rendered.revision, steps=(), inventory=frozenset())
                if plan:
                    planned = await self._planner.dry_plan(rendered, timings, settled=settled)
            return Preview(
                planned,
                hooks=self._memo.hooks,
                objects=rendered.objects,
                budget=o.prune_budget,
                allow_prune=snapshot.allow_prune,
                warnings=self._render.warnings(rendered) if plan else (),
            )

    def diff_step(self, step: Step) -> str:
        """One step's unified YAML diff, masked as `diff_text`."""
        return masking.mask(diff_step(step, self._parts.meta))

    def diff_text(self, plan: Plan) -> str:
        """`plan` as a unified YAML diff per object (Secrets redacted, and values that came
        from Secrets masked in every object)."""
        return masking.mask(diff_text(plan, self._parts.meta))

    def jobs_with_ttl(self) -> frozenset[ResourceKey]:
        """The Jobs of the synced revision whose manifest sets ttlSecondsAfterFinished: once
        gone they are done, for health and `--wait` (decoded once per revision)."""
        return self._gates.jobs_with_ttl()

    def read_gvk(self, ref: ObjectRef) -> GVK:
        """A version to read an object at (for objects only the inventory names, and for
        the agent's health reads): the served version the last render knew, else none."""
        return self._parts.read_gvk(ref)

    async def close(self) -> None:
        """Stop watching for drift."""
        await self._tracker.close()
