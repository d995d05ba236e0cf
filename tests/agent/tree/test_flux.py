"""Flux's Kustomization read into a child source: every field mapped or reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.tree.flux import INTERPRETER
from gitkrm.agent.tree.model import Peer
from gitkrm.agent.tree.naming import child_name
from gitkrm.agent.tree.repourl import normalise_url
from gitkrm.errors import ManifestError
from gitkrm.krm import GroupKind, ObjectRef
from gitkrm.source import GitRef, RefKind, SshAuth
from gitkrm.sync.overlay_spec import ImageOverride, Overlay, OverlayPatch
from gitkrm.sync.postbuild_spec import DecryptionSpec, SubstituteRef
from gitkrm.sync.postbuild_spec import RefKind as VarKind

from .auth_checks import assert_basic_auth
from .flux_objects import Objects, git_repository, kustomization, secret

URL = "https://github.com/example/fleet"


def parent(**kw: object) -> SourceConfig:
    return SourceConfig(name="default", url=URL, path="clusters/dev", **kw)  # type: ignore[arg-type]


def ctx(*objs: dict[str, object], p: SourceConfig | None = None) -> Objects:
    return Objects(p or parent(), git_repository("ssh://git@github.com/example/fleet.git"), *objs)


async def test_the_interpreter_declares_flux_kustomizations() -> None:
    assert INTERPRETER.peer is Peer.FLUX
    assert GroupKind(group="kustomize.toolkit.fluxcd.io", kind="Kustomization") in INTERPRETER.kinds


async def test_a_kustomization_over_the_parents_repository_is_a_child_at_its_path() -> None:
    spec = await INTERPRETER.child(kustomization(path="./apps/dev/", interval="5m"), ctx())
    c = spec.config
    assert (c.url, c.ref, c.path) == (URL, GitRef(RefKind.BRANCH, "main"), "apps/dev")
    assert c.interval == 300
    assert c.health_timeout == 300
    assert c.prune
    assert not c.suspend
    assert c.overlay is None
    assert c.postbuild is None
    assert c.name == child_name(spec.declared_by)
    assert spec.declared_by == ObjectRef(
        group="kustomize.toolkit.fluxcd.io", kind="Kustomization", name="apps",
        namespace="flux-system", version="v1",
    )  # fmt: skip
    assert spec.finalizer == "finalizers.fluxcd.io"
    assert not spec.same_as_parent
    assert not spec.unhonoured
    assert not spec.wait


async def test_the_bootstrap_kustomization_over_the_parents_own_path_is_the_parent() -> None:
    spec = await INTERPRETER.child(kustomization(name="flux-system", path="./clusters/dev"), ctx())
    assert spec.same_as_parent


async def test_v1beta2_is_read_and_its_patch_forms_become_overlay_patches() -> None:
    obj = kustomization(
        patchesStrategicMerge=[{"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "web"}, "spec": {"replicas": 2}}],
        patchesJson6902=[{"target": {"kind": "Service", "name": "web"},
                          "patch": [{"op": "replace", "path": "/spec/type", "value": "NodePort"}]}],
        validation="client",
    )  # fmt: skip
    obj["apiVersion"] = "kustomize.toolkit.fluxcd.io/v1beta2"
    spec = await INTERPRETER.child(obj, ctx())
    assert spec.config.overlay is not None
    smp, j6902 = spec.config.overlay.patches
    assert json.loads(smp.patch)["spec"] == {"replicas": 2}
    assert smp.target == ()
    assert json.loads(j6902.patch)[0]["op"] == "replace"
    assert j6902.target == (("kind", "Service"), ("name", "web"))
    assert [u.field for u in spec.unhonoured] == ["spec.validation"]


async def test_every_transform_becomes_the_overlay() -> None:
    obj = kustomization(
        targetNamespace="team-a", namePrefix="a-", nameSuffix="-x",
        patches=[{"patch": "- op: add\n  path: /metadata/labels/x\n  value: y\n",
                  "target": {"kind": "Deployment", "labelSelector": "app=web"}}],
        images=[{"name": "nginx", "newName": "registry.local/nginx", "newTag": "1.27"},
                {"name": "redis", "digest": "sha256:" + "a" * 64}],
        components=["../components/monitoring"],
        commonMetadata={"labels": {"team": "a"}, "annotations": {"owner": "a@example.org"}},
    )  # fmt: skip
    spec = await INTERPRETER.child(obj, ctx())
    assert spec.config.overlay == Overlay(
        namespace="team-a", name_prefix="a-", name_suffix="-x",
        patches=(OverlayPatch("- op: add\n  path: /metadata/labels/x\n  value: y\n",
                              (("kind", "Deployment"), ("labelSelector", "app=web"))),),
        images=(ImageOverride("nginx", new_name="registry.local/nginx", new_tag="1.27"),
                ImageOverride("redis", digest="sha256:" + "a" * 64)),
        components=("../components/monitoring",),
        labels=(("team", "a"),), annotations=(("owner", "a@example.org"),),
    )  # fmt: skip
    assert spec.config.default_namespace == "team-a"


async def test_postbuild_and_decryption_read_from_the_objects_namespace() -> None:
    p = parent()
    obj = kustomization(
        postBuild={"substitute": {"cluster": "dev", "replicas": "2"},
                   "substituteFrom": [{"kind": "ConfigMap", "name": "vars"},
                                      {"kind": "Secret", "name": "creds", "optional": True}]},
        decryption={"provider": "sops", "secretRef": {"name": "sops-age"}},
    )  # fmt: skip
    pb = (await INTERPRETER.child(obj, ctx(p=p))).config.postbuild
    assert pb is not None
    assert pb.substitute == (("cluster", "dev"), ("replicas", "2"))
    assert pb.substitute_from == (
        SubstituteRef(VarKind.CONFIG_MAP, "vars", "flux-system"),
        SubstituteRef(VarKind.SECRET, "creds", "flux-system", optional=True),
    )
    assert pb.decryption == DecryptionSpec(secret_name="sops-age", secret_namespace="flux-system")


async def test_wait_health_checks_and_dependencies() -> None:
    obj = kustomization(
        wait=True, timeout="2m", suspend=True,
        dependsOn=[{"name": "infrastructure"}, {"name": "crds", "namespace": "other"}],
        healthChecks=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                       "namespace": "apps"}],
        healthCheckExprs=[{"apiVersion": "example.com/v1", "kind": "Db",
                           "current": "status.phase == 'Ready'"}],
    )  # fmt: skip
    spec = await INTERPRETER.child(obj, ctx())
    ks = ("kustomize.toolkit.fluxcd.io", "Kustomization")
    assert [(r.group, r.kind, r.namespace, r.name) for r in spec.depends_on] == [
        (*ks, "flux-system", "infrastructure"), (*ks, "other", "crds"),
    ]  # fmt: skip
    assert spec.wait
    assert spec.config.health_timeout == 120
    assert spec.config.suspend
    assert spec.health_checks == (
        ObjectRef(group="apps", kind="Deployment", name="web", namespace="apps", version="v1"),
    )
    assert spec.config.health_checks is not None


async def test_fields_gitkrm_cannot_honour_are_reported_never_dropped() -> None:
    obj = kustomization(
        serviceAccountName="deployer", force=True,
        retryInterval="1m", deletionPolicy="Orphan", somethingNew={"a": 1},
    )  # fmt: skip
    spec = await INTERPRETER.child(obj, ctx())
    reasons = {u.field: u.reason for u in spec.unhonoured}
    assert set(reasons) == {
        "spec.serviceAccountName", "spec.force", "spec.deletionPolicy", "spec.somethingNew",
    }  # fmt: skip
    assert spec.config.retry_interval == 60  # honoured (tests/e2e/test_flux_retry.py)
    assert "until RBAC lands" in reasons["spec.serviceAccountName"]
    assert "kustomize.toolkit.fluxcd.io/force: enabled" in reasons["spec.force"]
    quiet = await INTERPRETER.child(kustomization(force=False, deletionPolicy="Delete"), ctx())
    assert quiet.unhonoured == ()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"path": "../../etc"}, "spec.path"),
        ({"prune": None}, "spec.prune"),
        ({"interval": "soon"}, "spec.interval"),
        ({"sourceRef": {"kind": "Bucket", "name": "x"}}, "spec.sourceRef.kind"),
        ({"sourceRef": {"kind": "GitRepository", "name": "missing"}}, "spec.sourceRef"),
        ({"patches": [{"target": {"kind": "Deployment"}}]}, "spec.patches[0].patch"),
        ({"images": [{"newTag": "1"}]}, "spec.images[0].name"),
        ({"dependsOn": [{"namespace": "x"}]}, "spec.dependsOn[0].name"),
        ({"decryption": {"provider": "vault"}}, "spec.decryption.provider"),
        ({"postBuild": {"substituteFrom": [{"kind": "Pod", "name": "x"}]}},
         "spec.postBuild.substituteFrom[0].kind"),
        ({"healthCheckExprs": [{"apiVersion": "v1", "kind": "X", "current": "(("}]},
         "spec.healthCheckExprs"),
        ({"commonMetadata": {"finalizers": ["x"]}}, "spec.commonMetadata.finalizers"),
        # a hub's Kustomization for a spoke: applied here it would make the spoke's
        # namespaces and bindings in the hub
        ({"kubeConfig": {"secretRef": {"name": "cluster-kubeconfig"}}}, "spec.kubeConfig"),
        ({"kubeConfig": {"configMapRef": {"name": "spoke"}}}, "spec.kubeConfig"),
    ],
)  # fmt: skip
async def test_errors_name_the_object_and_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ManifestError) as e:
        await INTERPRETER.child(kustomization(**change), ctx())
    assert e.value.object == "Kustomization flux-system/apps"
    assert e.value.detail.startswith(field + ":"), e.value.detail


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://github.com/example/fleet", "ssh://git@github.com/example/fleet.git"),
        ("https://user:tok@GitHub.com/example/fleet/", "git@github.com:example/fleet"),
        ("https://github.com:443/example/fleet", "https://github.com/example/fleet.git"),
    ],
)
def test_spellings_of_one_repository_normalise_alike(a: str, b: str) -> None:
    assert normalise_url(a) == normalise_url(b)


def test_different_repositories_do_not(tmp_path: Path) -> None:
    assert normalise_url(URL) != normalise_url("https://github.com/example/other")
    assert normalise_url(str(tmp_path)) == normalise_url(f"file://{tmp_path}/")
    assert normalise_url(str(tmp_path)) != normalise_url(URL)


async def test_a_local_parent_is_named_by_its_file_url(tmp_path: Path) -> None:
    p = SourceConfig(name="default", url=str(tmp_path), path="clusters/dev")
    c = Objects(p, git_repository(f"file://{tmp_path}"))
    spec = await INTERPRETER.child(kustomization(path="clusters/dev"), c)
    assert spec.config.url == str(tmp_path)
    assert spec.same_as_parent


async def test_the_parents_repository_at_another_branch_is_a_source_of_its_own() -> None:
    c = Objects(parent(), git_repository(URL, ref={"branch": "staging"}))
    spec = await INTERPRETER.child(kustomization(), c)
    assert spec.config.ref == GitRef(RefKind.BRANCH, "staging")
    assert spec.config.url == URL


async def test_another_repository_is_a_source_with_its_ref_interval_and_basic_auth() -> None:
    other = "https://git.example.org/team/app.git"
    c = ctx(
        git_repository(other, name="app", ref={"tag": "v1.2.0"}, interval="30s",
                       timeout="20s", secretRef={"name": "app-auth"}),
        secret("app-auth", username="bot", password="s3cret"),
    )  # fmt: skip
    spec = await INTERPRETER.child(
        kustomization(sourceRef={"kind": "GitRepository", "name": "app"}, interval="5m"), c
    )
    cfg = spec.config
    assert (cfg.url, cfg.ref, cfg.interval, cfg.timeout) == (
        other, GitRef(RefKind.TAG, "v1.2.0"), 30.0, 20.0,
    )  # fmt: skip
    assert_basic_auth(spec, username="bot", password="s3cret")
    again = await INTERPRETER.child(
        kustomization(sourceRef={"kind": "GitRepository", "name": "app"}, interval="5m"), c
    )
    assert again == spec  # the same credentials, the same file: the child stays equal


async def test_ssh_credentials_need_known_hosts_and_are_private_files() -> None:
    other = "ssh://git@git.example.org/team/app"
    repo = git_repository(other, name="app", secretRef={"name": "ssh"})
    src = {"kind": "GitRepository", "name": "app"}
    spec = await INTERPRETER.child(
        kustomization(sourceRef=src),
        ctx(repo, secret("ssh", identity="KEY", known_hosts="git.example.org ssh-ed25519 AAA")),
    )
    auth = spec.config.auth
    assert isinstance(auth, SshAuth)
    assert auth.key_file.read_text() == "KEY"
    assert spec.config.ref == GitRef(RefKind.BRANCH, "master")  # Flux's default
    with pytest.raises(ManifestError, match="needs known_hosts"):
        await INTERPRETER.child(
            kustomization(sourceRef=src), ctx(repo, secret("ssh", identity="K"))
        )


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ({"commit": "a" * 40, "branch": "main"}, GitRef(RefKind.COMMIT, "a" * 40)),
        ({"name": "refs/tags/v2"}, GitRef(RefKind.TAG, "v2")),
        ({"name": "refs/heads/dev"}, GitRef(RefKind.BRANCH, "dev")),
        ({"branch": "dev"}, GitRef(RefKind.BRANCH, "dev")),
        ({"semver": ">=1.0.0 <2.0.0", "tag": "v1"}, GitRef(RefKind.SEMVER, ">=1.0.0 <2.0.0")),
        ({"semver": "~1.2", "branch": "main"}, GitRef(RefKind.SEMVER, "~1.2")),
    ],
)
async def test_refs_in_fluxs_precedence(ref: dict[str, str], expected: GitRef) -> None:
    c = ctx(git_repository("https://other.example/x", name="x", ref=ref))
    spec = await INTERPRETER.child(
        kustomization(sourceRef={"kind": "GitRepository", "name": "x"}), c
    )
    assert spec.config.ref == expected


async def test_a_bad_semver_range_and_unknown_repository_fields_are_reported() -> None:
    src = {"kind": "GitRepository", "name": "x"}
    c = ctx(git_repository("https://other.example/x", name="x", ref={"semver": ">=one"}))
    with pytest.raises(
        ManifestError,
        match=r"spec.sourceRef: GitRepository flux-system/x: "
        r"spec.ref.semver: version constraint '>=one': 'one' is not a version",
    ):
        await INTERPRETER.child(kustomization(sourceRef=src), c)
    c = ctx(git_repository("https://other.example/x", name="x", recurseSubmodules=True))
    spec = await INTERPRETER.child(kustomization(sourceRef=src), c)
    assert [u.field for u in spec.unhonoured] == [
        "GitRepository flux-system/x spec.recurseSubmodules"
    ]


async def test_a_kustomization_being_deleted_needs_no_repository() -> None:
    """Its GitRepository often goes in the same commit: prune and the finalizer still work."""
    obj = kustomization(sourceRef={"kind": "GitRepository", "name": "gone"})
    with pytest.raises(ManifestError, match="GitRepository flux-system/gone not found"):
        await INTERPRETER.child(obj, ctx())
    obj["metadata"]["deletionTimestamp"] = "2026-11-26T23:00:00Z"
    spec = await INTERPRETER.child(obj, ctx())
    assert spec.config.prune
    assert spec.finalizer == "finalizers.fluxcd.io"
    assert spec.config.url == URL  # no record of the child: the parent's repository
    # The repository the child synced, as its GitSource object remembers it (for the
    # tree's PreDelete hooks of its last revision).
    remembered: dict[str, object] = {
        "apiVersion": "gitkrm.io/v1alpha1", "kind": "GitSource",
        "metadata": {"name": spec.config.name, "namespace": "gitkrm-system"},
        "spec": {"url": "https://other.example/x", "ref": {"tag": "v2"}},
    }  # fmt: skip
    spec = await INTERPRETER.child(obj, ctx(remembered))
    assert (spec.config.url, spec.config.ref) == (
        "https://other.example/x",
        GitRef(RefKind.TAG, "v2"),
    )


async def test_flux_bootstraps_git_repository_when_undefined_is_the_parents() -> None:
    # A repository whose gotk-sync.yaml is a placeholder: no GitRepository flux-system.
    spec = await INTERPRETER.child(kustomization(path="apps"), Objects(parent()))
    assert (spec.config.url, spec.config.ref) == (URL, parent().ref)
    other = kustomization(sourceRef={"kind": "GitRepository", "name": "tenant"})
    with pytest.raises(ManifestError, match="GitRepository flux-system/tenant not found"):
        await INTERPRETER.child(other, Objects(parent()))
