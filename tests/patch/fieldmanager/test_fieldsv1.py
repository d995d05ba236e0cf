"""FieldsV1 against what a Kubernetes API server writes.

The fixture is the managedFields entry kube-apiserver records for the `default/kubernetes`
Service on create (as returned by a v1.26 API server, quoted in public KubeEdge notes).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gitkrm.errors import BadRequest
from gitkrm.krm import GVK
from gitkrm.patch.fieldmanager import managed_fields_for_update, parse_fields_v1
from gitkrm.patch.fieldmanager.fieldpath import difference, from_paths, path_string, union
from gitkrm.schema import ssa_type_for
from tests.support.builders import managed_fields_entry

KUBERNETES_SERVICE_FIELDS = (
    '{"f:metadata":{"f:labels":{".":{},"f:component":{},"f:provider":{}}},"f:spec":'
    '{"f:clusterIP":{},"f:ipFamilyPolicy":{},"f:ports":{".":{},"k:{\\"port\\":443,'
    '\\"protocol\\":\\"TCP\\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},'
    '"f:targetPort":{}}},"f:sessionAffinity":{},"f:type":{}}}'
)

SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {
        "name": "kubernetes",
        "namespace": "default",
        "labels": {"component": "apiserver", "provider": "kubernetes"},
    },
    "spec": {
        "clusterIP": "10.0.0.1",
        "ipFamilyPolicy": "SingleStack",
        "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
        "sessionAffinity": "None",
        "type": "ClusterIP",
    },
}


def test_round_trip_is_byte_identical() -> None:
    raw = orjson.loads(KUBERNETES_SERVICE_FIELDS)
    assert orjson.dumps(parse_fields_v1(raw)).decode() == KUBERNETES_SERVICE_FIELDS


def test_parse_puts_elements_in_smd_order() -> None:
    raw: dict[str, Any] = {
        "f:b": {},
        'k:{"port":80}': {},
        "f:a": {"f:x": {}, ".": {}},
        'k:{"port":443}': {},
    }
    assert list(parse_fields_v1(raw)) == ["f:a", "f:b", 'k:{"port":80}', 'k:{"port":443}']
    assert list(parse_fields_v1(raw)["f:a"]) == [".", "f:x"]


NOW = "2023-01-12T14:40:48Z"  # when the recorded entry was written


def test_create_records_what_the_api_server_records() -> None:
    typ = ssa_type_for(GVK(group="", version="v1", kind="Service"))
    entries = managed_fields_for_update(
        old=None,
        new=SERVICE,
        manager="kube-apiserver",
        api_version="v1",
        subresource=None,
        typ=typ,
        now=NOW,
    )
    fields = orjson.loads(KUBERNETES_SERVICE_FIELDS)
    assert entries == [managed_fields_entry("kube-apiserver", "Update", fields, time=NOW)]
    assert orjson.dumps(entries[0]["fieldsV1"]).decode() == KUBERNETES_SERVICE_FIELDS


@pytest.mark.parametrize(
    "raw",
    [{"f:a": 1}, {"x": {}}, {"k:{bad": {}}, {"i:x": {}}, [1]],
)
def test_malformed_fields_are_bad_requests(raw: Any) -> None:
    with pytest.raises(BadRequest):
        parse_fields_v1(raw)


def test_unknown_element_types_are_dropped() -> None:
    assert parse_fields_v1({"z:future": {}, "f:a": {}}) == {"f:a": {}}


def test_set_algebra_and_paths() -> None:
    a = from_paths(("f:spec", "f:replicas"), ("f:metadata", "f:labels"))
    b = from_paths(("f:spec", "f:replicas"))
    assert difference(a, b) == {"f:metadata": {"f:labels": {}}}
    member_and_child = union(from_paths(("f:a",)), from_paths(("f:a", "f:b")))
    assert member_and_child == {"f:a": {".": {}, "f:b": {}}}
    assert difference(member_and_child, from_paths(("f:a",))) == {"f:a": {"f:b": {}}}
    path = ("f:spec", "f:containers", 'k:{"name":"web"}', "f:ports", 'v:"x"', "i:3")
    assert path_string(path) == '.spec.containers[name="web"].ports[="x"][3]'
