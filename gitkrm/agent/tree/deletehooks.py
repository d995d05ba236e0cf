"""Argo CD's PreDelete and PostDelete hooks of a child source that goes: the hooks of its
last synced revision (what it applied, even when the commit that removed the declaring
object removed its path too), run by the sync package's `PhaseRunner` as the sync phases'
hooks are (waves, delete policies, health within `healthTimeout`). A PreDelete hook that
fails holds the deletion (the finalizer stays; tried again at the next pass), as in Argo CD;
a PostDelete failure is logged."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from gitkrm.cache import WatchCache
from gitkrm.errors import GitkrmError
from gitkrm.source import GitRef, PathNotFound, RefKind
from gitkrm.store import Store
from gitkrm.sync.hooks import Phase

from ..config import ApplyMode, SourceConfig
from ..runner import SourceRunner
from ..state import git_cache

log = logging.getLogger("gitkrm.agent")
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclasses.dataclass(frozen=True, slots=True)
class DeleteHooks:
    """What running a removed child's hooks needs from the term."""

    store: Store
    cache: WatchCache | None
    agent_name: str
    apply_mode: ApplyMode
    state_dir: Path
    before_wait: Callable[[], Awaitable[None]] | None = None
    deadline: float | None = None  # the run's end (`SyncOptions.deadline`)

    async def run(
        self, name: str, config: SourceConfig, phase: Phase, *, revision: str | None
    ) -> list[str]:
        """Run `phase`'s hooks of `revision` (None: nothing synced, nothing to run): the
        failures, empty when every hook succeeded or there were none."""
        if revision is None:
            return []
        if config.ref is not None and _COMMIT.fullmatch(revision):
            config = dataclasses.replace(config, ref=GitRef(RefKind.COMMIT, revision))
        # else an artifact's revision (`latest@sha256:<digest>`, no commit to check out):
        # its hooks are read from the artifact as the tracked ref makes it now
        runner = SourceRunner(
            store=self.store,
            config=config,
            agent_name=self.agent_name,
            apply_mode=self.apply_mode,
            git_cache=git_cache(self.state_dir, name),
            cache=self.cache,
            track_drift=False,
        )
        try:
            try:
                snapshot = await runner.source.snapshot()
            except PathNotFound as e:
                # No such path there (a removed ExternalArtifact's child, read as the
                # repository it came from): no objects, no hooks.
                log.debug("source %s: no %s hooks: %s", name, phase.value, e.message)
                return []
            preview = await runner.engine.preview(snapshot, plan=False)
            hooks = preview.hooks.of(phase)
            if not hooks:
                return []
            from gitkrm.sync.phases import PhaseRunner

            done = await PhaseRunner(
                self.store,
                revision=snapshot.revision,
                timeout=config.health_timeout,
                deadline=self.deadline,
                cache=self.cache,
                before_wait=self.before_wait,
                checks=config.health_checks,
            ).run(phase, hooks)
        except GitkrmError as e:
            return [f"{phase.value} hooks not run: {e.message}"]
        finally:
            await runner.close()
        for run in done:
            log.info("source %s: %s", name, run)
        return [str(r) for r in done if not r.ok]
