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

from gitkrm.cache.informer import Key, key_of
from gitkrm.controllers import deployment_status as ds
from gitkrm.controllers import rollout
from gitkrm.controllers.deployment_sync import DeploymentSync
from gitkrm.controllers.kinds import DEPLOYMENT, POD, REPLICASET
from gitkrm.controllers.objects import (
    OWNER_INDEX,
    being_deleted,
    controller_ref,
    labels,
    pod_terminal,
    uid,
)
from gitkrm.controllers.pods import claim
from gitkrm.controllers.revisions import by_creation
from gitkrm.controllers.runtime import Controller
from gitkrm.controllers.selectors import selector_of
from gitkrm.krm import Obj


class _Sync(DeploymentSync):
    """The rollout strategies (rolling.go, recreate.go) on top of the sync state."""

    def __init__(self, ctl: DeploymentController, d: Obj, sets: list[Obj]) -> None:
        super().__init__(
            writer=ctl.writer,
            cache=ctl.sets,
            store=ctl.ctx.store,
            d=d,
            sets=sets,
            events=ctl.events,
            clock=ctl.clock,
        )
        self.pods = ctl.pods

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
            for pod in self.pods.by_index(OWNER_INDEX, uid(rs)):
                if not pod_terminal(pod):
                    return True
        return False


class DeploymentController(Controller):
    name = "deployment"
    component = "deployment-controller"
    batch = 50

    def setup(self) -> None:
        self.deployments = self.watch(DEPLOYMENT, primary=True)
        self.sets = self.watch_owned(REPLICASET, claiming=True)
        self.sets.add_handler(self._on_rs)
        self.pods = self.watch_owned(POD)
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
            await sync.write_status(ds.calculate(sync.d, all_sets, new, now=self.clock.time()))
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
