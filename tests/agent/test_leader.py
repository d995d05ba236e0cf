"""Lease leader election (client-go's rules) over the Store protocol, on the SQLite store.

Time is a fake monotonic clock where expiry matters, so no test waits a lease duration.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gitkrm.agent.leader import (
    LeaderElector,
    LeaseRecord,
    LeaseTimings,
    lease_name,
    new_identity,
)
from gitkrm.errors import BadRequest, ServiceUnavailable
from gitkrm.krm import ObjectRef
from gitkrm.store import Store, open_store

FAST = LeaseTimings(lease_duration=2, renew_deadline=1.5, retry_period=0.3)
QUICK = LeaseTimings(lease_duration=1, renew_deadline=0.5, retry_period=0.1)
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LEASE = ObjectRef(
    group="coordination.k8s.io", kind="Lease", name="gitkrm-edge", namespace="gitkrm-system"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    s = await open_store("sqlite:///:memory:")
    yield s
    await s.close()


def elector(store: Store, who: str, clock: Clock | None = None, **kw: Any) -> LeaderElector:
    return LeaderElector(
        store,
        agent_name="edge",
        identity=who,
        timings=kw.pop("timings", FAST),
        clock=clock,
        **kw,
    )


async def spec(store: Store) -> LeaseRecord:
    return LeaseRecord.of(await store.get(LEASE))


def test_names_and_identity() -> None:
    assert lease_name("edge") == "gitkrm-edge"
    host, _, rand = new_identity().rpartition("_")
    assert host
    assert len(rand) == 16
    assert new_identity() != new_identity()


@pytest.mark.parametrize(
    ("timings", "message"),
    [
        (LeaseTimings(lease_duration=2, renew_deadline=2, retry_period=0.3), "lease duration"),
        (LeaseTimings(lease_duration=2, renew_deadline=0.3, retry_period=0.3), "1.2 x"),
        (LeaseTimings(lease_duration=2, renew_deadline=1, retry_period=0), "retry period"),
    ],
)
def test_timings_follow_client_go_rules(timings: LeaseTimings, message: str) -> None:
    with pytest.raises(BadRequest, match=re.escape(message)):
        timings.check()


def test_lease_seconds_round_up() -> None:
    assert LeaseTimings(lease_duration=1.2, renew_deadline=1, retry_period=0.1).lease_seconds == 2
    assert LeaseTimings(lease_duration=0.5, renew_deadline=0.4, retry_period=0.1).lease_seconds == 1


async def test_first_candidate_creates_the_lease_and_namespace(store: Store) -> None:
    a = elector(store, "a")
    assert await a.try_acquire_or_renew()
    assert a.is_leader
    assert a.connected
    record = await spec(store)
    assert record.holder == "a"
    assert record.lease_seconds == 2
    assert record.transitions == 0
    assert record.acquire_time
    assert MICRO.match(record.acquire_time)
    assert record.renew_time == record.acquire_time
    ns = await store.get(ObjectRef(group="", kind="Namespace", name="gitkrm-system"))
    assert ns["metadata"]["name"] == "gitkrm-system"


async def test_renewal_moves_renew_time_only(store: Store) -> None:
    a = elector(store, "a")
    assert await a.try_acquire_or_renew()
    first = await spec(store)
    await asyncio.sleep(0.002)  # MicroTime resolution: the next renewal is a later time
    assert await a.try_acquire_or_renew()
    second = await spec(store)
    assert second.holder == "a"
    assert second.acquire_time == first.acquire_time
    assert second.transitions == 0
    assert second.renew_time
    assert first.renew_time
    assert second.renew_time > first.renew_time


async def test_a_valid_lease_is_not_taken_an_expired_one_is(store: Store) -> None:
    clock = Clock()
    a = elector(store, "a", clock)
    b = elector(store, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert b.holder == "a"
    assert not b.is_leader
    assert b.connected
    clock.now += 1.9  # not yet: b saw the record 1.9 s ago, the lease lasts 2 s
    assert not await b.try_acquire_or_renew()
    clock.now += 0.2
    assert await b.try_acquire_or_renew()
    record = await spec(store)
    assert record.holder == "b"
    assert record.transitions == 1
    # The old holder finds out at its next renewal: someone else holds it now.
    assert not await a.try_acquire_or_renew()
    assert not a.is_leader
    assert a.holder == "b"


async def test_expiry_is_measured_from_when_the_candidate_saw_a_change(store: Store) -> None:
    """The holder's renewals reset the candidate's observation: a live leader is never
    taken over, whatever time the candidate's clock says."""
    clock = Clock()
    a = elector(store, "a", clock)
    b = elector(store, "b", clock)
    assert await a.try_acquire_or_renew()
    for _ in range(5):
        assert not await b.try_acquire_or_renew()
        clock.now += 1.5
        await asyncio.sleep(0.002)
        assert await a.try_acquire_or_renew()  # renewTime moves: b sees a change
    assert not await b.try_acquire_or_renew()
    assert (await spec(store)).holder == "a"


