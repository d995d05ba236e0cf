"""Running hooks: the objects of one phase created, waited for, and deleted by policy.

The hooks of a phase run wave by wave (`argocd.argoproj.io/sync-wave`); the hooks of one
wave are created together and waited for together: a Job or Pod until it completed
(Argo CD's health of a Job), anything else until Current, within the source's health
timeout. Delete policies: BeforeHookCreation (the default) deletes the object left by an
earlier run of a hook with a fixed name before creating it; HookSucceeded and HookFailed
delete the hook's object once it succeeded or failed. A hook with only
`metadata.generateName` gets a new name on every run. A phase stops at its first wave
with a failed hook.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from gitkrm.cache import WatchCache
from gitkrm.errors import AlreadyExists, GitkrmError, NotFound
from gitkrm.health.expressions import HealthChecks
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Preconditions, Propagation, Store
from gitkrm.sync import keys
from gitkrm.sync.desired import Desired
from gitkrm.sync.gates import Cancelled, budget, wait_healthy
from gitkrm.sync.hooks import DeletePolicy, HookRun, HookState, Phase, policies_of
from gitkrm.sync.serverside import FIELD_MANAGER

_POLL: Final = 0.05


@dataclass(slots=True)
class PhaseRunner:
    """Runs the hooks of one revision (see the module docstring)."""

    store: Store
    revision: str
    timeout: float
    deadline: float | None = None  # the run's end (`gates.budget`)
    cache: WatchCache | None = None
    cancel: asyncio.Event | None = None
    before_wait: Callable[[], Awaitable[None]] | None = None  # e.g. start the controllers
    checks: HealthChecks | None = None  # the source's healthCheckExprs

    async def run(self, phase: Phase, hooks: Sequence[Desired]) -> tuple[HookRun, ...]:
        """Run the hooks of `phase` wave by wave; stops after a wave with a failure."""
        runs: list[HookRun] = []
        waves: dict[int, list[Desired]] = {}
        for d in hooks:
            waves.setdefault(d.wave, []).append(d)
        for wave in sorted(waves):
            done = await self._wave(phase, waves[wave])
            runs.extend(done)
            if not all(r.ok for r in done):
                break
        return tuple(runs)

    async def _wave(self, phase: Phase, hooks: Sequence[Desired]) -> list[HookRun]:
        started: list[tuple[Desired, ObjectRef]] = []
        runs: list[HookRun] = []
        for d in hooks:
            try:
                started.append((d, await self._create(d)))
            except GitkrmError as e:
                runs.append(self._run(phase, d, d.ref, HookState.FAILED, e.message))
        if started:
            refs = [ref for _, ref in started]
            limit = budget(self.timeout, self.deadline)
            try:
                result = await wait_healthy(self, refs, timeout=limit)
            except Cancelled:
                return runs + [
                    self._run(phase, d, ref, HookState.FAILED, "cancelled: a new revision arrived")
                    for d, ref in started
                ]
            for d, ref in started:
                h = result.results.get(ref)
                ok = h is not None and ref not in dict(result.pending)
                message = h.message if h is not None else ""
                if not ok and result.timed_out and ref in dict(result.pending):
                    message = f"not done within {limit:g}s: {message}"
                state = HookState.SUCCEEDED if ok else HookState.FAILED
                runs.append(await self._finish(self._run(phase, d, ref, state, message), d))
        return runs

    def _run(
        self, phase: Phase, d: Desired, ref: ObjectRef, state: HookState, message: str
    ) -> HookRun:
        return HookRun(phase, ref, state, message, d.path, d.line)

    async def _create(self, d: Desired) -> ObjectRef:
        """Create the hook's object (after deleting an earlier run's, by policy)."""
        body = d.obj
        md = body.setdefault("metadata", {})
        md.setdefault("annotations", {})[keys.REVISION] = self.revision
        named = bool(md.get("name"))
        ref = self._ref(d, d.ref.name)
        if named and DeletePolicy.BEFORE_HOOK_CREATION in policies_of(d):
            await self._delete(ref, wait=True)
        try:
            created = await self.store.create(body, field_manager=FIELD_MANAGER)
        except AlreadyExists:
            return ref  # an earlier run's object, kept by its policy: waited for as it is
        return self._ref(d, str(keys.metadata(created).get("name") or d.ref.name))

    @staticmethod
    def _ref(d: Desired, name: str) -> ObjectRef:
        r = d.ref
        return ObjectRef(
            group=r.group, kind=r.kind, name=name, namespace=r.namespace, version=d.gvk.version
        )

    async def _finish(self, run: HookRun, d: Desired) -> HookRun:
        policies = policies_of(d)
        if (run.ok and DeletePolicy.HOOK_SUCCEEDED in policies) or (
            not run.ok and DeletePolicy.HOOK_FAILED in policies
        ):
            try:
                await self._delete(run.ref, wait=False)
            except GitkrmError as e:
                return HookRun(
                    run.phase, run.ref, run.state, f"{run.message} (not deleted: {e.message})",
                    run.path, run.line,
                )  # fmt: skip
            return HookRun(
                run.phase, run.ref, run.state, run.message, run.path, run.line, deleted=True
            )
        return run

    async def _delete(self, ref: ObjectRef, *, wait: bool) -> None:
        """Delete a hook's object (its Pods with it); `wait`: until it is gone."""
        try:
            await self.store.delete(
                ref, propagation=Propagation.BACKGROUND, preconditions=Preconditions()
            )
        except NotFound:
            return
        if not wait:
            return
        deadline = time.monotonic() + budget(self.timeout, self.deadline)
        while True:
            try:
                obj: Obj | None = await self.store.get(ref)
            except NotFound:
                return
            if obj is None or time.monotonic() > deadline:
                return
            await asyncio.sleep(_POLL)
