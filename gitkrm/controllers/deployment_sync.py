"""The state and the writes of one Deployment sync (pkg/controller/deployment/sync.go):
finding the new ReplicaSet, revisions, scaling (proportional for a scaling event), history
cleanup, and the rollout status with its progress deadline. The strategies that use it are
in deployment.py."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from gitkrm.cache.informer import Informer
from gitkrm.controllers import deployment_status as ds
from gitkrm.controllers import rollout
from gitkrm.controllers.objects import (
    annotations_of,
    being_deleted,
    controller_ref,
    uid,
    with_status,
)
from gitkrm.controllers.revisions import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    REVISION,
    REVISION_HISTORY,
    by_creation,
    copied_annotations,
    max_revision,
    new_replica_set,
    revision,
    same_template,
    template_hash,
    with_old_revision,
)
from gitkrm.controllers.writer import Writer, ref_of
from gitkrm.errors import AlreadyExists, Conflict, NotFound
from gitkrm.krm import Obj
from gitkrm.krm.clock import WALL, Clock
from gitkrm.krm.conditions import conditions_of, get_condition
from gitkrm.store.events import EventSink
from gitkrm.store.protocol import Propagation, Store


class DeploymentSync:
    """One reconcile of one Deployment: the Deployment and its ReplicaSets as they are
    after each write of this reconcile."""

    def __init__(
        self,
        *,
        writer: Writer,
        cache: Informer,
        store: Store,
        d: Obj,
        sets: list[Obj],
        events: EventSink,
        clock: Clock = WALL,
    ) -> None:
        self.writer = writer
        self.events = events
        self.clock = clock
        self.cache = cache
        self.store = store
        self.d = d
        self.stored_status = d.get("status") or {}
        self.sets = {rs["metadata"]["name"]: rs for rs in sets}

    def split(self) -> tuple[Obj | None, list[Obj]]:
        """FindNewReplicaSet and FindOldReplicaSets."""
        template = (self.d.get("spec") or {}).get("template") or {}
        matching = sorted(
            (
                rs
                for rs in self.sets.values()
                if same_template((rs.get("spec") or {}).get("template") or {}, template)
            ),
            key=by_creation,
        )
        new = matching[0] if matching else None
        old = [rs for rs in self.sets.values() if rs is not new]
        return new, sorted(old, key=by_creation)

    # -- writes ----------------------------------------------------------------------------

    async def update_rs(self, rs: Obj) -> Obj:
        out = await self.writer.update(rs)
        self.sets[out["metadata"]["name"]] = out
        return out

    async def scale(self, rs: Obj, replicas: int) -> tuple[bool, Obj]:
        """scaleReplicaSet: size and the desired/max-replicas annotations."""
        d = self.d
        desired = rollout.spec_replicas(d)
        notes = dict(annotations_of(rs))
        want_notes = {
            DESIRED_REPLICAS: str(desired),
            MAX_REPLICAS: str(desired + rollout.max_surge(d)),
        }
        size = rollout.spec_replicas(rs)
        size_changed = size != replicas
        notes_changed = any(notes.get(k) != v for k, v in want_notes.items())
        if not size_changed and not notes_changed:
            return False, rs
        notes.update(want_notes)
        new = dict(rs)
        new["metadata"] = {**rs["metadata"], "annotations": notes}
        new["spec"] = {**(rs.get("spec") or {}), "replicas": replicas}
        out = await self.update_rs(new)
        if size_changed:
            self._scaled(out, size, replicas)
        return size_changed, out

    def _scaled(self, rs: Obj, old: int, new: int) -> None:
        """kube's ScalingReplicaSet event on the Deployment."""
        direction = "up" if new > old else "down"
        self.events.normal(
            self.d,
            "ScalingReplicaSet",
            f"Scaled {direction} replica set {rs['metadata']['name']} from {old} to {new}",
        )

    def stage_status(self, status: Mapping[str, object]) -> None:
        """A status change that the next write_status (or flush) writes: kube writes some
        conditions on their own, one write here saves a revision per Deployment."""
        self.d = with_status(self.d, status)

    async def write_status(self, status: Mapping[str, object]) -> None:
        if status == self.stored_status:
            self.d = with_status(self.d, status)
            return
        self.d = await self.writer.update_status(with_status(self.d, status))
        self.stored_status = self.d.get("status") or {}

    async def flush(self) -> None:
        await self.write_status(self.d.get("status") or {})

    # -- revisions and the new ReplicaSet --------------------------------------------------

    async def all_sets(self, create: bool) -> tuple[Obj | None, list[Obj]]:
        """getAllReplicaSetsAndSyncRevision."""
        new, old = self.split()
        new_revision = max_revision(old) + 1
        d = self.d
        if new is not None:
            notes = dict(annotations_of(new))
            changed = False
            for k, v in copied_annotations(d).items():
                if notes.get(k) != v:
                    notes[k] = v
                    changed = True
            if revision(new) < new_revision:
                if REVISION in notes:  # a rollback to this ReplicaSet
                    notes[REVISION_HISTORY] = with_old_revision(notes)
                notes[REVISION] = str(new_revision)
                changed = True
            min_ready = (d.get("spec") or {}).get("minReadySeconds")
            spec = dict(new.get("spec") or {})
            if spec.get("minReadySeconds") != min_ready:
                if min_ready:
                    spec["minReadySeconds"] = min_ready
                else:
                    spec.pop("minReadySeconds", None)
                changed = True
            if changed:
                new = await self.update_rs(
                    {**new, "metadata": {**new["metadata"], "annotations": notes}, "spec": spec}
                )
            await self.sync_revision(str(revision(new)))
            if ds.has_deadline(self.d) and get_condition(self.d, ds.PROGRESSING) is None:
                msg = f'Found new replica set "{new["metadata"]["name"]}"'
                conds = ds.set_condition(
                    conditions_of(self.d),
                    ds.condition(
                        ds.PROGRESSING, "True", ds.FOUND_NEW_RS, msg, now=self.clock.time()
                    ),
                )
                self.stage_status({**(self.d.get("status") or {}), "conditions": conds})
            return new, old
        if not create:
            return None, old
        return await self._create_new(old, new_revision), old

    async def sync_revision(self, value: str) -> None:
        """The Deployment carries the revision of its newest ReplicaSet."""
        if annotations_of(self.d).get(REVISION) == value:
            return
        notes = {**annotations_of(self.d), REVISION: value}
        self.d = await self.writer.update(
            {**self.d, "metadata": {**self.d["metadata"], "annotations": notes}}
        )

    async def _create_new(self, old: list[Obj], new_revision: int) -> Obj:
        d = self.d
        template = (d.get("spec") or {}).get("template") or {}
        collisions = (d.get("status") or {}).get("collisionCount")
        value = template_hash(template, collisions)
        rs = new_replica_set(d, value, 0, new_revision, rollout.max_surge(d))
        rs["spec"]["replicas"] = rollout.new_rs_replicas(d, [*old, rs], rs)
        try:
            created = await self.writer.create(rs)
        except AlreadyExists:
            name = rs["metadata"]["name"]
            existing = self.cache.get(d["metadata"].get("namespace"), name)
            if existing is None:
                existing = await self.store.get(ref_of(rs))
            ref = controller_ref(existing)
            if (
                ref is not None
                and ref.get("uid") == uid(d)
                and same_template((existing.get("spec") or {}).get("template") or {}, template)
            ):
                self.sets[name] = existing
                return existing
            # A hash collision: count it, and a new name comes with the next sync.
            status = dict(d.get("status") or {})
            status["collisionCount"] = int(collisions or 0) + 1
            await self.write_status(status)
            raise Conflict(
                f'hash collision for ReplicaSet "{name}" of deployment "{d["metadata"]["name"]}"'
            ) from None
        self.sets[created["metadata"]["name"]] = created
        if rollout.spec_replicas(created) > 0:
            self._scaled(created, 0, rollout.spec_replicas(created))
        await self.sync_revision(str(new_revision))
        if ds.has_deadline(self.d):
            msg = f'Created new replica set "{created["metadata"]["name"]}"'
            conds = ds.set_condition(
                conditions_of(self.d),
                ds.condition(ds.PROGRESSING, "True", ds.NEW_RS_CREATED, msg, now=self.clock.time()),
            )
            self.stage_status({**(self.d.get("status") or {}), "conditions": conds})
        return created

    # -- strategies ------------------------------------------------------------------------

    async def scale_only(self) -> float | None:
        """sync: a scaling event or a paused Deployment."""
        new, old = await self.all_sets(create=False)
        await self.proportional(new, old)
        if (self.d.get("spec") or {}).get("paused"):
            await self.cleanup(self.split()[1])
        new, old = self.split()
        all_sets = [*old, *([new] if new is not None else [])]
        await self.write_status(ds.calculate(self.d, all_sets, new, now=self.clock.time()))
        return None

    async def proportional(self, new: Obj | None, old: list[Obj]) -> None:
        """scale: one active ReplicaSet takes the new size; otherwise the extra (or missing)
        replicas are shared in proportion to the ReplicaSets' sizes."""
        d = self.d
        desired = rollout.spec_replicas(d)
        everything = [*old, *([new] if new is not None else [])]
        live = rollout.active(everything)
        if len(live) <= 1:
            target = live[0] if live else (new if new is not None else (old[-1] if old else None))
            if target is not None and rollout.spec_replicas(target) != desired:
                await self.scale(target, desired)
            elif target is not None:
                await self.scale(target, desired)  # annotations
            return
        if rollout.saturated(d, new):
            for rs in rollout.active(old):
                await self.scale(rs, 0)
            return
        if not rollout.is_rolling(d):
            return
        allowed = desired + rollout.max_surge(d) if desired > 0 else 0
        to_add = allowed - rollout.total(live)
        if to_add > 0:
            # ReplicaSetsBySizeNewer: the largest first, the newest among equals.
            live.sort(key=lambda rs: (-rollout.spec_replicas(rs), -by_creation(rs)[0]))
        else:  # ReplicaSetsBySizeOlder
            live.sort(key=lambda rs: (-rollout.spec_replicas(rs), by_creation(rs)))
        added = 0
        sizes: dict[str, int] = {}
        for rs in live:
            if to_add != 0:
                share = rollout.proportion(d, rs, to_add, added)
                sizes[rs["metadata"]["name"]] = rollout.spec_replicas(rs) + share
                added += share
            else:
                sizes[rs["metadata"]["name"]] = rollout.spec_replicas(rs)
        if added < to_add or (to_add < 0 and added > to_add):
            first = live[0]["metadata"]["name"]
            sizes[first] = max(0, sizes[first] + to_add - added)
        for rs in live:
            await self.scale(self.sets[rs["metadata"]["name"]], sizes[rs["metadata"]["name"]])

    def scaling_event(self, new: Obj | None, old: list[Obj]) -> bool:
        desired = rollout.spec_replicas(self.d)
        for rs in rollout.active([*old, *([new] if new is not None else [])]):
            want = rollout.int_annotation(rs, DESIRED_REPLICAS)
            if want is not None and want != desired:
                return True
        return False

    async def cleanup(self, old: list[Obj]) -> None:
        """Delete the oldest idle ReplicaSets beyond revisionHistoryLimit."""
        limit = (self.d.get("spec") or {}).get("revisionHistoryLimit")
        if not isinstance(limit, int):
            return
        cleanable = [rs for rs in old if not being_deleted(rs)]
        extra = len(cleanable) - limit
        if extra <= 0:
            return
        cleanable.sort(key=lambda rs: (revision(rs), by_creation(rs)))
        for rs in cleanable[:extra]:
            status = rs.get("status") or {}
            gen = int(rs["metadata"].get("generation") or 0)
            if (
                rollout.status_int(rs, "replicas") != 0
                or rollout.spec_replicas(rs) != 0
                or gen > int(status.get("observedGeneration") or 0)
            ):
                continue
            with contextlib.suppress(NotFound):
                await self.writer.delete(ref_of(rs), propagation=Propagation.BACKGROUND)
            self.sets.pop(rs["metadata"]["name"], None)

    async def rollout_status(self) -> float | None:
        new, old = self.split()
        all_sets = [*old, *([new] if new is not None else [])]
        now = self.clock.time()
        status = ds.rollout_status(self.d, all_sets, new, now)
        await self.write_status(status)
        return ds.requeue_after(self.d, status, now)

    async def paused_conditions(self) -> None:
        """checkPausedConditions: Progressing=Unknown while paused, and once resumed."""
        d = self.d
        if not ds.has_deadline(d):
            return
        cond = get_condition(d, ds.PROGRESSING)
        if cond is not None and cond.get("reason") == ds.TIMED_OUT:
            return
        paused = bool((d.get("spec") or {}).get("paused"))
        exists = cond is not None and cond.get("reason") == ds.PAUSED
        now = self.clock.time()
        if paused and not exists:
            new = ds.condition(
                ds.PROGRESSING, "Unknown", ds.PAUSED, "Deployment is paused", now=now
            )
        elif not paused and exists:
            msg = "Deployment is resumed"
            new = ds.condition(ds.PROGRESSING, "Unknown", ds.RESUMED, msg, now=now)
        else:
            return
        conds = ds.set_condition(conditions_of(d), new)
        self.stage_status({**(d.get("status") or {}), "conditions": conds})
