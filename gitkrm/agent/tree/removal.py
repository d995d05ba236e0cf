"""Writes on declaring objects and a removed child's objects: the finalizer a running child
keeps on its declaring object, and the prune of a child's inventory when the declaring
object is deleted (Flux's garbage collection of a deleted Kustomization, Argo CD's
`resources-finalizer.argocd.argoproj.io`).

The prune deletes what the child's inventory names and the child still owns (its
`gitkrm.io/source` label), leaves objects marked `gitkrm.io/prune: disabled`, then
deletes the inventory itself. Each write re-reads on Conflict; none raises for an object
that is already gone.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable

from gitkrm.errors import Conflict, GitkrmError, NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Store
from gitkrm.store.protocol import Propagation, meta
from gitkrm.sync import inventory, keys

from .naming import describe

log = logging.getLogger("gitkrm.agent")

_ATTEMPTS = 5


async def _edit(
    store: Store, ref: ObjectRef, change: Callable[[Obj], bool], *, on_write: Callable[[Obj], None]
) -> Obj | None:
    """Read, change (False: nothing to write), update; again on Conflict. None: gone."""
    for _ in range(_ATTEMPTS):
        try:
            live = await store.get(ref)
        except NotFound:
            return None
        body = copy.deepcopy(live)
        if not change(body):
            return live
        try:
            written = await store.update(body)
        except Conflict:
            continue
        except NotFound:
            return None
        on_write(written)
        return written
    raise Conflict(f"{describe(ref)} kept changing while its finalizer was written")


async def add_finalizer(
    store: Store, ref: ObjectRef, finalizer: str, *, on_write: Callable[[Obj], None]
) -> Obj | None:
    """Put `finalizer` on the object (not on one being deleted: too late to hold it)."""

    def change(body: Obj) -> bool:
        md = body.setdefault("metadata", {})
        found = list(md.get("finalizers") or [])
        if finalizer in found or md.get("deletionTimestamp"):
            return False
        md["finalizers"] = [*found, finalizer]
        return True

    return await _edit(store, ref, change, on_write=on_write)


async def remove_finalizer(
    store: Store, ref: ObjectRef, finalizer: str, *, on_write: Callable[[Obj], None]
) -> None:
    """Take `finalizer` off (a deleted object then goes)."""

    def change(body: Obj) -> bool:
        md = body.setdefault("metadata", {})
        found = list(md.get("finalizers") or [])
        if finalizer not in found:
            return False
        md["finalizers"] = [f for f in found if f != finalizer]
        return True

    await _edit(store, ref, change, on_write=on_write)


async def prune_inventory(store: Store, *, source: str, agent_name: str) -> tuple[int, list[str]]:
    """Delete the objects the source's inventory names and it still owns, then the
    inventory: (objects deleted, errors)."""
    inv_id = keys.inventory_id(agent=agent_name, source=source)
    inv = await inventory.read(store, source=source, inventory_id=inv_id)
    deleted = 0
    errors: list[str] = []
    for ref in inv.refs():
        try:
            live = await store.get(ref)
        except NotFound:
            continue
        except GitkrmError as e:
            errors.append(f"{describe(ref)}: not read: {e.message}")
            continue
        labels = meta(live).get("labels") or {}
        annotations = meta(live).get("annotations") or {}
        if labels.get(keys.SOURCE) != source or annotations.get(keys.PRUNE) == keys.DISABLED:
            continue  # owned by another source since, or kept on purpose
        try:
            await store.delete(ref, propagation=Propagation.BACKGROUND)
        except NotFound:
            continue
        except GitkrmError as e:
            errors.append(f"{describe(ref)}: not pruned: {e.message}")
            continue
        deleted += 1
    if not errors:
        for name in inv.versions:
            cm = ObjectRef(
                group="", kind="ConfigMap", name=name, namespace=keys.INVENTORY_NAMESPACE
            )
            with contextlib.suppress(NotFound):
                await store.delete(cm)
    if deleted:
        log.info("source %s removed: %d object(s) pruned", source, deleted)
    return deleted, errors
