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
stop its drift watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Final

import orjson

from gitkrm.cache import WatchCache
from gitkrm.charts.release import ChartRenderer
from gitkrm.errors import GitkrmError, NotFound
from gitkrm.health.kinds import deletes_itself
from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef, ResourceKey, masking
from gitkrm.patch import PatchMeta
from gitkrm.patch.fieldmanager import SchemaType
from gitkrm.schema import patch_meta_for, ssa_type_for
from gitkrm.source.snapshot import Snapshot
from gitkrm.store import Store
from gitkrm.sync import admission, guards, inventory, keys, live
from gitkrm.sync.apply import Applied, Applier, Between
from gitkrm.sync.desired import Desired
from gitkrm.sync.diff import diff_step, diff_text
from gitkrm.sync.drift import DriftTracker, Seen
from gitkrm.sync.gates import Cancelled, Gate, GroupKey, levels, uses_gates
from gitkrm.sync.guards import Verdict
from gitkrm.sync.hooks import NO_HOOKS, HookRun, Phase, kinds_of
from gitkrm.sync.hooks import split as split_hooks
from gitkrm.sync.inventory import Inventory
from gitkrm.sync.memo import EngineMemo
from gitkrm.sync.modes import builtin_defaults
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.patching import create_body
from gitkrm.sync.peernotes import annotation_warnings
from gitkrm.sync.phases import PhaseRunner
from gitkrm.sync.plan import (
    Plan,
    Step,
    applied_unchanged,
    make_plan,
    narrowed,
    prune_candidates,
)
from gitkrm.sync.pool import gc_paused
from gitkrm.sync.preview import Preview
from gitkrm.sync.progress import ProgressFn, no_progress
from gitkrm.sync.render import Renderer, RenderResult
from gitkrm.sync.results import Action, ObjectResult, SyncResult, make_result
from gitkrm.sync.serverside import FIELD_MANAGER

_UNSETTLED: Final = frozenset({Action.FAILED, Action.REFUSED, Action.SKIPPED})


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


_AFTER_ALL_WAVES: Final = 2**62  # `sync_hooks`: every wave is before it


def contiguous(since: str, after: str, ours: set[int]) -> bool:
    """Whether every revision in (since, after] is one of our writes (integer revisions,
    as the embedded store and etcd count them): then nobody else wrote meanwhile."""
    try:
        lo, hi = int(since), int(after)
    except ValueError:
        return False
    return hi - lo <= len(ours) and all(rv in ours for rv in range(lo + 1, hi + 1))


@dataclass(frozen=True, slots=True)
class Refusal:
    """A revision that can't be applied at all: why, and the time spent finding out."""

    errors: tuple[str, ...]
    timings: dict[str, float]
    guard: str = ""  # the guard that refused it (sync.guards.Guard), if one did
    refused: Plan | None = None  # what the guard stopped

    def result(self, revision: str) -> SyncResult:
        return make_result(
            revision=revision, errors=self.errors, timings_ms=self.timings, guard=self.guard
        )

    def plan(self, revision: str) -> Plan:
        if self.refused is not None:
            return replace(self.refused, errors=self.errors, guard=self.guard)
        return Plan(
            revision=revision, steps=(), inventory=frozenset(), errors=self.errors,
            guard=self.guard,
        )  # fmt: skip


def _guarded(
    verdict: Verdict | None, timings: dict[str, float], plan: Plan | None
) -> Refusal | None:
    if verdict is None:
        return None
    return Refusal((verdict.message,), timings, guard=verdict.guard, refused=plan)


