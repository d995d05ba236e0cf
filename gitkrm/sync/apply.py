"""Executes a plan against the store: ordered, batched, with per-object results.

Each ordering stage (Namespaces and CRDs, then each wave) is written in `store.batch`es of
`progress.CHUNK` writes: one transaction for hundreds of writes, and a progress report after
each. A batch is all or nothing, so when one fails its writes are done again object by
object, which isolates the failing object while the rest proceeds. Per object, a
Conflict, AlreadyExists or vanished object is answered by reading the object again and
planning it again (ownership included); an update refused as immutable is reported, or,
with `gitkrm.io/force: enabled` on the manifest, the object is deleted and created again.
Prunes run last, in reverse order, each with its uid as precondition.

In server-side mode creates and changes are apply patches of field manager `gitkrm`.
They are batched without force (the Store's batch has none); an apply planned to take
fields from another manager, or any apply after a failed batch, is sent alone with
force. Objects to migrate from client-side apply get their migration patches in a batch
of their own first, and their applies then carry the resourceVersion it left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from gitkrm.errors import AlreadyExists, Conflict, GitkrmError, Invalid, NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import BatchOp, BatchOpKind, Preconditions, Propagation, Store
from gitkrm.sync import keys
from gitkrm.sync.desired import Desired, wave_of
from gitkrm.sync.gates import Cancelled, Gate
from gitkrm.sync.modes import builtin_defaults, planner_for
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.plan import MetaLookup, Op, Plan, Step, builtin_type, plan_object
from gitkrm.sync.progress import CHUNK, ProgressFn, no_progress
from gitkrm.sync.results import Action, ObjectResult
from gitkrm.sync.serverside import (
    FIELD_MANAGER,
    DefaultsLookup,
    TypeLookup,
    with_resource_version,
)

ATTEMPTS: Final = 4
WAIT_LIMIT: Final = 30.0  # seconds for a CRD to be established, or a forced delete to finish
_POLL: Final = 0.05
Between = Callable[[int], Awaitable[str | None]]
"""Runs what belongs before wave `limit` (see `Applier`); None, or why the apply stops."""
_GATED: Final = frozenset({Action.CREATED, Action.CONFIGURED, Action.UNCHANGED})
"""What a health gate waits for: every object of its group that is in place."""


@dataclass(slots=True)
class Applied:
    """What the apply did: a result per step (plan order), and by object key the live
    object after each write (or as the plan read it, for steps without a write)."""

    results: list[ObjectResult] = field(default_factory=list)
    live: dict[str, Obj] = field(default_factory=dict)

    @property
    def actions(self) -> list[Action]:
        return [r.action for r in self.results]


def _established(crd: Obj) -> bool:
    status = crd.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return any(
        isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
        for c in conditions or ()
    )


class Applier:
    def __init__(
        self,
        store: Store,
        *,
        options: SyncOptions,
        revision: str,
        meta: MetaLookup,
        typ: TypeLookup = builtin_type,
        defaults: DefaultsLookup = builtin_defaults,
        wait_limit: float = WAIT_LIMIT,
        reuse: Mapping[str, tuple[Desired, ObjectResult]] | None = None,
        progress: ProgressFn = no_progress,
        gate: Gate | None = None,
        between: Between | None = None,
    ) -> None:
        """`gate`: waits for health between waves (see `gates`). `between(limit)`: runs
        what belongs before wave `limit` (Argo CD's Sync hooks of the earlier waves), called
        before each wave is written and after its last object; a message stops the apply
        as a failed gate does. `reuse`: "unchanged"
        results of earlier syncs by object key, with the desired object they were for
        (taken when it is the same object); `progress`: told after each batch how many
        writes of how many are done."""
        self.store = store
        self.options = options
        self.revision = revision
        self.meta = meta
        self.typ = typ
        self.server_side = options.server_side
        self.planner = planner_for(
            options=options, revision=revision, meta=meta, typ=typ, defaults=defaults
        )
        self.wait_limit = wait_limit
        self.reuse = reuse or {}
        self.progress = progress
        self.gate = gate
        self.between = between
        self.stopped: str | None = None  # why a gate stopped the apply
        self.cancelled = False  # a gate was cancelled by a new revision
        self.inventory: Collection[str] = frozenset()  # the plan's (set by apply)
        self._done = 0
        self._total = 0

    def _result(self, step: Step, action: Action, message: str = "") -> ObjectResult:
        d = step.desired
        return ObjectResult(
            ref=step.ref,
            action=action,
            message=message or step.message,
            path=d.path if d is not None else None,
            line=(d.line or None) if d is not None else None,
        )

    async def apply(self, plan: Plan) -> Applied:
        out = Applied()
        self.inventory = plan.inventory
        self._total = sum(1 for s in plan.steps if s.op in (Op.CREATE, Op.PATCH))
        self._done = 0
        if self._total:
            self.progress("applying", 0, self._total)
        results: list[ObjectResult | None] = [None] * len(plan.steps)
        groups: list[tuple[tuple[int, ...], list[int]]] = []
        gate = self.gate if self.gate is not None and self.gate.groups is not None else None
        for i, step in enumerate(plan.steps):
            if step.desired is None:
                continue
            this = step.stage if gate is None else gate.group(step.key, step.stage)
            if not groups or groups[-1][0] != this:
                groups.append((this, []))
            groups[-1][1].append(i)
        prunes = [i for i, s in enumerate(plan.steps) if s.desired is None]
        for n, (key, indexes) in enumerate(groups):
            wave = key[1] if key[0] else None  # stage 0: the Namespaces and CRDs, before waves
            stopped = await self._between(wave)
            if stopped is not None:
                self._stop([i for _, rest in groups[n:] for i in rest] + prunes, plan,
                           results, stopped)  # fmt: skip
                prunes = []
                break
            await self._stage(plan, indexes, results, out)
            if wave is not None and (n == len(groups) - 1 or groups[n + 1][0][:2] != key[:2]):
                stopped = await self._between(wave + 1)  # what belongs to this wave
            if stopped is None and (gate is None or n == len(groups) - 1):
                continue
            if stopped is None:
                stopped = await self._gate(plan, key, indexes, results)
            if stopped is not None:
                self._stop([i for _, rest in groups[n + 1 :] for i in rest] + prunes, plan,
                           results, stopped)  # fmt: skip
                prunes = []
                break
        await self._prune(plan, prunes, results)
        for r in results:
            assert r is not None
            out.results.append(r)
        return out

    # -- gates -------------------------------------------------------------------------

    async def _between(self, limit: int | None) -> str | None:
        if self.between is None or limit is None:
            return None
        why = await self.between(limit)
        if why is not None:
            self.stopped = why
        return why

    async def _gate(
        self,
        plan: Plan,
        key: tuple[int, ...],
        indexes: Sequence[int],
        results: list[ObjectResult | None],
    ) -> str | None:
        """Wait for every object of the group to be healthy, the ones it wrote and the ones
        already in sync (an unchanged wave-0 Deployment that is not Available holds wave 1
        back, as in Argo CD): None, or why the sync stops."""
        assert self.gate is not None
        written = [
            self._versioned(plan.steps[i])
            for i in indexes
            if (r := results[i]) is not None and r.action in _GATED
        ]
        try:
            why = await self.gate.healthy(written, (key[0], key[1], key[2] if len(key) > 2 else 0))
        except Cancelled:
            self.cancelled = True
            why = "cancelled: a new revision arrived while waiting for health"
        if why is not None:
            self.stopped = why
        return why

    def _stop(
        self, indexes: Sequence[int], plan: Plan, results: list[ObjectResult | None], why: str
    ) -> None:
        """The steps a failed gate leaves undone: not applied, not pruned (a prune not done
        stays in the inventory: it is tried again by the next sync)."""
        for i in indexes:
            step = plan.steps[i]
            if step.desired is None and step.op is Op.PRUNE:
                results[i] = self._result(step, Action.FAILED, f"not pruned: {why}")
            elif step.desired is None:
                results[i] = self._result(step, Action.SKIPPED)
            else:
                results[i] = self._result(step, Action.SKIPPED, f"not applied: {why}")

    # -- desired objects ---------------------------------------------------------------

    async def _stage(
        self, plan: Plan, indexes: Sequence[int], results: list[ObjectResult | None], out: Applied
    ) -> None:
        writes: list[int] = []
        for i in indexes:
            step = plan.steps[i]
            if step.op in (Op.CREATE, Op.PATCH):
                writes.append(i)
            else:
                if step.op is Op.UNCHANGED and step.live is None:
                    hit = self.reuse.get(step.key)
                    if hit is not None and hit[0] is step.desired:
                        results[i] = hit[1]
                    else:
                        results[i] = self._result(step, Action.UNCHANGED)
                    continue
                results[i] = self._result(step, _PASSIVE[step.op])
                if step.live is not None:
                    out.live[step.key] = step.live
        for start in range(0, len(writes), CHUNK):
            await self._write(plan, writes[start : start + CHUNK], results, out)
            self._done += min(CHUNK, len(writes) - start)
            self.progress("applying", self._done, self._total)
        await self._wait_established(plan, writes, results, out)

    async def _write(
        self, plan: Plan, writes: Sequence[int], results: list[ObjectResult | None], out: Applied
    ) -> None:
        """One batch of creates and patches; object by object when the batch fails (and
        for forced applies)."""
        steps = {i: plan.steps[i] for i in writes}
        alone = {i for i in writes if steps[i].force}
        await self._migrate([i for i in writes if i not in alone], steps, alone)
        batched = [i for i in writes if i not in alone]
        if batched:
            ops = [self._op(steps[i]) for i in batched]
            try:
                written = await self.store.batch(ops, field_manager=FIELD_MANAGER)
            except GitkrmError:
                alone.update(batched)
            else:
                for i, obj in zip(batched, written, strict=True):
                    step = steps[i]
                    action = Action.CREATED if step.op is Op.CREATE else Action.CONFIGURED
                    results[i] = self._result(step, action)
                    out.live[step.key] = obj
        for i in sorted(alone):
            result, written_obj = await self._one(steps[i])
            results[i] = result
            if written_obj is not None:
                out.live[steps[i].key] = written_obj

    async def _migrate(
        self, indexes: Sequence[int], steps: dict[int, Step], alone: set[int]
    ) -> None:
        """Send the client-side to server-side migrations of `indexes` in one batch; their
        steps then apply at the resourceVersion it left (object by object if it fails)."""
        migrating = [i for i in indexes if steps[i].migrate is not None]
        if not migrating:
            return
        ops = [
            BatchOp(
                op=BatchOpKind.PATCH,
                ref=self._versioned(steps[i]),
                patch=steps[i].migrate,
                patch_type="json",
            )
            for i in migrating
        ]
        try:
            migrated = await self.store.batch(ops, field_manager=FIELD_MANAGER)
        except GitkrmError:
            alone.update(migrating)
            return
        for i, obj in zip(migrating, migrated, strict=True):
            steps[i] = self._migrated(steps[i], obj)

    @staticmethod
    def _migrated(step: Step, obj: Obj) -> Step:
        rv = keys.metadata(obj).get("resourceVersion")
        return step._replace(
            migrate=None,
            live=obj,
            patch=with_resource_version(step.patch, rv if isinstance(rv, str) else None),
        )

    def _op(self, step: Step) -> BatchOp:
        if step.op is Op.CREATE:
            if self.server_side or step.patch_type == "apply":
                return BatchOp(
                    op=BatchOpKind.PATCH,
                    ref=self._versioned(step),
                    patch=step.body,
                    patch_type="apply",
                )
            return BatchOp(op=BatchOpKind.CREATE, obj=step.body)
        return BatchOp(
            op=BatchOpKind.PATCH,
            ref=self._versioned(step),
            patch=step.patch,
            patch_type=step.patch_type,
        )

    @staticmethod
    def _versioned(step: Step) -> ObjectRef:
        d = step.desired
        r = step.ref
        version = d.gvk.version if d is not None else None
        return ObjectRef(
            group=r.group, kind=r.kind, name=r.name, namespace=r.namespace, version=version
        )

    async def _get(self, step: Step) -> Obj | None:
        try:
            return await self.store.get(self._versioned(step))
        except NotFound:
            return None

    async def _one(self, step: Step) -> tuple[ObjectResult, Obj | None]:
        """Write one object, planning it again after a Conflict or a vanished object."""
        d = step.desired
        assert d is not None
        last: GitkrmError | None = None
        for _ in range(ATTEMPTS):
            try:
                if step.op is Op.CREATE:
                    assert step.body is not None
                    obj = await self._create(step, step.body)
                    return self._result(step, Action.CREATED), obj
                if step.op is Op.PATCH:
                    if step.migrate is not None:
                        migrated = await self.store.patch(
                            self._versioned(step),
                            step.migrate,
                            "json",
                            field_manager=FIELD_MANAGER,
                        )
                        step = self._migrated(step, migrated)
                    obj = await self.store.patch(
                        self._versioned(step),
                        step.patch,
                        step.patch_type,
                        field_manager=FIELD_MANAGER,
                        force=step.patch_type == "apply",
                    )
                    return self._result(step, Action.CONFIGURED), obj
                return self._result(step, _PASSIVE[step.op]), step.live
            except (AlreadyExists, Conflict) as e:
                last = e
            except NotFound as e:
                if step.op is Op.CREATE:  # its namespace, or its kind, is missing
                    return self._result(step, Action.FAILED, e.message), None
                last = e
            except Invalid as e:
                if step.op is Op.PATCH and e.immutable:
                    if d.force:
                        return await self._recreate(step, e)
                    hint = f" (annotate it {keys.FORCE}: enabled to delete and re-create it)"
                    return self._result(step, Action.FAILED, e.message + hint), None
                return self._result(step, Action.FAILED, e.message), None
            except GitkrmError as e:
                return self._result(step, Action.FAILED, e.message), None
            live = await self._get(step)
            step = plan_object(
                d,
                live,
                options=self.options,
                revision=self.revision,
                meta=self.meta,
                planner=self.planner,
                inventory=self.inventory,
            )
        message = last.message if last is not None else "too many attempts"
        failed = self._result(step, Action.FAILED, f"gave up after {ATTEMPTS} attempts: {message}")
        return failed, None

    async def _create(self, step: Step, body: Obj) -> Obj:
        """Create one object: a forced apply in server-side mode (or for the object)."""
        if self.server_side or step.patch_type == "apply":
            return await self.store.patch(
                self._versioned(step), body, "apply", field_manager=FIELD_MANAGER, force=True
            )
        return await self.store.create(body, field_manager=FIELD_MANAGER)

    async def _recreate(self, step: Step, cause: Invalid) -> tuple[ObjectResult, Obj | None]:
        """Delete and create again (gitkrm.io/force: enabled on an immutable change)."""
        d = step.desired
        assert d is not None
        assert step.live is not None
        uid = keys.metadata(step.live).get("uid")
        try:
            await self.store.delete(
                self._versioned(step),
                propagation=Propagation.BACKGROUND,
                preconditions=Preconditions(uid=uid if isinstance(uid, str) else None),
            )
            deadline = time.monotonic() + self.wait_limit
            while await self._get(step) is not None:
                if time.monotonic() > deadline:
                    return self._result(
                        step, Action.FAILED, "deleted to re-create it, but it is still there"
                    ), None
                await asyncio.sleep(_POLL)
            obj = await self._create(step, self.planner.create_body(d))
        except GitkrmError as e:
            return self._result(step, Action.FAILED, f"re-creating it failed: {e.message}"), None
        return self._result(
            step,
            Action.CONFIGURED,
            f"re-created ({keys.FORCE}: enabled): {cause.message}",
        ), obj

    async def _wait_established(
        self,
        plan: Plan,
        writes: Sequence[int],
        results: list[ObjectResult | None],
        out: Applied,
    ) -> None:
        """Custom resources need their CRD served: wait until each CRD written is
        Established (the embedded store establishes in the same write)."""
        for i in writes:
            step = plan.steps[i]
            if step.ref.kind != "CustomResourceDefinition":
                continue
            obj = out.live.get(step.key)
            deadline = time.monotonic() + self.wait_limit
            while obj is not None and not _established(obj):
                if time.monotonic() > deadline:
                    results[i] = self._result(
                        step, Action.FAILED, f"not established after {self.wait_limit:.0f} s"
                    )
                    break
                await asyncio.sleep(_POLL)
                obj = await self._get(step)

    # -- prunes ------------------------------------------------------------------------

    async def _prune(
        self, plan: Plan, indexes: Sequence[int], results: list[ObjectResult | None]
    ) -> None:
        deletes: list[int] = []
        for i in indexes:
            step = plan.steps[i]
            if step.op is Op.PRUNE:
                deletes.append(i)
            else:
                results[i] = self._result(step, Action.SKIPPED)
        if not deletes:
            return
        self.progress("pruning", 0, len(deletes))
        if self.gate is not None:
            waves = _prune_waves(plan, deletes)
            if len(waves) > 1:
                await self._prune_by_wave(plan, waves, results)
                return
        ops = [
            BatchOp(
                op=BatchOpKind.DELETE,
                ref=plan.steps[i].ref,
                propagation=Propagation.BACKGROUND,
                preconditions=Preconditions(uid=plan.steps[i].uid),
            )
            for i in deletes
        ]
        try:
            await self.store.batch(ops, field_manager=FIELD_MANAGER)
        except GitkrmError:
            for i in deletes:
                results[i] = await self._delete_one(plan.steps[i])
        else:
            for i in deletes:
                results[i] = self._result(plan.steps[i], Action.PRUNED)
        self.progress("pruning", len(deletes), len(deletes))

    async def _prune_by_wave(
        self, plan: Plan, waves: list[tuple[int, list[int]]], results: list[ObjectResult | None]
    ) -> None:
        """Prune wave by wave, in reverse (the plan's prune order), each wave gone before
        the next is deleted."""
        assert self.gate is not None
        for n, (wave, indexes) in enumerate(waves):
            for i in indexes:
                results[i] = await self._delete_one(plan.steps[i])
            gone = [
                _with_version(plan.steps[i])
                for i in indexes
                if (r := results[i]) is not None and r.action is Action.PRUNED
            ]
            if n == len(waves) - 1:
                break
            try:
                why = await self.gate.gone(gone, wave)
            except Cancelled:
                self.cancelled = True
                why = "cancelled: a new revision arrived while pruning"
            if why is not None:
                self.stopped = why
                self._stop([i for _, rest in waves[n + 1 :] for i in rest], plan, results, why)
                return

    async def _delete_one(self, step: Step) -> ObjectResult:
        try:
            await self.store.delete(
                step.ref,
                propagation=Propagation.BACKGROUND,
                preconditions=Preconditions(uid=step.uid),
            )
        except NotFound:
            return self._result(step, Action.PRUNED, "already gone")
        except Conflict:
            return self._result(
                step, Action.SKIPPED, "replaced by another object since it was read: left in place"
            )
        except GitkrmError as e:
            return self._result(step, Action.FAILED, f"prune failed: {e.message}")
        return self._result(step, Action.PRUNED)


def _prune_waves(plan: Plan, deletes: Sequence[int]) -> list[tuple[int, list[int]]]:
    """The deletes by wave (read from the live objects), in the plan's (reverse) order."""
    waves: list[tuple[int, list[int]]] = []
    for i in deletes:
        live = plan.steps[i].live
        wave = wave_of(keys.annotations_of(live))[0] if live is not None else 0
        if not waves or waves[-1][0] != wave:
            waves.append((wave, []))
        waves[-1][1].append(i)
    return waves


def _with_version(step: Step) -> ObjectRef:
    """A pruned object's ref at the version it was read at (to watch it go)."""
    r = step.ref
    api_version = str((step.live or {}).get("apiVersion") or "")
    return ObjectRef(
        group=r.group,
        kind=r.kind,
        name=r.name,
        namespace=r.namespace,
        version=api_version.rpartition("/")[2] or None,
    )


_PASSIVE: Final = {
    Op.UNCHANGED: Action.UNCHANGED,
    Op.REFUSE: Action.REFUSED,
    Op.SKIP: Action.SKIPPED,
    Op.FAIL: Action.FAILED,
    Op.ORPHAN: Action.SKIPPED,
    Op.FORGET: Action.SKIPPED,
}
