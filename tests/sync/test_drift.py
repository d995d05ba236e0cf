"""Drift tracking: which owned objects changed since gitkrm last looked."""

from __future__ import annotations

from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import Store
from gitkrm.sync import live
from gitkrm.sync.drift import DriftTracker, key_of_object

DEPLOY = GVK(group="apps", version="v1", kind="Deployment")
REF = ObjectRef(group="apps", kind="Deployment", name="web", namespace="default", version="v1")
KEY = "default_web_apps_Deployment"


def body(replicas: int = 1) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"gitkrm.io/source": "src"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


async def watched(store: Store) -> DriftTracker:
    tracker = DriftTracker(store, source="src")
    since = await live.current_revision(store)
    obj = await store.create(body())
    tracker.record(KEY, obj, "applied")
    tracker.watch([DEPLOY], since=since)
    await tracker.settle()
    assert tracker.trusted_kinds() == {("apps", "Deployment")}
    return tracker


async def test_our_own_write_and_status_updates_are_not_drift(store: Store) -> None:
    tracker = await watched(store)
    assert tracker.in_sync(KEY, "applied")
    obj = await store.get(REF)
    obj["status"] = {"replicas": 1, "observedGeneration": 1}
    await store.update_status(obj)
    await tracker.settle()
    assert tracker.dirty == set()
    assert not tracker.in_sync(KEY, "other applied configuration")
    await tracker.close()


async def test_spec_label_and_delete_changes_are_drift(store: Store) -> None:
    tracker = await watched(store)
    await store.patch(REF, {"spec": {"replicas": 3}}, "strategic")
    await tracker.settle()
    assert tracker.dirty == {KEY}
    assert not tracker.in_sync(KEY, "applied")
    tracker.record(KEY, await store.get(REF), "applied")
    await store.patch(REF, {"metadata": {"labels": {"x": "y"}}}, "strategic")
    await tracker.settle()
    assert tracker.dirty == {KEY}
    tracker.record(KEY, await store.get(REF), "applied")
    await store.delete(REF)
    await tracker.settle()
    assert tracker.dirty == {KEY}
    await tracker.close()


async def test_objects_not_recorded_are_not_tracked(store: Store) -> None:
    tracker = await watched(store)
    other = body()
    other["metadata"] = {
        "name": "other",
        "namespace": "default",
        "labels": {"gitkrm.io/source": "src"},
    }
    await store.create(other)
    await tracker.settle()
    assert tracker.dirty == set()
    await tracker.close()
    assert tracker.trusted_kinds() == set()


async def test_what_changed_or_went_before_the_first_list_is_drift(store: Store) -> None:
    """The informer lists when it starts (not a watch from the sync's revision): what the
    list shows changed, or no longer shows, is dirty all the same."""
    tracker = DriftTracker(store, source="src")
    obj = await store.create(body())
    tracker.record(KEY, obj, "applied")
    gone = body()
    gone["metadata"]["name"] = "gone"  # type: ignore[index]
    tracker.record("default_gone_apps_Deployment", await store.create(gone), "applied")
    await store.patch(REF, {"spec": {"replicas": 5}}, "strategic")
    await store.delete(ObjectRef(group="apps", kind="Deployment", name="gone", namespace="default"))
    tracker.watch([DEPLOY])
    await tracker.settle()
    assert tracker.trusted_kinds() == {("apps", "Deployment")}
    assert tracker.dirty == {KEY, "default_gone_apps_Deployment"}
    await tracker.close()


async def test_a_kind_whose_informer_is_not_watching_is_untrusted(store: Store) -> None:
    tracker = await watched(store)
    informer = tracker._subs[("apps", "Deployment")].informer
    await informer.stop()
    assert tracker.trusted_kinds() == set()
    await tracker.close()


def test_keys_of_live_objects() -> None:
    assert (
        key_of_object(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "w", "namespace": "n"},
            }
        )
        == "n_w_apps_Deployment"
    )
    assert (
        key_of_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}})
        == "_n__Namespace"
    )
    assert key_of_object({"kind": "X", "metadata": {}}) is None


def test_the_fingerprint_follows_labels_and_annotations() -> None:
    from gitkrm.sync.drift import meta_fingerprint

    a = {"labels": {"x": "1", "y": "2"}, "annotations": {"n": "v"}}
    assert meta_fingerprint(a) == meta_fingerprint(
        {"annotations": {"n": "v"}, "labels": {"y": "2", "x": "1"}}
    )
    assert meta_fingerprint(a) != meta_fingerprint(
        {"labels": {"x": "1"}, "annotations": {"n": "v"}}
    )
    assert meta_fingerprint(a) != meta_fingerprint({"labels": {"x": "1", "y": "2"}})
    assert meta_fingerprint({"labels": {"x": ["odd"]}}) == meta_fingerprint(
        {"labels": {"x": ["odd"]}}
    )


async def test_a_tracker_that_follows_nothing_trusts_nothing(store: Store) -> None:
    """`run --once`: no drift check follows the sync, so its engine follows no kind."""
    tracker = DriftTracker(store, source="src", enabled=False)
    tracker.record(KEY, await store.create(body()), "applied")
    tracker.watch([DEPLOY])
    await tracker.settle()
    assert tracker.trusted_kinds() == set()
    assert tracker.cache.stats().informers == 0
    await tracker.close()
