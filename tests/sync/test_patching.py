"""JSON pointers for ignoreDifferences, and the three-way patch of one object."""

from __future__ import annotations

from typing import Any

import orjson

from gitkrm.schema import patch_meta_for
from gitkrm.schema.defaults import defaulter_for
from gitkrm.sync.patching import MISSING, graft, last_applied, lookup, pointer_tokens, three_way
from tests.support import defaultable
from tests.support.manifests import yaml_text
from tests.sync.sync_helpers import configmap, desired


def test_pointer_tokens_unescape() -> None:
    assert pointer_tokens("/a~1b/c~0d/0") == ["a/b", "c~d", "0"]
    assert pointer_tokens("/") == []


def test_lookup_and_graft_copy_only_along_the_path() -> None:
    doc: dict[str, Any] = {"spec": {"replicas": 2, "list": [{"x": 1}, {"x": 2}]}, "other": {"k": 1}}
    assert lookup(doc, ["spec", "list", "1", "x"]) == 2
    assert lookup(doc, ["spec", "nope"]) is MISSING
    assert lookup(doc, ["spec", "list", "9"]) is MISSING
    out = graft(doc, ["spec", "replicas"], 5)
    assert out["spec"]["replicas"] == 5
    assert doc["spec"]["replicas"] == 2  # the input is unchanged
    assert out["other"] is doc["other"]  # untouched subtrees are shared
    assert graft(doc, ["spec", "list", "0", "x"], 9)["spec"]["list"] == [{"x": 9}, {"x": 2}]
    removed = graft(doc, ["spec", "replicas"], MISSING)
    assert "replicas" not in removed["spec"]
    assert graft(doc, ["nothing", "here"], 1) is doc
    assert graft(doc, ["spec", "new"], 1)["spec"]["new"] == 1


def test_last_applied_tolerates_garbage() -> None:
    assert last_applied({"metadata": {}}) is None
    bad = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{"}}}
    assert last_applied(bad) is None


def test_three_way_patch_of_a_configmap() -> None:
    (d,) = desired(configmap("c", data="a: '2'"))
    (old,) = desired(configmap("c", data="a: '1'\n  gone: x"))
    live: dict[str, Any] = {
        **old.obj,
        "data": {"a": "1", "gone": "x", "extra": "kept"},
        "metadata": {
            **old.obj["metadata"],
            "resourceVersion": "42",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": old.applied},
        },
    }
    meta = patch_meta_for(d.gvk)
    patch, patch_type = three_way(d, live, meta=meta, revision="r2")
    assert patch_type == "strategic"
    assert patch is not None
    assert patch["data"] == {"a": "2", "gone": None}
    assert patch["metadata"]["resourceVersion"] == "42"
    assert patch["metadata"]["annotations"]["gitkrm.io/revision"] == "r2"
    in_sync = {
        **live,
        "data": {"a": "2", "extra": "kept"},
        "metadata": {
            **live["metadata"],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": d.applied},
        },
    }
    assert three_way(d, in_sync, meta=meta, revision="r3") == (None, "strategic")
    ignoring = three_way(d, live, meta=meta, ignore=("/data/a", "/data/gone"), revision="r2")[0]
    assert ignoring is not None
    assert "data" not in ignoring  # only the last-applied annotation changes


def statefulset(storage: str) -> str:
    """A StatefulSet in Git: one claim template of `storage`, nothing the server defaults."""
    return yaml_text(defaultable.statefulset(namespace="apps", image="db:1", storage=storage))


def _as_stored(d: Any, applied: str) -> dict[str, Any]:
    """The object as the store keeps it after a create: defaulted, with its annotation."""
    obj: dict[str, Any] = d.obj
    defaulter = defaulter_for("apps", "StatefulSet")
    assert defaulter is not None
    defaulter(obj, True)
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": applied}
    obj["metadata"]["resourceVersion"] = "7"
    obj["status"] = {"replicas": 1}
    return obj


def test_a_patch_the_servers_defaults_undo_is_no_patch() -> None:
    """volumeClaimTemplates is replaced whole by a strategic merge patch, so the live list
    (defaulted by the server: volumeMode, status.phase) always differs from the manifest's;
    the patch that restates it changes nothing once defaulted, as `kubectl diff` shows."""
    (d,) = desired(statefulset("1Gi"))
    live = _as_stored(d, d.applied)
    claims = live["spec"]["volumeClaimTemplates"][0]
    assert claims["spec"]["volumeMode"] == "Filesystem"
    assert claims["status"] == {"phase": "Pending"}
    kept = orjson.dumps(live)
    meta = patch_meta_for(d.gvk)
    assert three_way(d, live, meta=meta, revision="r2") == (None, "strategic")
    assert orjson.dumps(live) == kept  # the live object (the watch cache's) is untouched

    (bigger,) = desired(statefulset("2Gi"))
    patch, _ = three_way(bigger, live, meta=meta, revision="r2")
    assert patch is not None
    assert patch["spec"]["volumeClaimTemplates"][0]["spec"]["resources"] == {
        "requests": {"storage": "2Gi"}
    }
