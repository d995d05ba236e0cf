"""The Deployment controller (pkg/controller/deployment): ReplicaSets per pod template.

Each template gets a ReplicaSet named `<deployment>-<pod-template-hash>`; RollingUpdate
grows the new one and shrinks the old ones within maxSurge and maxUnavailable, Recreate
scales the old ones to zero and waits for their pods to be gone first. A change of only
spec.replicas (the scale subresource writes it) scales the ReplicaSets proportionally
without a rollout; a paused Deployment only scales. Old ReplicaSets beyond
revisionHistoryLimit are deleted. Status carries the counts and the Available and
Progressing conditions; a rollout that makes no progress for progressDeadlineSeconds gets
Progressing=False, reason ProgressDeadlineExceeded.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from gitkrm.controllers import deployment_status as ds
from gitkrm.controllers import rollout
from gitkrm.controllers.informer import Key, key_of
from gitkrm.controllers.kinds import DEPLOYMENT, POD, REPLICASET
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    annotations_of,
    being_deleted,
    conditions_of,
    controller_ref,
    get_condition,
    labels,
    owner_index,
    pod_terminal,
    uid,
    with_status,
)
from gitkrm.controllers.pods import ORPHAN_INDEX, claim, orphan_index
from gitkrm.controllers.revisions import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    REVISION,
    by_creation,
    copied_annotations,
    max_revision,
    new_replica_set,
    revision,
    same_template,
    template_hash,
)
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.selectors import selector_of
from gitkrm.controllers.writer import ref_of
from gitkrm.errors import AlreadyExists, Conflict, NotFound
from gitkrm.krm import Obj
from gitkrm.store.protocol import Propagation


class _Sync:
    """One reconcile of one Deployment: the Deployment and its ReplicaSets as they are
    after each write of this reconcile."""

    def __init__(self, ctl: DeploymentController, d: Obj, sets: list[Obj]) -> None:
        self.ctl = ctl
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
        out = await self.ctl.writer.update(rs)
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
        size_changed = rollout.spec_replicas(rs) != replicas
        notes_changed = any(notes.get(k) != v for k, v in want_notes.items())
        if not size_changed and not notes_changed:
            return False, rs
        notes.update(want_notes)
        new = dict(rs)
        new["metadata"] = {**rs["metadata"], "annotations": notes}
        new["spec"] = {**(rs.get("spec") or {}), "replicas": replicas}
        out = await self.update_rs(new)
        return size_changed, out

    def stage_status(self, status: dict[str, Any]) -> None:
        """A status change that the next write_status (or flush) writes: kube writes some
        conditions on their own, one write here saves a revision per Deployment."""
        self.d = with_status(self.d, status)

    async def write_status(self, status: dict[str, Any]) -> None:
        if status == self.stored_status:
            self.d = with_status(self.d, status)
            return
        self.d = await self.ctl.writer.update_status(with_status(self.d, status))
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
                    ds.condition(ds.PROGRESSING, "True", ds.FOUND_NEW_RS, msg),
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
        self.d = await self.ctl.writer.update(
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
            created = await self.ctl.writer.create(rs)
        except AlreadyExists:
            name = rs["metadata"]["name"]
            existing = self.ctl.sets.get(d["metadata"].get("namespace"), name)
            if existing is None:
                existing = await self.ctl.ctx.store.get(ref_of(rs))
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
        await self.sync_revision(str(new_revision))
        if ds.has_deadline(self.d):
            msg = f'Created new replica set "{created["metadata"]["name"]}"'
            conds = ds.set_condition(
                conditions_of(self.d), ds.condition(ds.PROGRESSING, "True", ds.NEW_RS_CREATED, msg)
            )
            self.stage_status({**(self.d.get("status") or {}), "conditions": conds})
        return created

    # -- strategies ------------------------------------------------------------------------

    async def rolling(self) -> float | None:
        new, old = await self.all_sets(create=True)
        assert new is not None
        if await self.reconcile_new(new):
            return await self.rollout_status()
        new, old = self.split()
        assert new is not None
        if await self.reconcile_old(new, old):
            return await self.rollout_status()
        if rollout.complete(self.d, self.d.get("status") or {}):
            await self.cleanup(old)
        return await self.rollout_status()

    async def reconcile_new(self, new: Obj) -> bool:
        desired = rollout.spec_replicas(self.d)
        current = rollout.spec_replicas(new)
        if current == desired:
            return False
        if current > desired:
            scaled, _ = await self.scale(new, desired)
            return scaled
        _, old = self.split()
        count = rollout.new_rs_replicas(self.d, [*old, new], new)
        scaled, _ = await self.scale(new, count)
        return scaled

    async def reconcile_old(self, new: Obj, old: list[Obj]) -> bool:
        d = self.d
        if rollout.total(old) == 0:
            return False
        all_count = rollout.total([*old, new])
        min_available = rollout.spec_replicas(d) - rollout.max_unavailable(d)
        new_unavailable = rollout.spec_replicas(new) - rollout.status_int(new, "availableReplicas")
        max_down = all_count - min_available - new_unavailable
        if max_down <= 0:
            return False
        cleaned = await self._cleanup_unhealthy(old, max_down)
        _, old = self.split()
        new_now, _ = self.split()
        scaled = await self._scale_down_old(old, new_now)
        return cleaned + scaled > 0

    async def _cleanup_unhealthy(self, old: list[Obj], limit: int) -> int:
        done = 0
        for rs in sorted(old, key=by_creation):
            if done >= limit:
                break
            replicas = rollout.spec_replicas(rs)
            avail = rollout.status_int(rs, "availableReplicas")
            if replicas == 0 or replicas == avail:
                continue
            down = min(limit - done, replicas - avail)
            await self.scale(rs, replicas - down)
            done += down
        return done

    async def _scale_down_old(self, old: list[Obj], new: Obj | None) -> int:
        d = self.d
        min_available = rollout.spec_replicas(d) - rollout.max_unavailable(d)
        all_sets = [*old, *([new] if new is not None else [])]
        available = rollout.available(all_sets)
        if available <= min_available:
            return 0
        budget = available - min_available
        done = 0
        for rs in sorted(old, key=by_creation):
            if done >= budget:
                break
            replicas = rollout.spec_replicas(rs)
            if replicas == 0:
                continue
            down = min(replicas, budget - done)
            await self.scale(rs, replicas - down)
            done += down
        return done

    async def recreate(self) -> float | None:
        new, old = await self.all_sets(create=False)
        scaled = False
        for rs in rollout.active(old):
            s, _ = await self.scale(rs, 0)
            scaled = scaled or s
        if scaled:
            return await self.rollout_status()
        if self.old_pods_running():
            return await self.rollout_status()
        if new is None:
            new, old = await self.all_sets(create=True)
        assert new is not None
        await self.scale(new, rollout.spec_replicas(self.d))
        if rollout.complete(self.d, self.d.get("status") or {}):
            await self.cleanup(self.split()[1])
        return await self.rollout_status()

    def old_pods_running(self) -> bool:
        _, old = self.split()
        if rollout.actual(old) > 0:
            return True
        for rs in old:
            for pod in self.ctl.pods.by_index(OWNER_INDEX, uid(rs)):
                if not pod_terminal(pod):
                    return True
        return False

    async def scale_only(self) -> float | None:
        """sync: a scaling event or a paused Deployment."""
        new, old = await self.all_sets(create=False)
        await self.proportional(new, old)
        if (self.d.get("spec") or {}).get("paused"):
            await self.cleanup(self.split()[1])
        new, old = self.split()
        all_sets = [*old, *([new] if new is not None else [])]
        await self.write_status(ds.calculate(self.d, all_sets, new))
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
                await self.ctl.writer.delete(ref_of(rs), propagation=Propagation.BACKGROUND)
            self.sets.pop(rs["metadata"]["name"], None)

    async def rollout_status(self) -> float | None:
        new, old = self.split()
        all_sets = [*old, *([new] if new is not None else [])]
        now = time.time()
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
        if paused and not exists:
            new = ds.condition(ds.PROGRESSING, "Unknown", ds.PAUSED, "Deployment is paused")
        elif not paused and exists:
            new = ds.condition(ds.PROGRESSING, "Unknown", ds.RESUMED, "Deployment is resumed")
        else:
            return
        conds = ds.set_condition(conditions_of(d), new)
        self.stage_status({**(d.get("status") or {}), "conditions": conds})


class DeploymentController(Controller):
    name = "deployment"
    batch = 50

    def setup(self) -> None:
        self.deployments = self.watch(DEPLOYMENT, primary=True)
        self.sets = self.watch(REPLICASET)
        self.sets.add_index(OWNER_INDEX, owner_index)
        self.sets.add_index(ORPHAN_INDEX, orphan_index)
        self.sets.add_handler(self._on_rs)
        self.pods = self.watch(POD)
        self.pods.add_index(OWNER_INDEX, owner_index)
        self.pods.add_handler(self._on_pod)

    def _on_rs(self, old: Obj | None, new: Obj | None) -> None:
        for obj in (old, new):
            if obj is None:
                continue
            ref = controller_ref(obj)
            ns = obj["metadata"].get("namespace") or ""
            if ref is not None:
                if ref.get("kind") == "Deployment":
                    self.queue.add((ns, str(ref.get("name"))))
            elif obj is new:
                for d in self.deployments.objects(ns):
                    if selector_of(d).matches(labels(obj)):
                        self.queue.add(key_of(d))

    def _on_pod(self, old: Obj | None, new: Obj | None) -> None:
        # Recreate waits for the old pods to be gone.
        if new is not None or old is None:
            return
        ref = controller_ref(old)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        ns = old["metadata"].get("namespace") or ""
        rs = self.sets.get(ns, str(ref.get("name")))
        owner = controller_ref(rs) if rs is not None else None
        if owner is None or owner.get("kind") != "Deployment":
            return
        d = self.deployments.get(ns, str(owner.get("name")))
        if d is not None and not rollout.is_rolling(d):
            self.queue.add(key_of(d))

    async def reconcile(self, key: Key) -> float | None:
        d = self.deployments.get_key(key)
        if d is None:
            return None
        sets = await claim(self.writer, self.sets, d, selector_of(d))
        sync = _Sync(self, d, sets)
        if being_deleted(d):
            new, old = sync.split()
            all_sets = [*old, *([new] if new is not None else [])]
            await sync.write_status(ds.calculate(sync.d, all_sets, new))
            return None
        await sync.paused_conditions()
        if (sync.d.get("spec") or {}).get("paused"):
            again = await sync.scale_only()
        else:
            new, old = await sync.all_sets(create=False)
            if sync.scaling_event(new, old):
                again = await sync.scale_only()
            elif rollout.is_rolling(sync.d):
                again = await sync.rolling()
            else:
                again = await sync.recreate()
        await sync.flush()
        return again
