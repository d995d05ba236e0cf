"""Which owned objects changed since gitkrm last looked: found from the store's revisions.

After a sync the tracker remembers, per owned object, the resourceVersion, generation,
labels and annotations it last saw (its own writes included), and follows each owned
kind through the store's watch cache, in the source's scope (label selector
`gitkrm.io/source=<source>`: the informers the health follower reads too). An event that
only moved the resourceVersion (a status update: same generation, labels and
annotations) is absorbed; anything else marks the object dirty, and so does an object a
(re)list no longer finds. The next sync or drift check reads and diffs only dirty
objects, so a quiet interval costs nothing.

A kind whose informer is not synced and watching is not trusted: its objects are read
again. Watches deliver asynchronously; `settle()` lets queued events in (one turn of the
event loop is enough for the embedded store, whose watchers get committed events before
the writer returns) and waits for informers still making their first list; for a remote
store a change may be seen one check later, as with any watch-based cache.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

import orjson

from gitkrm.cache import Informer, Scope, Subscription, WatchCache
from gitkrm.krm import GVK, Obj, ResourceKey
from gitkrm.store import Store
from gitkrm.sync import keys
from gitkrm.sync.objkey import key_of, parse_key

log = logging.getLogger(__name__)
_SORTED = orjson.OPT_SORT_KEYS
# How long `settle` waits for informers making their first list (then their kinds are
# read again instead: untrusted).
SETTLE_TIMEOUT: Final = 30.0


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
    """The inventory key (see objkey) of a live object; None without kind or name."""
    k = ResourceKey.of(obj)
    if not k.kind or not k.name or not isinstance(obj.get("apiVersion"), str):
        return None
    return key_of(group=k.group, kind=k.kind, name=k.name, namespace=k.namespace or None)


class DriftTracker:
    """Seen state and dirty objects (by object key) and the informers of one source's
    owned kinds."""

    def __init__(
        self,
        store: Store,
        *,
        source: str,
        cache: WatchCache | None = None,
        enabled: bool = True,
    ) -> None:
        """`enabled` False: follow nothing (a one-shot sync that no drift check follows);
        no kind is ever trusted then, so every pass reads what it plans."""
        self.store = store
        self.enabled = enabled
        self.source = source
        self.seen: dict[str, Seen] = {}
        self.dirty: set[str] = set()
        self._own_cache = cache is None
        self.cache = cache if cache is not None else WatchCache(store)
        self._scope = Scope(label_selector=keys.source_selector(source))
        self._subs: dict[tuple[str, str], Subscription] = {}

    def trusted_kinds(self) -> set[tuple[str, str]]:
        """(group, kind) of every kind whose informer is synced and watching."""
        return {gk for gk, sub in self._subs.items() if sub.informer.trusted}

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
        """Let the informers take the events already queued for them, and wait for those
        still making their first list."""
        await asyncio.sleep(0)
        listing = [
            asyncio.ensure_future(sub.informer.synced.wait())
            for sub in self._subs.values()
            if not sub.informer.synced.is_set()
        ]
        if listing:
            _, late = await asyncio.wait(listing, timeout=SETTLE_TIMEOUT)
            for t in late:
                t.cancel()

    def watch(self, kinds: Iterable[GVK], *, since: str = "") -> bool:
        """Follow every kind in `kinds` not followed yet (True when any is new). (`since`,
        the revision the sync read at, is kept for callers: an informer lists, and a list
        listener marks what a list no longer finds dirty, so nothing after any revision is
        missed.)"""
        if not self.enabled:
            return False
        self.cache.start()
        added = False
        for gvk in kinds:
            gk = (gvk.group, gvk.kind)
            if gk in self._subs:
                continue
            sub = self.cache.subscribe(gvk, self._handler, self._scope)
            self._subs[gk] = sub
            sub.informer.add_list_listener(self._lister(sub.informer))
            added = True
        return added

    def _handler(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            self._event(new, deleted=False)
        elif old is not None:
            self._event(old, deleted=True)

    def _lister(self, informer: Informer) -> Callable[[], None]:
        suffix = f"_{informer.gvk.group}_{informer.gvk.kind}"

        def listed() -> None:
            # An owned object the list does not find went away unseen (between the sync's
            # read and the list, or while the watch was down): read it again.
            for key in self.seen:
                if key.endswith(suffix) and key not in self.dirty:
                    ref = parse_key(key)
                    if informer.get(ref.namespace, ref.name) is None:
                        self.dirty.add(key)

        return listed

    def _event(self, obj: Obj, *, deleted: bool) -> None:
        key = key_of_object(obj)
        if key is None:
            return
        s = self.seen.get(key)
        if s is None:
            return  # not ours to track (e.g. created by hand with our label)
        md = keys.metadata(obj)
        rv = str(md.get("resourceVersion") or "")
        if not deleted:
            if rv == s.rv:
                return
            gen = md.get("generation")
            if s.generation is not None and gen == s.generation and meta_fingerprint(md) == s.meta:
                self.seen[key] = s._replace(rv=rv)  # status or server bookkeeping only
                return
        self.dirty.add(key)

    async def close(self) -> None:
        subs = list(self._subs.values())
        self._subs.clear()
        for sub in subs:
            await sub.close()
        if self._own_cache:
            await self.cache.stop()
