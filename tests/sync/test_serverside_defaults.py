"""The server-side planner against what the server defaults and what others own (#22):
an apply whose result the kind's defaulting turns back into the live object, managedFields
times aside, is no change; the last-applied annotation another manager owns is neither
read as gitkrm's nor removed by the client-side to server-side migration."""

from __future__ import annotations

import copy
from typing import Any

from gitkrm.krm import GVK, Obj
from gitkrm.patch.fieldmanager import apply
from gitkrm.schema import ssa_type_for
from gitkrm.schema.registry import Registry
from gitkrm.sync.modes import builtin_defaults
from gitkrm.sync.serverside import migration, predict
from tests.store.store_objects import crd
from tests.support.builders import managed_fields_entry
from tests.sync.sync_helpers import desired
from tests.sync.test_engine import LA
from tests.sync.test_patching import statefulset

STS = GVK(group="apps", version="v1", kind="StatefulSet")
CM = GVK(group="", version="v1", kind="ConfigMap")
NOW = "2030-01-01T00:00:00Z"


def live_of(config: Obj, *, gvk: GVK) -> Obj:
    """`config` as the store keeps it after gitkrm applied it: applied, then defaulted."""
    out = apply(
        live=None,
        config=config,
        manager="gitkrm",
        api_version=gvk.api_version,
        force=True,
        typ=ssa_type_for(gvk),
        now=NOW,
    )
    out = copy.deepcopy(out)
    default = builtin_defaults(gvk)
    assert default is not None
    default(out)
    out["metadata"]["resourceVersion"] = "5"
    return out


def test_what_defaulting_completes_is_no_change() -> None:
    [d] = desired(statefulset("1Gi"))
    live = live_of(d.obj, gvk=STS)
    assert live["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    typ = ssa_type_for(STS)
    # Without the kind's defaults the atomic list looks changed (what churned).
    assert predict(d, live, typ=typ, revision="r1") is not None
    assert predict(d, live, typ=typ, revision="r1", defaults=builtin_defaults) is None
    # A real change is still one.
    [bigger] = desired(statefulset("2Gi"))
    changed = predict(bigger, live, typ=typ, revision="r1", defaults=builtin_defaults)
    assert changed is not None
    assert changed.config is not None


def test_a_custom_kinds_schema_defaults_count() -> None:
    registry = Registry.builtin()
    definition = crd(kind="Gadget", plural="gadgets")
    schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["size"]["default"] = 3
    registry.register_crd(definition)
    gadget = GVK(group="example.com", version="v1", kind="Gadget")
    default = registry.update_defaulter(gadget)
    assert default is not None
    obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Gadget", "spec": {"junk": 1}}
    default(obj)
    assert obj["spec"] == {"size": 3}  # pruned and defaulted, as admission does
    assert registry.update_defaulter(CM) is None  # a ConfigMap has no defaults


def test_another_managers_annotation_is_left_alone() -> None:
    typ = ssa_type_for(CM)
    annotation: dict[str, Any] = {"f:metadata": {"f:annotations": {".": {}, f"f:{LA}": {}}}}
    kubectl = managed_fields_entry("kubectl-client-side-apply", "Update", annotation, time=NOW)
    gitkrm = managed_fields_entry("gitkrm", "Apply", {"f:data": {"f:a": {}}}, time=NOW)
    live: Obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "namespace": "apps",
            "resourceVersion": "7",
            "annotations": {LA: '{"data":{"a":"1"}}'},
            "managedFields": [gitkrm, kubectl],
        },
        "data": {"a": "1"},
    }
    assert migration(live, typ=typ, api_version="v1") is None
    # gitkrm's own client-side annotation (its Update entry owns it) is still migrated.
    ours = {**kubectl, "manager": "gitkrm"}
    live["metadata"]["managedFields"] = [ours]
    mig = migration(live, typ=typ, api_version="v1")
    assert mig is not None
    assert LA not in mig.live["metadata"]["annotations"]
