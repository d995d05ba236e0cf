"""wait_for: watch a set of objects until all are Current (or gone, for pruned ones), one
fails, or the time runs out. Driven by the store's watch cache: no polling while objects
are quiet, and no watch of its own where the cache already has the kind."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gitkrm.cache.watchcache import WatchCache
from gitkrm.errors import GitkrmError, NotFound
from gitkrm.health.compute import health_of
from gitkrm.health.expressions import HealthChecks
from gitkrm.health.kinds import SCHEDULE_WINDOW
from gitkrm.health.result import Health, HealthResult
from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef, ResourceKey
from gitkrm.krm.clock import parse_time
from gitkrm.store.protocol import Store

Progress = Callable[[ObjectRef, HealthResult], None]
# How often a kind the store cannot watch (not served yet: its CRD is still coming) is tried.
RETRY_INTERVAL = 1.0
_NOT_SEEN = HealthResult(Health.UNKNOWN, "not observed yet", "NotObserved")


@dataclass(frozen=True, slots=True)
class WaitResult:
    """`results` holds the last verdict of every ref; `pending` those not as wanted."""

    ok: bool
    timed_out: bool
    results: Mapping[ObjectRef, HealthResult]
    pending: tuple[tuple[ObjectRef, HealthResult], ...] = field(default=())

    @property
    def failed(self) -> tuple[tuple[ObjectRef, HealthResult], ...]:
        return tuple((r, h) for r, h in self.pending if h.status is Health.FAILED)

    def describe(self) -> list[str]:
        """One line per object still waited for: `apps/Deployment team-1/app-3: InProgress
        (Available: 1/3)`."""
        return [f"{ref}: {h.status.value} ({h.message})" for ref, h in self.pending]


class _Waiter:
    def __init__(
        self,
        store: Store,
        want: dict[ObjectRef, Health],
        on_progress: Progress | None,
        ttl_jobs: frozenset[ResourceKey],
        complete: frozenset[ResourceKey] = frozenset(),
        checks: HealthChecks | None = None,
    ) -> None:
        self.checks = checks
        self.store = store
        self.want = want
        self.ttl_jobs = ttl_jobs
        self.complete = complete
        self.by_key = {r.key: r for r in want}
        self.results: dict[ObjectRef, HealthResult] = dict.fromkeys(want, _NOT_SEEN)
        self.objects: dict[ObjectRef, Obj | None] = {}
        self.on_progress = on_progress
        self.changed = asyncio.Event()

    def observe(self, gk: GroupKind, obj: Obj | None, key: ResourceKey) -> None:
        ref = self.by_key.get(key)
        if ref is None:
            return
        self.objects[ref] = obj
        self.judge(ref, datetime.now(UTC))

    def judge(self, ref: ObjectRef, now: datetime) -> None:
        key = ref.key
        result = health_of(
            self.objects.get(ref),
            now=now,
            deletes_itself=key in self.ttl_jobs,
            until_complete=key in self.complete,
            checks=self.checks,
        )
        if result != self.results.get(ref):
            self.results[ref] = result
            self.changed.set()
            if self.on_progress is not None:
                self.on_progress(ref, result)

    def recheck_at(self, now: datetime) -> float | None:
        """Seconds until a verdict changes with time alone (an unschedulable pod turns
        Failed at the end of its schedule window), or None."""
        soonest: float | None = None
        for ref, h in self.results.items():
            if h.reason != "PodNotScheduled":
                continue
            created = parse_time(
                ((self.objects.get(ref) or {}).get("metadata") or {}).get("creationTimestamp")
            )
            if created is None:
                continue
            delay = max(0.0, (created + SCHEDULE_WINDOW - now).total_seconds()) + 0.01
            soonest = delay if soonest is None else min(soonest, delay)
        return soonest

    def outcome(self) -> tuple[bool, bool]:
        """(done, ok)."""
        if any(h.status is Health.FAILED for h in self.results.values()):
            return True, False
        done = all(self.results[r].status is w for r, w in self.want.items())
        return done, done

    def pending(self) -> tuple[tuple[ObjectRef, HealthResult], ...]:
        return tuple(
            (r, self.results[r]) for r, w in self.want.items() if self.results[r].status is not w
        )


def _resolve_version(store: Store, gk: GroupKind) -> str | None:
    registry = store.registry
    if registry is not None:
        found = registry.versions_of(gk)
        if found:
            return found[0].version
    return None


async def _follow(waiter: _Waiter, cache: WatchCache, gk: GroupKind, version: str | None) -> None:
    """Feed the waiter from the cache's informer of one kind (all namespaces: on the
    embedded target the controllers' own); while the kind's version is unknown (a custom
    kind not registered yet), poll its objects."""
    refs = [r for r in waiter.want if r.group_kind == gk]
    v = version or _resolve_version(waiter.store, gk)
    while v is None:
        await _poll(waiter, refs)
        await asyncio.sleep(RETRY_INTERVAL)
        v = _resolve_version(waiter.store, gk)

    def handler(old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        if obj is not None:
            waiter.observe(gk, new, ResourceKey.in_kind(gk, obj))

    def listed() -> None:
        # What a list did not find is absent (or its kind not served): NotFound.
        for r in refs:
            if informer.get(r.namespace, r.name) is None:
                waiter.observe(gk, None, r.key)

    sub = cache.subscribe(GVK(group=gk.group, version=v, kind=gk.kind), handler)
    informer = sub.informer
    informer.add_list_listener(listed)
    try:
        await asyncio.Event().wait()  # the handlers feed the waiter until it is done
    finally:
        informer.remove_list_listener(listed)
        await sub.close()


async def _poll(waiter: _Waiter, refs: Iterable[ObjectRef]) -> None:
    for r in refs:
        try:
            obj: Obj | None = await waiter.store.get(r)
        except NotFound:
            obj = None
        except GitkrmError:
            continue
        waiter.observe(r.group_kind, obj, r.key)


async def wait_for(
    store: Store,
    refs: Iterable[ObjectRef],
    *,
    timeout: float,  # noqa: ASYNC109 (the caller's budget, also reported as timed_out)
    on_progress: Progress | None = None,
    absent: Iterable[ObjectRef] = (),
    cache: WatchCache | None = None,
    ttl_jobs: Iterable[ResourceKey] = (),
    complete: Iterable[ResourceKey] = (),
    checks: HealthChecks | None = None,
) -> WaitResult:
    """Wait until every ref is Current and every `absent` ref is NotFound (ok), or any is
    Failed, or `timeout` seconds pass (not ok). `on_progress(ref, result)` hears of every
    change of verdict. `cache`: the store's shared watch cache (a private one otherwise).
    `ttl_jobs`: Jobs whose manifest sets ttlSecondsAfterFinished; gone, they are done.
    `complete`: Jobs and Pods that count only once completed (hooks, wave gates).
    `checks`: the source's healthCheckExprs."""
    want: dict[ObjectRef, Health] = {r: Health.CURRENT for r in refs}
    want.update({r: Health.NOT_FOUND for r in absent})
    waiter = _Waiter(
        store, want, on_progress, frozenset(ttl_jobs), frozenset(complete), checks=checks
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    own_cache = cache is None
    watch_cache = WatchCache(store) if cache is None else cache
    watch_cache.start()
    versions: dict[GroupKind, str | None] = {}
    for r in want:
        if versions.get(r.group_kind) is None:
            versions[r.group_kind] = r.version
    tasks = [asyncio.create_task(_follow(waiter, watch_cache, gk, v)) for gk, v in versions.items()]
    timed_out = False
    try:
        while True:
            done, ok = waiter.outcome()
            if done:
                break
            remaining = deadline - loop.time()
            if remaining <= 0:
                timed_out, ok = True, False
                break
            now = datetime.now(UTC)
            recheck = waiter.recheck_at(now)
            delay = remaining if recheck is None else min(remaining, recheck)
            waiter.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await waiter.changed.wait()
            if recheck is not None:
                now = datetime.now(UTC)
                for ref in list(waiter.results):
                    waiter.judge(ref, now)
            for t in tasks:
                if t.done() and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if own_cache:
            await watch_cache.stop()
    return WaitResult(
        ok=ok, timed_out=timed_out, results=dict(waiter.results), pending=waiter.pending()
    )
