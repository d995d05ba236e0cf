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
from gitkrm.krm import Obj
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


async def ensure(store: Store, config: SourceConfig, *, agent_name: str) -> Obj:
    """Create or update the GitSource of a configured source (its status is kept)."""
    desired = config.to_object(agent_name=agent_name)
    for _ in range(5):
        try:
            live = await store.get(gitsource_ref(config.name))
        except NotFound:
            try:
                return await store.create(copy.deepcopy(desired))
            except AlreadyExists:
                continue
        labels = meta(live).get("labels") or {}
        if live.get("spec") == desired["spec"] and all(
            labels.get(k) == v for k, v in desired["metadata"]["labels"].items()
        ):
            return live
        body = copy.deepcopy(live)
        body["spec"] = desired["spec"]
        body["metadata"]["labels"] = {**labels, **desired["metadata"]["labels"]}
        try:
            return await store.update(body)
        except Conflict:
            continue
    raise Conflict(f"GitSource {config.name} kept changing while the agent started")


async def forget_unconfigured(store: Store, *, agent_name: str, wanted: set[str]) -> None:
    """Drop this agent's GitSources that are no longer configured (their objects stay)."""
    selector = f"gitkrm.io/agent={agent_name}"
    listed = await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE, label_selector=selector)
    for obj in listed.get("items", []):
        name = meta(obj).get("name", "")
        if name in wanted:
            continue
        log.warning(
            "source %s is no longer configured: its GitSource is removed, the objects it "
            "synced stay in the store (inventory gitkrm-inventory-%s)",
            name,
            name,
        )
        with contextlib.suppress(NotFound):
            await store.delete(gitsource_ref(name))


class NoStatusWriter(StatusWriter):
    """The status writer of a source whose target has no GitSource kind: keeps nothing
    (the sync results still reach the log, the metrics and the notes in Git)."""

    async def write(self, status: Mapping[str, Any]) -> Obj:
        return {"status": dict(status)}
