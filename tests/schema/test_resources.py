"""The built-in resource table: the facts `kubectl api-resources` shows on a 1.33 cluster."""

from __future__ import annotations

import pytest

from gitkrm.errors import NotFound
from gitkrm.krm.names import NameRule
from gitkrm.krm.refs import GVK, GroupKind
from gitkrm.schema import RELEASE, Registry
from gitkrm.schema.openapi import definition_name, definitions
from gitkrm.schema.resources import builtin_resources


def test_pinned_release() -> None:
    assert RELEASE == "1.33"
    assert "io.k8s.api.apps.v1.Deployment" in definitions()


@pytest.mark.parametrize(
    ("group", "version", "name", "kind", "namespaced"),
    [
        ("apps", "v1", "deploy", "Deployment", True),
        ("", "v1", "svc", "Service", True),
        ("", "v1", "po", "Pod", True),
        ("", "v1", "ns", "Namespace", False),
        ("", "v1", "cm", "ConfigMap", True),
        ("", "v1", "no", "Node", False),
        ("", "v1", "pvc", "PersistentVolumeClaim", True),
        ("apps", "v1", "sts", "StatefulSet", True),
        ("apps", "v1", "ds", "DaemonSet", True),
        ("batch", "v1", "cj", "CronJob", True),
        ("networking.k8s.io", "v1", "ing", "Ingress", True),
        ("networking.k8s.io", "v1", "netpol", "NetworkPolicy", True),
        ("policy", "v1", "pdb", "PodDisruptionBudget", True),
        ("autoscaling", "v2", "hpa", "HorizontalPodAutoscaler", True),
        ("apiextensions.k8s.io", "v1", "crd", "CustomResourceDefinition", False),
        ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        ("storage.k8s.io", "v1", "sc", "StorageClass", False),
        ("scheduling.k8s.io", "v1", "pc", "PriorityClass", False),
        ("events.k8s.io", "v1", "ev", "Event", True),
        ("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
        ("coordination.k8s.io", "v1", "leases", "Lease", True),
    ],
)
def test_short_names_and_scope(
    registry: Registry, group: str, version: str, name: str, kind: str, namespaced: bool
) -> None:
    info = registry.info_for_resource(group=group, version=version, resource=name)
    assert info.kind == kind
    assert info.namespaced is namespaced


def test_deployment_facts(registry: Registry) -> None:
    info = registry.info(GVK(group="apps", version="v1", kind="Deployment"))
    assert info.plural == "deployments"
    assert info.singular == "deployment"
    assert info.list_kind == "DeploymentList"
    assert info.short_names == ("deploy",)
    assert info.categories == ("all",)
    assert info.subresources == {"status", "scale"}
    assert info.verbs == (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    assert info.generation is True
    assert info.gvr.resource == "deployments"
    assert info.group_kind == GroupKind(group="apps", kind="Deployment")


def test_lookup_by_plural_singular_and_case(registry: Registry) -> None:
    by_plural = registry.info_for_resource(group="apps", version="v1", resource="deployments")
    by_singular = registry.info_for_resource(group="apps", version="v1", resource="deployment")
    by_case = registry.info_for_resource(group="apps", version="v1", resource="Deploy")
    assert by_plural is by_singular is by_case


@pytest.mark.parametrize(
    ("kind", "subresources"),
    [
        ("Namespace", {"finalize", "status"}),
        ("ReplicationController", {"scale", "status"}),
        ("Service", {"proxy", "status"}),
    ],
)
def test_core_subresources(registry: Registry, kind: str, subresources: set[str]) -> None:
    assert registry.info(GVK(group="", version="v1", kind=kind)).subresources == subresources


def test_pod_subresources(registry: Registry) -> None:
    pod = registry.info(GVK(group="", version="v1", kind="Pod"))
    assert {"binding", "eviction", "log", "status", "exec"} <= pod.subresources


def test_scale_subresource_of_workloads(registry: Registry) -> None:
    for kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        assert "scale" in registry.info(GVK(group="apps", version="v1", kind=kind)).subresources
    assert (
        "scale" not in registry.info(GVK(group="apps", version="v1", kind="DaemonSet")).subresources
    )


def test_category_all(registry: Registry) -> None:
    in_all = {i.plural for i in registry.infos() if "all" in i.categories}
    assert {
        "pods",
        "services",
        "deployments",
        "replicasets",
        "statefulsets",
        "daemonsets",
    } <= in_all
    assert {"jobs", "cronjobs", "replicationcontrollers", "horizontalpodautoscalers"} <= in_all
    assert "configmaps" not in in_all
    assert "secrets" not in in_all


def test_namespace_verbs_have_no_deletecollection(registry: Registry) -> None:
    ns = registry.info(GVK(group="", version="v1", kind="Namespace"))
    assert "deletecollection" not in ns.verbs
    assert "delete" in ns.verbs


def test_generation_only_for_kinds_with_spec(registry: Registry) -> None:
    def gen(group: str, kind: str) -> bool:
        return registry.info(GVK(group=group, version="v1", kind=kind)).generation

    assert gen("apps", "Deployment")
    assert gen("batch", "Job")
    assert not gen("", "ConfigMap")
    assert not gen("", "Secret")
    assert not gen("", "ServiceAccount")
    assert not gen("rbac.authorization.k8s.io", "Role")
    assert not gen("", "Event")
    assert gen("flowcontrol.apiserver.k8s.io", "FlowSchema")
    assert gen("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration")
    assert not gen("apiregistration.k8s.io", "APIService")
    assert not gen("certificates.k8s.io", "CertificateSigningRequest")
    assert not gen("node.k8s.io", "RuntimeClass")


@pytest.mark.parametrize(
    ("group", "kind", "rule"),
    [
        ("", "Service", NameRule.DNS1035_LABEL),
        ("", "Namespace", NameRule.DNS1123_LABEL),
        ("rbac.authorization.k8s.io", "ClusterRole", NameRule.PATH_SEGMENT),
        ("rbac.authorization.k8s.io", "RoleBinding", NameRule.PATH_SEGMENT),
        ("apps", "Deployment", NameRule.DNS1123_SUBDOMAIN),
        ("", "ConfigMap", NameRule.DNS1123_SUBDOMAIN),
    ],
)
def test_name_rules(registry: Registry, group: str, kind: str, rule: NameRule) -> None:
    assert registry.info(GVK(group=group, version="v1", kind=kind)).name_rule is rule


def test_every_entry_has_a_schema() -> None:
    for info in builtin_resources():
        assert definition_name(info.gvk) is not None, info


def test_versions_of_prefers_v2(registry: Registry) -> None:
    versions = registry.versions_of(GroupKind(group="autoscaling", kind="HorizontalPodAutoscaler"))
    assert [v.version for v in versions] == ["v2", "v1"]
    assert versions[1].storage_version == "v2"


def test_unknown_kind_and_resource(registry: Registry) -> None:
    with pytest.raises(
        NotFound, match=r'no matches for kind "Widget" in version "example\.com/v1"'
    ):
        registry.info(GVK(group="example.com", version="v1", kind="Widget"))
    with pytest.raises(NotFound, match="widgets"):
        registry.info_for_resource(group="apps", version="v1", resource="widgets")


def test_builtin_registries_are_independent() -> None:
    a, b = Registry.builtin(), Registry.builtin()
    assert a is not b
    assert len(a.infos()) == len(b.infos()) >= 50
