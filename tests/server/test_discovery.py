"""Discovery (legacy and aggregated v2/v2beta1) and the OpenAPI v3 documents."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.datastructures import QueryParams

from gitkrm.errors import BadRequest, Invalid
from gitkrm.server.negotiation import (
    NotAcceptable,
    Output,
    discovery_version,
    negotiate_object,
    patch_type,
)
from gitkrm.server.params import delete_params, list_params, write_params
from tests.support.builders import crd

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
V2BETA1 = (
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)

CRD: dict[str, Any] = crd(
    "Thing",
    "disco.example.com",
    scope="Cluster",
    categories=["all"],
    spec={"n": {"type": "integer", "description": "A number."}},
)


def test_legacy_discovery(http: httpx.Client) -> None:
    api = http.get("/api").json()
    assert api["kind"] == "APIVersions"
    assert api["versions"] == ["v1"]
    groups = http.get("/apis").json()
    assert groups["kind"] == "APIGroupList"
    apps = next(g for g in groups["groups"] if g["name"] == "apps")
    assert apps["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    autoscaling = http.get("/apis/autoscaling").json()
    assert [v["version"] for v in autoscaling["versions"]] == ["v2", "v1"]
    core = http.get("/api/v1").json()
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"]["shortNames"] == ["po"]
    assert by_name["pods"]["namespaced"] is True
    assert by_name["namespaces/finalize"]["verbs"] == ["update"]
    assert "pods/exec" not in by_name  # not served
    dep = {r["name"]: r for r in http.get("/apis/apps/v1").json()["resources"]}
    assert dep["deployments/scale"] == {
        "name": "deployments/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
    assert http.get("/apis/nope").status_code == 404


@pytest.mark.parametrize("accept", [V2, V2BETA1])
def test_aggregated_discovery_and_crds(http: httpx.Client, accept: str) -> None:
    version = "v2" if "v=v2;" in accept else "v2beta1"
    r = http.get("/apis", headers={"accept": accept})
    assert r.headers["content-type"] == (
        f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    )
    body = r.json()
    assert body["apiVersion"] == f"apidiscovery.k8s.io/{version}"
    apps = next(i for i in body["items"] if i["metadata"]["name"] == "apps")
    deploy = next(x for x in apps["versions"][0]["resources"] if x["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced"
    assert deploy["shortNames"] == ["deploy"]
    assert {s["subresource"]: s["responseKind"]["kind"] for s in deploy["subresources"]} == {
        "scale": "Scale",
        "status": "Deployment",
    }
    core = http.get("/api", headers={"accept": accept}).json()
    assert [i["metadata"].get("name", "") for i in core["items"]] == [""]
    if version == "v2":
        http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRD)
        body = http.get("/apis", headers={"accept": accept}).json()
        disco = next(i for i in body["items"] if i["metadata"]["name"] == "disco.example.com")
        thing = disco["versions"][0]["resources"][0]
        assert (thing["resource"], thing["scope"], thing["categories"]) == (
            "things",
            "Cluster",
            ["all"],
        )
        assert thing["subresources"][0]["subresource"] == "status"
    assert (
        http.get("/apis", headers={"accept": "application/json"}).json()["kind"] == "APIGroupList"
    )


def test_openapi_v3(http: httpx.Client) -> None:
    http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=CRD)
    root = http.get("/openapi/v3").json()["paths"]
    url = root["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    r = http.get(url)
    assert r.headers["cache-control"] == "public, immutable"
    doc = r.json()
    assert doc["openapi"] == "3.0.0"
    item = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
    assert item["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "version": "v1",
        "kind": "Deployment",
    }
    assert "fieldValidation" in [p["name"] for p in item["patch"]["parameters"]]
    assert "application/strategic-merge-patch+json" in item["patch"]["requestBody"]["content"]
    schemas = doc["components"]["schemas"]
    spec = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
    assert spec["replicas"]["type"] == "integer"
    assert spec["template"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"}
    ]
    assert "io.k8s.api.core.v1.Container" in schemas  # referenced transitively
    custom = http.get(root["apis/disco.example.com/v1"]["serverRelativeURL"]).json()
    thing = custom["components"]["schemas"]["com.example.disco.v1.Thing"]
    assert thing["properties"]["spec"]["properties"]["n"]["description"] == "A number."
    assert thing["x-kubernetes-group-version-kind"] == [
        {"group": "disco.example.com", "version": "v1", "kind": "Thing"}
    ]
    patch = custom["paths"]["/apis/disco.example.com/v1/things/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert http.get("/openapi/v3/apis/nope/v1").status_code == 404


def test_negotiation() -> None:
    assert negotiate_object(None).output is Output.OBJECT
    t = negotiate_object("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json")
    assert (t.output, t.table_version) == (Output.TABLE, "v1beta1")
    assert negotiate_object("application/vnd.kubernetes.protobuf,*/*").output is Output.OBJECT
    with pytest.raises(NotAcceptable):
        negotiate_object("application/vnd.kubernetes.protobuf")
    assert discovery_version(V2) == "v2"
    assert discovery_version("application/json") is None
    assert patch_type("application/merge-patch+json; charset=utf-8") == "merge"


def test_params() -> None:
    lp = list_params(QueryParams("watch=true&timeoutSeconds=5&allowWatchBookmarks=1&limit=3"))
    assert (lp.watch, lp.timeout_seconds, lp.allow_bookmarks, lp.limit) == (True, 5, True, 3)
    assert 1800 <= list_params(QueryParams("")).watch_timeout() <= 3600
    with pytest.raises(BadRequest):
        list_params(QueryParams("limit=x"))
    wp = write_params(
        QueryParams("dryRun=All&fieldManager=me&fieldValidation=Strict"), kind="CreateOptions"
    )
    assert (wp.dry_run, wp.field_manager, wp.field_validation.value) == (True, "me", "Strict")
    with pytest.raises(Invalid, match="fieldValidation"):
        write_params(QueryParams("fieldValidation=strict"), kind="PatchOptions")
    dp = delete_params(QueryParams("orphanDependents=false"), None)
    assert dp.propagation is not None
    assert dp.propagation.value == "Background"
    dp = delete_params(
        QueryParams(""), {"preconditions": {"resourceVersion": "7"}, "dryRun": ["All"]}
    )
    assert dp.preconditions is not None
    assert dp.preconditions.resource_version == "7"
    assert dp.dry_run
    with pytest.raises(BadRequest):
        delete_params(QueryParams(""), {"kind": "Pod"})
