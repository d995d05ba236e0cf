"""The HTTP API at the wire: status codes, Status bodies, content types, options."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.support.builders import configmap, deployment

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def status_of(r: httpx.Response) -> dict[str, Any]:
    assert r.headers["content-type"] == "application/json"
    body: dict[str, Any] = r.json()
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    return body


def test_crud_on_object_and_collection_paths(http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    r = http.post(base, json=configmap("a", ns, k="v"))
    assert r.status_code == 201
    assert r.json()["metadata"]["namespace"] == ns  # filled in from the path
    got = http.get(f"{base}/a").json()
    assert got["data"] == {"k": "v"}
    got["data"]["k"] = "w"
    r = http.put(f"{base}/a", json=got)
    assert r.status_code == 200
    assert r.json()["data"] == {"k": "w"}
    r = http.put(f"{base}/a", json=got)  # stale resourceVersion
    s = status_of(r)
    assert (r.status_code, s["reason"]) == (409, "Conflict")
    lst = http.get(base).json()
    assert lst["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in lst["items"]] == ["a"]
    r = http.delete(f"{base}/a")
    s = status_of(r)
    assert s["status"] == "Success"
    assert s["details"]["name"] == "a"
    assert s["details"]["kind"] == "configmaps"
    r = http.get(f"{base}/a")
    s = status_of(r)
    assert (r.status_code, s["reason"], s["message"]) == (
        404,
        "NotFound",
        'configmaps "a" not found',
    )
    assert s["details"] == {"name": "a", "kind": "configmaps"}


def test_errors_are_status_objects(http: httpx.Client, ns: str) -> None:
    r = http.get("/apis/nope.example.com/v1/things")
    assert (r.status_code, status_of(r)["reason"]) == (404, "NotFound")
    r = http.get(f"/api/v1/namespaces/{ns}/configmaps/x/exec")  # not served
    assert r.status_code == 404
    r = http.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps")
    assert (r.status_code, status_of(r)["reason"]) == (405, "MethodNotAllowed")
    r = http.post(f"/api/v1/namespaces/{ns}/configmaps", content=b"{not json")
    assert (r.status_code, status_of(r)["reason"]) == (400, "BadRequest")
    bad = deployment("bad", ns, replicas=2)
    bad["spec"]["replicas"] = -1
    r = http.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=bad)
    s = status_of(r)
    assert (r.status_code, s["reason"]) == (422, "Invalid")
    assert s["details"]["causes"][0]["field"] == "spec.replicas"
    wrong = configmap("w", ns)
    wrong["metadata"]["namespace"] = "elsewhere"
    r = http.post(f"/api/v1/namespaces/{ns}/configmaps", json=wrong)
    assert r.status_code == 400
    r = http.post("/api/v1/configmaps", json=configmap("w", ns))  # no namespace in the path
    assert r.status_code == 405


def test_patch_content_types(http: httpx.Client, ns: str) -> None:
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    assert http.post(base, json=deployment("p", ns, replicas=2)).status_code == 201

    def patch(ctype: str, body: Any) -> httpx.Response:
        return http.patch(f"{base}/p", content=orjson.dumps(body), headers={"content-type": ctype})

    assert (
        patch("application/merge-patch+json", {"spec": {"replicas": 3}}).json()["spec"]["replicas"]
        == 3
    )
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 4}]
    assert patch("application/json-patch+json", ops).json()["spec"]["replicas"] == 4
    strategic = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}
    out = patch("application/strategic-merge-patch+json", strategic).json()
    assert out["spec"]["template"]["spec"]["containers"] == [
        {**out["spec"]["template"]["spec"]["containers"][0], "image": "x:1"}
    ]
    r = patch("application/apply-patch+yaml", {"spec": {}})  # no fieldManager
    assert (r.status_code, status_of(r)["reason"]) == (422, "Invalid")
    r = patch("application/apply-patch+cbor", {"spec": {}})
    assert (r.status_code, status_of(r)["reason"]) == (415, "UnsupportedMediaType")
    r = patch("text/plain", {})
    assert r.status_code == 415
    r = patch("application/json-patch+json", [{"op": "test", "path": "/spec/replicas", "value": 1}])
    assert r.status_code in (409, 422)


def test_dry_run_field_manager_and_validation(http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    r = http.post(base, params={"dryRun": "All"}, json=configmap("dry", ns))
    assert r.status_code == 201
    assert http.get(f"{base}/dry").status_code == 404
    r = http.post(base, params={"dryRun": "Some"}, json=configmap("dry", ns))
    assert (r.status_code, status_of(r)["reason"]) == (422, "Invalid")
    r = http.post(base, params={"fieldManager": "x" * 129}, json=configmap("fm", ns))
    assert r.status_code == 422
    unknown = configmap("u", ns)
    unknown["extra"] = 1
    r = http.post(base, params={"fieldValidation": "Strict"}, json=unknown)
    assert r.status_code == 400
    assert 'unknown field "extra"' in status_of(r)["message"]
    r = http.post(base, params={"fieldValidation": "Warn"}, json=unknown)
    assert r.status_code == 201
    assert r.headers.get_list("warning") == ['299 - "unknown field \\"extra\\""']
    assert "extra" not in r.json()
    r = http.post(base, json={**unknown, "metadata": {"name": "u2"}})  # Warn is the default
    assert r.headers.get("warning")
    dup = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d","name":"d2"}}'
    r = http.post(base, params={"fieldValidation": "Strict"}, content=dup)
    assert r.status_code == 400
    assert 'duplicate field "name"' in status_of(r)["message"]
    r = http.post(base, params={"fieldValidation": "Ignore"}, content=dup)
    assert r.status_code == 201
    assert r.json()["metadata"]["name"] == "d2"


def test_delete_options_from_query_and_body(http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    for name in ("q", "b", "pre"):
        assert http.post(base, json=configmap(name, ns)).status_code == 201
    r = http.delete(f"{base}/q", params={"propagationPolicy": "Foreground"})
    assert r.status_code == 200
    assert r.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    body: dict[str, Any] = {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Orphan",
    }
    r = http.request("DELETE", f"{base}/b", json=body)
    assert r.json()["metadata"]["finalizers"] == ["orphan"]
    body = {"preconditions": {"uid": "nope"}}
    r = http.request("DELETE", f"{base}/pre", json=body)
    assert (r.status_code, status_of(r)["reason"]) == (409, "Conflict")
    uid = http.get(f"{base}/pre").json()["metadata"]["uid"]
    r = http.request(
        "DELETE", f"{base}/pre", json={"preconditions": {"uid": uid}, "gracePeriodSeconds": 0}
    )
    assert r.status_code == 200
    r = http.request(
        "DELETE", f"{base}/q", json={"propagationPolicy": "Orphan", "orphanDependents": True}
    )
    assert r.status_code == 422
    r = http.delete(f"{base}/q", params={"propagationPolicy": "Sideways"})
    assert r.status_code == 422


def test_deletecollection(http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    for i in range(4):
        body = configmap(f"c{i}", ns)
        body["metadata"]["labels"] = {"drop": "yes" if i < 3 else "no"}
        http.post(base, json=body)
    r = http.delete(base, params={"labelSelector": "drop=yes", "dryRun": "All"})
    assert len(r.json()["items"]) == 3
    assert len(http.get(base).json()["items"]) == 4
    r = http.delete(base, params={"labelSelector": "drop=yes"})
    assert r.status_code == 200
    assert sorted(i["metadata"]["name"] for i in r.json()["items"]) == ["c0", "c1", "c2"]
    assert [i["metadata"]["name"] for i in http.get(base).json()["items"]] == ["c3"]
    r = http.delete("/api/v1/namespaces")  # namespaces have no deletecollection
    assert r.status_code == 405


def test_list_pages_and_resource_versions(http: httpx.Client, ns: str) -> None:
    base = f"/api/v1/namespaces/{ns}/configmaps"
    for i in range(5):
        http.post(base, json=configmap(f"p{i}", ns))
    first = http.get(base, params={"limit": 2}).json()
    assert len(first["items"]) == 2
    assert first["metadata"]["remainingItemCount"] == 3
    rest = http.get(base, params={"limit": 10, "continue": first["metadata"]["continue"]}).json()
    assert [i["metadata"]["name"] for i in rest["items"]] == ["p2", "p3", "p4"]
    rv = first["metadata"]["resourceVersion"]
    http.post(base, json=configmap("late", ns))
    exact = http.get(base, params={"resourceVersion": rv, "resourceVersionMatch": "Exact"}).json()
    assert len(exact["items"]) == 5
    assert exact["metadata"]["resourceVersion"] == rv
    assert len(http.get(base, params={"resourceVersion": "0"}).json()["items"]) == 6
    r = http.get(base, params={"resourceVersionMatch": "Exact"})
    assert r.status_code == 422
    r = http.get(base, params={"resourceVersion": "999999999"})
    assert (r.status_code, status_of(r)["reason"]) == (504, "Timeout")
    everywhere = http.get(
        "/api/v1/configmaps", params={"fieldSelector": f"metadata.namespace={ns}"}
    )
    assert len(everywhere.json()["items"]) == 6


def test_status_and_scale_subresources(http: httpx.Client, ns: str) -> None:
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    http.post(base, json=deployment("s", ns, replicas=2))
    obj = http.get(f"{base}/s/status").json()
    assert obj["kind"] == "Deployment"
    obj["status"] = {"replicas": 2, "readyReplicas": 1}
    obj["spec"]["replicas"] = 9  # ignored by the status subresource
    out = http.put(f"{base}/s/status", json=obj).json()
    assert out["status"]["readyReplicas"] == 1
    assert out["spec"]["replicas"] == 2
    r = http.patch(
        f"{base}/s/status",
        content=b'{"status":{"readyReplicas":2}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert r.json()["status"]["readyReplicas"] == 2
    scale = http.get(f"{base}/s/scale").json()
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: scale["metadata"][k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 2, "selector": "app=s"},
    }
    scale["spec"]["replicas"] = 5
    assert http.put(f"{base}/s/scale", json=scale).json()["spec"]["replicas"] == 5
    r = http.put(f"{base}/s/scale", json=scale)  # stale resourceVersion
    assert r.status_code == 409
    r = http.patch(
        f"{base}/s/scale",
        content=b'{"spec":{"replicas":1}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert r.json()["spec"]["replicas"] == 1
    assert http.get(f"{base}/s").json()["spec"]["replicas"] == 1
    r = http.patch(
        f"{base}/s/scale",
        content=b'{"spec":{"replicas":-1}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert r.status_code == 422
    assert http.get(f"/api/v1/namespaces/{ns}/configmaps/x/scale").status_code == 404


def test_namespace_finalize(http: httpx.Client) -> None:
    http.post("/api/v1/namespaces", json={"metadata": {"name": "finalize-me"}})
    r = http.delete("/api/v1/namespaces/finalize-me")
    assert r.json()["status"]["phase"] == "Terminating"
    ns = r.json()
    ns["spec"]["finalizers"] = []
    r = http.put("/api/v1/namespaces/finalize-me/finalize", json=ns)
    assert r.status_code == 200
    assert http.get("/api/v1/namespaces/finalize-me").status_code == 404


def test_tables(http: httpx.Client, ns: str) -> None:
    http.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=deployment("t", ns, replicas=2))
    t = http.get(f"/apis/apps/v1/namespaces/{ns}/deployments", headers={"accept": TABLE}).json()
    assert t["kind"] == "Table"
    assert t["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in t["columnDefinitions"]]
    assert names == [
        "Name",
        "Ready",
        "Up-to-date",
        "Available",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    assert [c["priority"] for c in t["columnDefinitions"]] == [0, 0, 0, 0, 0, 1, 1, 1]
    row = t["rows"][0]
    assert row["cells"][:4] == ["t", "0/2", 0, 0]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "t"
    one = http.get(
        f"/apis/apps/v1/namespaces/{ns}/deployments/t",
        params={"includeObject": "Object"},
        headers={"accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"},
    ).json()
    assert one["apiVersion"] == "meta.k8s.io/v1beta1"
    assert one["rows"][0]["object"]["kind"] == "Deployment"
    plain = http.get(f"/api/v1/namespaces/{ns}/limitranges", headers={"accept": TABLE}).json()
    assert [c["name"] for c in plain["columnDefinitions"]] == ["Name", "Created At"]
    r = http.get(
        f"/api/v1/namespaces/{ns}/configmaps",
        headers={"accept": "application/vnd.kubernetes.protobuf"},
    )
    assert r.status_code == 406
    r = http.get(
        f"/api/v1/namespaces/{ns}/configmaps",
        headers={"accept": "application/vnd.kubernetes.protobuf, application/json"},
    )
    assert r.status_code == 200


def test_yaml_body(http: httpx.Client, ns: str) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yamled}\ndata: {a: 'yes'}\n"
    r = http.post(
        f"/api/v1/namespaces/{ns}/configmaps",
        content=body.encode(),
        headers={"content-type": "application/yaml"},
    )
    assert r.status_code == 201
    assert r.json()["data"] == {"a": "yes"}


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/readyz/ping"])
def test_health(http: httpx.Client, path: str) -> None:
    r = http.get(path)
    assert (r.status_code, r.text) == (200, "ok")


def test_version_and_metrics(http: httpx.Client, ns: str) -> None:
    v = http.get("/version").json()
    assert (v["major"], v["minor"]) == ("1", "33")
    http.get(f"/api/v1/namespaces/{ns}/configmaps")
    text = http.get("/metrics").text
    assert (
        'apiserver_request_duration_seconds_count{group="",resource="configmaps",subresource="",verb="LIST"}'
        in text
    )
    assert "gitkrm_open_watches" in text
    assert 'gitkrm_objects{group="",kind="Namespace"}' in text
    assert "gitkrm_sync_duration_seconds" in text
