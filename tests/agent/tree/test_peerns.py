"""The peers' namespaces made when the target lacks them (on the real SQLite store): as
stand-ins a repository takes over, said once in the log, an existing one untouched."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from gitkrm.agent.tree import peerns
from gitkrm.agent.tree.model import Peer
from gitkrm.krm import ObjectRef
from gitkrm.store import Store, open_store
from gitkrm.sync import keys, ownership
from gitkrm.sync.options import AdoptionPolicy


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    s = await open_store("sqlite:///:memory:")
    yield s
    await s.close()


def ns(name: str) -> ObjectRef:
    return ObjectRef(group="", kind="Namespace", name=name)


async def test_the_peers_namespaces_are_made_once_as_stand_ins(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gitkrm.agent")
    done: set[str] = set()
    await peerns.ensure(store, [Peer.FLUX, Peer.ARGOCD], done=done)
    await peerns.ensure(store, [Peer.FLUX], done=done)
    await peerns.ensure(store, [Peer.FLUX], done=set())  # a new term: exists, untouched
    for name in ("flux-system", "argocd"):
        obj = await store.get(ns(name))
        assert obj["metadata"]["annotations"] == {keys.STAND_IN: "true"}
        # a repository carrying the namespace takes it over, whatever its adoption policy
        decision = ownership.decide(obj, source="default", policy=AdoptionPolicy.NEVER)
        assert decision.allowed
        assert decision.adopt
    made = [r.getMessage() for r in caplog.records if "created for --interpret" in r.getMessage()]
    assert len(made) == 2
    assert made[0].startswith("namespace argocd created")


async def test_an_existing_namespace_is_left_as_it_is(store: Store) -> None:
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}})
    await peerns.ensure(store, [Peer.ARGOCD], done=set())
    obj = await store.get(ns("argocd"))
    assert "annotations" not in obj["metadata"]
