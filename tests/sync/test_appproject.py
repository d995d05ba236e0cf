"""An AppProject's rules for objects and destinations, as Argo CD's
`IsGroupKindNamePermitted` and `IsDestinationPermitted` decide them (the cases of Argo
CD's documentation: a namespace denied among all, kinds by glob, names on cluster lists)."""

from __future__ import annotations

import pytest

from gitkrm.krm import ObjectRef
from gitkrm.sync.appproject import (
    check,
    destination_permitted,
    glob_match,
    go_match,
    kind_permitted,
)
from gitkrm.sync.appproject_spec import PERMISSIVE, DestinationRule, KindRule, ProjectPolicy
from gitkrm.sync.desired import Desired


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("*", "apps", True),
        ("", "", True),  # the core group, named by ""
        ("", "apps", False),
        ("Cluster*", "ClusterRole", True),
        ("Cluster*", "Role", False),
        ("?ole", "Role", True),
        ("[^R]ole", "Role", False),
        ("[RB]ole", "Bole", True),
        ("*.k8s.io", "rbac.authorization.k8s.io", True),
        ("[", "[", False),  # Go's ErrBadPattern: no match
        ("a\\*", "a*", True),
    ],
)
def test_group_kind_and_name_patterns_are_gos_filepath_match(
    pattern: str, value: str, expected: bool
) -> None:
    assert go_match(pattern, value) is expected


def test_kinds_are_permitted_as_argo_cd_permits_them() -> None:
    none = ProjectPolicy(project="p")
    # cluster-scoped kinds: only what the whitelist names (none when absent)
    assert not kind_permitted(none, group="", kind="Namespace", name="x", namespaced=False)
    # namespaced kinds: all when no whitelist is given ...
    assert kind_permitted(none, group="apps", kind="Deployment", name="x", namespaced=True)
    # ... none when it is given empty
    empty = ProjectPolicy(project="p", namespace_whitelist=())
    assert not kind_permitted(empty, group="apps", kind="Deployment", name="x", namespaced=True)
    p = ProjectPolicy(
        project="p",
        cluster_whitelist=(KindRule(group="*", kind="*"),),
        cluster_blacklist=(KindRule(group="", kind="Namespace", name="kube-*"),),
        namespace_whitelist=(KindRule(group="", kind="*"), KindRule(group="apps", kind="*")),
        namespace_blacklist=(KindRule(group="", kind="Secret"),),
    )
    assert kind_permitted(p, group="", kind="Namespace", name="team-a", namespaced=False)
    assert not kind_permitted(p, group="", kind="Namespace", name="kube-system", namespaced=False)
    assert kind_permitted(p, group="apps", kind="Deployment", name="x", namespaced=True)
    assert not kind_permitted(p, group="", kind="Secret", name="x", namespaced=True)
    assert not kind_permitted(p, group="batch", kind="Job", name="x", namespaced=True)


def test_a_negated_destination_denies_one_namespace_among_all() -> None:
    p = ProjectPolicy(
        project="p",
        destinations=(
            DestinationRule(server="*", namespace="!kube-system"),
            DestinationRule(server="*", namespace="*"),
        ),
    )
    assert destination_permitted(p, "guestbook")
    assert not destination_permitted(p, "kube-system")


def test_destinations_by_server_or_by_name() -> None:
    by_server = ProjectPolicy(
        project="p",
        destinations=(
            DestinationRule(server="https://kubernetes.default.svc", namespace="team-*"),
        ),
    )
    assert destination_permitted(by_server, "team-a")
    assert not destination_permitted(by_server, "prod")
    by_name = ProjectPolicy(
        project="p", destinations=(DestinationRule(name="in-*", namespace="prod"),)
    )
    assert destination_permitted(by_name, "prod")
    elsewhere = ProjectPolicy(
        project="p",
        destinations=(DestinationRule(server="https://prod.example.com", namespace="*"),),
    )
    assert not destination_permitted(elsewhere, "prod")
    scoped = ProjectPolicy(project="p", destinations=PERMISSIVE.destinations,
                           only_project_clusters=True)  # fmt: skip
    assert not destination_permitted(scoped, "prod")  # gitkrm's target: no project's cluster


def test_globs_with_a_separator_stop_at_it_unless_doubled() -> None:
    url = "https://github.com/argoproj/argocd-example-apps"
    assert glob_match("https://github.com/argoproj/*", url, separator="/")
    assert not glob_match("https://github.com/*", url, separator="/")
    assert glob_match("https://github.com/**", url, separator="/")
    assert not glob_match("!https://github.com/**", url, separator="/")
    assert glob_match("team-{a,b}", "team-b")


def _desired(ref: ObjectRef) -> Desired:
    return Desired(ref=ref, api_version="v1", applied="{}", path="apps/x.yaml", line=3)


def test_objects_not_permitted_are_problems_of_the_revision_in_argo_cds_words() -> None:
    p = ProjectPolicy(
        project="team-a",
        destinations=(DestinationRule(server="*", namespace="team-a"),),
        namespace_blacklist=(KindRule(group="", kind="Secret"),),
    )
    ok = _desired(ObjectRef(group="", kind="ConfigMap", name="c", namespace="team-a"))
    secret = _desired(ObjectRef(group="", kind="Secret", name="s", namespace="team-a"))
    role = _desired(ObjectRef(group="rbac.authorization.k8s.io", kind="ClusterRole", name="r"))
    other = _desired(ObjectRef(group="", kind="ConfigMap", name="c", namespace="team-b"))
    assert [str(p) for p in check([ok, secret, role, other], p)] == [
        "apps/x.yaml:3: Secret team-a/s: resource :Secret is not permitted in project team-a",
        "apps/x.yaml:3: ClusterRole r: resource rbac.authorization.k8s.io:ClusterRole is not "
        "permitted in project team-a",
        "apps/x.yaml:3: ConfigMap team-b/c: namespace team-b is not permitted in project 'team-a'",
    ]
    assert check([ok, secret, role, other], PERMISSIVE) == []
