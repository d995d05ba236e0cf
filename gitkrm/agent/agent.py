"""The agent: one process keeping a target equal to N sources.

The agent has a target (`gitkrm.agent.targets.Target`) and, while it may write, a term
(`gitkrm.agent.term.Term`). Everything that writes (GitSource objects, syncs, reports into
Git) belongs to the term: the agent begins and ends it when its target says so.

- Embedded target (`gitkrm.agent.embedded`): opening the store (as its one writer) installs
  the GitSource CRD and begins the agent's one term, which writes one GitSource object per
  configured source. Then either `sync_once` (run --once) or `run` (long-lived): apscheduler
  ticks, local changes (watchfiles) and edits of the GitSource objects (spec changes, the
  `gitkrm.io/requestedAt` annotation) ask each source's worker for a sync; SIGTERM/SIGINT
  stop it gracefully.
- Cluster target (`target_url`, a `kube://` URL; `gitkrm.agent.cluster`): the same, but a
  term only while this replica holds the agent's Lease (`gitkrm.agent.leader`): begun when
  the Lease is acquired, ended when it is released (a graceful stop) or lost (cancelled at
  once, mid-sync if need be). No CRD is installed and no controllers run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, overload

from gitkrm.krm import ObjectRef
from gitkrm.store import Store

from .config import ApplyMode, SourceConfig, unique_names
from .leader import NAMESPACE as LEASE_NAMESPACE
from .leader import LeaseTimings
from .shutdown import DEFAULT_GRACE, Shutdown, wait_or_force
from .status import Outcome
from .term import Term

if TYPE_CHECKING:
    # Imported where used: `run --once` on an unchanged source loads no controllers,
    # server, reporter or leader election (tests/cli/test_imports.py).
    from gitkrm.controllers import ControllerOptions
    from gitkrm.health import WaitResult
    from gitkrm.server.tls import TLSFiles

    from .runner import SourceRunner
    from .targets import Target


@dataclass(frozen=True, slots=True)
class AgentOptions:
    state_dir: Path
    agent_name: str
    sources: tuple[SourceConfig, ...]
    apply_mode: ApplyMode = "client-side"
    listen: tuple[str, int] | None = None
    """Where the long-lived agent serves the Kubernetes API (embedded target) or its
    probes and metrics (cluster target); None: nothing is served."""
    grace: float = DEFAULT_GRACE
    watch_changes: bool = True
    controllers: ControllerOptions | None = None
    """Run the bundled controllers against the store (the embedded target), None: don't."""
    report: bool = True
    """Write notes and the status file into the sources' Git remotes."""
    report_flush_timeout: float = 5.0
    api_token: str | None = None
    """The bearer token of the embedded API (needed beyond loopback)."""
    api_tls: TLSFiles | None = None
    target_url: str | None = None
    """The cluster target (`kube://?kubeconfig=...`); None: the embedded store of state_dir."""
    lease: LeaseTimings = field(default_factory=LeaseTimings)
    lease_namespace: str = LEASE_NAMESPACE
    identity: str | None = None
    """This replica's Lease holder identity (default `<hostname>_<random>`)."""
    skip_unchanged: bool = False
    """`run --once` without `--wait`: a source whose revision and store did not change
    since its last settled sync is not synced again (see `lastsync`)."""
    follow_health: bool = True
    """Follow the health of each sync's objects into the reports. `run --once` without
    `--wait` ends right after its sync: its reports carry the health read at sync time."""
    track_drift: bool = True
    """Follow the owned kinds for drift after each sync (`run --once` ends instead)."""
    wait_deadline: float | None = None
    """`run --once --wait --timeout`: the `time.monotonic()` by which every wait on health
    of the run ends, a tree's waits on its dependencies included (they would otherwise
    take each Kustomization's `timeout`); None: each wait takes its own timeout."""


