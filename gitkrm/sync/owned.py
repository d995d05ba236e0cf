"""A digest of a source's owned objects as they stand: how `run --once` knows that nothing
changed on a cluster, where other writers (controllers, other tools) move the store's
resourceVersion all the time, so the embedded store's test (the same resourceVersion as
after the last sync) rarely holds.

The digest covers every object carrying the source's label, in the kinds the revision
uses: its key, uid, generation (resourceVersion when it has none) and labels and
annotations. Status updates (a rollout, a controller's bookkeeping) change none of them
for objects with a generation, so a Deployment that finished rolling out keeps its digest.
A change of any spec, a label, an annotation, a deletion or a re-creation changes it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from gitkrm.errors import NotFound
from gitkrm.krm import GVK, Obj
from gitkrm.store import Store

from . import keys, live
from .drift import Seen, key_of_object, meta_fingerprint


def _entry(key: str, obj: Obj) -> list[Any]:
    md = keys.metadata(obj)
    gen = md.get("generation")
    version = gen if isinstance(gen, int) else str(md.get("resourceVersion") or "")
    return [key, str(md.get("uid") or ""), version, md.get("labels"), md.get("annotations")]


async def listed(store: Store, *, source: str, kinds: Iterable[GVK]) -> dict[str, Obj]:
    """Every object of `kinds` that carries the source's label, by inventory key."""
    out: dict[str, Obj] = {}
    selector = keys.source_selector(source)
    for gvk in sorted(set(kinds), key=str):
        try:
            items = await live.list_all(store, gvk, label_selector=selector)
        except NotFound:
            continue  # a kind the store no longer serves: none of it is there
        for obj in items:
            key = key_of_object(obj)
            if key is not None:
                out[key] = obj
    return out


def digest(objects: Mapping[str, Obj]) -> str:
    entries = [_entry(k, objects[k]) for k in sorted(objects)]
    return hashlib.sha256(orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)).hexdigest()


def as_seen(objects: Mapping[str, Obj], seen: Mapping[str, Seen]) -> bool:
    """Whether every object a sync recorded (`seen`) stands as it left it: listed, at the
    same resourceVersion or, with a generation, the same generation, labels and
    annotations (only its status changed)."""
    for key, s in seen.items():
        obj = objects.get(key)
        if obj is None:
            return False
        md = keys.metadata(obj)
        if str(md.get("resourceVersion") or "") == s.rv:
            continue
        gen = md.get("generation")
        if s.generation is None or gen != s.generation or meta_fingerprint(md) != s.meta:
            return False
    return True
