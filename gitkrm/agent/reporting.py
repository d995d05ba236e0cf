"""A term's reports into Git: the reporter and the health follower its runners tell.

Both are made when the term begins, or (`skip_unchanged`) before the first pass that syncs,
so that a run with nothing to do does not load them at all; each runner is attached as it
is made. At the end the reports get up to `report_flush_timeout` to reach Git.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from gitkrm.cache import WatchCache
from gitkrm.store import Store

from .runner import SourceRunner

if TYPE_CHECKING:
    from gitkrm.report import HealthFollower, PushState, Reporter

    from .agent import AgentOptions

log = logging.getLogger("gitkrm.agent")


class Reporting:
    """See the module docstring. `on_push_state(source, state)`: the reporter's push state
    of a source changed."""

    def __init__(
        self,
        *,
        store: Store,
        cache: WatchCache,
        options: AgentOptions,
        on_push_state: Callable[[str, PushState], None],
    ) -> None:
        self._store = store
        self._cache = cache
        self._options = options
        self._on_push_state = on_push_state
        self.reporter: Reporter | None = None
        self.follower: HealthFollower | None = None

    def start(self, runners: Mapping[str, SourceRunner]) -> None:
        """The reporter and the health follower (unless the options say none), every
        runner attached."""
        options = self._options
        if not options.report or self.reporter is not None:
            return
        from gitkrm.report.reporter import Reporter

        self.reporter = Reporter(agent_name=options.agent_name, on_push_state=self._on_push_state)
        if options.follow_health:
            from gitkrm.report.follow import HealthFollower

            self.follower = HealthFollower(self._store, self.reporter, self._cache)
        for name, runner in runners.items():
            self.attach(name, runner)

    def attach(self, name: str, runner: SourceRunner) -> None:
        """The runner tells the reports (when they run), its source registered."""
        if self.reporter is None:
            return
        runner.reporter = self.reporter
        runner.follower = self.follower
        self.reporter.register(name, runner.source, parent=runner.parent)

    def forget(self, name: str) -> None:
        """A source stopped (a child removed): nothing more is reported or followed of it."""
        if self.reporter is not None:
            self.reporter.unregister(name)
        if self.follower is not None:
            self.follower.stop(name)

    async def end(self, *, flush: bool) -> None:
        """Close the follower and the reporter; `flush`: give the reports up to
        `report_flush_timeout` to reach Git first."""
        try:
            async with asyncio.timeout(self._options.report_flush_timeout + 5):
                await self._close(flush=flush)
        except TimeoutError:
            log.warning("the reports into Git did not finish before the agent ended")

    async def _close(self, *, flush: bool) -> None:
        follower, self.follower = self.follower, None
        if follower is not None:
            await follower.close()
        reporter, self.reporter = self.reporter, None
        if reporter is not None:
            timeout = self._options.report_flush_timeout
            if flush and not await reporter.flush(timeout=timeout):
                log.warning("some reports did not reach their Git remote before the agent ended")
            await reporter.close()
