"""The cluster target: a Kubernetes API, synced only while this replica holds the Lease.

It owns the store (`KubeStore`, or any store URL given as `target_url`), its watch cache,
the Lease elector (`gitkrm.agent.leader`), the task that renews the Lease while leading, and
the probes served on `--listen` (`ProbeService`). No CRD is installed and no controllers run:
the cluster has its own.

A replica is a candidate until it acquires the agent's Lease; then a term begins (GitSource
objects, runners, workers, reports) and the Lease is renewed in the background. A lost Lease
ends the term at once: the sync in flight is cancelled (between two writes, never inside
one; the inventory is written as the union of old and new before objects are touched, so
whoever leads next converges), and the replica is a candidate again. A stop signal ends the
term gracefully (the sync under way finishes while the Lease is still renewed), then the
Lease is released so a standby takes over within a retry period.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from gitkrm.errors import BadRequest, GitkrmError

from . import crd, gitsources
from .leader import LeaderElector
from .shutdown import Shutdown
from .status import Outcome, Reason
from .storeowner import StoreOwner
from .targets import Terms

if TYPE_CHECKING:
    from prometheus_client import Gauge

    from .agent import AgentOptions
    from .probes import ProbeService
    from .term import Term

log = logging.getLogger("gitkrm.agent")


async def _until(work: Coroutine[Any, Any, None], stop: asyncio.Event | None) -> bool:
    """Run `work` to its end (True), or until `stop` is set (False: `work` is cancelled)."""
    task = asyncio.ensure_future(work)
    if stop is None:
        await task
        return True
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, stopped, return_exceptions=True)
    return task.done() and not task.cancelled() and task.exception() is None


class ClusterTarget(StoreOwner):
    """A `Target` (see `gitkrm.agent.targets`)."""

    def __init__(self, options: AgentOptions, terms: Terms) -> None:
        if options.target_url is None:
            raise BadRequest("the cluster target needs a target URL")
        if options.controllers is not None:
            raise BadRequest("the bundled controllers run on the embedded target only")
        super().__init__()
        self._options = options
        self._url = options.target_url
        self._terms = terms
        self._elector: LeaderElector | None = None
        self._holding: asyncio.Task[None] | None = None
        """While leading: the renewals, done when the Lease is lost (or released)."""
        self._probes: ProbeService | None = None
        self._said_no_crd = False

    @property
    def elector(self) -> LeaderElector:
        """This replica's Lease candidate (RuntimeError before `open`)."""
        if self._elector is None:
            raise RuntimeError("the agent is not open")
        return self._elector

    @property
    def leading(self) -> bool:
        """Whether this replica holds the Lease (and the term under way may write)."""
        return self._holding is not None

    async def open(self) -> None:
        store = await self._open_store(self._url)
        await self.serves_gitsources()  # also: the cluster answers (else a setup error)
        self._elector = LeaderElector(
            store,
            agent_name=self._options.agent_name,
            identity=self._options.identity,
            timings=self._options.lease,
            namespace=self._options.lease_namespace,
        )

    async def serves_gitsources(self) -> bool:
        """Whether the cluster serves the GitSource kind now (the chart may have installed
        the CRD since the last term); said once when it does not."""
        served = await gitsources.served(self.store)
        if not served and not self._said_no_crd:
            self._said_no_crd = True
            log.warning(
                "the cluster has no GitSource kind (CRD %s, installed by the Helm chart): "
                "sources are synced, their status is not kept in GitSource objects",
                crd.CRD_NAME,
            )
        return served

    def observe_sync(self, source: str, result: str, seconds: float) -> None:
        if self._probes is not None:
            self._probes.observe_sync(source, result, seconds)

    def readiness(self) -> tuple[bool, str]:
        """`/readyz`: ready when the cluster answered the last Lease request and, when
        leading, once every source finished its first sync of the term. A standby is ready
        too (it is what a rollout of two replicas waits for)."""
        elector = self.elector
        if not elector.connected:
            return False, "the cluster did not answer the last Lease request"
        if self._holding is not None and elector.is_leader:
            term = self._terms.term
            if term is None or not term.synced_once():
                return False, "leading: the first sync is under way"
            return True, "leading"
        if elector.holder is None:
            return True, "standby: the Lease was not read since the last renewal failed"
        return True, f"standby: the Lease is held by {elector.holder or 'nobody'}"

    def _hold(self) -> asyncio.Task[None]:
        self._holding = asyncio.create_task(self.elector.hold(), name="gitkrm-lease")
        return self._holding

    async def _lost(self) -> None:
        holding, self._holding = self._holding, None
        if holding is not None:
            await asyncio.gather(holding, return_exceptions=True)

    async def sync_once(self, shutdown: Shutdown | None) -> list[Outcome]:
        """`run --once` on a cluster: wait for the Lease, sync every source, keep renewing
        (`close` releases it). A Lease lost mid-way cancels the sync: a failed outcome says
        so."""
        elector = self.elector
        if not await _until(elector.acquire(), shutdown.requested if shutdown else None):
            return []
        holding = self._hold()
        term = await self._terms.begin()
        outcomes: list[Outcome] = []
        syncing = asyncio.ensure_future(term.sync_all(shutdown, outcomes))
        await asyncio.wait({syncing, holding}, return_when=asyncio.FIRST_COMPLETED)
        if syncing.done():
            return syncing.result()
        syncing.cancel()
        await asyncio.gather(syncing, return_exceptions=True)
        await self._lost()
        message = (
            f"the Lease {elector.ref.namespace}/{elector.ref.name} was lost mid-sync: "
            "the sync was cancelled (another replica leads now)"
        )
        log.error(message)
        outcomes.append(
            Outcome(revision=None, succeeded=False, reason=Reason.SOURCE_FAILED, errors=(message,))
        )
        return outcomes

    async def run(self, shutdown: Shutdown) -> None:
        """Probes and metrics, then a term whenever this replica leads."""
        elector = self.elector
        leader: Gauge | None = None
        if self._options.listen is not None:
            from prometheus_client import Gauge

            from .probes import ProbeService

            host, port = self._options.listen
            self._probes = ProbeService(host=host, port=port, readiness=self.readiness)
            await self._probes.start()
            leader = Gauge(
                "gitkrm_leader",
                "1 while this replica holds the agent's Lease (and syncs), else 0.",
                registry=self._probes.metrics.registry,
            )
            leader.set(0)
        try:
            while not shutdown.requested.is_set():
                if not await _until(elector.acquire(), shutdown.requested):
                    break
                holding = self._hold()
                try:
                    term = await self._terms.begin()
                    await term.start_workers()
                except GitkrmError as e:
                    log.error("could not start syncing: %s; the Lease is released", e.message)
                    holding.cancel()
                    await self._lost()
                    await self._terms.end(flush=False)
                    await elector.release()
                    await _until(
                        asyncio.sleep(self._options.lease.retry_period), shutdown.requested
                    )
                    continue
                if leader is not None:
                    leader.set(1)
                stop = asyncio.ensure_future(shutdown.requested.wait())
                await asyncio.wait({stop, holding}, return_when=asyncio.FIRST_COMPLETED)
                stop.cancel()
                if holding.done():
                    if leader is not None:
                        leader.set(0)
                    log.warning("stopped leading: the syncs were cancelled; waiting as a candidate")
                    await self._lost()
                    await self._terms.end(flush=False)
                    continue
                await self._stop_gracefully(term, holding, shutdown)
                break  # `close` ends the term, stops renewing and releases the Lease
        finally:
            probes, self._probes = self._probes, None
            if probes is not None:
                await probes.stop()

    async def _stop_gracefully(
        self, term: Term, holding: asyncio.Task[None], shutdown: Shutdown
    ) -> None:
        """Let the syncs under way finish while the Lease is still renewed; cancel them at
        once on a second signal or when the Lease is lost meanwhile."""
        forced = asyncio.Event()
        holding.add_done_callback(lambda _: forced.set())
        second = asyncio.ensure_future(shutdown.forced.wait())
        second.add_done_callback(lambda _: forced.set())
        try:
            await term.stop_workers(forced=forced)
        finally:
            second.cancel()

    async def start_controllers(self) -> None:
        """None on a cluster: it runs its own."""

    async def stop_controllers(self) -> None:
        """None on a cluster."""

    async def close(self) -> None:
        """End the term (reports flushed), stop renewing, release the Lease, close."""
        await self._terms.end(flush=True)
        holding, self._holding = self._holding, None
        if holding is not None:
            holding.cancel()
            await asyncio.gather(holding, return_exceptions=True)
        if self._elector is not None and self.is_open:
            try:
                # Ours until it expires: a slow release (a loaded API server) still spares
                # the next replica the wait; after that, the resourceVersion refuses it.
                async with asyncio.timeout(self._options.lease.lease_duration):
                    await self._elector.release()
            except TimeoutError:
                log.warning("the lease was not released in time: it expires on its own")
        await self._close_store()
