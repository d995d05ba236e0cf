"""The render rules through the CLI on real Git repositories: Flux's path rules, kustomize
builds that see the whole repository (and nothing outside it), ignore files, hidden files,
the default namespace, and `validate` predicting `run` on each repository."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson
import pytest
import yaml

from gitkrm.krm import Obj, ObjectRef
from tests.e2e.e2e_support import read_object
from tests.source.source_gitrepo import RemoteRepo
from tests.support.builders import configmap, crd, deployment, namespace
from tests.support.tools import require_tool
from tests.support.verdicts import assert_both_refuse, assert_validate_predicts_run, gitkrm_cli


@pytest.fixture(autouse=True)
def _kubectl() -> None:
    require_tool("kubectl", candidates=["/usr/lib/google-cloud-sdk/bin/kubectl"])


def dump(*objs: object) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objs)


def obj(state: Path, kind: str, name: str, ns: str | None = "apps", group: str = "") -> Obj:
    got = asyncio.run(
        read_object(state, ObjectRef(group=group, kind=kind, name=name, namespace=ns))
    )
    assert got is not None, f"{kind} {ns}/{name} is not in the store"
    return got


def overlays_tree(repo: RemoteRepo) -> None:
    """bases/overlays/components with `../` references from every path-naming field."""
    repo.write("namespaces/apps.yaml", dump(namespace("apps")))
    repo.write("bases/backend/kustomization.yaml", "resources: [deploy.yaml]\n")
    repo.write("bases/backend/deploy.yaml", dump(deployment("backend", "apps")))
    repo.write(
        "components/monitoring/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
        "resources: [../../shared/monitor-cm.yaml]\n",
    )
    repo.write("shared/monitor-cm.yaml", dump(configmap("monitoring", "apps")))
    repo.write(
        "shared/patches/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: backend, namespace: apps}\n"
        "spec: {replicas: 5}\n",
    )
    repo.write(
        "shared/patches/smp.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: backend, namespace: apps}\n"
        "spec: {template: {metadata: {annotations: {smp: applied}}}}\n",
    )
    repo.write(
        "shared/patches/json.yaml",
        "- {op: add, path: /metadata/annotations, value: {json6902: applied}}\n",
    )
    repo.write("shared/config/app.properties", "color=blue\n")
    repo.write("shared/config/.env", "MODE=dev\n")  # hidden, but named: a build reads it
    repo.write("shared/config/secret.env", "TOKEN=abc\n")
    repo.write(
        "shared/replacements.yaml",
        "- source: {kind: ConfigMap, name: monitoring, fieldPath: metadata.name}\n"
        "  targets:\n  - select: {kind: Deployment}\n"
        "    fieldPaths: [metadata.labels.monitor]\n    options: {create: true}\n",
    )
    repo.write(
        "shared/transformers/labels.yaml",
        "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: label}\n"
        "path: ../../shared/patches/transformer-patch.yaml\n",
    )
    repo.write(
        "shared/patches/transformer-patch.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: backend, namespace: apps}\n"
        "spec: {template: {metadata: {labels: {transformer: applied}}}}\n",
    )
    repo.write("shared/config/namereference.yaml", "nameReference: []\n")
    repo.write(
        "shared/generators/extra.yaml",  # its `files` are relative to the kustomization
        "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: extra, namespace: apps}\n"
        "files: [../../shared/config/app.properties]\noptions: {disableNameSuffixHash: true}\n",
    )
    repo.write(
        "overlays/dev/kustomization.yaml",
        """\
resources: [../../bases/backend, ../../namespaces/apps.yaml]
components: [../../components/monitoring]
namespace: apps
patches:
- path: ../../shared/patches/replicas.yaml
patchesStrategicMerge: [../../shared/patches/smp.yaml]
patchesJson6902:
- target: {group: apps, version: v1, kind: Deployment, name: backend}
  path: ../../shared/patches/json.yaml
configMapGenerator:
- name: app
  files: [app.properties=../../shared/config/app.properties]
  envs: [../../shared/config/.env]
  options: {disableNameSuffixHash: true}
secretGenerator:
- name: token
  envs: [../../shared/config/secret.env]
  options: {disableNameSuffixHash: true}