async def test_release_lets_a_standby_take_over_at_once(store: Store) -> None:
    clock = Clock()
    a = elector(store, "a", clock)
    b = elector(store, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert await a.release()
    released = await spec(store)
    assert released.holder == ""
    assert released.lease_seconds == 1
    assert released.transitions == 0
    assert await b.try_acquire_or_renew()  # no clock movement needed
    assert (await spec(store)).transitions == 1
    assert await a.release()  # not the holder: nothing to do
    assert (await spec(store)).holder == "b"


class GatedStore:
    """The store, with every `get` held until two callers are inside (a race on purpose)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.barrier = asyncio.Barrier(2)

    async def get(self, ref: ObjectRef) -> Any:
        obj = await self.inner.get(ref)
        await self.barrier.wait()
        return obj

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_two_candidates_racing_for_a_free_lease_one_wins(store: Store) -> None:
    a = elector(store, "a")
    assert await a.try_acquire_or_renew()
    assert await a.release()
    gated: Any = GatedStore(store)
    b = elector(gated, "b")
    c = elector(gated, "c")
    won = await asyncio.wait_for(
        asyncio.gather(b.try_acquire_or_renew(), c.try_acquire_or_renew()), 10
    )
    assert sorted(won) == [False, True]  # the second update met a Conflict
    winner = "b" if won[0] else "c"
    assert (await spec(store)).holder == winner


class FailingStore:
    """The store until `failing` is set; then every call is a 503 (an unreachable cluster)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.failing = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.failing:
                raise ServiceUnavailable("the cluster is unreachable")
            return await attr(*args, **kwargs)

        return call


async def test_hold_returns_when_renewals_fail_past_the_deadline(store: Store) -> None:
    flaky = FailingStore(store)
    a = elector(flaky, "a", timings=QUICK)
    await asyncio.wait_for(a.acquire(), 5)
    holding = asyncio.create_task(a.hold())
    await asyncio.sleep(0.35)  # a few renewals go through
    assert not holding.done()
    flaky.failing = True
    loop = asyncio.get_running_loop()
    failed_at = loop.time()
    await asyncio.wait_for(holding, 5)
    # Gone within a retry period plus the renew deadline (well before the lease expires
    # for anyone else), and no longer the leader nor connected.
    assert loop.time() - failed_at < QUICK.retry_period + QUICK.renew_deadline + 0.3
    assert not a.is_leader
    assert not a.connected


async def test_hold_returns_at_once_when_the_lease_is_taken(store: Store) -> None:
    a = elector(store, "a", timings=QUICK)
    await asyncio.wait_for(a.acquire(), 5)
    holding = asyncio.create_task(a.hold())
    live = await store.get(LEASE)
    live["spec"]["holderIdentity"] = "intruder"
    await store.update(live)
    await asyncio.wait_for(holding, 2)
    assert not a.is_leader
    assert a.holder is None or a.holder == "intruder"


async def test_acquire_waits_for_the_holder_and_takes_over_on_release(store: Store) -> None:
    a = elector(store, "a", timings=QUICK)
    b = elector(store, "b", timings=QUICK)
    await asyncio.wait_for(a.acquire(), 5)
    holding = asyncio.create_task(a.hold())
    waiting = asyncio.create_task(b.acquire())
    try:
        done, _ = await asyncio.wait({waiting}, timeout=1.5)  # longer than the lease
        assert not done, "b took a lease a renews"
        holding.cancel()
        await asyncio.gather(holding, return_exceptions=True)
        assert await a.release()
        await asyncio.wait_for(waiting, 2)
        assert b.is_leader
        assert (await spec(store)).holder == "b"
    finally:
        for t in (holding, waiting):
            t.cancel()
        await asyncio.gather(holding, waiting, return_exceptions=True)


async def test_store_errors_are_a_failed_attempt_logged_once(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = FailingStore(store)
    flaky.failing = True
    a = elector(flaky, "a")
    for _ in range(3):
        assert not await a.try_acquire_or_renew()
    assert not a.connected
    warnings = [r for r in caplog.records if "unreachable" in r.getMessage()]
    assert len(warnings) == 1
    flaky.failing = False
    assert await a.try_acquire_or_renew()
    assert a.connected