def _charts(options: SyncOptions, parse_cache: ParseCache | None) -> ChartRenderer:
    """The source's chart renderer; which releases were installed is kept beside the parse
    cache (in the state dir), so a restart renders upgrades, not installs."""
    return ChartRenderer(
        spec=options.helm,
        default_namespace=options.namespace,
        state_file=None if parse_cache is None else parse_cache.path.with_suffix(".helm.json"),
        persist=parse_cache is not None and not parse_cache.read_only,
        cache_dir=None if parse_cache is None else parse_cache.path.parent.parent / "charts",
    )


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
        self.before_wait: Callable[[], Awaitable[None]] | None = None
        """Called before a sync first waits on health (the agent starts the embedded
        target's controllers, which `run --once` runs only when something waits)."""
        self._cache = cache
        self._renderer = Renderer(
            context=ParseContext(
                source=options.source_name,
                default_namespace=options.namespace,
                argo_cd=options.app_source is not None,
            ),
            disk=parse_cache,
            annotation_limit=not options.server_side,
            charts=_charts(options, parse_cache),
            kube_version=options.kube_version,
            app=options.app_source,
            overlay=options.overlay,
        )
        self._tracker = DriftTracker(
            store, source=options.source_name, cache=cache, enabled=track_drift
        )
        self._memo = EngineMemo()
        self._lock = asyncio.Lock()
        self._ttl_jobs: tuple[RenderResult | None, frozenset[ResourceKey]] = (None, frozenset())
        self._allow_prune: tuple[str, int | None] = ("", None)  # a revision's trailer
        self._live_after: dict[str, Obj] = {}  # `take_live`

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
        live, self._live_after = self._live_after, {}
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
            self._allow_prune = (snapshot.revision, snapshot.allow_prune)
            with gc_paused():
                progress("rendering", None, None)
                rendered = await self._render(snapshot)
                result = (
                    rendered
                    if isinstance(rendered, Refusal)
                    else await self._phased(
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

    async def _phased(
        self,
        rendered: RenderResult,
        timings: dict[str, float],
        *,
        progress: ProgressFn,
        run_hooks: bool,
        cancel: asyncio.Event | None,
        settled: bool = False,
    ) -> SyncResult | Refusal:
        """The sync's phases: PreSync hooks, the objects (and Sync hooks), PostSync hooks
        once every object is healthy, SyncFail hooks when anything failed."""
        memo = self._memo
        hooks = memo.hooks
        revision = rendered.revision
        if not hooks or not (run_hooks or memo.hooked != revision):
            if hooks and memo.hooked == revision and memo.hook_failure is not None:
                return memo.hook_failure  # a failed PreSync phase is not retried unasked
            return await self._apply(
                rendered, timings, progress=progress, cancel=cancel, settled=settled
            )
        memo.hooked, memo.hook_failure = revision, None
        runner = PhaseRunner(
            self.store,
            revision=revision,
            timeout=self.options.health_timeout,
            cache=self._cache,
            cancel=cancel,
            before_wait=self.before_wait,
            checks=self.options.health_checks,
        )
        runs: list[HookRun] = []
        await self._hook_namespaces(rendered)

        async def phase(p: Phase) -> bool:
            if not hooks.of(p):
                return True
            progress(f"{p.value} hooks", None, None)
            done = await runner.run(p, hooks.of(p))
            runs.extend(done)
            return all(r.ok for r in done)

        if not await phase(Phase.PRE_SYNC):
            await phase(Phase.SYNC_FAIL)
            self._memo.settled_at = None
            memo.hook_failure = make_result(
                revision=revision,
                errors=["a PreSync hook failed: nothing of the Sync phase was applied"],
                timings_ms=timings,
                hooks=runs,
                warnings=self._warnings(rendered),
            )
            return memo.hook_failure
        pending = list(hooks.of(Phase.SYNC))

        async def sync_hooks(limit: int) -> str | None:
            """Argo CD's Sync hooks of the waves before `limit`, in the apply's wave order."""
            nonlocal pending
            due = [d for d in pending if d.wave < limit]
            if not due:
                return None
            pending = [d for d in pending if d.wave >= limit]
            progress(f"{Phase.SYNC.value} hooks", None, None)
            done = await runner.run(Phase.SYNC, due)
            runs.extend(done)
            if all(r.ok for r in done):
                return None
            return "a Sync hook failed: the later waves were not applied"

        done = await self._apply(
            rendered,
            timings,
            progress=progress,
            cancel=cancel,
            between=sync_hooks,
            settled=settled,
        )
        result = done.result(revision) if isinstance(done, Refusal) else done
        errors = list(result.errors)
        ok = result.ok and await sync_hooks(_AFTER_ALL_WAVES) is None
        if ok and hooks.of(Phase.POST_SYNC):
            why = await self._all_healthy(result, cancel)
            if why is not None:
                errors.append(f"PostSync hooks not run: {why}")
                ok = False
            else:
                ok = await phase(Phase.POST_SYNC)
        if not ok:
            await phase(Phase.SYNC_FAIL)
        return make_result(
            revision=revision,
            objects=result.objects,
            errors=errors,
            timings_ms=result.timings_ms,
            releases=result.releases,
            hooks=runs,
            warnings=result.warnings,
        )

    async def _hook_namespaces(self, rendered: RenderResult) -> None:
        """Create the Namespaces of the revision its hooks run in, when absent, before any
        hook (as Argo CD's CreateNamespace=true does for an application's namespace): a
        chart's pre-install hook runs in the namespace the same revision creates. The Sync
        phase then takes them over like any object it finds with its source label."""
        wanted = {
            d.ref.namespace
            for ds in self._memo.hooks.by_phase.values()
            for d in ds
            if d.ref.namespace
        }
        for d in rendered.objects:
            if d.ref.kind != "Namespace" or d.ref.group or d.ref.name not in wanted:
                continue
            ref = ObjectRef(group="", kind="Namespace", name=d.ref.name, version="v1")
            try:
                await self.store.get(ref)
            except NotFound:
                with contextlib.suppress(GitkrmError):  # the hook says what is wrong
                    await self.store.create(
                        create_body(d, rendered.revision), field_manager=FIELD_MANAGER
                    )

    async def _all_healthy(self, result: SyncResult, cancel: asyncio.Event | None) -> str | None:
        """Wait for every object of the sync to be healthy (before PostSync hooks)."""
        refs = [
            ObjectRef(
                group=o.ref.group,
                kind=o.ref.kind,
                name=o.ref.name,
                namespace=o.ref.namespace,
                version=self.read_gvk(o.ref).version or None,
            )
            for o in result.objects
            if o.action in (Action.CREATED, Action.CONFIGURED, Action.UNCHANGED)
        ]
        gate = self._gate(cancel=cancel, groups=None)
        try:
            return await gate.healthy(refs, (1, 0, 0), what="the synced objects")
        except Cancelled:
            return "cancelled: a new revision arrived"

    def _gate(
        self,
        *,
        cancel: asyncio.Event | None,
        groups: dict[str, GroupKey] | None,
        progress: ProgressFn = no_progress,
    ) -> Gate:
        return Gate(
            self.store,
            groups,
            timeout=self.options.health_timeout,
            cache=self._cache,
            cancel=cancel,
            ttl_jobs=self.jobs_with_ttl(),
            on_wait=lambda what: progress(f"waiting for {what}", None, None),
            before_wait=self.before_wait,
            checks=self.options.health_checks,
        )

    def _warnings(self, rendered: RenderResult) -> tuple[str, ...]:
        """The revision's annotation warnings (once per render)."""
        if self._memo.warnings[0] is not rendered:
            objects = [
                *rendered.objects,
                *(d for ds in self._memo.hooks.by_phase.values() for d in ds),
            ]
            self._memo.warnings = (rendered, annotation_warnings(objects))
        return self._memo.warnings[1]

    def _groups(self, rendered: RenderResult) -> dict[str, GroupKey] | None:
        """The revision's health-gate groups, None when it is not gated (once per render)."""
        if self._memo.gates[0] is not rendered:
            found = levels(rendered.objects) if uses_gates(rendered.objects) else None
            self._memo.gates = (rendered, found)
        return self._memo.gates[1]

    async def check_drift(self, *, progress: ProgressFn = no_progress) -> SyncResult:
        """Re-apply the last synced revision to the objects changed since the last apply
        (a result without objects when nothing was synced yet)."""
        async with self._lock:
            synced = self._memo.synced
            if synced is None:
                return make_result(revision="")
            self._memo.started_at = ""  # nothing read before the plan
            with gc_paused():
                result = await self._apply(synced, {"git": 0.0, "render": 0.0}, progress=progress)
            return result.result(synced.revision) if isinstance(result, Refusal) else result

    async def inputs_changed(self) -> bool:
        """Whether the post-build inputs the store holds (`substituteFrom` values, the
        decryption Secret's keys) differ from those of the last render: then the same
        revision needs a full sync, not only a drift check (Flux reads them every time)."""
        spec = self.options.postbuild
        if spec is None or spec.empty or self._memo.rendered_key is None:
            return False
        from gitkrm.sync.postbuild_inputs import resolve

        return (await resolve(self.store, spec)).digest != self._memo.rendered_key[2]

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
            self._allow_prune = (snapshot.revision, snapshot.allow_prune)
            with gc_paused():
                found = await self._render(snapshot)
                if isinstance(found, Refusal):
                    refused = found.plan(snapshot.revision)
                    return Preview(refused, budget=o.prune_budget, allow_prune=snapshot.allow_prune)
                rendered, timings = found
                planned = Plan(revision=rendered.revision, steps=(), inventory=frozenset())
                if plan:
                    planned = await self._dry_plan(rendered, timings, settled=settled)
            return Preview(
                planned,
                hooks=self._memo.hooks,
                objects=rendered.objects,
                budget=o.prune_budget,
                allow_prune=snapshot.allow_prune,
                warnings=self._warnings(rendered) if plan else (),
            )

    async def _dry_plan(
        self, rendered: RenderResult, timings: dict[str, float], *, settled: bool
    ) -> Plan:
        inv = await self._read_inventory(rendered, timings)
        if isinstance(inv, Refusal):
            return inv.plan(rendered.revision)
        plan, _ = await self._plan(rendered, inv, dry_run=True, settled=settled)
        refused = self._budget(plan, timings)
        if refused is not None:
            return refused.plan(rendered.revision)
        denied = await admission.denied(self.store, plan, rendered.registry, rendered.objects)
        if denied:  # what sync would refuse, diff reports as errors
            return Refusal(tuple(str(p) for p in denied), timings).plan(rendered.revision)
        return plan

    def diff_step(self, step: Step) -> str:
        """One step's unified YAML diff, masked as `diff_text`."""
        return masking.mask(diff_step(step, self._meta))

    def diff_text(self, plan: Plan) -> str:
        """`plan` as a unified YAML diff per object (Secrets redacted, and values that came
        from Secrets masked in every object)."""
        return masking.mask(diff_text(plan, self._meta))

    async def close(self) -> None:
        """Stop watching for drift."""
        await self._tracker.close()

    # -- rendering and reading -------------------------------------------------------

    async def _render(self, snapshot: Snapshot) -> tuple[RenderResult, dict[str, float]] | Refusal:
        start = time.perf_counter()
        crds, self._memo.started_at = await live.list_at(self.store, live.CRD)
        if self.options.extra_crds:
            have = {str(keys.metadata(c).get("name")) for c in crds}
            extra = [orjson.loads(c) for c in self.options.extra_crds]
            crds = [*crds, *(c for c in extra if str(keys.metadata(c).get("name")) not in have)]
        crd_key = tuple(
            sorted(
                (str(keys.metadata(c).get("name")), str(keys.metadata(c).get("resourceVersion")))
                for c in crds
            )
        )
        postbuild = None
        spec = self.options.postbuild
        if spec is not None and not spec.empty:
            from gitkrm.sync.postbuild_inputs import resolve  # only sources that use it

            postbuild = await resolve(self.store, spec)
        key = (snapshot.revision, crd_key, postbuild.digest if postbuild is not None else "")
        memo = self._memo.rendered
        if memo is not None and self._memo.rendered_key == key and not memo.remote:
            return memo, {"git": 0.0, "render": _ms(start)}
        await self._chart_kube_version(snapshot)
        listed = await live.list_all(self.store, live.NAMESPACE)
        namespaces = {str(keys.metadata(ns).get("name")) for ns in listed}
        namespaces.update(self.options.extra_namespaces)  # the peers' (`plan` before `run`)
        rendered = await self._renderer.render(
            snapshot, store_crds=crds, namespaces=namespaces, postbuild=postbuild
        )
        timings = {"git": rendered.read_ms, "render": _ms(start) - rendered.read_ms}
        if not rendered.ok:
            return Refusal(tuple(str(p) for p in rendered.problems), timings)
        found = split_hooks(rendered.objects)
        hooks = NO_HOOKS
        if found is not None:
            kept, hooks = found
            rendered = replace(
                rendered, objects=tuple(kept), keys=frozenset(d.key for d in kept),
                kinds=kinds_of(kept),
            )  # fmt: skip
        self._memo.hooks = hooks
        self._memo.rendered, self._memo.rendered_key = rendered, key
        self._memo.registry = rendered.registry
        return rendered, timings

    async def _chart_kube_version(self, snapshot: Snapshot) -> None:
        """A cluster's own Kubernetes version for `.Capabilities` of Helm charts, asked
        once, and only when a revision has a chart (the embedded target's is 1.33)."""
        renderer = self._renderer
        if renderer.kube_version is not None or self.options.kube_version is not None:
            return
        server_version = getattr(self.store, "server_version", None)
        if server_version is None or not any(p.endswith("Chart.yaml") for p in snapshot.files):
            return
        try:
            renderer.kube_version = str(await server_version()) or None
        except GitkrmError:
            return  # the default stands; the next render asks again

    async def _read_inventory(
        self, rendered: RenderResult, timings: dict[str, float]
    ) -> Inventory | Refusal:
        o = self.options
        inv = await inventory.read(
            self.store,
            source=o.source_name,
            inventory_id=o.inventory_id,
            cache=self._memo.inventory,
        )
        verdict = guards.check_empty(
            revision=rendered.revision,
            objects=len(rendered.objects),
            inventory=len(inv.entries),
            allow_empty=o.allow_empty,
        )
        return _guarded(verdict, timings, None) or inv

    def _budget(self, plan: Plan, timings: dict[str, float]) -> Refusal | None:
        """The prune budget's refusal of a plan (the commit's trailer may lift it)."""
        revision, allowed = self._allow_prune
        verdict = guards.check_prune_budget(
            revision=plan.revision,
            steps=plan.steps,
            inventory=len(plan.inventory),
            budget=self.options.prune_budget,
            allowed=allowed if revision == plan.revision else None,
        )
        return _guarded(verdict, timings, plan)

    def _meta(self, gvk: GVK) -> PatchMeta | None:
        """Strategic-merge metadata of a built-in kind; None for custom resources."""
        reg = self._memo.registry
        if reg is not None and reg.custom_schema(gvk) is not None:
            return None
        try:
            return patch_meta_for(gvk)
        except NotFound:
            return None

    def _typ(self, gvk: GVK) -> SchemaType:
        """The server-side apply type of a kind (a CRD's schema for custom resources)."""
        return ssa_type_for(gvk, registry=self._memo.registry)

    def _defaults(self, gvk: GVK) -> Callable[[Obj], None] | None:
        """What the store's admission does to an update of the kind (a CRD's defaults)."""
        reg = self._memo.registry
        if reg is None:
            return builtin_defaults(gvk)
        return reg.update_defaulter(gvk)

    def jobs_with_ttl(self) -> frozenset[ResourceKey]:
        """The Jobs of the synced revision whose manifest sets ttlSecondsAfterFinished: once
        gone they are done, for health and `--wait` (decoded once per revision)."""
        synced = self._memo.synced
        if synced is None:
            return frozenset()
        if self._ttl_jobs[0] is not synced:
            found = frozenset(
                d.ref.key
                for d in synced.objects
                if d.ref.kind == "Job" and d.ref.group == "batch" and deletes_itself(d.obj)
            )
            self._ttl_jobs = (synced, found)
        return self._ttl_jobs[1]

    def read_gvk(self, ref: ObjectRef) -> GVK:
        """A version to read an object at (for objects only the inventory names, and for
        the agent's health reads): the served version the last render knew, else none."""
        reg = self._memo.registry
        if reg is not None:
            versions = reg.versions_of(GroupKind(group=ref.group, kind=ref.kind))
            if versions:
                return versions[0].gvk
        return GVK(group=ref.group, version="", kind=ref.kind)

    # -- planning and applying -------------------------------------------------------

    async def _plan(
        self,
        rendered: RenderResult,
        inv: Inventory,
        *,
        dry_run: bool = False,
        settled: bool = False,
    ) -> tuple[Plan, str]:
        """The plan, and the store revision its live view was read at (`settled`: see
        `preview`)."""
        since = await live.current_revision(self.store)
        tracker = self._tracker
        await tracker.settle()
        trusted = tracker.trusted_kinds()
        all_trusted = set(rendered.kinds) <= trusted
        unsettled = self._memo.unsettled
        seen = tracker.seen
        dirty = tracker.dirty
        wanted: dict[ObjectRef, GVK] = {}
        wanted_keys: set[str] = set()
        in_sync: set[str] = set()
        for d in rendered.objects:  # the hot loop of a quiet revision: kept flat
            k = d.key
            s = seen.get(k)
            if (
                s is not None
                and (s.applied is d.applied or s.applied == d.applied)
                and k not in dirty
                and k not in unsettled
                and (all_trusted or (d.ref.group, d.ref.kind) in trusted)
            ):
                in_sync.add(k)
            else:
                wanted[d.ref] = d.gvk
                wanted_keys.add(k)
        desired_keys = rendered.keys
        gone, _ = prune_candidates(inv.entries, desired_keys)
        for ref in gone.values():
            wanted[ref] = self.read_gvk(ref)
        if not dry_run:  # objects read now are clean until their next event
            tracker.dirty.difference_update(wanted_keys)
            # Follow the kinds from now: new informers make their first list before this
            # sync writes (cheap before a first sync), then take in its events as they come.
            if tracker.watch(gvk for gvk in rendered.kinds.values() if gvk.version):
                await asyncio.sleep(0)
        live_objects = await live.read(self.store, wanted)
        if settled and not self.options.server_side:
            in_sync |= applied_unchanged(rendered.objects, live_objects, inv.entries)
        plan = make_plan(
            revision=rendered.revision,
            desired=rendered.objects,
            inventory=inv.entries,
            live=live_objects,
            options=self.options,
            meta=self._meta,
            typ=self._typ,
            defaults=self._defaults,
            in_sync=in_sync,
            reuse=None if dry_run else self._memo.reuse_steps,
        )
        return plan, since

    async def _quiet(self, rendered: RenderResult, inv: Inventory) -> bool:
        """Nothing to do: the synced revision again, everything settled, no drift, the
        inventory as written, every kind watched."""
        if (
            rendered is not self._memo.synced
            or not self._memo.settled
            or inv is not self._memo.inventory
        ):
            return False
        await self._tracker.settle()
        if self._tracker.dirty:
            return False
        return set(rendered.kinds) <= self._tracker.trusted_kinds()

    async def _apply(
        self,
        rendered: RenderResult,
        timings: dict[str, float],
        *,
        progress: ProgressFn = no_progress,
        cancel: asyncio.Event | None = None,
        between: Between | None = None,
        settled: bool = False,
    ) -> SyncResult | Refusal:
        o = self.options
        start = time.perf_counter()
        inv = await self._read_inventory(rendered, timings)
        if isinstance(inv, Refusal):
            return inv
        if await self._quiet(rendered, inv):
            self._renderer.mark_installed(rendered.releases)
            if self._memo.unchanged is None:
                self._memo.unchanged = tuple(self._unchanged_result(d) for d in rendered.objects)
            timings.update(diff=_ms(start), apply=0.0)
            return make_result(
                revision=rendered.revision,
                objects=self._memo.unchanged,
                timings_ms=timings,
                releases=[r.to_report() for r in rendered.releases],
                warnings=self._warnings(rendered),
            )
        progress("planning", None, None)
        plan, since = await self._plan(rendered, inv, settled=settled)
        refused = self._budget(plan, timings)
        if refused is not None:
            timings["diff"] = _ms(start)
            return refused
        denied = await admission.denied(self.store, plan, rendered.registry, rendered.objects)
        timings["diff"] = _ms(start)
        if denied:  # a policy refuses the revision whole, before anything is written
            return Refusal(tuple(str(p) for p in denied), timings)
        start = time.perf_counter()
        ours: set[int] = set()
        union = plan.union
        if union != inv.entries or (not inv.versions and union):
            try:
                if not inv.versions:
                    made = await inventory.ensure_namespace(self.store)
                    if made:
                        ours.add(int(made))
                inv = await self._write_inventory(union, inv)
            except GitkrmError as e:
                timings["apply"] = _ms(start)
                return Refusal((f"writing the inventory failed: {e.message}",), timings)
            ours.update(int(v) for v in inv.versions.values() if v.isdigit())
        applier = Applier(
            self.store,
            options=o,
            revision=rendered.revision,
            meta=self._meta,
            typ=self._typ,
            defaults=self._defaults,
            reuse=self._memo.reuse_results,
            progress=progress,
            gate=self._gate_for(rendered, cancel=cancel, progress=progress),
            between=between,
        )
        applied = await applier.apply(plan)
        if not any(r.action is Action.FAILED for r in applied.results):
            self._renderer.mark_installed(rendered.releases)
        after = narrowed(plan, applied.actions)
        errors: list[str] = [] if applier.stopped is None else [applier.stopped]
        if after != inv.entries:
            try:
                inv = await self._write_inventory(after, inv)
                ours.update(int(v) for v in inv.versions.values() if v.isdigit())
            except GitkrmError as e:
                errors.append(f"narrowing the inventory failed (extra entries stay): {e.message}")
                inv = Inventory()  # read again next time
        timings["apply"] = _ms(start)
        await self._remember(rendered, plan, applied, inv, since, ours)
        return make_result(
            revision=rendered.revision,
            objects=applied.results,
            errors=errors,
            timings_ms=timings,
            releases=[r.to_report() for r in rendered.releases],
            warnings=self._warnings(rendered),
        )

    def _gate_for(
        self, rendered: RenderResult, *, cancel: asyncio.Event | None, progress: ProgressFn
    ) -> Gate:
        """The health gates of a sync: between waves when the revision has waves (None
        groups: none), and between the waves of the prunes, read from the live objects."""
        return self._gate(cancel=cancel, groups=self._groups(rendered), progress=progress)

    def _unchanged_result(self, d: Desired) -> ObjectResult:
        hit = self._memo.reuse_results.get(d.key)
        if hit is not None and hit[0] is d:
            return hit[1]
        result = ObjectResult(d.ref, Action.UNCHANGED, path=d.path, line=d.line or None)
        self._memo.reuse_results[d.key] = (d, result)
        return result

    async def _write_inventory(self, entries: frozenset[str], current: Inventory) -> Inventory:
        """Write the inventory (the union of old and new before objects are touched, the
        narrowed one after)."""
        o = self.options
        return await inventory.write(
            self.store, entries, current=current, source=o.source_name, inventory_id=o.inventory_id
        )

    async def _remember(
        self,
        rendered: RenderResult,
        plan: Plan,
        applied: Applied,
        inv: Inventory,
        since: str,
        ours: set[int],
    ) -> None:
        """Record what was seen and written, and watch the owned kinds for drift."""
        self._live_after = applied.live
        tracker = self._tracker
        unsettled: set[str] = set()
        settled = True
        reuse_steps: dict[str, Step] = {}
        reuse_results = self._memo.reuse_results
        for step, result in zip(plan.steps, applied.results, strict=True):
            d = step.desired
            if result.action is Action.UNCHANGED and step.live is None and d is not None:
                reuse_steps[step.key] = step
                reuse_results[step.key] = (d, result)
                continue  # in sync, not read: nothing new to record
            if d is None:
                tracker.forget((step.key,))
                if result.action is Action.FAILED:
                    settled = False  # the prune is tried again next time
                continue
            if result.action in _UNSETTLED:
                unsettled.add(step.key)
                tracker.forget((step.key,))
                settled = False
                continue
            obj = applied.live.get(step.key)
            if obj is not None:
                tracker.record(step.key, obj, d.applied)
                rv = keys.metadata(obj).get("resourceVersion")
                if result.action is not Action.UNCHANGED and isinstance(rv, str) and rv.isdigit():
                    ours.add(int(rv))
            elif step.key not in tracker.seen:
                settled = False
        if len(tracker.seen) > len(inv.entries):
            tracker.forget(list(tracker.seen.keys() - inv.entries))
        self._memo.unsettled = unsettled
        self._memo.reuse_steps = reuse_steps
        if len(reuse_results) > 2 * len(rendered.objects) + 64:
            self._memo.reuse_results = {
                d.key: reuse_results[d.key] for d in rendered.objects if d.key in reuse_results
            }
        self._memo.settled = settled and bool(inv.versions)
        self._memo.inventory = inv if inv.versions else None
        if rendered is not self._memo.synced:
            self._memo.unchanged = None
        self._memo.synced = rendered
        # Watch from the revision the plan read at; after our own writes when nobody
        # else wrote meanwhile (no need to replay thousands of our own events).
        after = await live.current_revision(self.store)
        start = after if contiguous(since, after, ours) else since
        clean = self._memo.settled and contiguous(self._memo.started_at or since, after, ours)
        self._memo.settled_at = after if clean else None
        tracker.watch((gvk for gvk in rendered.kinds.values() if gvk.version), since=start)
