"""The peers' own namespaces under the opt-in: `flux-system` (Flux) and `argocd` (Argo CD).

Their installations always make them, and a repository's declaring objects live there
(`flux bootstrap`'s Kustomizations, an app of apps' Applications). A repository whose
bootstrap files are placeholders, or that expects Argo CD to be installed, does not carry
the namespace; so when the target lacks it, the agent makes it, said once in the log. It is
written as a stand-in (`gitkrm.io/stand-in: "true"`), as the peers' CRDs are: a repository
that does carry it takes it over at its first sync. A namespace that exists is never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Final

from gitkrm.errors import AlreadyExists, GitkrmError, NotFound
from gitkrm.krm import ObjectRef
from gitkrm.store import Store
from gitkrm.sync import keys

from .model import Peer

log = logging.getLogger("gitkrm.agent")

NAMESPACES: Final[Mapping[Peer, str]] = {Peer.FLUX: "flux-system", Peer.ARGOCD: "argocd"}


async def ensure(store: Store, peers: Iterable[Peer], *, done: set[str]) -> None:
    """Make the namespaces of `peers` the target lacks (`done`: handled in this term)."""
    for peer in sorted(set(peers)):
        name = NAMESPACES.get(peer)
        if name is None or name in done:
            continue
        done.add(name)
        try:
            await store.get(ObjectRef(group="", kind="Namespace", name=name))
            continue
        except NotFound:
            pass
        except GitkrmError as e:
            log.warning("namespace %s not checked: %s", name, e.message)
            continue
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "labels": {"gitkrm.io/interpret": str(peer)},
                "annotations": {keys.STAND_IN: "true"},
            },
        }
        try:
            await store.create(body)
        except AlreadyExists:
            continue
        except GitkrmError as e:
            log.warning("namespace %s not created (%s): --interpret %s needs it", name,
                        e.message, peer)  # fmt: skip
            continue
        log.info(
            "namespace %s created for --interpret %s (its installation makes it; the "
            "repository does not carry it)",
            name,
            peer,
        )
