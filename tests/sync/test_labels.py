"""Labels and annotations a manifest sets are the manifest's: gitkrm writes only its own
keys (the `gitkrm.io/source` label, the revision and last-applied annotations), and objects
an older gitkrm labelled `app.kubernetes.io/managed-by: gitkrm` stay owned and lose that
label cleanly on their next sync. Real Git repositories and the SQLite store."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gitkrm.krm import ObjectRef
from gitkrm.source import GitSource
from gitkrm.store import Store
from gitkrm.sync.options import APPLY_MODES, ApplyMode
from gitkrm.sync.results import Action
from tests.sync.conftest import EngineFactory, SourceFactory
from tests.sync.sync_helpers import Remote, configmap, namespace
from tests.sync.test_engine import LA, actions, cm_ref, get, inventory_keys, sync

MANAGED_BY = "app.kubernetes.io/managed-by"
HELM_LABELS = "  labels: {app.kubernetes.io/managed-by: Helm, app.kubernetes.io/instance: web}\n"
HELM_ANNOTATIONS = "  annotations: {meta.helm.sh/release-name: web}\n"


def _seed(remote: Remote) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("apps/chart.yaml", configmap("chart", extra=HELM_LABELS + HELM_ANNOTATIONS))
    remote.write("apps/plain.yaml", configmap("plain"))
    remote.commit("a chart's objects and a plain one")


@pytest.mark.parametrize("mode", APPLY_MODES)
async def test_a_manifests_labels_and_annotations_are_kept(
    store: Store,
    remote: Remote,
    source: GitSource,
    make_engine: EngineFactory,
    mode: ApplyMode,
) -> None:
    _seed(remote)
    first = await sync(make_engine(apply_mode=mode), source)
    assert first.ok, first.problems()
    chart = await store.get(cm_ref("chart"))
    assert chart["metadata"]["labels"] == {
        MANAGED_BY: "Helm",
        "app.kubernetes.io/instance": "web",
        "gitkrm.io/source": "src",
    }
    assert chart["metadata"]["annotations"]["meta.helm.sh/release-name"] == "web"
    plain = await store.get(cm_ref("plain"))
    assert plain["metadata"]["labels"] == {"gitkrm.io/source": "src"}
    again = await sync(make_engine(apply_mode=mode), source)
    assert again.ok
    assert set(actions(again).values()) == {Action.UNCHANGED}


async def _as_older_gitkrm_left_it(store: Store, ref: ObjectRef, *, source_label: bool) -> None:
    """Rewrite a synced object as an older gitkrm wrote it: `managed-by: gitkrm` over the
    manifest's value, in the labels and in the last-applied configuration."""
    obj = await store.get(ref)
    md = obj["metadata"]
    applied: dict[str, Any] = orjson.loads(md["annotations"][LA])
    for labels in (md["labels"], applied["metadata"]["labels"]):
        labels[MANAGED_BY] = "gitkrm"
        if not source_label:
            labels.pop("gitkrm.io/source", None)
    md["annotations"][LA] = orjson.dumps(applied, option=orjson.OPT_SORT_KEYS).decode()
    await store.update(obj)


async def test_objects_an_older_gitkrm_labelled_migrate_on_the_next_sync(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    _seed(remote)
    assert (await sync(make_engine(), source)).ok
    await _as_older_gitkrm_left_it(store, cm_ref("chart"), source_label=True)
    await _as_older_gitkrm_left_it(store, cm_ref("plain"), source_label=True)

    result = await sync(make_engine(), source)  # a new gitkrm process
    assert result.ok, result.problems()
    assert actions(result)["ConfigMap/chart"] is Action.CONFIGURED
    assert actions(result)["ConfigMap/plain"] is Action.CONFIGURED
    chart = await store.get(cm_ref("chart"))
    assert chart["metadata"]["labels"][MANAGED_BY] == "Helm"  # the manifest's again
    plain = await store.get(cm_ref("plain"))
    assert plain["metadata"]["labels"] == {"gitkrm.io/source": "src"}
    assert (
        MANAGED_BY not in orjson.loads(plain["metadata"]["annotations"][LA])["metadata"]["labels"]
    )
    settled = await sync(make_engine(), source)
    assert set(actions(settled).values()) == {Action.UNCHANGED}


async def test_older_gitkrms_label_alone_is_owned_when_the_inventory_lists_it(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    """No source label, only `managed-by: gitkrm`: the source whose inventory lists the
    object owns it (the default adoption policy, never, would refuse an unowned one)."""
    _seed(remote)
    assert (await sync(make_engine(), source)).ok
    await _as_older_gitkrm_left_it(store, cm_ref("plain"), source_label=False)
    result = await sync(make_engine(), source)
    assert actions(result)["ConfigMap/plain"] is Action.CONFIGURED, result.problems()
    plain = await store.get(cm_ref("plain"))
    assert plain["metadata"]["labels"] == {"gitkrm.io/source": "src"}

    await _as_older_gitkrm_left_it(store, cm_ref("plain"), source_label=False)
    remote.remove("apps/plain.yaml")
    remote.commit("plain is gone")
    pruned = await sync(make_engine(), source)
    assert actions(pruned)["ConfigMap/plain"] is Action.PRUNED, pruned.problems()
    assert await get(store, cm_ref("plain")) is None
    assert "apps_plain__ConfigMap" not in await inventory_keys(store)


async def test_a_look_alike_outside_the_inventory_is_not_taken(
    store: Store, remote: Remote, make_source: SourceFactory, make_engine: EngineFactory
) -> None:
    remote.write("ns.yaml", namespace("apps"))
    remote.write("apps/other.yaml", configmap("other"))
    remote.commit("an object some other gitkrm made")
    await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    md = {"name": "other", "namespace": "apps", "labels": {MANAGED_BY: "gitkrm"}}
    await store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": md})
    result = await sync(make_engine(), make_source(remote.url))
    assert actions(result)["ConfigMap/other"] is Action.REFUSED
    assert "no gitkrm source owns it" in next(
        o.message for o in result.objects if o.ref.name == "other"
    )


async def test_server_side_apply_drops_the_label_it_owned(
    store: Store, remote: Remote, source: GitSource, make_engine: EngineFactory
) -> None:
    """Server-side apply mode: an older gitkrm applied `managed-by: gitkrm` as field
    manager gitkrm; the next apply without it removes it (the manager's field set)."""
    _seed(remote)
    assert (await sync(make_engine(apply_mode="server-side"), source)).ok
    old = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "plain",
            "namespace": "apps",
            "labels": {MANAGED_BY: "gitkrm", "gitkrm.io/source": "src"},
        },
        "data": {"a": "1"},
    }
    await store.patch(cm_ref("plain"), old, "apply", field_manager="gitkrm", force=True)
    assert (await store.get(cm_ref("plain")))["metadata"]["labels"][MANAGED_BY] == "gitkrm"
    result = await sync(make_engine(apply_mode="server-side"), source)
    assert result.ok, result.problems()
    plain = await store.get(cm_ref("plain"))
    assert plain["metadata"]["labels"] == {"gitkrm.io/source": "src"}
