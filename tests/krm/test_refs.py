"""Refs and apiVersion parsing."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest
from gitkrm.krm import GVK, GVR, ObjectRef, split_api_version


@pytest.mark.parametrize(
    ("api_version", "expected"),
    [
        ("v1", ("", "v1")),
        ("apps/v1", ("apps", "v1")),
        ("networking.k8s.io/v1", ("networking.k8s.io", "v1")),
    ],
)
def test_split_api_version(api_version: str, expected: tuple[str, str]) -> None:
    assert split_api_version(api_version) == expected


@pytest.mark.parametrize("bad", ["", "/v1", "apps/", "a/b/v1"])
def test_split_api_version_rejects_malformed(bad: str) -> None:
    with pytest.raises(BadRequest):
        split_api_version(bad)


def test_gvk_of_object_and_api_version_round_trip() -> None:
    gvk = GVK.of({"apiVersion": "apps/v1", "kind": "Deployment"})
    assert gvk == GVK(group="apps", version="v1", kind="Deployment")
    assert gvk.api_version == "apps/v1"
    assert GVK.from_api_version("v1", "Pod").api_version == "v1"
    assert str(gvk.group_kind) == "Deployment.apps"
    with pytest.raises(BadRequest):
        GVK.of({"apiVersion": "v1"})


def test_object_ref_is_a_hashable_value_and_version_is_optional() -> None:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod"},
    }
    ref = ObjectRef.of(obj)
    assert ref == ObjectRef(
        group="apps", kind="Deployment", name="web", namespace="prod", version="v1"
    )
    assert ref.without_version() == ObjectRef(
        group="apps", kind="Deployment", name="web", namespace="prod"
    )
    assert len({ref, ref.without_version(), ref.without_version()}) == 2
    assert str(ref) == "Deployment.apps prod/web"
    cluster = ObjectRef.of({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}})
    assert cluster.namespace is None
    assert str(cluster) == "Namespace a"
    with pytest.raises(AttributeError):
        ref.name = "x"  # type: ignore[misc]


def test_gvr_strings() -> None:
    assert str(GVR(group="apps", version="v1", resource="deployments")) == "deployments.v1.apps"
    assert GVR(group="", version="v1", resource="pods").api_version == "v1"


def test_resource_key_is_the_versionless_identity() -> None:
    from gitkrm.krm import GroupKind, ResourceKey

    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "w", "namespace": "n"},
    }
    key = ResourceKey.of(obj)
    assert key == ("apps", "Deployment", "n", "w")
    assert key == ObjectRef.of(obj).key == ObjectRef.of(obj).without_version().key
    assert key == ResourceKey.in_kind(GroupKind(group="apps", kind="Deployment"), obj)
    assert key.ref("v1") == ObjectRef.of(obj)
    assert str(key) == "Deployment.apps n/w"
    ns = ResourceKey.of({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}})
    assert ns == ("", "Namespace", "", "n")
    assert ns.ref().namespace is None
    assert ResourceKey.of({"metadata": "junk"}) == ("", "", "", "")
