"""Server-side apply at the wire: PATCH with application/apply-patch+yaml (YAML or JSON
bodies), fieldManager and force, the API server's Status answers, and the manager of
ordinary writes taken from the User-Agent."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from tests.support.builders import deployment
from tests.support.manifests import yaml_text

APPLY = {"content-type": "application/apply-patch+yaml"}


def deployment_yaml(*, replicas: int) -> str:
    """Deployment `web` of no namespace (the URL's)."""
    return yaml_text(deployment("web", None, replicas=replicas))


def status_of(r: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = r.json()
    assert body["kind"] == "Status", body
    return body


def web(http: httpx.Client, ns: str) -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments/web"


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


def test_apply_yaml_creates_then_conflicts_then_forces(http: httpx.Client, ns: str) -> None:
    url = web(http, ns)
    body = deployment_yaml(replicas=2)
    r = http.patch(url, params={"fieldManager": "one"}, content=body, headers=APPLY)
    assert r.status_code == 201, r.text  # created
    made = r.json()
    assert made["metadata"]["namespace"] == ns
    assert owners(made)[("one", "Apply")]["apiVersion"] == "apps/v1"
    again = http.patch(url, params={"fieldManager": "one"}, content=body, headers=APPLY)
    assert again.status_code == 200
    assert again.json()["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    other = deployment_yaml(replicas=5)
    r = http.patch(url, params={"fieldManager": "two"}, content=other, headers=APPLY)
    s = status_of(r)
    assert (r.status_code, s["reason"]) == (409, "Conflict")
    assert s["message"] == 'Apply failed with 1 conflict: conflict with "one": .spec.replicas'
    assert s["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "one"',
            "field": ".spec.replicas",
        }
    ]
    r = http.patch(
        url, params={"fieldManager": "two", "force": "true"}, content=other, headers=APPLY
    )
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["replicas"] == 5
    assert "f:replicas" in owners(r.json())[("two", "Apply")]["fieldsV1"]["f:spec"]


def test_apply_json_body_and_dry_run(http: httpx.Client, ns: str) -> None:
    url = f"/api/v1/namespaces/{ns}/configmaps/c"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    r = http.patch(
        url,
        params={"fieldManager": "me", "dryRun": "All"},
        content=orjson.dumps(body),
        headers=APPLY,
    )
    assert r.status_code == 201, r.text
    assert r.json()["data"] == {"a": "1"}
    assert http.get(url).status_code == 404
    r = http.patch(url, params={"fieldManager": "me"}, content=orjson.dumps(body), headers=APPLY)
    assert r.status_code == 201
    r = http.patch(url, params={"fieldManager": "me"}, content=orjson.dumps(body), headers=APPLY)
    assert r.status_code == 200
    assert http.get(url).json()["data"] == {"a": "1"}


def test_patch_options_are_validated(http: httpx.Client, ns: str) -> None:
    url = web(http, ns)
    r = http.patch(url, content=deployment_yaml(replicas=1), headers=APPLY)
    s = status_of(r)
    assert (r.status_code, s["reason"]) == (422, "Invalid")
    assert s["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    assert s["details"]["causes"][0]["field"] == "fieldManager"
    r = http.patch(
        url,
        params={"force": "false"},
        content=b'{"spec":{"replicas":1}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    s = status_of(r)
    assert r.status_code == 422
    assert s["message"].endswith("force: Forbidden: may not be specified for non-apply patch")


def test_cbor_apply_and_bad_bodies_are_refused(http: httpx.Client, ns: str) -> None:
    url = web(http, ns)
    r = http.patch(
        url,
        params={"fieldManager": "me"},
        content=b"\xa0",
        headers={"content-type": "application/apply-patch+cbor"},
    )
    assert (r.status_code, status_of(r)["reason"]) == (415, "UnsupportedMediaType")
    dup = b"apiVersion: apps/v1\nkind: Deployment\nkind: Deployment\nmetadata: {name: web}\n"
    r = http.patch(url, params={"fieldManager": "me"}, content=dup, headers=APPLY)
    assert r.status_code == 400
    assert "duplicate key" in status_of(r)["message"]
    wrong = yaml_text({**deployment("web", None), "apiVersion": "apps/v1beta2"})
    r = http.patch(url, params={"fieldManager": "me"}, content=wrong, headers=APPLY)
    assert r.status_code == 400
    assert status_of(r)["message"] == (
        "Incorrect version specified in apply patch. Specified patch version: apps/v1beta2, "
        "expected: apps/v1"
    )


def test_status_subresource_apply(http: httpx.Client, ns: str) -> None:
    url = web(http, ns)
    http.patch(
        url,
        params={"fieldManager": "me"},
        content=deployment_yaml(replicas=1),
        headers=APPLY,
    ).raise_for_status()
    status = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "status": {"observedGeneration": 1, "replicas": 1},
    }
    r = http.patch(
        f"{url}/status",
        params={"fieldManager": "ctl"},
        content=orjson.dumps(status),
        headers=APPLY,
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["status"]["replicas"] == 1
    e = owners(out)[("ctl", "Apply")]
    assert e["subresource"] == "status"
    assert set(e["fieldsV1"]) == {"f:status"}


def test_ordinary_writes_name_the_user_agent_as_manager(http: httpx.Client, ns: str) -> None:
    url = f"/api/v1/namespaces/{ns}/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ua"}, "data": {"a": "1"}}
    r = http.post(url, json=body, headers={"user-agent": "mytool/1.2 (linux/amd64) x/y"})
    assert r.status_code == 201
    assert [e["manager"] for e in r.json()["metadata"]["managedFields"]] == ["mytool"]
    r = http.patch(
        f"{url}/ua",
        params={"fieldManager": "named"},
        content=b'{"data":{"b":"2"}}',
        headers={"content-type": "application/merge-patch+json", "user-agent": "mytool/1.2"},
    )
    assert r.status_code == 200
    assert {e["manager"] for e in r.json()["metadata"]["managedFields"]} == {"mytool", "named"}


def test_duplicate_json_fields_follow_field_validation(http: httpx.Client, ns: str) -> None:
    url = f"/api/v1/namespaces/{ns}/configmaps/dup"
    body = (
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"a":"1","a":"2"}}'
    )
    r = http.patch(
        url, params={"fieldManager": "me", "fieldValidation": "Strict"}, content=body, headers=APPLY
    )
    assert r.status_code == 400
    assert status_of(r)["message"] == 'error strict decoding YAML: duplicate field "a"'
    r = http.patch(url, params={"fieldManager": "me"}, content=body, headers=APPLY)  # Warn
    assert r.status_code == 201
    assert r.json()["data"] == {"a": "2"}
    assert r.headers["warning"] == '299 - "duplicate field \\"a\\""'
