"""Every resource of a GA group-version of Kubernetes 1.33 is a built-in kind of gitkrm.

Held against the 1.33 resource list vendored in `tests/schema/data` (see its README for
origin and licence), and that list against a second source: the 1.33 definitions that
kubernetes-validate ships. A kind missing from `gitkrm/schema/resources.yaml` fails here.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitkrm.errors import Invalid
from gitkrm.krm.refs import GVK
from gitkrm.schema import Registry
from gitkrm.schema.openapi import gvk_index
from gitkrm.schema.resources import builtin_resources

DATA = Path(__file__).parent / "data"

# The review APIs answer a request and store nothing (gitkrm.server.reviews); they are
# built-in kinds like the others.
REVIEWS = frozenset(
    {
        ("authentication.k8s.io", "SelfSubjectReview"),
        ("authentication.k8s.io", "TokenReview"),
        ("authorization.k8s.io", "LocalSubjectAccessReview"),
        ("authorization.k8s.io", "SelfSubjectAccessReview"),
        ("authorization.k8s.io", "SelfSubjectRulesReview"),
        ("authorization.k8s.io", "SubjectAccessReview"),
    }
)
# Kinds of the 1.33 definitions that only a subresource returns (no resource of their own).
SUBRESOURCE_KINDS = frozenset(
    {
        ("autoscaling", "Scale"),
        ("policy", "Eviction"),
        ("authentication.k8s.io", "TokenRequest"),
    }
)


def ga_resources() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(
        (DATA / "kubernetes-1.33-ga-resources.json").read_text()
    )["resources"]
    return rows


def cluster_kinds() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((DATA / "cluster-kinds.yaml").read_text()))


def _ga(version: str) -> bool:
    return re.fullmatch(r"v\d+", version) is not None


def test_vendored_list_matches_the_1_33_definitions() -> None:
    listed = {(r["group"], r["version"], r["kind"]) for r in ga_resources()}
    defined = {
        (g.group, g.version, g.kind)
        for g in gvk_index()
        if _ga(g.version)
        and not g.kind.endswith("List")
        and (g.group, g.kind) not in SUBRESOURCE_KINDS
    }
    assert listed == defined
    assert len(listed) == 61


def test_every_ga_resource_is_built_in() -> None:
    table = {(i.group, i.version, i.kind): i for i in builtin_resources()}
    missing = [r for r in ga_resources() if (r["group"], r["version"], r["kind"]) not in table]
    assert missing == []
    for r in ga_resources():
        info = table[(r["group"], r["version"], r["kind"])]
        assert (info.plural, info.namespaced) == (r["resource"], r["namespaced"]), r


def test_no_built_in_beyond_the_release() -> None:
    listed = {(r["group"], r["version"], r["kind"]) for r in ga_resources()}
    ga_table = {(i.group, i.version, i.kind) for i in builtin_resources() if _ga(i.version)}
    assert ga_table == listed


def test_review_apis_are_create_only(registry: Registry) -> None:
    infos = {(i.group, i.kind): i for i in registry.infos()}
    assert {k: infos[k].verbs for k in REVIEWS} == {k: ("create",) for k in REVIEWS}


@pytest.mark.parametrize("obj", cluster_kinds(), ids=lambda o: o["kind"])
def test_new_kinds_are_admitted_cluster_scoped(registry: Registry, obj: dict[str, Any]) -> None:
    info = registry.info(GVK.of(obj))
    assert info.namespaced is False
    admitted = copy.deepcopy(obj)
    registry.admit(admitted)
    assert admitted["metadata"]["name"] == obj["metadata"]["name"]
    namespaced = copy.deepcopy(obj)
    namespaced["metadata"]["namespace"] = "default"
    with pytest.raises(Invalid, match=r"metadata\.namespace: Forbidden: not allowed on this type"):
        registry.admit(namespaced)


@pytest.mark.parametrize(
    ("kind", "path", "field"),
    [
        ("APIService", ("spec", "versionPriority"), "spec.versionPriority"),
        ("CertificateSigningRequest", ("spec", "signerName"), "spec.signerName"),
        ("CertificateSigningRequest", ("spec", "request"), "spec.request"),
        ("FlowSchema", ("spec", "priorityLevelConfiguration"), "spec.priorityLevelConfiguration"),
        ("PriorityLevelConfiguration", ("spec", "type"), "spec.type"),
        ("RuntimeClass", ("handler",), "handler"),
    ],
)
def test_required_fields(registry: Registry, kind: str, path: tuple[str, ...], field: str) -> None:
    obj = copy.deepcopy(next(o for o in cluster_kinds() if o["kind"] == kind))
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    assert any(c.field == field and c.type == "FieldValueRequired" for c in e.value.causes)


def _api_service(**spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(next(o for o in cluster_kinds() if o["kind"] == "APIService"))
    obj["spec"].update(spec)
    return obj


def test_api_service_name_is_version_dot_group(registry: Registry) -> None:
    obj = _api_service()
    obj["metadata"]["name"] = "metrics"
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    (cause,) = e.value.causes
    assert cause.field == "metadata.name"
    assert 'must be `spec.version+"."+spec.group`: "v1beta1.metrics.k8s.io"' in cause.message


def test_api_service_priorities_and_tls(registry: Registry) -> None:
    obj = _api_service(versionPriority=5000, caBundle="Y2E=")
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    fields = {c.field for c in e.value.causes}
    assert fields == {"spec.versionPriority", "spec.insecureSkipTLSVerify"}


def test_runtime_class_handler_is_a_dns_label(registry: Registry) -> None:
    obj = copy.deepcopy(next(o for o in cluster_kinds() if o["kind"] == "RuntimeClass"))
    obj["handler"] = "Run_SC"
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    assert [c.field for c in e.value.causes] == ["handler"]


def test_a_csrs_spec_is_kept_on_update(registry: Registry) -> None:
    """Requests are immutable after creation: an update keeps the stored spec (as the
    registry strategy's PrepareForUpdate does), whatever the new one says."""
    old = copy.deepcopy(
        next(o for o in cluster_kinds() if o["kind"] == "CertificateSigningRequest")
    )
    registry.admit(old)
    new = copy.deepcopy(old)
    new["spec"]["signerName"] = "example.com/other"
    new["metadata"]["labels"] = {"team": "a"}
    registry.admit(new, old=old)
    assert new["spec"] == old["spec"]
    assert new["metadata"]["labels"] == {"team": "a"}