class Agent:
    """See the module docstring. `open` first, `close` last (also after errors).

    The agent is the one owner of the term (`Terms` to its target): `begin`, `end`, `term`.
    """

    def __init__(self, options: AgentOptions) -> None:
        unique_names(options.sources)
        self.options: Final = options
        self._term: Term | None = None
        target: Target
        if options.target_url is None:
            from .embedded import EmbeddedTarget

            target = EmbeddedTarget(options, self)
        else:
            from .cluster import ClusterTarget

            target = ClusterTarget(options, self)
        self.target: Final = target

    @property
    def store(self) -> Store:
        """The target's open store (RuntimeError before `open`)."""
        return self.target.store

    @property
    def term(self) -> Term | None:
        return self._term

    @property
    def runners(self) -> dict[str, SourceRunner]:
        """The sources of the term under way (none between two terms)."""
        return {} if self._term is None else self._term.runners

    # -- terms -------------------------------------------------------------------------

    async def begin(self) -> Term:
        """Begin a term: reports, GitSource objects and one runner per source."""
        if self._term is not None:
            raise RuntimeError("a term is under way")
        gitsources = await self.target.serves_gitsources()
        self._term = Term(
            store=self.target.store,
            cache=self.target.cache,
            options=self.options,
            gitsources=gitsources,
            observe=self.target.observe_sync,
            before_wait=self.target.start_controllers,
        )
        await self._term.open()  # the term is ours even when this fails: `end` closes it
        return self._term

    async def end(self, *, flush: bool) -> None:
        """End the term under way, if any (see `Term.end`)."""
        term, self._term = self._term, None
        if term is not None:
            await term.end(flush=flush)

    # -- the target's work -------------------------------------------------------------

    async def open(self) -> None:
        """Connect to the target. Embedded: also begin the (only) term."""
        self.options.state_dir.mkdir(parents=True, exist_ok=True)
        await self.target.open()

    @overload
    async def sync_once(self, shutdown: None = None) -> list[Outcome]: ...
    @overload
    async def sync_once(self, shutdown: Shutdown) -> list[Outcome] | None: ...
    async def sync_once(self, shutdown: Shutdown | None = None) -> list[Outcome] | None:
        """Sync every source that is not suspended, one after the other. On a cluster:
        first wait for the Lease; when it is lost mid-way, the sync is cancelled.

        After a stop signal the sync under way may finish (a sync's writes are not cut
        short); what is left of it, a wait on health included, is cancelled after the grace
        period or at a second signal: None then."""
        syncing = asyncio.ensure_future(self.target.sync_once(shutdown))
        if shutdown is None:
            return await syncing
        stop = asyncio.ensure_future(shutdown.requested.wait())

        def cancel() -> None:
            syncing.cancel()

        try:
            await asyncio.wait({syncing, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not syncing.done():
                await wait_or_force(
                    syncing, forced=shutdown.forced, grace=self.options.grace,
                    on_force=cancel,
                )  # fmt: skip
        finally:
            stop.cancel()
        if syncing.cancelled():
            return None
        return syncing.result()

    async def run(self, shutdown: Shutdown) -> None:
        """Serve, then sync until `shutdown` is requested, then stop gracefully."""
        await self.target.run(shutdown)

    async def start_controllers(self) -> None:
        """Start the bundled controllers on the store (when the options ask for them)."""
        await self.target.start_controllers()

    async def stop_controllers(self) -> None:
        """Stop the controllers gracefully: work in flight finishes."""
        await self.target.stop_controllers()

    def applied(self) -> list[ObjectRef]:
        """The objects of every source's last sync (what `run --once --wait` waits for)."""
        return [] if self._term is None else self._term.applied()

    async def wait_healthy(
        self,
        *,
        timeout: float,  # noqa: ASYNC109 (the caller's budget, reported as timed_out)
        on_progress: Any = None,
    ) -> WaitResult:
        """Wait until every applied object is Current, one is Failed, or `timeout` passes."""
        if self._term is None:
            raise RuntimeError("no term is under way")
        return await self._term.wait_healthy(timeout=timeout, on_progress=on_progress)

    async def close(self) -> None:
        """Release everything (after `run` returned, or instead of it after an error)."""
        await self.target.close()


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """`run --once`: 0 when every source synced, 1 when any failed (or refused an object)."""
    return 0 if all(o.succeeded for o in outcomes) else 1
