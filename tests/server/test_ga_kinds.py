"""The GA kinds of Kubernetes 1.33 through the embedded API server and the real kubectl."""

from __future__ import annotations

import json

import httpx
import yaml

from tests.schema.test_ga_kinds import DATA, ga_resources
from tests.server.conftest import Kubectl


def test_api_resources_lists_every_ga_resource(kubectl: Kubectl) -> None:
    """`kubectl api-resources` shows each resource at its group's preferred version; the
    legacy discovery document of every group-version lists it at each version."""
    listed = set()
    for line in kubectl("api-resources", "--no-headers").splitlines():
        cols = line.split()  # NAME [SHORTNAMES] APIVERSION NAMESPACED KIND
        listed.add((cols[0], cols[-3].rpartition("/")[0], cols[-2] == "true", cols[-1]))
    documents: dict[str, set[tuple[str, bool, str]]] = {}
    for r in ga_resources():
        assert (r["resource"], r["group"], r["namespaced"], r["kind"]) in listed, r
        path = f"/apis/{r['group']}/{r['version']}" if r["group"] else "/api/v1"
        if path not in documents:
            doc = json.loads(kubectl("get", "--raw", path))
            documents[path] = {(x["name"], x["namespaced"], x["kind"]) for x in doc["resources"]}
        assert (r["resource"], r["namespaced"], r["kind"]) in documents[path], r


def test_new_kinds_apply_get_and_delete(kubectl: Kubectl) -> None:
    bundle = (DATA / "cluster-kinds.yaml").read_text()
    out = kubectl("apply", "-f", "-", input=bundle)
    assert out.splitlines() == [
        "apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io created",
        "certificatesigningrequest.certificates.k8s.io/alice created",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/batch-jobs created",
        "flowschema.flowcontrol.apiserver.k8s.io/batch-jobs created",
        "runtimeclass.node.k8s.io/gvisor created",
    ]
    assert "unchanged" in kubectl("apply", "-f", "-", input=bundle).splitlines()[0]
    rc = json.loads(kubectl("get", "runtimeclass", "gvisor", "-o", "json"))
    assert rc["handler"] == "runsc"
    fs = json.loads(kubectl("get", "flowschema", "batch-jobs", "-o", "json"))
    assert fs["metadata"]["generation"] == 1
    assert (
        kubectl("get", "csr", "-o", "name")
        == "certificatesigningrequest.certificates.k8s.io/alice\n"
    )
    assert kubectl("get", "runtimeclass").splitlines()[1].split()[:2] == ["gvisor", "runsc"]
    assert kubectl("get", "apiservices").splitlines()[0].split() == [
        "NAME",
        "SERVICE",
        "AVAILABLE",
        "AGE",
    ]
    assert kubectl("get", "apiservices").splitlines()[1].split()[:3] == [
        "v1beta1.metrics.k8s.io",
        "kube-system/metrics-server",
        "Unknown",
    ]
    assert kubectl("get", "csr", "alice").splitlines()[1].split()[2:] == [
        "kubernetes.io/kube-apiserver-client",
        "24h",
        "Pending",
    ]
    assert "priorityLevelConfiguration" in kubectl("explain", "flowschema.spec")
    assert "handler" in kubectl("explain", "runtimeclass")
    kubectl("delete", "-f", "-", input=bundle)
    assert kubectl("get", "runtimeclasses", "-o", "name") == ""


def test_stored_api_service_registers_no_aggregated_api(
    kubectl: Kubectl, http: httpx.Client
) -> None:
    api_service = next(
        o
        for o in yaml.safe_load_all((DATA / "cluster-kinds.yaml").read_text())
        if o["kind"] == "APIService"
    )
    kubectl("apply", "-f", "-", input=yaml.safe_dump(api_service))
    try:
        groups = {g["name"] for g in http.get("/apis").json()["groups"]}
        assert "metrics.k8s.io" not in groups
        aggregated = http.get(
            "/apis",
            headers={
                "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            },
        ).json()
        assert "metrics.k8s.io" not in {g["metadata"]["name"] for g in aggregated["items"]}
        assert http.get("/apis/metrics.k8s.io/v1beta1").status_code == 404
        assert http.get("/apis/metrics.k8s.io/v1beta1/nodes").status_code == 404
        top = kubectl.run("top", "nodes", check=False)
        assert top.returncode != 0
        assert "metrics.k8s.io" not in kubectl("api-resources")
    finally:
        kubectl("delete", "apiservice", "v1beta1.metrics.k8s.io")
