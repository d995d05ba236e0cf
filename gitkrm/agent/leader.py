"""Leader election through a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it.

On the cluster target several replicas of one agent (same `--agent-name`) may run; only the
holder of the Lease `gitkrm-<agent>` in `gitkrm-system` syncs. The rules are client-go's
(`tools/leaderelection`), so gitkrm's Lease reads the same to `kubectl get lease` and to
anyone who knows Kubernetes controllers:

- a candidate takes the Lease when it does not exist, has no holder, or its holder has not
  renewed it for `leaseDurationSeconds` *as observed on the candidate's own clock* (the
  time the candidate last saw the record change, never the writer's timestamps, so clock
  skew between machines does not matter);
- every write is an update with the resourceVersion last read (optimistic concurrency:
  of two candidates writing the same record, one gets a Conflict and stays a candidate);
- the leader renews every `retry_period`; when it has not managed to renew within
  `renew_deadline` (shorter than the lease duration) it stops leading, before any other
  replica can consider the Lease expired;
- a clean shutdown releases the Lease (holder cleared, duration 1 s), so a standby takes
  over within a retry period instead of a whole lease duration.

The namespace `gitkrm-system` is created when missing (the inventory is kept there too);
on a cluster the Helm chart creates it, and the agent needs no right to create namespaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from gitkrm.errors import AlreadyExists, BadRequest, Conflict, GitkrmError, NotFound
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store import Store

log = logging.getLogger("gitkrm.leader")

LEASE_GVK: Final = GVK(group="coordination.k8s.io", version="v1", kind="Lease")
NAMESPACE: Final = "gitkrm-system"
LEASE_NAMESPACE_ENV: Final = "GITKRM_LEASE_NAMESPACE"
"""The default of `run --leader-elect-resource-namespace` (the Helm chart sets it)."""
JITTER_FACTOR: Final = 1.2
"""client-go's: a candidate retries every retry period plus up to 1.2 times that again."""
MICROTIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"
"""metav1.MicroTime on the wire (Go's `2006-01-02T15:04:05.000000Z07:00` in UTC)."""


def lease_name(agent_name: str) -> str:
    return f"gitkrm-{agent_name}"


def new_identity() -> str:
    """`<hostname>_<random>` (client-go's convention): unique per process, readable."""
    return f"{socket.gethostname()}_{os.urandom(8).hex()}"


