"""The peers' CRDs under the opt-in: registered by the agent when the target does not serve
them, so a repository that does not carry them (most Flux and Argo CD repositories: their
controllers' installation brings the CRDs) still syncs. Each is written as a stand-in
(`gitkrm.io/stand-in: "true"`): a repository that does carry them (a bootstrapped Flux
repository's `flux-system/gotk-components.yaml`) takes them over at its first sync,
whatever its adoption policy. A CRD that exists is never touched.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable

from gitkrm.errors import AlreadyExists, GitkrmError, NotFound
from gitkrm.krm import Obj, ObjectRef
from gitkrm.store import Store
from gitkrm.sync import keys

from . import registry
from .model import Peer

log = logging.getLogger("gitkrm.agent")


def _ref(crd: Obj) -> ObjectRef:
    return ObjectRef(
        group="apiextensions.k8s.io",
        kind="CustomResourceDefinition",
        name=str(crd["metadata"]["name"]),
    )


async def ensure(store: Store, peers: Iterable[Peer], *, done: set[str]) -> None:
    """Register the CRDs of `peers` the target lacks (`done`: names already handled in this
    term, skipped). A target that refuses (no right to write CRDs) is said in the log."""
    wanted = frozenset(peers)
    if not wanted:
        return
    for interpreter in registry.for_peers(wanted).all:
        for crd in interpreter.crds():
            name = str(crd["metadata"]["name"])
            if name in done:
                continue
            done.add(name)
            try:
                await store.get(_ref(crd))
                continue
            except NotFound:
                pass
            except GitkrmError as e:
                log.warning("CRD %s not checked: %s", name, e.message)
                continue
            body = copy.deepcopy(crd)
            annotations = body["metadata"].setdefault("annotations", {})
            annotations[keys.STAND_IN] = "true"
            try:
                await store.create(body)
            except AlreadyExists:
                continue
            except GitkrmError as e:
                log.warning(
                    "CRD %s not registered (%s): --interpret %s needs it",
                    name,
                    e.message,
                    interpreter.peer,
                )
                continue
            log.info("CRD %s registered for --interpret %s", name, interpreter.peer)
