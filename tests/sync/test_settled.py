"""`SyncEngine.settled_at`: the store revision after a sync that settled every object with
nobody else writing from its start, else None (what `run --once` trusts next time)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gitkrm.krm import ObjectRef
from gitkrm.store import BatchOp, Store
from gitkrm.sync import live
from tests.sync.conftest import EngineFactory
from tests.sync.sync_helpers import configmap, namespace, snapshot

FILES: dict[str, str | bytes] = {
    "ns.yaml": namespace("apps"),
    "a.yaml": configmap("a"),
    "b.yaml": configmap("b"),
}


def cm(name: str) -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", name=name, namespace="apps", version="v1")


async def test_a_sync_alone_settles_at_the_revision_after_its_writes(
    store: Store, make_engine: EngineFactory
) -> None:
    engine = make_engine()
    assert engine.settled_at is None
    assert (await engine.sync(snapshot(FILES))).ok
    assert engine.settled_at == await live.current_revision(store)
    again = make_engine()  # a new process: reads everything, writes nothing
    assert (await again.sync(snapshot(FILES))).ok
    assert again.settled_at == engine.settled_at


async def test_a_foreign_write_during_the_sync_is_not_settled(
    store: Store, make_engine: EngineFactory
) -> None:
    class Busy:
        """The store, with someone else writing right before each batch of the sync."""

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        async def batch(self, ops: Sequence[BatchOp], **kw: Any) -> Any:
            await store.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "x", "namespace": "default"},
                }
            )
            return await store.batch(ops, **kw)

    engine = make_engine(target=Busy())
    assert (await engine.sync(snapshot(FILES))).ok
    assert engine.settled_at is None


async def test_an_unsettled_or_refused_sync_is_not_settled(
    store: Store, make_engine: EngineFactory
) -> None:
    await store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "b",
                "namespace": "default",
                "labels": {"gitkrm.io/source": "other"},
            },
        }
    )
    files = {**FILES, "b.yaml": configmap("b", ns="default")}
    engine = make_engine()
    result = await engine.sync(snapshot(files))
    assert result.counts["refused"] == 1  # owned by another source
    assert engine.settled_at is None
    ok = make_engine()
    assert (await ok.sync(snapshot(FILES))).ok
    assert ok.settled_at is not None
    bad = await ok.sync(snapshot({"bad.yaml": "kind: ConfigMap\n"}, revision="rev-2"))
    assert bad.errors
    assert ok.settled_at is None


async def test_a_drift_check_that_sets_drift_back_settles_after_its_write(
    store: Store, make_engine: EngineFactory
) -> None:
    engine = make_engine()
    assert (await engine.sync(snapshot(FILES))).ok
    live_a = await store.get(cm("a"))
    live_a["data"] = {"a": "edited"}
    await store.update(live_a)
    drifted = await live.current_revision(store)
    result = await engine.check_drift()
    assert result.counts["configured"] == 1
    assert engine.settled_at == await live.current_revision(store) != drifted
