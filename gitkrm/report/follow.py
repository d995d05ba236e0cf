"""Following the health of each source's objects after a sync, for the reporter.

`HealthFollower.follow(source, revision, refs)` subscribes to the store's watch cache for
the kinds of those objects, in the source's scope (its label selector: the same informers
drift detection reads, so a source costs one list and one watch per kind), judges each
change with `gitkrm.health.health_of`, and tells the `Reporter` the verdicts that changed,
in batches. A new `follow` of the same source replaces the old one (the latest revision is
the one followed). The reporter's throttle decides when any of it reaches Git.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from datetime import UTC, datetime

from gitkrm.cache import Scope, Subscription, WatchCache
from gitkrm.health import HealthChecks, HealthResult, health_of
from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef, ResourceKey
from gitkrm.store import Store
from gitkrm.sync.keys import source_selector

from .reporter import Reporter

log = logging.getLogger("gitkrm.report")

RETRY_INTERVAL = 1.0


class _Following:
    """One source's objects of one revision: verdicts and the changes not yet reported."""

    def __init__(
        self,
        source: str,
        revision: str,
        refs: Iterable[ObjectRef],
        ttl_jobs: frozenset[ResourceKey],
        checks: HealthChecks | None = None,
    ) -> None:
        self.checks = checks
        self.source = source
        self.ttl_jobs = ttl_jobs
        self.revision = revision
        self.by_key = {r.key: r.without_version() for r in refs}
        self.versions = {r.group_kind: r.version for r in refs if r.version}
        self.verdicts: dict[ObjectRef, HealthResult] = {}
        self.changed: dict[ObjectRef, HealthResult] = {}
        self.wake = asyncio.Event()

    def observe(self, key: ResourceKey, obj: Obj | None) -> None:
        ref = self.by_key.get(key)
        if ref is None:
            return
        verdict = health_of(
            obj, now=datetime.now(UTC), deletes_itself=key in self.ttl_jobs, checks=self.checks
        )
        if self.verdicts.get(ref) != verdict:
            self.verdicts[ref] = verdict
            self.changed[ref] = verdict
            self.wake.set()

    def kinds(self) -> set[GroupKind]:
        return {ref.group_kind for ref in self.by_key.values()}


class HealthFollower:
    """See the module docstring. `close` last."""

    def __init__(self, store: Store, reporter: Reporter, cache: WatchCache | None = None) -> None:
        self.store = store
        self.reporter = reporter
        self._own_cache = cache is None
        self.cache = cache if cache is not None else WatchCache(store)
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def follow(
        self,
        source_name: str,
        revision: str,
        refs: Iterable[ObjectRef],
        *,
        ttl_jobs: frozenset[ResourceKey] = frozenset(),
        checks: HealthChecks | None = None,
    ) -> None:
        """Follow `refs` (the objects `revision` applied) until the next `follow` or `stop`;
        `ttl_jobs`: Jobs whose manifest sets ttlSecondsAfterFinished (gone means done);
        `checks`: the source's healthCheckExprs."""
        self.stop(source_name)
        following = _Following(source_name, revision, refs, ttl_jobs, checks)
        self.cache.start()
        self._tasks[source_name] = asyncio.create_task(
            self._run(following, Scope(label_selector=source_selector(source_name))),
            name=f"gitkrm-health-{source_name}",
        )

    def stop(self, source_name: str) -> None:
        task = self._tasks.pop(source_name, None)
        if task is not None:
            task.cancel()

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._own_cache:
            await self.cache.stop()

    async def _run(self, f: _Following, scope: Scope) -> None:
        subs: list[Subscription] = []
        waits: list[asyncio.Task[None]] = []
        try:
            for gk in sorted(f.kinds(), key=lambda g: (g.group, g.kind)):
                version = self._version(f, gk)
                if version is None:  # not served yet: its objects are NotFound meanwhile
                    waits.append(asyncio.create_task(self._when_served(f, gk, scope, subs)))
                else:
                    subs.append(
                        self._subscribe(
                            f, GVK(group=gk.group, version=version, kind=gk.kind), scope
                        )
                    )
            await self._report(f)
        finally:
            for t in waits:
                t.cancel()
            for sub in subs:
                with contextlib.suppress(Exception):
                    await sub.close()

    def _subscribe(self, f: _Following, gvk: GVK, scope: Scope) -> Subscription:
        gk = gvk.group_kind
        refs = [k for k, r in f.by_key.items() if r.group_kind == gk]

        def handler(old: Obj | None, new: Obj | None) -> None:
            obj = new if new is not None else old
            if obj is not None:
                f.observe(ResourceKey.in_kind(gk, obj), new)

        def listed() -> None:
            for k in refs:  # what a list did not find is NotFound
                if sub.informer.get(k.namespace or None, k.name) is None:
                    f.observe(k, None)

        sub = self.cache.subscribe(gvk, handler, scope)
        sub.informer.add_list_listener(listed)
        return sub

    async def _when_served(
        self, f: _Following, gk: GroupKind, scope: Scope, subs: list[Subscription]
    ) -> None:
        for k, r in f.by_key.items():
            if r.group_kind == gk:
                f.observe(k, None)
        while True:  # the registry learns of a custom kind when its CRD is established
            version = self._version(f, gk)
            if version is not None:
                break
            await asyncio.sleep(RETRY_INTERVAL)
        subs.append(self._subscribe(f, GVK(group=gk.group, version=version, kind=gk.kind), scope))

    async def _report(self, f: _Following) -> None:
        while True:
            await f.wake.wait()
            await asyncio.sleep(0)  # let a burst of events land in one batch
            f.wake.clear()
            batch, f.changed = f.changed, {}
            if batch:
                await self.reporter.record_health(
                    source_name=f.source, revision=f.revision, health=batch
                )

    def _version(self, f: _Following, gk: GroupKind) -> str | None:
        version = f.versions.get(gk)
        if version:
            return version
        registry = self.store.registry
        if registry is not None:
            found = registry.versions_of(gk)
            if found:
                return found[0].version
        return None
