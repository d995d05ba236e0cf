"""The agent on the cluster target: sync only while holding the Lease.

A replica is a candidate until it acquires the agent's Lease; then it begins a term (GitSource
objects, runners, workers, reports) and renews the Lease in the background. A lost Lease
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

from prometheus_client import Gauge

from gitkrm.errors import GitkrmError

from .api import ProbeService
from .shutdown import Shutdown
from .status import Outcome, Reason

if TYPE_CHECKING:
    from .agent import Agent
    from .leader import LeaderElector

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


def _elector(agent: Agent) -> LeaderElector:
    assert agent.elector is not None, "the cluster target has an elector"
    return agent.elector


def readiness(agent: Agent) -> tuple[bool, str]:
    """`/readyz` on the cluster target: ready when the cluster answered the last Lease
    request and, when leading, once every source finished its first sync of the term. A
    standby is ready too (it is what a rollout of two replicas waits for)."""
    elector = _elector(agent)
    if not elector.connected:
        return False, "the cluster did not answer the last Lease request"
    if agent.holding is not None and elector.is_leader:
        if not agent.synced_once():
            return False, "leading: the first sync is under way"
        return True, "leading"
    return True, f"standby: the Lease is held by {elector.holder or 'nobody'}"


async def _lost(agent: Agent) -> None:
    holding, agent.holding = agent.holding, None
    if holding is not None:
        await asyncio.gather(holding, return_exceptions=True)


async def sync_once(agent: Agent, shutdown: Shutdown | None) -> list[Outcome]:
    """`run --once` on a cluster: wait for the Lease, sync every source, keep renewing
    (the caller's `close` releases it). A Lease lost mid-way cancels the sync: a failed
    outcome says so."""
    elector = _elector(agent)
    if not await _until(elector.acquire(), shutdown.requested if shutdown else None):
        return []
    agent.holding = asyncio.create_task(elector.hold(), name="gitkrm-lease")
    await agent.begin()
    outcomes: list[Outcome] = []
    syncing = asyncio.ensure_future(agent.sync_all(shutdown, outcomes))
    await asyncio.wait({syncing, agent.holding}, return_when=asyncio.FIRST_COMPLETED)
    if syncing.done():
        return syncing.result()
    syncing.cancel()
    await asyncio.gather(syncing, return_exceptions=True)
    await _lost(agent)
    message = (
        f"the Lease {elector.ref.namespace}/{elector.ref.name} was lost mid-sync: "
        "the sync was cancelled (another replica leads now)"
    )
    log.error(message)
    outcomes.append(
        Outcome(revision=None, succeeded=False, reason=Reason.SOURCE_FAILED, errors=(message,))
    )
    return outcomes


async def run(agent: Agent, shutdown: Shutdown) -> None:
    """The long-lived agent on a cluster: probes and metrics, then terms while leading."""
    elector = _elector(agent)
    probes = None
    leader = None
    if agent.options.listen is not None:
        host, port = agent.options.listen
        probes = ProbeService(host=host, port=port, readiness=lambda: readiness(agent))
        await probes.start()
        agent.observe_sync = probes.observe_sync
        leader = Gauge(
            "gitkrm_leader",
            "1 while this replica holds the agent's Lease (and syncs), else 0.",
            registry=probes.metrics.registry,
        )
        leader.set(0)
    try:
        while not shutdown.requested.is_set():
            if not await _until(elector.acquire(), shutdown.requested):
                break
            agent.holding = asyncio.create_task(elector.hold(), name="gitkrm-lease")
            try:
                await agent.begin()
                await agent.start_workers()
            except GitkrmError as e:
                log.error("could not start syncing: %s; the Lease is released", e.message)
                agent.holding.cancel()
                await _lost(agent)
                await agent.end(flush=False)
                await elector.release()
                await _until(asyncio.sleep(agent.options.lease.retry_period), shutdown.requested)
                continue
            if leader is not None:
                leader.set(1)
            stop = asyncio.ensure_future(shutdown.requested.wait())
            await asyncio.wait({stop, agent.holding}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if agent.holding.done():
                if leader is not None:
                    leader.set(0)
                log.warning("stopped leading: the syncs were cancelled; waiting as a candidate")
                await _lost(agent)
                await agent.end(flush=False)
                continue
            await _stop_gracefully(agent, shutdown)
            break  # `close` ends the term, stops renewing and releases the Lease
    finally:
        if probes is not None:
            await probes.stop()


async def _stop_gracefully(agent: Agent, shutdown: Shutdown) -> None:
    """Let the syncs under way finish while the Lease is still renewed; cancel them at once
    on a second signal or when the Lease is lost meanwhile."""
    forced = asyncio.Event()
    holding = agent.holding
    assert holding is not None
    holding.add_done_callback(lambda _: forced.set())
    second = asyncio.ensure_future(shutdown.forced.wait())
    second.add_done_callback(lambda _: forced.set())
    try:
        await agent.stop_workers(forced=forced)
    finally:
        second.cancel()
