"""Argo CD's Application read into a child source: every field mapped or reported, errors
naming the object and the field."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.tree.argocd import INTERPRETER
from gitkrm.agent.tree.argocd_project import applies, namespace_permitted, source_permitted
from gitkrm.agent.tree.model import ChildSpec, Peer, Refused
from gitkrm.agent.tree.naming import child_name
from gitkrm.errors import ManifestError
from gitkrm.krm import GroupKind, ObjectRef
from gitkrm.source import GitRef, HttpsAuth, RefKind
from gitkrm.sync.appsource_spec import (
    DirectorySpec,
    JsonnetSpec,
    JsonnetVar,
    ManagedNamespace,
    SourceType,
)
from gitkrm.sync.options import IgnoreDifference
from gitkrm.sync.overlay_spec import ImageOverride, OverlayPatch

from .argocd_objects import application, repo_secret
from .auth_checks import assert_basic_auth
from .flux_objects import Objects

URL = "https://github.com/example/fleet"
OTHER = "https://git.example.com/team/apps.git"
MAIN = GitRef(RefKind.BRANCH, "main")


def parent(**kw: Any) -> SourceConfig:
    return SourceConfig(name="default", url=URL, path="argocd", **kw)


async def child(
    obj: dict[str, Any], *objs: dict[str, Any], p: SourceConfig | None = None
) -> ChildSpec:
    return await INTERPRETER.child(obj, Objects(p or parent(), *objs))


def fields(spec: ChildSpec) -> list[str]:
    return [u.field for u in spec.unhonoured]


async def error(obj: dict[str, Any], *objs: dict[str, Any]) -> str:
    with pytest.raises(ManifestError) as e:
        await child(obj, *objs)
    text = str(e.value)
    assert text.startswith("source default: Application argocd/guestbook: "), text
    return text.removeprefix("source default: Application argocd/guestbook: ")


async def test_the_interpreter_declares_argo_cd_applications() -> None:
    assert INTERPRETER.peer is Peer.ARGOCD
    assert GroupKind(group="argoproj.io", kind="Application") in INTERPRETER.kinds


async def test_an_application_over_the_parents_repository_is_a_child_at_its_path() -> None:
    spec = await child(application())
    c = spec.config
    # repoURL names the parent's repository (.git and all): its URL, ref and credentials.
    assert (c.url, c.ref, c.path) == (URL, MAIN, "apps/guestbook")
    assert c.default_namespace == "guestbook"
    assert c.name == child_name(spec.declared_by)
    assert spec.declared_by == ObjectRef(
        group="argoproj.io", kind="Application", name="guestbook", namespace="argocd",
        version="v1alpha1",
    )  # fmt: skip
    assert (c.automated, c.self_heal, c.prune) == (True, True, True)
    assert c.app_source is not None
    assert c.app_source.source_type is SourceType.AUTO
    assert c.app_source.prune
    assert c.app_source.create_namespace is None
    assert c.helm is not None
    assert c.helm.release_name == "guestbook"  # Argo CD names a chart's release so
    assert c.interpret == parent().interpret
    assert spec.wait
    assert spec.finalizer is None  # none on the object: deleting it leaves the objects
    assert not spec.same_as_parent
    assert spec.unhonoured == ()


@pytest.mark.parametrize("url", ["file:///srv/git/fleet.git", "/srv/git/fleet.git/"])
async def test_the_parents_local_path_is_the_same_repository(url: str) -> None:
    p = SourceConfig(name="default", url="/srv/git/fleet.git", path="argocd")
    spec = await child(application(source={"repoURL": url, "path": "argocd"}), p=p)
    assert spec.config.url == "/srv/git/fleet.git"
    assert spec.same_as_parent  # the parent's repository, ref and path: the parent itself


@pytest.mark.parametrize(
    ("revision", "ref"),
    [
        ("", MAIN),
        ("HEAD", MAIN),
        ("main", MAIN),
        ("feature/x", GitRef(RefKind.BRANCH, "feature/x")),
        ("v1.2.0", GitRef(RefKind.TAG, "v1.2.0")),
        ("2.0", GitRef(RefKind.TAG, "2.0")),
        ("refs/heads/v2", GitRef(RefKind.BRANCH, "v2")),
        ("refs/tags/stable", GitRef(RefKind.TAG, "stable")),
        ("a" * 40, GitRef(RefKind.COMMIT, "a" * 40)),
        (">=1.0.0 <2", GitRef(RefKind.SEMVER, ">=1.0.0 <2")),
        ("1.2.*", GitRef(RefKind.SEMVER, "1.2.*")),
        ("^1.2", GitRef(RefKind.SEMVER, "^1.2")),
        ("*-0", GitRef(RefKind.SEMVER, "*-0")),
    ],
)
async def test_target_revision(revision: str, ref: GitRef) -> None:
    source = {"repoURL": URL, "path": "apps", "targetRevision": revision}
    spec = await child(application(source=source))
    assert spec.config.ref == ref


async def test_a_target_revision_range_that_is_no_range_is_an_error_naming_the_field() -> None:
    source = {"repoURL": URL, "path": "apps", "targetRevision": ">= banana"}
    assert (await error(application(source=source))).startswith(
        "spec.source.targetRevision: version constraint '>= banana': 'banana' is not a version"
    )


async def test_another_repository_with_argo_cds_repository_secret() -> None:
    source = {"repoURL": OTHER, "path": "guestbook", "targetRevision": "prod"}
    spec = await child(
        application(source=source),
        repo_secret("unrelated", "https://git.example.com/other/x.git", password="nope"),
        repo_secret("team-apps", "https://git.example.com/team/apps", username="bot",
                    password="s3cret"),
        repo_secret("elsewhere", OTHER, namespace="default", password="wrong-namespace"),
    )  # fmt: skip
    c = spec.config
    assert (c.url, c.ref, c.path) == (OTHER, GitRef(RefKind.BRANCH, "prod"), "guestbook")
    assert_basic_auth(spec, username="bot", password="s3cret")
    assert c.verify is None
    assert not spec.same_as_parent


async def test_repo_creds_match_by_url_prefix_the_longest_first() -> None:
    source = {"repoURL": OTHER, "path": "guestbook", "targetRevision": "main"}
    spec = await child(
        application(source=source),
        repo_secret("all", "https://git.example.com", type_="repo-creds", password="broad"),
        repo_secret("team", "https://git.example.com/team", type_="repo-creds", password="team"),
    )
    assert isinstance(spec.config.auth, HttpsAuth)
    assert spec.config.auth.password.read() == "team"
    bare = await child(application(source=source))
    assert bare.config.auth is None


async def test_head_of_another_repository_is_its_default_branch() -> None:
    spec = await child(
        application(source={"repoURL": OTHER, "path": "x", "targetRevision": "HEAD"})
    )
    assert spec.config.ref == GitRef(RefKind.REF, "HEAD")
    assert fields(spec) == []


async def test_a_directory_source() -> None:
    source = {
        "repoURL": URL, "path": "apps", "targetRevision": "main",
        "directory": {"recurse": True, "include": "{a,b}/*.yaml", "exclude": "b/skip.yaml",
                      "jsonnet": {"tlas": [{"name": "x", "value": "1"}],
                                  "extVars": [{"name": "n", "value": "2", "code": True}],
                                  "libs": ["vendor/"]}},
    }  # fmt: skip
    spec = await child(application(source=source))
    app = spec.config.app_source
    assert app is not None
    assert app.source_type is SourceType.DIRECTORY
    assert app.directory == DirectorySpec(
        recurse=True, include="{a,b}/*.yaml", exclude="b/skip.yaml",
        jsonnet=JsonnetSpec(tlas=(JsonnetVar("x", "1"),), ext_vars=(JsonnetVar("n", "2", True),),
                            libs=("vendor",)),
    )  # fmt: skip
    assert fields(spec) == []


@pytest.mark.parametrize(
    ("jsonnet", "field"),
    [
        ({"libs": ["../outside"]}, "spec.source.directory.jsonnet.libs"),
        ({"tlas": [{"value": "1"}]}, "spec.source.directory.jsonnet.tlas[0].name"),
        ({"extvars": []}, "spec.source.directory.jsonnet.extvars"),
    ],
)
async def test_bad_jsonnet_options_name_the_field(jsonnet: dict[str, Any], field: str) -> None:
    source = {"repoURL": URL, "path": "apps", "directory": {"jsonnet": jsonnet}}
    assert (await error(application(source=source))).startswith(field)


async def test_kustomize_options_become_the_childs_overlay() -> None:
    patch = "- op: replace\n  path: /spec/replicas\n  value: 3\n"
    source = {
        "repoURL": URL, "path": "overlays/prod", "targetRevision": "main",
        "kustomize": {
            "namePrefix": "prod-", "nameSuffix": "-v1", "namespace": "shop",
            "images": ["nginx:1.27", "busybox=registry.local/busybox:1.36",
                       "app@sha256:abc", "registry:5000/team/app:2"],
            "patches": [{"patch": patch, "target": {"kind": "Deployment", "name": "web"}},
                        {"path": "../../patches/team.yaml"}],
            "replicas": [{"name": "web", "count": 3}, {"name": "worker", "count": "2"}],
            "commonLabels": {"team": "a"}, "commonAnnotations": {"owner": "me"},
            "components": ["../../components/monitoring"], "version": "v5.4.3",
        },
    }  # fmt: skip
    spec = await child(application(source=source))
    app = spec.config.app_source
    assert app is not None
    assert app.source_type is SourceType.KUSTOMIZE
    o = spec.config.overlay
    assert o is not None
    assert (o.name_prefix, o.name_suffix, o.namespace) == ("prod-", "-v1", "shop")
    assert o.images == (
        ImageOverride(name="nginx", new_tag="1.27"),
        ImageOverride(name="busybox", new_name="registry.local/busybox", new_tag="1.36"),
        ImageOverride(name="app", digest="sha256:abc"),
        ImageOverride(name="registry:5000/team/app", new_tag="2"),
    )
    assert o.patches == (
        OverlayPatch(patch, (("kind", "Deployment"), ("name", "web"))),
        OverlayPatch("", (), path="../../patches/team.yaml"),
    )
    assert o.replicas == (("web", 3), ("worker", 2))
    assert o.outside_path
    assert o.labels == (("team", "a"),)
    assert o.annotations == (("owner", "me"),)
    assert o.components == ("../../components/monitoring",)
    assert fields(spec) == ["spec.source.kustomize.version", "spec.source.kustomize.commonLabels"]
    selectorless = dict(source["kustomize"], labelWithoutSelector=True)  # type: ignore[arg-type]
    del selectorless["version"]
    quiet = await child(application(source={**source, "kustomize": selectorless}))
    assert quiet.unhonoured == ()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"directory": {}, "kustomize": {}}, "spec.source: multiple source types"),
        ({"kustomize": {"patches": [{"path": "p.yaml", "patch": "x: y"}]}},
         "spec.source.kustomize.patches[0]: give `patch` or `path`, not both"),
        ({"kustomize": {"replicas": [{"name": "web", "count": "two"}]}},
         "spec.source.kustomize.replicas[0].count: 'two' is not a number of replicas"),
        ({"kustomize": {"images": [""]}}, "spec.source.kustomize.images[0]: '': expected"),
        ({"chart": "redis", "helm": {"valueFiles": ["$vals/x.yaml"]}},
         "spec.source.helm.valueFiles[0]: '$vals/x.yaml': no source has ref 'vals'"),
        ({"helm": {"valueFiles": ["https://e.com/v.yaml"]}},
         "spec.source.helm.valueFiles[0]: 'https://e.com/v.yaml': value files from URLs"),
        ({"plugin": {"name": "x"}}, "spec.source.plugin: config management plugins are"
         " not supported"),
        ({"path": "../up"}, "spec.source.path: '../up' leaves the repository"),
        ({"repoURL": ""}, "spec.source.repoURL: required"),
    ],
)  # fmt: skip
async def test_source_errors_name_the_field(source: dict[str, Any], message: str) -> None:
    base = {"repoURL": URL, "path": "apps", **source}
    assert (await error(application(source=base))).startswith(message)


async def test_sources_with_one_source_and_with_more() -> None:
    one = application(source=None, sources=[{"repoURL": URL, "path": "apps/a"}])
    del one["spec"]["source"]
    assert (await child(one)).config.path == "apps/a"
    two = application(sources=[{"repoURL": URL, "path": "a"}, {"repoURL": URL, "path": "b"}])
    del two["spec"]["source"]
    assert (await error(two)).startswith(
        "spec.sources: 2 sources render: gitkrm renders one source per Application"
    )


@pytest.mark.parametrize(
    ("destination", "message"),
    [
        ({"server": "https://prod.example.com:6443", "namespace": "x"},
         "spec.destination.server: 'https://prod.example.com:6443':"
         " gitkrm syncs its own target only"),
        ({"name": "prod"}, "spec.destination.name: 'prod': gitkrm syncs its own target only"),
        ({"namespace": "x"}, "spec.destination: server or name is required"),
    ],
)  # fmt: skip
async def test_another_cluster_is_an_error(destination: dict[str, str], message: str) -> None:
    assert (await error(application(destination=destination))).startswith(message)


async def test_the_in_cluster_destination_by_name() -> None:
    spec = await child(application(destination={"name": "in-cluster", "namespace": "web"}))
    assert spec.config.default_namespace == "web"


async def test_sync_policy_and_application_wide_sync_options() -> None:
    policy = {
        "automated": {"prune": False, "selfHeal": False, "allowEmpty": True},
        "syncOptions": ["CreateNamespace=true", "ServerSideApply=true", "PruneLast=true",
                        "ApplyOutOfSyncOnly=true", "Replace=true", "Validate=false",
                        "RespectIgnoreDifferences=true", "Frobnicate=true"],
        "managedNamespaceMetadata": {"labels": {"team": "a"}, "annotations": {"owner": "me"}},
        "retry": {"limit": 5},
    }  # fmt: skip
    spec = await child(application(syncPolicy=policy))
    c = spec.config
    app = c.app_source
    assert app is not None
    assert (c.automated, c.self_heal, c.allow_empty) == (True, False, True)
    assert app.prune is False  # without automated prune nothing gone from Git is deleted
    assert c.prune  # the finalizer decides what deleting the Application deletes
    assert app.server_side
    assert app.create_namespace == ManagedNamespace(
        "guestbook", labels=(("team", "a"),), annotations=(("owner", "me"),)
    )
    assert fields(spec) == [
        "spec.syncPolicy.retry",
        "spec.syncPolicy.syncOptions[4] (Replace=true)",
        "spec.syncPolicy.syncOptions[7] (Frobnicate=true)",
    ]
    assert app.validate is False  # unknown fields dropped (tests/sync/test_peers.py)
    manual = await child(application(syncPolicy={"syncOptions": ["Prune=false"]}))
    assert manual.config.automated is False
    assert manual.config.app_source is not None
    assert manual.config.app_source.prune is False
    disabled = await child(application(syncPolicy={"automated": {"enabled": False}}))
    assert disabled.config.automated is False


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"syncOptions": ["CreateNamespace"]}, "spec.syncPolicy.syncOptions[0]: 'CreateNamespace':"
         " expected Name=value"),
        ({"syncOptions": "CreateNamespace=true"}, "spec.syncPolicy.syncOptions: must be a list"),
    ],
)  # fmt: skip
async def test_sync_option_errors(policy: dict[str, Any], message: str) -> None:
    assert (await error(application(syncPolicy=policy))).startswith(message)


async def test_create_namespace_without_a_destination_namespace_makes_none() -> None:
    # As gitops-engine: the namespace is created only when the destination names one.
    obj = application(
        destination={"server": "https://kubernetes.default.svc"},
        syncPolicy={"syncOptions": ["CreateNamespace=true"]},
    )
    spec = await child(obj)
    assert spec.config.app_source is not None
    assert spec.config.app_source.create_namespace is None


async def test_ignore_differences_json_pointers_mapped_the_rest_reported() -> None:
    ignores = [
        {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]},
        {"kind": "ConfigMap", "name": "cm", "namespace": "x", "jsonPointers": ["/data/a"],
         "jqPathExpressions": [".data.b"]},
        {"kind": "Secret", "managedFieldsManagers": ["kube-controller-manager"]},
    ]  # fmt: skip
    spec = await child(application(ignoreDifferences=ignores))
    assert spec.config.ignore_differences == (
        IgnoreDifference(group="apps", kind="Deployment", json_pointers=("/spec/replicas",)),
        IgnoreDifference(group="", kind="ConfigMap", json_pointers=("/data/a",), name="cm",
                         namespace="x"),
    )  # fmt: skip
    assert fields(spec) == [
        "spec.ignoreDifferences[1].jqPathExpressions",
        "spec.ignoreDifferences[2].managedFieldsManagers",
    ]
    bad = application(ignoreDifferences=[{"kind": "X", "jsonPointers": ["spec"]}])
    assert (await error(bad)).startswith(
        "spec.ignoreDifferences[0].jsonPointers: 'spec' is not a JSON pointer"
    )


@pytest.mark.parametrize(
    "finalizer",
    [
        "resources-finalizer.argocd.argoproj.io",
        "resources-finalizer.argocd.argoproj.io/background",
        "resources-finalizer.argocd.argoproj.io/foreground",
    ],
)
async def test_the_resources_finalizer_makes_deletion_prune(finalizer: str) -> None:
    spec = await child(application(finalizers=["other.example.com", finalizer]))
    assert spec.finalizer == finalizer
    assert spec.config.prune


async def test_project_info_history_and_unknown_fields() -> None:
    spec = await child(
        application(
            project="team-a",
            info=[{"name": "url", "value": "x"}],
            revisionHistoryLimit=3,
            frobnicate=True,
        )
    )
    assert fields(spec) == ["spec.revisionHistoryLimit", "spec.frobnicate"]
    # a project the target does not hold: Argo CD's condition, no child runs
    assert spec.refused == (
        Refused("InvalidSpecError", "Application referencing project team-a which does not exist"),
    )


async def test_not_an_application() -> None:
    obj = application()
    obj["apiVersion"] = "argoproj.io/v1beta1"
    assert (await error(obj)).startswith("apiVersion: argoproj.io/v1beta1: gitkrm reads")


@pytest.mark.parametrize(
    ("patterns", "url", "expected"),
    [
        (["*"], OTHER, True),
        (["https://git.example.com/team/*"], OTHER, True),  # `.git` and case ignored
        (["https://GIT.example.com/team/apps"], OTHER, True),
        (["https://git.example.com/*"], OTHER, False),  # `*` stops at `/`
        (["https://git.example.com/**"], OTHER, True),
        (["!https://git.example.com/**", "*"], OTHER, False),  # denied among all
        (["!https://gitlab.com/group/**", "*"], OTHER, True),
        (["git@github.com:example/*"], "ssh://git@github.com/example/fleet.git", True),
        ([], OTHER, False),
    ],
)
def test_source_repositories_are_matched_as_argo_cd_matches_them(
    patterns: list[str], url: str, expected: bool
) -> None:
    assert source_permitted(patterns, url) is expected


def test_source_namespaces_are_globs_or_regular_expressions() -> None:
    assert namespace_permitted(["team-*"], "team-a")
    assert not namespace_permitted(["team-*"], "prod")
    assert namespace_permitted(["/^apps-[0-9]+$/"], "apps-12")
    assert not namespace_permitted(["/^apps-[0-9]+$/"], "apps-x")


def test_a_sync_window_applies_as_argo_cds_matches_decides() -> None:
    dest = {"server": "https://kubernetes.default.svc", "namespace": "guestbook"}
    assert applies({"applications": ["guest*"]}, app="guestbook", dest=dest)
    assert not applies({"applications": ["web-*"]}, app="guestbook", dest=dest)
    assert applies({"clusters": ["https://kubernetes.*"]}, app="guestbook", dest=dest)
    assert applies({"applications": ["web-*"], "namespaces": ["guest*"]}, app="guestbook",
                   dest=dest)  # fmt: skip
    both = {"applications": ["web-*"], "namespaces": ["guest*"], "andOperator": True}
    assert not applies(both, app="guestbook", dest=dest)
    assert applies({**both, "applications": ["*"]}, app="guestbook", dest=dest)
    assert not applies({}, app="guestbook", dest=dest)
