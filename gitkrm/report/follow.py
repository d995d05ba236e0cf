"""Following the health of each source's objects after a sync, for the reporter.

`HealthFollower.follow(source, revision, refs)` lists and then watches the kinds of those
objects (one watch per kind, across namespaces), judges each change with
`gitkrm.health.health_of`, and tells the `Reporter` the verdicts that changed, in batches.
A new `follow` of the same source replaces the old one (the latest revision is the one
followed). The reporter's throttle decides when any of it reaches Git.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime

from gitkrm.errors import Expired, GitkrmError, NotFound
from gitkrm.health import HealthResult, health_of
from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef
from gitkrm.schema import Registry
from gitkrm.store import EventType, Store

from .reporter import Reporter

log = logging.getLogger("gitkrm.report")

RETRY_INTERVAL = 1.0
_Key = tuple[str, str, str, str]


def _key(ref: ObjectRef) -> _Key:
    return (ref.group, ref.kind, ref.namespace or "", ref.name)


def _obj_key(gk: GroupKind, obj: Obj) -> _Key:
    md = obj.get("metadata") or {}
    return (gk.group, gk.kind, md.get("namespace") or "", md.get("name") or "")


class _Following:
    """One source's objects of one revision: verdicts and the changes not yet reported."""

    def __init__(self, source: str, revision: str, refs: Iterable[ObjectRef]) -> None:
        self.source = source
        self.revision = revision
        self.by_key = {_key(r): r.without_version() for r in refs}
        self.versions = {r.group_kind: r.version for r in refs if r.version}
        self.verdicts: dict[ObjectRef, HealthResult] = {}
        self.changed: dict[ObjectRef, HealthResult] = {}
        self.wake = asyncio.Event()

    def observe(self, key: _Key, obj: Obj | None) -> None:
        ref = self.by_key.get(key)
        if ref is None:
            return
        verdict = health_of(obj, now=datetime.now(UTC))
        if self.verdicts.get(ref) != verdict:
            self.verdicts[ref] = verdict
            self.changed[ref] = verdict
            self.wake.set()

    def kinds(self) -> set[GroupKind]:
        return {ref.group_kind for ref in self.by_key.values()}


class HealthFollower:
    """See the module docstring. `close` last."""

    def __init__(self, store: Store, reporter: Reporter) -> None:
        self.store = store
        self.reporter = reporter
        self._tasks: dict[str, list[asyncio.Task[None]]] = {}

    def follow(self, source_name: str, revision: str, refs: Iterable[ObjectRef]) -> None:
        """Follow `refs` (the objects `revision` applied) until the next `follow` or `stop`."""
        self.stop(source_name)
        following = _Following(source_name, revision, refs)
        tasks = [
            asyncio.create_task(self._watch(following, gk), name=f"gitkrm-health-{source_name}")
            for gk in sorted(following.kinds(), key=lambda g: (g.group, g.kind))
        ]
        tasks.append(asyncio.create_task(self._report(following)))
        self._tasks[source_name] = tasks

    def stop(self, source_name: str) -> None:
        for t in self._tasks.pop(source_name, ()):
            t.cancel()

    async def close(self) -> None:
        tasks = [t for ts in self._tasks.values() for t in ts]
        self._tasks.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

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
        registry = getattr(self.store, "registry", None)
        if isinstance(registry, Registry):
            found = registry.versions_of(gk)
            if found:
                return found[0].version
        return None

    async def _watch(self, f: _Following, gk: GroupKind) -> None:
        """List then watch one kind; again after Expired or a dropped watch; while the
        kind is not served (its CRD not there yet), the objects are NotFound."""
        keys = [k for k, r in f.by_key.items() if r.group_kind == gk]
        while True:
            version = self._version(f, gk)
            try:
                if version is None:
                    raise NotFound(f"{gk} is not served")
                gvk = GVK(group=gk.group, version=version, kind=gk.kind)
                listed = await self.store.list(gvk)
            except NotFound:
                for k in keys:
                    f.observe(k, None)
                await asyncio.sleep(RETRY_INTERVAL)
                continue
            except GitkrmError as e:
                log.debug("health of %s not listed: %s", gk, e.message)
                await asyncio.sleep(RETRY_INTERVAL)
                continue
            seen: set[_Key] = set()
            for item in listed.get("items") or ():
                k = _obj_key(gk, item)
                seen.add(k)
                f.observe(k, item)
            for k in keys:
                if k not in seen:
                    f.observe(k, None)
            rv = (listed.get("metadata") or {}).get("resourceVersion")
            try:
                while True:
                    heard = False
                    async for ev in self.store.watch(gvk, resource_version=rv):
                        heard = True
                        if ev.type in (EventType.BOOKMARK, EventType.ERROR):
                            continue
                        rv = (ev.obj.get("metadata") or {}).get("resourceVersion") or rv
                        gone = ev.type is EventType.DELETED
                        f.observe(_obj_key(gk, ev.obj), None if gone else ev.obj)
                    await asyncio.sleep(0 if heard else RETRY_INTERVAL)
            except Expired:
                continue  # list again from now
            except GitkrmError as e:
                log.debug("watch of %s ended: %s; listing again", gk, e.message)
                await asyncio.sleep(RETRY_INTERVAL)
