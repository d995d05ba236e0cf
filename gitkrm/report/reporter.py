"""The agent's entry point for writing what happened back into Git (DESIGN.md 4.5).

One `Reporter` per agent. The agent registers each source (`register`), tells it about
every sync (`record_sync`) and every change of health after it (`record_health`), and
calls `flush` when it stops. Sources reading from the same remote share one `Channel`
(one notes ref and one status file per agent and repository); sources that are not Git
remotes (plain directories) have no repository to write to and are not reported.
Nothing here raises for a Git problem: writes and pushes happen in the background, are
retried, and their state is in `push_state`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace

from gitkrm.health import HealthResult
from gitkrm.krm import ObjectRef
from gitkrm.source import GitSource, Source
from gitkrm.sync.results import SyncResult

from .branch import Backoff, PushState
from .channel import Channel, ChannelStats
from .formats import SourceInfo, SourceReport
from .repo import RemoteTarget, ReportRepo

log = logging.getLogger("gitkrm.report")

DEFAULT_THROTTLE = 5.0

PushListener = Callable[[str, PushState], None]
"""Called with (source name, new state) whenever a source's push state changes."""


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Reporter:
    """See the module docstring. Use inside a running event loop; `close` last."""

    def __init__(
        self,
        *,
        agent_name: str,
        throttle_s: float = DEFAULT_THROTTLE,
        backoff: Backoff | None = None,
        on_push_state: PushListener | None = None,
    ) -> None:
        self.agent_name = agent_name
        self.throttle_s = throttle_s
        self.backoff = backoff or Backoff()
        self.on_push_state = on_push_state
        self._channels: dict[str, Channel] = {}
        self._targets: dict[str, RemoteTarget] = {}
        self._sources: dict[str, tuple[SourceInfo, str]] = {}  # name -> (info, channel url)

    # -- sources --------------------------------------------------------------------------

    def register(self, source_name: str, source: Source, *, parent: str = "") -> None:
        """Report `source` from now on (call again when the agent replaces the source);
        `parent`: the source that declares it (a child of a source tree)."""
        if not isinstance(source, GitSource):
            self.unregister(source_name)
            log.debug("source %s is not a Git remote: nothing is reported into Git", source_name)
            return
        target = RemoteTarget.of_source(source)
        ref = source.spec.ref
        info = SourceInfo(
            name=source_name,
            url=source.spec.safe_url,
            ref=f"{ref.kind} {ref.name}",
            path=source.spec.path,
            parent=parent,
        )
        old = self._sources.get(source_name)
        if old is not None and old[1] != target.url:
            self.unregister(source_name)
        if target.url not in self._channels:
            self._targets[target.url] = target
            self._channels[target.url] = Channel(
                ReportRepo(target, agent=self.agent_name),
                agent=self.agent_name,
                throttle_s=self.throttle_s,
                backoff=self.backoff,
                on_push_state=self._listener(target.url),
            )
        self._sources[source_name] = (info, target.url)
        self._channels[target.url].add(source_name)

    def unregister(self, source_name: str) -> None:
        """Stop reporting a source; its entry leaves the status file, its notes stay."""
        old = self._sources.pop(source_name, None)
        if old is not None:
            self._channels[old[1]].remove(source_name)

    def _channel(self, source_name: str) -> tuple[SourceInfo, Channel] | None:
        found = self._sources.get(source_name)
        if found is None:
            return None
        return found[0], self._channels[found[1]]

    def _listener(self, url: str) -> Callable[[PushState], None]:
        def changed(state: PushState) -> None:
            if self.on_push_state is None:
                return
            for name, (_, channel_url) in list(self._sources.items()):
                if channel_url == url:
                    self.on_push_state(name, state)

        return changed

    # -- what happened ----------------------------------------------------------------------

    def prepare(self, source_name: str) -> None:
        """A sync of the source starts: its channel gets the remote's reports meanwhile
        (once), so the reports of the sync build on them and are pushed without a fetch."""
        found = self._channel(source_name)
        if found is not None:
            found[1].prepare()

    async def record_sync(
        self,
        *,
        source_name: str,
        result: SyncResult,
        health: Mapping[ObjectRef, HealthResult],
        now: dt.datetime | None = None,
    ) -> None:
        """A sync of `result.revision` finished; `health` is the objects' health after it
        (every object of the revision; those missing are reported Unknown). Returns at
        once: the note and the status file are written in the background."""
        found = self._channel(source_name)
        if found is None:
            return
        info, channel = found
        now = now or _utcnow()
        last = channel.reports.get(source_name)
        redact = channel.repo.redact_text
        report = SourceReport.of_sync(
            source=info, result=result, health=health, now=now, redact=redact
        )
        if (
            last is not None
            and last.revision == report.revision
            and last.result == report.result
            and last.errors == report.errors
            and not result.changed
        ):
            # A drift check that changed nothing: only health may have moved.
            followed = last.with_health(report.health, now=now)
            if followed is not None:
                channel.update(followed)
            return
        if last is not None and last.revision == report.revision and not report.hooks:
            # The hooks ran once for the revision: a later sync of it keeps saying so.
            report = replace(report, hooks=last.hooks)
        channel.update(report)

    async def record_health(
        self,
        *,
        source_name: str,
        revision: str,
        health: Mapping[ObjectRef, HealthResult],
        now: dt.datetime | None = None,
    ) -> None:
        """Objects of `revision` changed health (all or some of them). Nothing is written
        when no verdict changed; otherwise the update waits for the throttle."""
        found = self._channel(source_name)
        if found is None:
            return
        _, channel = found
        last = channel.reports.get(source_name)
        if last is None or last.revision != revision:
            log.debug("health of %s@%s ignored: not its latest sync", source_name, revision[:12])
            return
        followed = last.with_health(health, now=now or _utcnow())
        if followed is not None:
            channel.update(followed)

    # -- state and lifecycle ------------------------------------------------------------------

    def push_state(self, source_name: str) -> PushState | None:
        """How the source's remote takes our reports (None: the source is not reported)."""
        found = self._channel(source_name)
        return None if found is None else found[1].push_state

    def stats(self, source_name: str) -> ChannelStats | None:
        found = self._channel(source_name)
        return None if found is None else found[1].stats

    def git_calls(self, source_name: str) -> Counter[str] | None:
        """The git commands run so far for the source's reports, by subcommand (shared by
        the sources of one remote); tests and benchmarks count them."""
        found = self._channel(source_name)
        return None if found is None else found[1].repo.runner.calls

    async def settled(self) -> None:
        """Wait until everything the throttle allows now is written (not pushed)."""
        for channel in list(self._channels.values()):
            await channel.settled()

    async def drained(self) -> None:
        """Wait until every update is written, waiting out the throttle (not pushed)."""
        for channel in list(self._channels.values()):
            await channel.drained()

    async def flush(self, *, timeout: float = 10.0) -> bool:  # noqa: ASYNC109
        """Write the final state of every source now, ignoring the throttle, and push it
        for at most `timeout` seconds. True when every remote has it."""
        if not self._channels:
            return True
        results = await asyncio.gather(*(c.flush(timeout=timeout) for c in self._channels.values()))
        return all(results)

    async def close(self) -> None:
        """Stop the background work (call `flush` first to write the final state)."""
        for channel in self._channels.values():
            await channel.close()
        for target in self._targets.values():
            target.credentials.close()
        self._channels.clear()
        self._targets.clear()
        self._sources.clear()
