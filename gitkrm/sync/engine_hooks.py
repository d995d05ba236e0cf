"""The engine's hook phases around a pass: PreSync hooks, the objects (with Argo CD's Sync
hooks between their waves), PostSync hooks once every object is healthy, SyncFail hooks
when anything failed.

Hooks run once per revision (or when a sync request asks): a pass of a revision whose
hooks already ran is a plain apply, and a failed PreSync phase is not retried unasked.
The namespaces the hooks run in are created first when the revision holds them.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import ObjectRef
from gitkrm.sync.engine_apply import ApplyStep
from gitkrm.sync.engine_gates import EngineGates
from gitkrm.sync.engine_parts import EngineParts
from gitkrm.sync.engine_render import RenderStep
from gitkrm.sync.hooks import HookRun, Phase
from gitkrm.sync.patching import create_body
from gitkrm.sync.phases import PhaseRunner
from gitkrm.sync.progress import ProgressFn
from gitkrm.sync.refusal import Refusal
from gitkrm.sync.render import RenderResult
from gitkrm.sync.results import SyncResult, make_result
from gitkrm.sync.serverside import FIELD_MANAGER

_AFTER_ALL_WAVES: Final = 2**62  # `sync_hooks`: every wave is before it


class HookPhases:
    """Runs one engine's passes inside their hook phases (see the module docstring)."""

    def __init__(
        self, parts: EngineParts, *, render: RenderStep, apply: ApplyStep, gates: EngineGates
    ) -> None:
        self._parts = parts
        self._render = render
        self._apply = apply
        self._gates = gates

    async def run(
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
        parts = self._parts
        memo = parts.memo
        hooks = memo.hooks
        revision = rendered.revision
        if not hooks or not (run_hooks or memo.hooked != revision):
            if hooks and memo.hooked == revision and memo.hook_failure is not None:
                return memo.hook_failure  # a failed PreSync phase is not retried unasked
            return await self._apply.apply(
                rendered, timings, progress=progress, cancel=cancel, settled=settled
            )
        memo.hooked, memo.hook_failure = revision, None
        runner = PhaseRunner(
            parts.store,
            revision=revision,
            timeout=parts.options.health_timeout,
            deadline=parts.options.deadline,
            cache=parts.cache,
            cancel=cancel,
            before_wait=parts.before_wait,
            checks=parts.options.health_checks,
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
            memo.settled_at = None
            memo.hook_failure = make_result(
                revision=revision,
                errors=["a PreSync hook failed: nothing of the Sync phase was applied"],
                timings_ms=timings,
                hooks=runs,
                warnings=self._render.warnings(rendered),
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

        done = await self._apply.apply(
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
            why = await self._gates.all_healthy(result, cancel)
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
        store = self._parts.store
        wanted = {
            d.ref.namespace
            for ds in self._parts.memo.hooks.by_phase.values()
            for d in ds
            if d.ref.namespace
        }
        for d in rendered.objects:
            if d.ref.kind != "Namespace" or d.ref.group or d.ref.name not in wanted:
                continue
            ref = ObjectRef(group="", kind="Namespace", name=d.ref.name, version="v1")
            try:
                await store.get(ref)
            except NotFound:
                with contextlib.suppress(GitkrmError):  # the hook says what is wrong
                    await store.create(
                        create_body(d, rendered.revision), field_manager=FIELD_MANAGER
                    )
