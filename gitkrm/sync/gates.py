"""Health gates: a wave (or a depends-on level) is applied only once the one before it is
healthy, and pruning goes wave by wave in reverse, each wave gone before the next.

A gate waits on every object of the stage, written or already in sync: Current by
kstatus, except Jobs and Pods, which count once completed (Argo CD's health of a Job).
It gives up when any is Failed, when the source's `healthTimeout` runs out or the run's
deadline passes (`run --once --wait --timeout`; naming each object not ready and its
message), or when `cancel` is set: a new revision arrived and
is synced instead of waiting on the old one (Flux's CancelHealthCheckOnNewRevision). A
revision without waves or dependencies has no gates: it is applied as fast as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from gitkrm.cache import WatchCache
from gitkrm.health.expressions import HealthChecks
from gitkrm.health.wait import WaitResult, wait_for
from gitkrm.krm import ObjectRef, ResourceKey
from gitkrm.store import Store
from gitkrm.sync.desired import Desired
from gitkrm.sync.order import describe_stage

T = TypeVar("T")
GroupKey = tuple[int, int, int]  # phase, wave, depends-on level
_COMPLETE: Final = (("batch", "Job"), ("", "Pod"))  # healthy once completed


def uses_gates(objects: Sequence[Desired]) -> bool:
    """Whether a revision has more than one wave, or dependencies: then it is gated."""
    waves = {d.wave for d in objects}
    return len(waves) > 1 or any(d.depends_on for d in objects)


def levels(objects: Sequence[Desired]) -> dict[str, GroupKey]:
    """Each object's gate group: its stage, and its depth among the dependencies of its
    stage (objects are in apply order, dependencies first)."""
    out: dict[str, GroupKey] = {}
    by_ref: dict[ObjectRef, GroupKey] = {}
    for d in objects:
        phase, wave = d.order_key[0], d.order_key[1]
        level = 0
        for dep in d.depends_on:
            g = by_ref.get(dep)
            if g is not None and g[:2] == (phase, wave):
                level = max(level, g[2] + 1)
        key = (phase, wave, level)
        out[d.key] = by_ref[d.ref] = key
    return out


def describe_group(group: GroupKey) -> str:
    where = describe_stage((group[0], group[1]))
    return f"{where} (depends-on level {group[2]})" if group[2] else where


class Cancelled(Exception):
    """A new revision arrived while a gate waited."""


async def cancellable(waiting: Awaitable[T], cancel: asyncio.Event | None) -> T:
    """`waiting`, unless `cancel` is set first (then `Cancelled`)."""
    task = asyncio.ensure_future(waiting)
    if cancel is None:
        return await task
    stop = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise Cancelled
    return task.result()


def budget(timeout: float, deadline: float | None) -> float:
    """Seconds a wait may take: `timeout`, cut short by `deadline` (a `time.monotonic()`
    by which the whole run ends: `run --once --wait --timeout`), never below 0."""
    if deadline is None:
        return timeout
    return max(0.0, min(timeout, deadline - time.monotonic()))


class Waits(Protocol):
    """What a wait on written objects needs: the store and its cache, the source's health
    timeout and checks, the run's deadline, the new revision's `cancel`, and `before_wait`
    (e.g. start the controllers)."""

    store: Store
    timeout: float
    deadline: float | None
    cache: WatchCache | None
    cancel: asyncio.Event | None
    before_wait: Callable[[], Awaitable[None]] | None
    checks: HealthChecks | None


async def wait_healthy(
    waits: Waits,
    refs: Sequence[ObjectRef],
    *,
    ttl_jobs: Collection[ResourceKey] = (),
    timeout: float,  # noqa: ASYNC109 (the wait's `budget`, which the caller reports)
) -> WaitResult:
    """Wait until `refs` are healthy (Jobs and Pods: completed) or one failed, within
    `timeout`; `Cancelled` when a new revision arrives first."""
    if waits.before_wait is not None:
        await waits.before_wait()
    complete = [r.key for r in refs if (r.group, r.kind) in _COMPLETE]
    return await cancellable(
        wait_for(
            waits.store,
            refs,
            timeout=timeout,
            cache=waits.cache,
            ttl_jobs=ttl_jobs,
            complete=complete,
            checks=waits.checks,
        ),
        waits.cancel,
    )


def verdict(result: WaitResult, *, what: str, timeout: float) -> str | None:
    """None when the wait succeeded, else why it did not, naming each object."""
    if result.ok:
        return None
    pending = "; ".join(result.describe())
    if result.timed_out:
        return f"{what} not healthy within {timeout:g}s: {pending}"
    return f"{what} failed: {pending}"


@dataclass(slots=True)
class Gate:
    """Waits between the groups of a gated apply (see the module docstring)."""

    store: Store
    groups: dict[str, GroupKey] | None  # None: applies are not gated (prunes still are)
    timeout: float
    deadline: float | None = None  # the run's end (`budget`)
    cache: WatchCache | None = None
    cancel: asyncio.Event | None = None
    ttl_jobs: Collection[ResourceKey] = ()
    on_wait: Callable[[str], None] | None = None
    before_wait: Callable[[], Awaitable[None]] | None = None  # e.g. start the controllers
    checks: HealthChecks | None = None  # the source's healthCheckExprs

    def group(self, key: str, stage: tuple[int, int]) -> GroupKey:
        return self.groups.get(key, (*stage, 0)) if self.groups is not None else (*stage, 0)

    async def healthy(
        self, refs: Sequence[ObjectRef], group: GroupKey, *, what: str = ""
    ) -> str | None:
        """Wait until `refs` (written by `group`) are healthy: None, or why not."""
        if not refs:
            return None
        what = what or describe_group(group)
        if self.on_wait is not None:
            self.on_wait(what)
        limit = budget(self.timeout, self.deadline)
        result = await wait_healthy(self, refs, ttl_jobs=self.ttl_jobs, timeout=limit)
        return verdict(result, what=what, timeout=limit)

    async def gone(self, refs: Sequence[ObjectRef], wave: int) -> str | None:
        """Wait until the objects pruned from `wave` are gone: None, or why not."""
        if not refs:
            return None
        if self.before_wait is not None:
            await self.before_wait()  # garbage collection and finalizers are controllers' work
        limit = budget(self.timeout, self.deadline)
        result = await cancellable(
            wait_for(self.store, (), absent=refs, timeout=limit, cache=self.cache), self.cancel
        )
        return verdict(result, what=f"pruning wave {wave}", timeout=limit)
