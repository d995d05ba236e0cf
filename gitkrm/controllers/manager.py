"""ControllerManager: runs every bundled controller against one store (the embedded target).

manager = ControllerManager(store=store, options=ControllerOptions(node_count=3))
await manager.start()   # informers synced, default nodes and storage class created
...
await manager.stop()    # graceful: work in flight finishes, queued work is dropped
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType

from gitkrm.cache.watchcache import Holder, WatchCache
from gitkrm.controllers.cronjob import CronJobController
from gitkrm.controllers.daemonset import DaemonSetController
from gitkrm.controllers.deployment import DeploymentController
from gitkrm.controllers.endpoints import EndpointsController
from gitkrm.controllers.eventttl import EventExpiry
from gitkrm.controllers.gc import GarbageCollector
from gitkrm.controllers.job import JobController
from gitkrm.controllers.kubelet import KubeletSimulator
from gitkrm.controllers.namespace import NamespaceController
from gitkrm.controllers.node import NodeController
from gitkrm.controllers.options import ControllerOptions
from gitkrm.controllers.replicaset import ReplicaSetController
from gitkrm.controllers.resourcequota import ResourceQuotaController
from gitkrm.controllers.rootca import RootCAPublisher
from gitkrm.controllers.runtime import Context, Controller
from gitkrm.controllers.scheduler import Scheduler
from gitkrm.controllers.service import ServiceController
from gitkrm.controllers.serviceaccount import ServiceAccountController
from gitkrm.controllers.statefulset import StatefulSetController
from gitkrm.controllers.storage import StorageController
from gitkrm.controllers.writer import Writer
from gitkrm.errors import BadRequest
from gitkrm.krm.clock import WALL, Clock
from gitkrm.schema import Registry
from gitkrm.store.events import EventRecorder
from gitkrm.store.protocol import Store

log = logging.getLogger(__name__)

CONTROLLERS: dict[str, type[Controller]] = {
    c.name: c
    for c in (
        NodeController,
        KubeletSimulator,
        Scheduler,
        DeploymentController,
        ReplicaSetController,
        StatefulSetController,
        DaemonSetController,
        JobController,
        CronJobController,
        StorageController,
        ServiceController,
        EndpointsController,
        GarbageCollector,
        NamespaceController,
        ServiceAccountController,
        RootCAPublisher,
        ResourceQuotaController,
    )
}

DEFAULT_OPTIONS = ControllerOptions()


class ControllerManager:
    def __init__(
        self,
        *,
        store: Store,
        options: ControllerOptions = DEFAULT_OPTIONS,
        cache: WatchCache | None = None,
        clock: Clock = WALL,
    ) -> None:
        """`cache`: the store's watch cache, shared with the agent's other readers (one of
        the manager's own otherwise). `clock`: what the controllers read time from and set
        their timers on (a simulation's virtual clock; the wall clock otherwise)."""
        registry = store.registry or Registry.builtin()
        enabled = options.enabled
        if enabled is not None:
            unknown = sorted(set(enabled) - set(CONTROLLERS))
            if unknown:
                raise BadRequest(
                    f"unknown controllers {', '.join(unknown)}: known are {', '.join(CONTROLLERS)}"
                )
        self.store = store
        self.options = options
        self._own_cache = cache is None
        self.cache = cache if cache is not None else WatchCache(store)
        self.informers = Holder(self.cache)
        self.writer = Writer(store, self.informers)
        self.events = EventRecorder(
            store=store, clock=clock, ttl=options.event_ttl, enabled=options.record_events
        )
        self.event_expiry = EventExpiry(
            store=store, ttl=options.event_ttl, limit=options.event_limit, clock=clock
        )
        self.context = Context(
            store=store,
            cache=self.cache,
            informers=self.informers,
            writer=self.writer,
            options=options,
            registry=registry,
            events=self.events,
            clock=clock,
        )
        self.controllers: list[Controller] = [
            cls(self.context)
            for name, cls in CONTROLLERS.items()
            if enabled is None or name in enabled
        ]
        self._running = False

    def controller(self, name: str) -> Controller:
        for c in self.controllers:
            if c.name == name:
                return c
        raise KeyError(name)

    async def start(self) -> None:
        """Set up the controllers, sync their caches, then start their workers."""
        if self._running:
            return
        self._running = True
        for c in self.controllers:
            c.setup()
        self.cache.start()
        await asyncio.gather(*(c.run_started() for c in self.controllers))
        for c in self.controllers:
            c.start_workers()
        self.event_expiry.start()
        log.info("controllers started: %s", ", ".join(c.name for c in self.controllers))

    async def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        await asyncio.gather(*(c.stop() for c in self.controllers))
        await self.writer.drain()
        await self.events.stop()
        await self.event_expiry.stop()
        await self.informers.release_all()
        if self._own_cache:
            await self.cache.stop()

    def idle(self) -> bool:
        """No key queued or being worked on (delayed keys may wait: timers)."""
        return all(c.queue.idle for c in self.controllers)

    async def __aenter__(self) -> ControllerManager:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
