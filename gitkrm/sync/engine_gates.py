"""The health gates an engine's sync waits on, built from its settings and its revision.

A sync waits between the waves or depends-on levels of a revision that has them (their
groups computed once per render), between the waves of its prunes, and for every synced
object before PostSync hooks, all within `healthTimeout` and cancellable by a new
revision. Jobs of the synced revision that delete themselves count as done once gone.
"""

from __future__ import annotations

import asyncio

from gitkrm.health.kinds import deletes_itself
from gitkrm.krm import ObjectRef, ResourceKey
from gitkrm.sync.engine_parts import EngineParts
from gitkrm.sync.gates import Cancelled, Gate, GroupKey, levels, uses_gates
from gitkrm.sync.progress import ProgressFn, no_progress
from gitkrm.sync.render import RenderResult
from gitkrm.sync.results import Action, SyncResult


class EngineGates:
    """Makes the gates of one engine's syncs (see the module docstring)."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts
        self._ttl_jobs: tuple[RenderResult | None, frozenset[ResourceKey]] = (None, frozenset())

    def jobs_with_ttl(self) -> frozenset[ResourceKey]:
        """The Jobs of the synced revision whose manifest sets ttlSecondsAfterFinished: once
        gone they are done, for health and `--wait` (decoded once per revision)."""
        synced = self._parts.memo.synced
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

    def for_sync(
        self, rendered: RenderResult, *, cancel: asyncio.Event | None, progress: ProgressFn
    ) -> Gate:
        """The health gates of a sync: between waves when the revision has waves (None
        groups: none), and between the waves of the prunes, read from the live objects."""
        return self._gate(cancel=cancel, groups=self._groups(rendered), progress=progress)

    async def all_healthy(self, result: SyncResult, cancel: asyncio.Event | None) -> str | None:
        """Wait for every object of the sync to be healthy (before PostSync hooks)."""
        refs = [
            ObjectRef(
                group=o.ref.group,
                kind=o.ref.kind,
                name=o.ref.name,
                namespace=o.ref.namespace,
                version=self._parts.read_gvk(o.ref).version or None,
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
        parts = self._parts
        return Gate(
            parts.store,
            groups,
            timeout=parts.options.health_timeout,
            deadline=parts.options.deadline,
            cache=parts.cache,
            cancel=cancel,
            ttl_jobs=self.jobs_with_ttl(),
            on_wait=lambda what: progress(f"waiting for {what}", None, None),
            before_wait=parts.before_wait,
            checks=parts.options.health_checks,
        )

    def _groups(self, rendered: RenderResult) -> dict[str, GroupKey] | None:
        """The revision's health-gate groups, None when it is not gated (once per render)."""
        memo = self._parts.memo
        if memo.gates[0] is not rendered:
            found = levels(rendered.objects) if uses_gates(rendered.objects) else None
            memo.gates = (rendered, found)
        return memo.gates[1]
