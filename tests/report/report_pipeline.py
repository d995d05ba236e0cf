"""The agent's reporting path wired in-process, for the end-to-end report scenarios:
a GitSource (real cache) -> SyncEngine -> store <- controllers; HealthFollower ->
Reporter -> notes and status branch, pushed to the real bare remote.

This is the wiring the agent does (docs/status-format.md, "Wiring"): after every sync,
`record_sync` with the objects' health and `follow` them; `flush` at shutdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from gitkrm.controllers import ControllerManager, ControllerOptions
from gitkrm.errors import NotFound
from gitkrm.health import Health, HealthResult, health_of
from gitkrm.krm import ObjectRef
from gitkrm.report import Backoff, HealthFollower, PushState, Reporter
from gitkrm.source import GitSource, GitSourceSpec
from gitkrm.store import Store, open_store
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions
from gitkrm.sync.postbuild_spec import PostBuildSpec
from gitkrm.sync.results import Action, SyncResult

FAST_CONTROLLERS = ControllerOptions(
    node_count=1,
    pod_start_delay=0.05,
    pod_run_duration=0.1,
    crashloop_backoff=0.2,
    crashloop_backoff_max=1.0,
    failure_backoff=0.2,
    failure_backoff_max=1.0,
)
FAST_BACKOFF = Backoff(initial=0.05, maximum=0.3, jitter=0.0)


class Pipeline:
    """`async with Pipeline(...) as p: await p.sync()`; see the module docstring."""

    def __init__(
        self,
        *,
        state: Path,
        url: str,
        agent: str = "edge-1",
        source: str = "default",
        throttle_s: float = 0.2,
        backoff: Backoff = FAST_BACKOFF,
        spec: dict[str, Any] | None = None,
        postbuild: PostBuildSpec | None = None,
    ) -> None:
        self.state = state
        self.postbuild = postbuild
        self.agent = agent
        self.source_name = source
        self.push_states: list[PushState] = []
        self._push_changed = asyncio.Event()
        self.source = GitSource(
            GitSourceSpec(name=source, url=url, **(spec or {})),
            cache_dir=state / "git" / source,
        )
        self.reporter = Reporter(
            agent_name=agent, throttle_s=throttle_s, backoff=backoff, on_push_state=self._pushed
        )
        self.verdicts: dict[ObjectRef, HealthResult] = {}
        self._heard = asyncio.Event()
        self.store: Store | None = None
        self.manager: ControllerManager | None = None
        self.engine: SyncEngine | None = None
        self.follower: HealthFollower | None = None

    def _pushed(self, source: str, state: PushState) -> None:
        self.push_states.append(state)
        self._push_changed.set()

    async def __aenter__(self) -> Pipeline:
        self.store = await open_store("sqlite:///:memory:")
        self.manager = ControllerManager(store=self.store, options=FAST_CONTROLLERS)
        await self.manager.start()
        self.engine = SyncEngine(
            store=self.store,
            options=SyncOptions(
                source_name=self.source_name, agent_name=self.agent, postbuild=self.postbuild
            ),
        )
        self.reporter.register(self.source_name, self.source)
        original = self.reporter.record_health

        async def record_health(**kw: Any) -> None:
            await original(**kw)
            self.verdicts.update(kw["health"])
            self._heard.set()

        self.reporter.record_health = record_health  # type: ignore[method-assign]
        self.follower = HealthFollower(self.store, self.reporter)
        return self

    async def sync(self) -> SyncResult:
        """One sync of the remote's head, reported and then followed (as the agent does)."""
        assert self.store is not None
        assert self.engine is not None
        assert self.follower is not None
        snap = await self.source.snapshot()
        res = await self.engine.sync(snap)
        refs = [o.ref for o in res.objects if o.action not in (Action.PRUNED, Action.SKIPPED)]
        health: dict[ObjectRef, HealthResult] = {}
        for ref in refs:
            try:
                health[ref] = health_of(await self.store.get(ref))
            except NotFound:
                health[ref] = health_of(None)
        self.verdicts = {r.without_version(): h for r, h in health.items()}
        await self.reporter.record_sync(source_name=self.source_name, result=res, health=health)
        self.follower.follow(self.source_name, res.revision, refs)
        return res

    async def until_health(self, ref: ObjectRef, status: Health, *, within: float = 30.0) -> None:
        """Wait until the follower told the reporter that `ref` has `status`."""
        key = ref.without_version()
        async with asyncio.timeout(within):
            while (h := self.verdicts.get(key)) is None or h.status is not status:
                self._heard.clear()
                await self._heard.wait()

    async def until_push_state(
        self, pred: Callable[[PushState], bool], *, within: float = 30.0
    ) -> PushState:
        """Wait for a push state (as the listener heard them) that matches `pred`."""
        async with asyncio.timeout(within):
            while True:
                for state in reversed(self.push_states):
                    if pred(state):
                        return state
                self._push_changed.clear()
                await self._push_changed.wait()

    async def until_pushed(self, *, within: float = 30.0) -> PushState:
        """Wait until the remote has everything written so far."""
        async with asyncio.timeout(within):
            while True:
                state = self.reporter.push_state(self.source_name)
                if state is not None and state.ok and not state.pending and state.last_success:
                    return state
                self._push_changed.clear()
                await self._push_changed.wait()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.reporter.flush(timeout=5)
        if self.follower is not None:
            await self.follower.close()
        await self.reporter.close()
        if self.engine is not None:
            await self.engine.close()
        if self.manager is not None:
            await self.manager.stop()
        if self.store is not None:
            await self.store.close()
        await self.source.close()
