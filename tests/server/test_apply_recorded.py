"""managedFields as a real kube-apiserver records them (#22): the expectations of
kubernetes' test/integration/apiserver/apply/apply_test.go (Apache-2.0), which runs the
requests against a real kube-apiserver and compares the whole object, replayed over HTTP
against gitkrm's API server: TestApplyManagedFields, TestApplyRemovesEmptyManagedFields,
TestApplyRemoveContainerPort, TestClearManagedFieldsWithMergePatch."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

APPLY = {"content-type": "application/apply-patch+yaml"}
MERGE = {"content-type": "application/merge-patch+json"}


def cm_url(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/configmaps/test-cm"


def patch(
    http: httpx.Client, url: str, body: Any, *, headers: dict[str, str], manager: str | None = None
) -> httpx.Response:
    """PATCH `body` (as JSON) to `url`, by field manager `manager` when one is named."""
    params = {"fieldManager": manager} if manager else {}
    return http.patch(url, params=params, content=orjson.dumps(body), headers=headers)


def _apply_test_cm(http: httpx.Client, ns: str) -> None:
    """The ConfigMap both of Kubernetes' tests start from, applied by "apply_test"."""
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": ns, "labels": {"test-label": "test"}},
        "data": {"key": "value"},
    }
    r = patch(http, cm_url(ns), config, headers=APPLY, manager="apply_test")
    assert r.status_code == 201, r.text


def test_apply_managed_fields(http: httpx.Client, ns: str) -> None:
    """An apply, then two merge patches by "updater": the updater takes `data.key`, its two
    writes make one grouped entry, the applier keeps its label; entries in that order."""
    _apply_test_cm(http, ns)
    for change in ({"data": {"new-key": "value"}}, {"data": {"key": "new value"}}):
        r = patch(http, cm_url(ns), change, headers=MERGE, manager="updater")
        assert r.status_code == 200, r.text
    obj: dict[str, Any] = http.get(cm_url(ns)).json()
    entries = [
        {k: v for k, v in e.items() if k != "time"} for e in obj["metadata"]["managedFields"]
    ]
    assert entries == [
        {
            "manager": "apply_test",
            "operation": "Apply",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:test-label": {}}}},
        },
        {
            "manager": "updater",
            "operation": "Update",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}, "f:new-key": {}}},
        },
    ]
    assert obj["data"] == {"key": "new value", "new-key": "value"}
    assert obj["metadata"]["labels"] == {"test-label": "test"}


def test_apply_removes_empty_managed_fields(http: httpx.Client, ns: str) -> None:
    """An apply that owns nothing, twice: no managedFields at all."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": ns},
    }
    for _ in range(2):
        r = patch(http, cm_url(ns), body, headers=APPLY, manager="apply_test")
        assert r.status_code in (200, 201), r.text
    obj = http.get(cm_url(ns)).json()
    assert obj["metadata"].get("managedFields") is None


def test_apply_remove_container_port(http: httpx.Client, ns: str) -> None:
    url = f"/apis/apps/v1/namespaces/{ns}/deployments/deployment"

    def deployment(*ports: dict[str, Any]) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "nginx", "image": "nginx:latest"}
        if ports:
            container["ports"] = list(ports)
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "deployment", "labels": {"app": "nginx"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {
                    "metadata": {"labels": {"app": "nginx"}},
                    "spec": {"containers": [container]},
                },
            },
        }

    port = {"containerPort": 80, "protocol": "TCP"}
    for body in (deployment(port), deployment()):
        r = patch(http, url, body, headers=APPLY, manager="apply_test")
        assert r.status_code in (200, 201), r.text
    [container] = http.get(url).json()["spec"]["template"]["spec"]["containers"]
    assert "ports" not in container


def test_clear_managed_fields_with_merge_patch(http: httpx.Client, ns: str) -> None:
    _apply_test_cm(http, ns)
    clear: dict[str, Any] = {"metadata": {"managedFields": [{}]}}
    assert patch(http, cm_url(ns), clear, headers=MERGE).status_code == 200
    assert not http.get(cm_url(ns)).json()["metadata"].get("managedFields")
