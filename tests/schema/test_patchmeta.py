"""patch_meta_for: strategic-merge metadata of built-in and custom kinds."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import NotFound
from gitkrm.krm.refs import GVK
from gitkrm.patch import PatchMeta, apply_strategic_merge_patch
from gitkrm.schema import Registry, patch_meta_for
from tests.support import builders

DEPLOYMENT = GVK(group="apps", version="v1", kind="Deployment")


def _containers(meta: PatchMeta) -> Any:
    spec = meta.field("spec").sub
    return spec.field("template").sub.field("spec").sub.field("containers")


def test_deployment_containers_merge_by_name() -> None:
    containers = _containers(patch_meta_for(DEPLOYMENT))
    assert containers.strategy == "merge"
    assert containers.merge_key is not None
    assert containers.merge_key.names == ("name",)


def test_meta_is_cached_per_kind() -> None:
    assert patch_meta_for(DEPLOYMENT) is patch_meta_for(DEPLOYMENT)


def test_strategic_merge_with_the_meta() -> None:
    doc = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]
                }
            }
        }
    }
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}}
    merged = apply_strategic_merge_patch(doc, patch, patch_meta_for(DEPLOYMENT))
    assert merged["spec"]["template"]["spec"]["containers"] == [
        {"name": "a", "image": "a:1"},
        {"name": "b", "image": "b:2"},
    ]


def test_unknown_kind() -> None:
    with pytest.raises(NotFound):
        patch_meta_for(GVK(group="example.com", version="v1", kind="Widget"))


def test_custom_kind_uses_list_types(registry: Registry) -> None:
    crd = builders.crd(
        "Gizmo",
        spec={
            "items": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"],
                "items": {"type": "object", "properties": {"id": {"type": "string"}}},
            }
        },
        status_subresource=False,
    )
    registry.register_crd(crd)
    gvk = GVK(group="example.com", version="v1", kind="Gizmo")
    meta = patch_meta_for(gvk, registry=registry)
    items = meta.field("spec").sub.field("items")
    assert items.merge_key is not None
    assert items.merge_key.names == ("id",)
    assert patch_meta_for(gvk, registry=registry) is meta
    assert patch_meta_for(DEPLOYMENT, registry=registry) is patch_meta_for(DEPLOYMENT)
