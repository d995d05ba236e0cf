"""The status of each declaring object: the state of its child, written back in the peer's
own form (`Interpreter.status`), and the statuses of the sources it names.

The tree marks a child's status due when something about it changed (`due`); `flush`
writes every due status that differs from the object's in one batch, and one at a time
(re-read on Conflict) when the batch fails. A kind without a status subresource (Argo CD's
Application) is written with the object.
"""

from __future__ import annotations

import logging

from gitkrm.errors import Conflict, GitkrmError, NotFound
from gitkrm.health import Health, aggregate
from gitkrm.krm import Obj, ObjectRef, ResourceKey
from gitkrm.store import BatchOp, BatchOpKind, Store
from gitkrm.store.protocol import meta

from . import sourcewrites
from .child import Child, Host
from .model import ChildState, Phase, SourceStatus
from .naming import describe

log = logging.getLogger("gitkrm.agent")


class Statuses:
    """See the module docstring. `children` is the tree's own map (read, never changed)."""

    def __init__(self, host: Host, *, store: Store, children: dict[ResourceKey, Child]) -> None:
        self._host = host
        self._store = store
        self._children = children
        self.written: set[int] = set()
        """Store revisions of the tree's writes (finalizers, statuses): the agent's own."""
        self._due: set[ResourceKey] = set()
        self._whole: set[tuple[str, str]] = set()
        """(group, kind) of declaring kinds without a status subresource (Argo CD's
        Application): their status is written with the object (`update`)."""

    def due(self, key: ResourceKey) -> None:
        """The child's state changed: its status is written at the next `flush`."""
        self._due.add(key)

    def drop(self, key: ResourceKey) -> None:
        """The child is gone: no status of it is written."""
        self._due.discard(key)

    def state(self, child: Child) -> ChildState:
        """What the child's source did, as the declaring object's status shows it."""
        runner = child.runner
        if child.mirrors_parent:
            runner = self._host.runner(child.parent)
        outcome = None if runner is None else runner.last_outcome
        verdicts = [] if runner is None else [h.status for h in runner.health.values()]
        health = aggregate(verdicts) if verdicts else None
        spec = child.spec
        failed = child.health_failed
        if failed is not None and (
            outcome is None or failed[0] != outcome.revision or health is Health.CURRENT
        ):
            failed = None  # another revision since, or Current now
        if child.deleting:
            phase = Phase.DELETING
        elif child.error is not None:
            phase = Phase.FAILED  # its object can't be read: nothing syncs until it changes
        elif spec is not None and spec.refused:
            phase = Phase.REFUSED
        elif child.waiting_for:
            phase = Phase.PENDING
        elif runner is not None and runner.config.suspend:
            phase = Phase.SUSPENDED
        elif outcome is None:
            phase = Phase.SYNCING
        elif not outcome.succeeded:
            phase = Phase.FAILED
        elif failed is not None:
            phase, health = Phase.SYNCED, Health.FAILED  # its wait on health timed out
        elif spec is not None and spec.wait and health not in (None, Health.CURRENT):
            phase = Phase.SYNCING
        else:
            phase = Phase.SYNCED
        not_current = sum(1 for v in verdicts if v is not Health.CURRENT)
        counted = f"{not_current} object(s) not Current" if not_current else ""
        last = None if runner is None else runner.source.last
        resolved = (
            last.ref
            if last is not None and outcome is not None and last.revision == outcome.revision
            else None
        )
        return ChildState(
            phase=phase,
            outcome=outcome,
            health=health,
            health_message=failed[1] if failed is not None else counted,
            inventory=() if runner is None else runner.applied,
            object_health={} if runner is None else {r: h.status for r, h in runner.health.items()},
            waiting_for=child.waiting_for,
            unhonoured=() if spec is None else spec.unhonoured,
            error=child.error,
            observed_generation=int(meta(child.obj).get("generation") or 0) or None,
            resolved_ref=resolved,
            spec=spec,
            details=getattr(runner.source, "details", None) or {} if runner is not None else {},
        )

    async def flush(self) -> None:
        """Write the status of every declaring object whose state changed: one batch,
        only the statuses that differ from what the object has."""
        due, self._due = self._due, set()
        ops: list[tuple[Child, Obj]] = []
        sources: list[SourceStatus] = []
        for key in due:
            child = self._children.get(key)
            if child is None:
                continue
            state = self.state(child)
            sources.extend(child.interpreter.source_statuses(child.obj, state))
            if state.phase is Phase.SYNCING and state.outcome is None and child.obj.get("status"):
                continue  # not synced yet in this term: its last status stands until it is
            status = child.interpreter.status(child.obj, state)
            if status != child.obj.get("status"):
                ops.append((child, {**child.obj, "status": status}))
        if sources:
            await sourcewrites.write(
                self._store, sources, write_status=self._write_status, wrote=self.wrote
            )
        if not ops:
            return
        try:
            written = await self._store.batch(
                [BatchOp(op=self._status_op(child.ref), obj=body) for child, body in ops]
            )
        except GitkrmError:
            for child, _ in ops:
                await self._write_one(child)
            return
        for (child, _), obj in zip(ops, written, strict=True):
            child.obj = obj
            self.wrote(obj)

    async def _write_one(self, child: Child) -> None:
        for _ in range(3):
            try:
                child.obj = await self._store.get(child.ref)
                status = child.interpreter.status(child.obj, self.state(child))
                if status == child.obj.get("status"):
                    return
                written = await self._write_status({**child.obj, "status": status}, child.ref)
            except Conflict:
                continue
            except GitkrmError as e:
                log.error("%s: status not written: %s", describe(child.ref), e.message)
                return
            child.obj = written
            self.wrote(written)
            return

    def _status_op(self, ref: ObjectRef) -> BatchOpKind:
        whole = (ref.group, ref.kind) in self._whole
        return BatchOpKind.UPDATE if whole else BatchOpKind.UPDATE_STATUS

    async def _write_status(self, body: Obj, ref: ObjectRef) -> Obj:
        """Through the status subresource, or with the object when its kind has none (the
        store says NotFound for the subresource of an object that exists)."""
        if (ref.group, ref.kind) in self._whole:
            return await self._store.update(body)
        try:
            return await self._store.update_status(body)
        except NotFound:
            written = await self._store.update(body)
            self._whole.add((ref.group, ref.kind))
            return written

    def wrote(self, obj: Obj) -> None:
        """Keep the revision of one of the tree's writes."""
        rv = str(meta(obj).get("resourceVersion") or "")
        if rv.isdigit():
            self.written.add(int(rv))