replacements: [{path: ../../shared/replacements.yaml}]
configurations: [../../shared/config/namereference.yaml]
transformers: [../../shared/transformers/labels.yaml]
generators: [../../shared/generators/extra.yaml]
""",
    )


def test_an_overlay_reads_bases_components_and_files_anywhere_in_the_repository(
    tmp_path: Path,
) -> None:
    repo = RemoteRepo(tmp_path / "repo")
    overlays_tree(repo)
    repo.commit("overlays")
    repo.push()
    state = tmp_path / "state"
    _, synced = assert_validate_predicts_run(repo.work, repo.url, state=state, path="overlays/dev")
    assert synced.ok, synced.output
    assert "_backend_apps_Deployment" in "".join(synced.keys)
    d = obj(state, "Deployment", "backend", group="apps")
    assert d["spec"]["replicas"] == 5
    template = d["spec"]["template"]["metadata"]
    assert template["annotations"]["smp"] == "applied"
    assert template["labels"]["transformer"] == "applied"
    assert d["metadata"]["annotations"]["json6902"] == "applied"
    assert d["metadata"]["labels"]["monitor"] == "monitoring"
    assert obj(state, "ConfigMap", "app")["data"] == {
        "app.properties": "color=blue\n",
        "MODE": "dev",
    }
    assert obj(state, "ConfigMap", "extra")["data"] == {"app.properties": "color=blue\n"}
    assert obj(state, "ConfigMap", "monitoring")  # from the Component
    assert obj(state, "Secret", "token")["data"] == {"TOKEN": "YWJj"}
    # From inside the work tree, `validate` takes the work tree as the repository.
    res = gitkrm_cli("validate", "overlays/dev", cwd=repo.work)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith(": valid")


@pytest.mark.parametrize(
    ("field", "entry"),
    [
        ("resources", "resources: [../../../outside]\n"),
        ("patches", "resources: [../../bases/backend]\npatches: [{path: ../../../p.yaml}]\n"),
        (
            "configMapGenerator",
            "configMapGenerator: [{name: c, files: [../../../../etc/passwd]}]\n",
        ),
        ("openapi", "resources: [../../bases/backend]\nopenapi: {path: /etc/schema.json}\n"),
        ("symlink", "resources: [../../bases/backend, ../../linked/x.yaml]\n"),
        ("plugin configuration", "generators: [../../shared/evil.yaml]\n"),
    ],
)
def test_nothing_outside_the_repository_is_read(tmp_path: Path, field: str, entry: str) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.yaml").write_text(dump(configmap("stolen", "apps")))
    (tmp_path / "p.yaml").write_text("kind: x\n")
    repo = RemoteRepo(tmp_path / "repo")
    overlays_tree(repo)
    repo.write("overlays/dev/kustomization.yaml", entry)
    repo.symlink("linked", str(tmp_path / "outside"))
    repo.write(
        "shared/evil.yaml",
        "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: evil}\n"
        "files: [../../../outside/x.yaml]\n",
    )
    repo.commit("escape")
    repo.push()
    checked, synced = assert_both_refuse(
        repo.work, repo.url, state=tmp_path / "state", path="overlays/dev", never=("stolen",)
    )
    # run names files from its path; validate from the directory it was given.
    assert str(repo.work / "overlays/dev/kustomization.yaml") in checked.output
    assert 'error="kustomization.yaml: ' in synced.output
    for out in (checked.output, synced.output):
        assert "leaves the repository" in out or "is an absolute path" in out, out


def flux_layout(repo: RemoteRepo) -> None:
    """Flux's monorepo layout: clusters/<env> over apps/ and infrastructure/, with plain
    kustomizations (Flux Kustomization objects are another matter)."""
    repo.write("infrastructure/controllers/kustomization.yaml", "resources: [ns.yaml, cm.yaml]\n")
    repo.write("infrastructure/controllers/ns.yaml", dump(namespace("infra")))
    repo.write("infrastructure/controllers/cm.yaml", dump(configmap("controller", "infra")))
    repo.write("apps/base/podinfo/kustomization.yaml", "resources: [ns.yaml, deploy.yaml]\n")
    repo.write("apps/base/podinfo/ns.yaml", dump(namespace("podinfo")))
    repo.write("apps/base/podinfo/deploy.yaml", dump(deployment("podinfo", "podinfo")))
    for env, replicas in (("staging", 1), ("production", 3)):
        repo.write(
            f"apps/{env}/kustomization.yaml",
            "resources: [../base/podinfo]\npatches:\n- target: {kind: Deployment}\n"
            f'  patch: \'[{{"op": "replace", "path": "/spec/replicas", '
            f'"value": {replicas}}}]\'\n',
        )
        repo.write(
            f"clusters/{env}/kustomization.yaml",
            f"resources: [../../infrastructure/controllers, ../../apps/{env}]\n",
        )
    # A Component lying below a cluster path is never built on its own.
    repo.write("clusters/production/extras/kustomization.yaml", "kind: Component\n")


def test_a_flux_layout_syncs_each_cluster_path(tmp_path: Path) -> None:
    repo = RemoteRepo(tmp_path / "repo")
    flux_layout(repo)
    repo.commit("flux layout")
    repo.push()
    for env, replicas in (("staging", 1), ("production", 3)):
        state = tmp_path / f"state-{env}"
        _, synced = assert_validate_predicts_run(
            repo.work, repo.url, state=state, path=f"clusters/{env}"
        )
        assert synced.ok, synced.output
        assert synced.keys == {
            "_infra__Namespace",
            "infra_controller__ConfigMap",
            "_podinfo__Namespace",
            "podinfo_podinfo_apps_Deployment",
        }
        d = obj(state, "Deployment", "podinfo", ns="podinfo", group="apps")
        assert d["spec"]["replicas"] == replicas


def test_without_a_kustomization_at_the_top_each_directory_is_its_own_build(
    tmp_path: Path,
) -> None:
    # Flux's rule at the repository's top: clusters/*, apps/* ... are each built; the two
    # clusters then both define the infrastructure: refused by both commands, naming the
    # kustomizations (never `kustomization.yaml:0`).
    repo = RemoteRepo(tmp_path / "repo")
    flux_layout(repo)
    repo.commit("flux layout")
    repo.push()
    assert_both_refuse(
        repo.work, repo.url, state=tmp_path / "s",
        naming=("duplicate object", "(a kustomize build)"), never=("kustomization.yaml:0",),
    )  # fmt: skip


def test_ignore_files_hidden_files_and_the_default_namespace_as_run(tmp_path: Path) -> None:
    repo = RemoteRepo(tmp_path / "repo")
    repo.write("team.yaml", dump(namespace("team")))
    repo.write("app.yaml", dump(configmap("no-namespace", None)))
    repo.write(".sourceignore", "drafts/\n")  # Flux's ignore file
    repo.write("drafts/broken.yaml", "kind: [\n")
    repo.write("sub/.gitkrmignore", "wip.yaml\n")
    repo.write("sub/wip.yaml", "kind: [\n")
    repo.write(".config/tool.yaml", "not: a manifest\n")  # hidden: never read
    repo.write("sub/.draft.yaml", "kind: [\n")
    repo.commit("ignores")
    repo.push()
    _, synced = assert_validate_predicts_run(repo.work, repo.url, state=tmp_path / "s1")
    assert synced.keys == {"_team__Namespace", "default_no-namespace__ConfigMap"}
    _, synced = assert_validate_predicts_run(
        repo.work, repo.url, state=tmp_path / "s2", namespace="team"
    )
    assert synced.keys == {"_team__Namespace", "team_no-namespace__ConfigMap"}
    # `diff` takes the same flag: in sync with it, differences without it.
    flags = ["--repo", repo.url, "--state", str(tmp_path / "s2")]
    same = gitkrm_cli("diff", *flags, "--namespace", "team", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    moved = gitkrm_cli("diff", *flags, cwd=tmp_path)
    assert moved.returncode == 1, moved.stdout + moved.stderr
    assert "no-namespace" in moved.stdout


def big_crd() -> Obj:
    """A CRD whose last-applied annotation passes 256 KiB (as prometheus-operator's)."""
    c = crd("Widget", "example.com")
    props = {f"field{i:05d}": {"type": "string", "description": "x" * 60} for i in range(3500)}
    schema = c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"] = {"type": "object", "properties": props}
    assert len(orjson.dumps(c)) > 256 * 1024
    return c


def test_a_crd_too_big_for_client_side_apply_is_named_with_the_way_out(tmp_path: Path) -> None:
    repo = RemoteRepo(tmp_path / "repo")
    repo.write("crd.yaml", dump(big_crd()))
    repo.commit("big crd")
    repo.push()
    too_big = "CustomResourceDefinition widgets.example.com: too big for client-side apply"
    assert_both_refuse(
        repo.work, repo.url, state=tmp_path / "s1", naming=(too_big, "--apply-mode server-side")
    )
    assert not os.path.exists(tmp_path / "s1" / "store.db") or not asyncio.run(
        read_object(
            tmp_path / "s1",
            ObjectRef(
                group="apiextensions.k8s.io",
                kind="CustomResourceDefinition",
                name="widgets.example.com",
            ),
        )
    )
    _, synced = assert_validate_predicts_run(
        repo.work,
        repo.url,
        state=tmp_path / "s2",
        extra=["--apply-mode", "server-side"],
    )
    assert synced.ok, synced.output
