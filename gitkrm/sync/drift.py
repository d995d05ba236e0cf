"""Which owned objects changed since gitkrm last looked: found from the store's revisions.

After a sync the tracker remembers, per owned object, the resourceVersion, generation,
labels and annotations it last saw (its own writes included), and watches each owned
kind (label selector `gitkrm.io/source=<source>`) from the revision the sync read at.
An event that only moved the resourceVersion (a status update: same generation, labels
and annotations) is absorbed; anything else marks the object dirty. The next sync or
drift check reads and diffs only dirty objects, so a quiet interval costs nothing.

A kind without a running watch (never started, expired, ended) is not trusted: its
objects are read again. Watches deliver asynchronously; `settle()` lets queued events
in (one turn of the event loop is enough for the embedded store, whose watchers get
committed events before the writer returns); for a remote store a change may be seen
one check later, as with any watch-based cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import orjson

from gitkrm.errors import GitkrmError
from gitkrm.krm import GVK, Obj
from gitkrm.store import EventType, Store
from gitkrm.sync import keys
from gitkrm.sync.objkey import key_of

log = logging.getLogger(__name__)
_SORTED = orjson.OPT_SORT_KEYS


class Seen(NamedTuple):
    """What gitkrm last saw of an owned object: its last-applied configuration, revision,
    generation and a fingerprint of its labels and annotations (a tuple of atoms: small,
    and the garbage collector stops tracking it)."""

    applied: str
    rv: str
    generation: int | None
    meta: int


def meta_fingerprint(md: Mapping[str, Any]) -> int:
    """A hash of an object's labels and annotations (string maps, as admission keeps them)."""
    labels, annotations = md.get("labels"), md.get("annotations")
    try:
        return hash(
            (
                frozenset(labels.items()) if isinstance(labels, dict) else None,
                frozenset(annotations.items()) if isinstance(annotations, dict) else None,
            )
        )
    except TypeError:  # not strings after all: fall back to their JSON
        return hash(orjson.dumps((labels, annotations), option=_SORTED))


def seen_of(obj: Obj, applied: str) -> Seen:
    md = keys.metadata(obj)
    gen = md.get("generation")
    return Seen(
        applied,
        str(md.get("resourceVersion") or ""),
        gen if isinstance(gen, int) else None,
        meta_fingerprint(md),
    )


def key_of_object(obj: Obj) -> str | None:
    """The object key (see objkey) of a live object."""
    md = keys.metadata(obj)
    api_version, kind, name = obj.get("apiVersion"), obj.get("kind"), md.get("name")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(name, str):
        return None
    ns = md.get("namespace")
    return key_of(
        group=api_version.rpartition("/")[0],
        kind=kind,
        name=name,
        namespace=ns if isinstance(ns, str) else None,
    )


class DriftTracker:
    """Seen state and dirty objects (by object key) and the watches of one source's
    owned kinds."""

    def __init__(self, store: Store, *, source: str) -> None:
        self.store = store
        self.source = source
        self.seen: dict[str, Seen] = {}
        self.dirty: set[str] = set()
        self._watches: dict[tuple[str, str], asyncio.Task[None]] = {}

    def trusted_kinds(self) -> set[tuple[str, str]]:
        """(group, kind) of every kind watched right now."""
        return {gk for gk, task in self._watches.items() if not task.done()}

    def in_sync(self, key: str, applied: str) -> bool:
        """Known unchanged since it was last applied with this configuration (the caller
        checks that its kind is trusted)."""
        s = self.seen.get(key)
        return (
            s is not None
            and (s.applied is applied or s.applied == applied)
            and key not in self.dirty
        )

    def record(self, key: str, obj: Obj, applied: str) -> None:
        """Remember an object as read or written. Its dirty mark stays: the caller clears
        it before reading, so a change made after the read is never lost."""
        self.seen[key] = seen_of(obj, applied)

    def forget(self, object_keys: Iterable[str]) -> None:
        for k in object_keys:
            self.seen.pop(k, None)
            self.dirty.discard(k)

    async def settle(self) -> None:
        """Let the watch tasks take the events already queued for them."""
        await asyncio.sleep(0)

    def watch(self, kinds: Iterable[GVK], *, since: str) -> None:
        """Watch every kind in `kinds` not watched yet, from revision `since`."""
        for gvk in kinds:
            gk = (gvk.group, gvk.kind)
            task = self._watches.get(gk)
            if task is not None and not task.done():
                continue
            self._watches[gk] = asyncio.create_task(
                self._run(gvk, since), name=f"gitkrm-drift-{self.source}-{gvk.kind}"
            )

    async def _run(self, gvk: GVK, since: str) -> None:
        selector = keys.source_selector(self.source)
        try:
            stream = self.store.watch(gvk, resource_version=since, label_selector=selector)
            try:
                async for event in stream:
                    if event.type is EventType.ERROR:
                        return
                    if event.type is not EventType.BOOKMARK:
                        self._event(event.type, event.obj)
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    with contextlib.suppress(Exception):
                        await aclose()
        except GitkrmError as e:  # Expired and friends: the kind is read again next time
            log.debug("drift watch of %s ended: %s", gvk.kind, e)

    def _event(self, etype: EventType, obj: Obj) -> None:
        key = key_of_object(obj)
        if key is None:
            return
        s = self.seen.get(key)
        if s is None:
            return  # not ours to track (e.g. created by hand with our label)
        md = keys.metadata(obj)
        rv = str(md.get("resourceVersion") or "")
        if etype is not EventType.DELETED:
            if rv == s.rv:
                return
            gen = md.get("generation")
            if s.generation is not None and gen == s.generation and meta_fingerprint(md) == s.meta:
                self.seen[key] = s._replace(rv=rv)  # status or server bookkeeping only
                return
        self.dirty.add(key)

    async def close(self) -> None:
        tasks = list(self._watches.values())
        self._watches.clear()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