def micro_time(at: datetime | None = None) -> str:
    return (at or datetime.now(UTC)).astimezone(UTC).strftime(MICROTIME_FORMAT)


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    """How long a Lease lasts, by when its holder must have renewed it, and how often
    anyone tries; client-go's defaults (15 s, 10 s, 2 s)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def check(self) -> LeaseTimings:
        """client-go's rules: the leader must give up before anyone may take over."""
        if self.retry_period <= 0:
            raise BadRequest("leader election: the retry period must be more than 0s")
        if self.lease_duration <= self.renew_deadline:
            raise BadRequest(
                f"leader election: the lease duration ({self.lease_duration:g}s) must be "
                f"longer than the renew deadline ({self.renew_deadline:g}s)"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise BadRequest(
                f"leader election: the renew deadline ({self.renew_deadline:g}s) must be "
                f"longer than {JITTER_FACTOR:g} x the retry period ({self.retry_period:g}s)"
            )
        return self

    @property
    def lease_seconds(self) -> int:
        """`spec.leaseDurationSeconds` is whole seconds: rounded up, so never shorter."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The spec of a Lease, as leaderelection's LeaderElectionRecord."""

    holder: str
    lease_seconds: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    @classmethod
    def of(cls, obj: Obj) -> LeaseRecord:
        spec = obj.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time:
            spec["renewTime"] = self.renew_time
        return spec


class LeaderElector:
    """One candidate for one Lease. `acquire` waits until this process leads; `hold` renews
    until the Lease is lost (and returns then); `release` gives it up.

    `clock` is monotonic seconds (the event loop's time by default; tests may pass a fake).
    """

    def __init__(
        self,
        store: Store,
        *,
        agent_name: str,
        identity: str | None = None,
        timings: LeaseTimings | None = None,
        namespace: str = NAMESPACE,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.store = store
        self.identity = identity or new_identity()
        self.timings = (timings or LeaseTimings()).check()
        self.ref = ObjectRef(
            group=LEASE_GVK.group,
            kind=LEASE_GVK.kind,
            name=lease_name(agent_name),
            namespace=namespace,
            version=LEASE_GVK.version,
        )
        self._clock = clock or time.monotonic
        self._lease: Obj | None = None
        self._observed: LeaseRecord | None = None
        self._observed_raw: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._said_held_by: str | None = None
        self._last_error: str | None = None
        self.connected = False
        """Whether the store answered the last attempt (readiness: a standby that can't
        reach the cluster could not take over)."""

    # -- state ---------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._observed is not None and self._observed.holder == self.identity

    @property
    def holder(self) -> str | None:
        """The holder last observed ('' when released, None before the first read)."""
        return None if self._observed is None else self._observed.holder

    def _lease_valid(self, now: float) -> bool:
        if self._observed is None:
            return False
        return self._observed_at + self._observed.lease_seconds > now

    def _observe(self, lease: Obj, record: LeaseRecord, *, raw_changed: bool = True) -> None:
        self._lease = lease
        if raw_changed:
            self._observed = record
            self._observed_raw = lease.get("spec") or {}
            self._observed_at = self._clock()

    # -- one attempt ---------------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """One attempt, client-go's `tryAcquireOrRenew`: True when this process holds the
        Lease afterwards. Store errors count as a failed attempt (logged at debug)."""
        try:
            held = await self._try()
        except (Conflict, NotFound) as e:
            self.connected = True  # an answer: someone else was faster
            log.debug("lease %s: %s", self.ref.name, e.message)
            return False
        except GitkrmError as e:
            self.connected = False
            if e.message != self._last_error:  # once per distinct error, not every retry
                log.warning("lease %s: %s", self.ref.name, e.message)
            self._last_error = e.message
            return False
        self.connected = True
        self._last_error = None
        return held

    async def _try(self) -> bool:
        now_wall = micro_time()
        mine = LeaseRecord(
            holder=self.identity,
            lease_seconds=self.timings.lease_seconds,
            acquire_time=now_wall,
            renew_time=now_wall,
            transitions=0,
        )
        # 1. The leader's fast path: update the Lease last seen (its resourceVersion).
        if self.is_leader and self._lease_valid(self._clock()) and self._lease is not None:
            assert self._observed is not None
            renewed = LeaseRecord(
                holder=self.identity,
                lease_seconds=mine.lease_seconds,
                acquire_time=self._observed.acquire_time,
                renew_time=now_wall,
                transitions=self._observed.transitions,
            )
            try:
                await self._update(renewed)
                return True
            except GitkrmError as e:
                log.debug("lease %s: fast renew failed (%s), reading it", self.ref.name, e.message)
        # 2. Read (or create) the Lease.
        try:
            live = await self.store.get(self.ref)
        except NotFound:
            await self._create(mine)
            return True
        current = LeaseRecord.of(live)
        raw = live.get("spec") or {}
        self._observe(live, current, raw_changed=raw != self._observed_raw)
        # 3. Held by someone else and not expired: stay a candidate.
        if current.holder and current.holder != self.identity and self._lease_valid(self._clock()):
            if self._said_held_by != current.holder:
                self._said_held_by = current.holder
                log.info(
                    "lease %s/%s is held by %s: waiting as a candidate",
                    self.ref.namespace,
                    self.ref.name,
                    current.holder,
                )
            return False
        # 4. Free, expired, or ours: take or keep it (a Conflict means someone was faster).
        if current.holder == self.identity:
            record = LeaseRecord(
                holder=self.identity,
                lease_seconds=mine.lease_seconds,
                acquire_time=current.acquire_time,
                renew_time=now_wall,
                transitions=current.transitions,
            )
        else:
            record = LeaseRecord(
                holder=self.identity,
                lease_seconds=mine.lease_seconds,
                acquire_time=now_wall,
                renew_time=now_wall,
                transitions=current.transitions + 1,
            )
        await self._update(record)
        return True

    async def _update(self, record: LeaseRecord) -> None:
        assert self._lease is not None
        body = {
            "apiVersion": LEASE_GVK.api_version,
            "kind": LEASE_GVK.kind,
            "metadata": self._lease.get("metadata") or {},
            "spec": record.to_spec(),
        }
        updated = await self.store.update(body)
        self._observe(updated, record)

    async def _create(self, record: LeaseRecord) -> None:
        body: Obj = {
            "apiVersion": LEASE_GVK.api_version,
            "kind": LEASE_GVK.kind,
            "metadata": {
                "name": self.ref.name,
                "namespace": self.ref.namespace,
                "labels": {"app.kubernetes.io/managed-by": "gitkrm"},
            },
            "spec": record.to_spec(),
        }
        try:
            created = await self.store.create(body)
        except NotFound:
            # No namespace yet (a first start outside a Helm install): create it, try again.
            await self._create_namespace()
            created = await self.store.create(body)
        self._observe(created, record)

    async def _create_namespace(self) -> None:
        ns: Obj = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.ref.namespace},
        }
        with contextlib.suppress(AlreadyExists):
            await self.store.create(ns)

    # -- loops ---------------------------------------------------------------------------

    async def acquire(self) -> None:
        """Return once this process leads (cancel the task to stop trying)."""
        period = self.timings.retry_period
        while True:
            if await self.try_acquire_or_renew():
                break
            # client-go's wait.Jitter: the period plus up to 1.2 periods, so candidates
            # started together don't keep colliding.
            await asyncio.sleep(period + random.uniform(0, JITTER_FACTOR * period))
        self._said_held_by = None
        assert self._observed is not None
        log.info(
            "lease %s/%s acquired: leading as %s (transitions: %d)",
            self.ref.namespace,
            self.ref.name,
            self.identity,
            self._observed.transitions,
        )

    async def hold(self) -> None:
        """Renew every retry period; return when a renewal did not succeed within the renew
        deadline (or someone else took the Lease): the caller must stop leading at once."""
        timings = self.timings
        while True:
            await asyncio.sleep(timings.retry_period)
            deadline = self._clock() + timings.renew_deadline
            renewed = False
            while not renewed:
                left = deadline - self._clock()
                if left <= 0:
                    break
                try:
                    async with asyncio.timeout(left):
                        renewed = await self.try_acquire_or_renew()
                except TimeoutError:
                    break
                if not renewed:
                    if not self.is_leader:
                        break  # another holder took it: no use retrying
                    await asyncio.sleep(min(timings.retry_period, max(0.0, left)))
            if not renewed:
                log.warning(
                    "lease %s/%s lost: not renewed within %gs (holder now: %s)",
                    self.ref.namespace,
                    self.ref.name,
                    timings.renew_deadline,
                    self.holder or "unknown",
                )
                if self.is_leader:  # not renewed (store unreachable): forget our own record
                    self._observed = None
                    self._observed_raw = None
                return  # taken by another: keep its record, so readiness names the holder

    async def release(self) -> bool:
        """Give the Lease up (holder cleared, 1 s duration) if this process holds it, so a
        standby takes over within a retry period. False when the update failed."""
        if not self.is_leader or self._lease is None or self._observed is None:
            return True
        now = micro_time()
        record = LeaseRecord(
            holder="",
            lease_seconds=1,
            acquire_time=now,
            renew_time=now,
            transitions=self._observed.transitions,
        )
        try:
            await self._update(record)
        except GitkrmError as e:
            log.warning("lease %s: not released: %s", self.ref.name, e.message)
            return False
        log.info("lease %s/%s released", self.ref.namespace, self.ref.name)
        return True
