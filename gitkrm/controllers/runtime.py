"""The controller runtime: shared informers, a work queue and workers per controller.

A controller declares the informers it reads and maps their events to keys; workers take
keys from the queue (a key is never worked on twice at once) and call `reconcile(key)`,
which compares the cache with what should be and writes the difference through the Writer.
Errors requeue the key with exponential backoff; a reconcile may ask to be called again
after a delay (progress deadlines, pod start-up delays), which is the only timer there is:
an idle control plane sleeps. Timers and "now" come from the context's clock (the wall
clock unless a simulation gives its virtual one).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

from gitkrm.cache.informer import Informer, Key, key_of
from gitkrm.cache.watchcache import Holder, WatchCache
from gitkrm.controllers.allkinds import AllKinds
from gitkrm.controllers.objects import OWNER_INDEX, controller_ref, owner_index
from gitkrm.controllers.options import ControllerOptions
from gitkrm.controllers.pods import ORPHAN_INDEX, orphan_index
from gitkrm.controllers.queue import ShutDown, WorkQueue
from gitkrm.controllers.writer import Writer
from gitkrm.errors import AlreadyExists, Conflict, GitkrmError, NotFound
from gitkrm.krm import GVK, Obj
from gitkrm.krm.clock import WALL, Clock, Timer
from gitkrm.schema import Registry
from gitkrm.store.events import EventRecorder, Style
from gitkrm.store.protocol import Store

log = logging.getLogger(__name__)

STOP_GRACE = 10.0


@dataclass
class Context:
    """What every controller shares: the store, informers, the writer and the options."""

    store: Store
    cache: WatchCache
    informers: Holder  # the controllers' informers on the shared cache
    writer: Writer
    options: ControllerOptions
    registry: Registry
    events: EventRecorder
    clock: Clock = WALL
    _all_kinds: AllKinds | None = None

    def informer(self, gvk: GVK) -> Informer:
        return self.informers.get(gvk)

    def all_kinds(self) -> AllKinds:
        """Informers of every served kind (shared by the controllers that need them)."""
        if self._all_kinds is None:
            self._all_kinds = AllKinds(self.informers, self.registry)
            self._all_kinds.start()
        return self._all_kinds


class Controller:
    """Base of the bundled controllers."""

    name: ClassVar[str] = "controller"
    workers: ClassVar[int] = 0  # 0: options.workers
    batch: ClassVar[int] = 1  # keys a worker takes at once (their writes share a commit)
    # Who its Events name as their source (kube's component, `deployment-controller`).
    component: ClassVar[str] = ""
    event_style: ClassVar[Style] = Style.CORE

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.writer = ctx.writer
        self.events = ctx.events.sink(
            self.component or f"{self.name}-controller", style=self.event_style
        )
        self.options = ctx.options
        self.clock = ctx.clock
        self.queue: WorkQueue[Key] = WorkQueue(clock=ctx.clock)
        self.primary: Informer | None = None  # resynced periodically
        self.watched: list[Informer] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._resync: Timer | None = None

    # -- to implement ----------------------------------------------------------------------

    def setup(self) -> None:
        """Declare informers (`self.watch(...)`) and handlers."""

    async def started(self) -> None:
        """Runs once the informers are synced, before the workers."""

    async def reconcile(self, key: Key) -> float | None:
        """Make the world match `key`'s object; return seconds to be called again, or None."""
        raise NotImplementedError

    # -- helpers ---------------------------------------------------------------------------

    def watch(self, gvk: GVK, *, primary: bool = False) -> Informer:
        inf = self.ctx.informer(gvk)
        if inf not in self.watched:
            self.watched.append(inf)
        if primary:
            self.primary = inf
            inf.add_handler(self._enqueue_self)
        return inf

    def watch_owned(
        self, gvk: GVK, owner_kind: str | None = None, *, claiming: bool = False
    ) -> Informer:
        """`watch` of what this controller's objects own, indexed by owner (OWNER_INDEX) and,
        when they `claim` it (adopt orphans), by the namespace of orphans (ORPHAN_INDEX); a
        change queues the controlling object of kind `owner_kind` when one is given."""
        inf = self.watch(gvk)
        inf.add_index(OWNER_INDEX, owner_index)
        if claiming:
            inf.add_index(ORPHAN_INDEX, orphan_index)
        if owner_kind is not None:
            inf.add_handler(self.enqueue_owner(owner_kind))
        return inf

    def _enqueue_self(self, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is not None:
            self.queue.add(key_of(obj))

    def enqueue(self, key: Key) -> None:
        self.queue.add(key)

    def enqueue_owner(self, kind: str) -> Callable[[Obj | None, Obj | None], None]:
        """An informer handler queueing the `kind` that controls the changed object."""

        def handler(old: Obj | None, new: Obj | None) -> None:
            for obj in (old, new):
                ref = controller_ref(obj) if obj is not None else None
                if obj is not None and ref is not None and ref.get("kind") == kind:
                    self.queue.add((obj["metadata"].get("namespace") or "", str(ref.get("name"))))

        return handler

    def enqueue_after(self, key: Key, delay: float) -> None:
        self.queue.add_after(key, delay)

    # -- running ---------------------------------------------------------------------------

    async def run_started(self) -> None:
        await self.ctx.cache.wait_synced(self.watched)
        await self.started()

    def start_workers(self) -> None:
        count = self.workers or self.options.workers
        for i in range(count):
            self._tasks.append(asyncio.create_task(self._worker(), name=f"{self.name}-{i}"))
        self._schedule_resync()

    def _schedule_resync(self) -> None:
        period = self.options.resync_period
        if period <= 0 or self.primary is None:
            return
        delay = period * (1 + random.random() * 0.1)
        self._resync = self.clock.call_later(delay, self._do_resync)

    def _do_resync(self) -> None:
        if self.primary is not None:
            for key in list(self.primary.keys()):
                self.queue.add(key)
        self._schedule_resync()

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                keys = await queue.get_batch(self.batch)
            except ShutDown:
                return
            if len(keys) == 1:
                await self._process(keys[0])
            else:
                await asyncio.gather(*(self._process(k) for k in keys))
            await asyncio.sleep(0)  # the store answers without yielding: let others run

    async def _process(self, key: Key) -> None:
        queue = self.queue
        try:
            again = await self.reconcile(key)
        except (Conflict, AlreadyExists, NotFound) as e:
            # The cache was behind the store: try again once the watch caught up.
            log.debug("%s %s: %s (retrying)", self.name, key, e)
            queue.add_rate_limited(key)
        except GitkrmError as e:
            delay = queue.add_rate_limited(key)
            log.warning("%s %s/%s: %s (retry in %.2fs)", self.name, key[0], key[1], e, delay)
        except Exception:
            delay = queue.add_rate_limited(key)
            log.exception("%s %s/%s failed (retry in %.2fs)", self.name, key[0], key[1], delay)
        else:
            queue.forget(key)
            if again is not None:
                queue.add_after(key, again)
        finally:
            queue.done(key)

    async def stop(self) -> None:
        """Hand out no more work; what is in flight finishes."""
        if self._resync is not None:
            self._resync.cancel()
            self._resync = None
        self.queue.shutdown()
        tasks, self._tasks = self._tasks, []
        if not tasks:
            return
        _, still = await asyncio.wait(tasks, timeout=STOP_GRACE)
        for t in still:
            t.cancel()
        if still:
            await asyncio.gather(*still, return_exceptions=True)


def keys_of(objs: Iterable[Obj]) -> list[Key]:
    return [key_of(o) for o in objs]
