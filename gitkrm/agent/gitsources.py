"""The GitSource objects of an agent's sources: created or brought up to date at start (or
when a replica starts leading), dropped when no longer configured, and whether the target
serves the kind at all.

On the embedded target the agent installs the CRD itself, so the kind is always there. On a
cluster the Helm chart installs it (the agent needs no right to write CRDs); without it the
agent syncs all the same and keeps no GitSource status (said once in the log).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import Any

from gitkrm.errors import AlreadyExists, Conflict, NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Store
from gitkrm.store.protocol import meta

from . import crd
from .config import SourceConfig
from .status import StatusWriter, gitsource_ref

log = logging.getLogger("gitkrm.agent")


async def served(store: Store) -> bool:
    """Whether the target serves `gitsources.gitkrm.io` (its CRD is installed)."""
    try:
        await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE, limit=1)
    except NotFound:
        return False
    return True


PARENT_LABEL = "gitkrm.io/parent"
"""On the GitSource of a child source: the source whose revision declares it."""
DECLARED_BY = "gitkrm.io/declared-by"
"""On the GitSource of a child source: its declaring object, `group/Kind/namespace/name`
(so a later run finds a child whose object was deleted while no agent ran)."""


async def ensure(
    store: Store,
    config: SourceConfig,
    *,
    agent_name: str,
    parent: str | None = None,
    declared_by: str | None = None,
) -> Obj:
    """Create or update the GitSource of a source (its status is kept); `parent` and
    `declared_by`: the source and the object that declare it (a child of a source tree)."""
    desired = config.to_object(agent_name=agent_name)
    if parent is not None:
        desired["metadata"]["labels"][PARENT_LABEL] = parent
    if declared_by is not None:
        desired["metadata"]["annotations"] = {DECLARED_BY: declared_by}
    for _ in range(5):
        try:
            live = await store.get(gitsource_ref(config.name))
        except NotFound:
            try:
                return await store.create(copy.deepcopy(desired))
            except AlreadyExists:
                continue
        labels = meta(live).get("labels") or {}
        annotations = meta(live).get("annotations") or {}
        wanted = desired["metadata"].get("annotations") or {}
        if (
            live.get("spec") == desired["spec"]
            and all(labels.get(k) == v for k, v in desired["metadata"]["labels"].items())
            and all(annotations.get(k) == v for k, v in wanted.items())
        ):
            return live
        body = copy.deepcopy(live)
        body["spec"] = desired["spec"]
        body["metadata"]["labels"] = {**labels, **desired["metadata"]["labels"]}
        if wanted:
            body["metadata"]["annotations"] = {**annotations, **wanted}
        try:
            return await store.update(body)
        except Conflict:
            continue
    raise Conflict(f"GitSource {config.name} kept changing while the agent started")


async def forget_unconfigured(store: Store, *, agent_name: str, wanted: set[str]) -> None:
    """Drop this agent's GitSources that are no longer configured (their objects stay)."""
    selector = f"gitkrm.io/agent={agent_name}"
    listed = await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE, label_selector=selector)
    items = listed.get("items", [])
    parents = {
        str(meta(o).get("name", "")): (meta(o).get("labels") or {}).get(PARENT_LABEL) for o in items
    }

    def rooted(name: str) -> bool:
        """A configured source, or a child whose ancestors lead to one."""
        seen: set[str] = set()
        current: str | None = name
        while current is not None and current not in seen:
            if current in wanted:
                return True
            seen.add(current)
            current = parents.get(current)
        return False

    for obj in items:
        name = meta(obj).get("name", "")
        if rooted(name):
            continue  # configured, or a child (its parent's tree keeps it)
        log.warning(
            "source %s is no longer configured: its GitSource is removed, the objects it "
            "synced stay in the store (inventory gitkrm-inventory-%s)",
            name,
            name,
        )
        await remove(store, name)


async def remove(store: Store, name: str) -> None:
    """Delete a source's GitSource (gone already: nothing to do); its objects stay."""
    with contextlib.suppress(NotFound):
        await store.delete(gitsource_ref(name))


async def last_synced_revision(store: Store, name: str) -> str | None:
    """The revision a source's GitSource says it last synced (None: none, or no GitSource)."""
    try:
        live = await store.get(gitsource_ref(name))
    except NotFound:
        return None
    found = (live.get("status") or {}).get("lastSyncedRevision")
    return str(found) if found else None


class NoStatusWriter(StatusWriter):
    """The status writer of a source whose target has no GitSource kind: keeps nothing
    (the sync results still reach the log, the metrics and the notes in Git)."""

    async def write(self, status: Mapping[str, Any]) -> Obj:
        return {"status": dict(status)}


async def children_of(store: Store, *, agent_name: str, parent: str) -> dict[str, ObjectRef]:
    """The child sources a parent declared, as their GitSources remember them: child name
    -> its declaring object (`DECLARED_BY`)."""
    from .tree.naming import parse_ref_text

    selector = f"gitkrm.io/agent={agent_name},{PARENT_LABEL}={parent}"
    listed = await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE, label_selector=selector)
    out: dict[str, ObjectRef] = {}
    for obj in listed.get("items", []):
        declared = (meta(obj).get("annotations") or {}).get(DECLARED_BY)
        ref = parse_ref_text(str(declared)) if declared else None
        if ref is not None:
            out[str(meta(obj).get("name"))] = ref
    return out
