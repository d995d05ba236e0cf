"""Argo CD's path rules for interpreted Applications: directory sources (the path itself,
`recurse`, `include`/`exclude` globs), kustomize sources with kustomize's default load
restrictions, and the Application's sync options laid over every object."""

from __future__ import annotations

import pytest

from gitkrm.sync.appsource import (
    AppSource,
    DirectorySpec,
    ManagedNamespace,
    SourceType,
    matches,
    select,
)
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.render import Renderer, RenderResult
from tests.sync.sync_helpers import configmap, namespace, snapshot, tree_snapshot

CTX = ParseContext(source="src", default_namespace="apps")
KUBECTL_PATH = "/usr/lib/google-cloud-sdk/bin:/usr/bin:/bin"


async def render(files: dict[str, str | bytes], app: AppSource) -> RenderResult:
    return await Renderer(context=CTX, app=app).render(snapshot(files), namespaces={"apps"})


def names(result: RenderResult) -> list[str]:
    assert [str(p) for p in result.problems] == []
    return sorted(d.ref.name for d in result.objects)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("*.yaml", "a.yaml", True),
        ("*.yaml", "sub/a.yaml", True),  # no separators: `*` crosses `/`
        ("*.yaml", "a.yml", False),
        ("{cm,deploy}.yaml", "deploy.yaml", True),
        ("{cm,deploy}.yaml", "svc.yaml", False),
        ("sub/{a,b{1,2}}.yaml", "sub/b2.yaml", True),
        ("?.json", "x.json", True),
        ("?.json", "xy.json", False),
        ("[!x]*.yaml", "x1.yaml", False),
        ("[a-c]*.yaml", "b.yaml", True),
        ("**/*.yaml", "a/b/c.yaml", True),
        ("a\\*.yaml", "a*.yaml", True),
        ("a\\*.yaml", "ab.yaml", False),
        ("{unclosed", "{unclosed", True),
    ],
)
def test_globs_follow_argo_cds_gobwas_rules(pattern: str, path: str, hit: bool) -> None:
    assert matches(pattern, path) is hit


def test_the_source_type_is_named_or_detected() -> None:
    top = ["kustomization.yaml", "cm.yaml", "Chart.yaml"]
    assert select(top, AppSource()).kind is SourceType.KUSTOMIZE  # kustomize wins, as in Argo
    chart = select(["Chart.yaml", "templates/cm.yaml"], AppSource())
    assert chart.chart
    named = select(top, AppSource(source_type=SourceType.DIRECTORY))
    assert named.kind is SourceType.DIRECTORY
    assert named.plain == ("Chart.yaml", "cm.yaml", "kustomization.yaml")


async def test_a_directory_source_reads_its_own_files_only_unless_recursive() -> None:
    files: dict[str, str | bytes] = {
        "a.yaml": configmap("a"),
        "b.json": '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}',
        "notes.txt": "not read",
        ".hidden.yaml": configmap("hidden"),  # Argo CD reads hidden files
        "sub/c.yml": configmap("c"),
        "sub/deeper/d.yaml": configmap("d"),
    }
    assert names(await render(files, AppSource())) == ["a", "b", "hidden"]
    recurse = AppSource(directory=DirectorySpec(recurse=True))
    assert names(await render(files, recurse)) == ["a", "b", "c", "d", "hidden"]


async def test_include_and_exclude_globs_filter_by_path_relative_to_the_source() -> None:
    files: dict[str, str | bytes] = {
        "cm.yaml": configmap("cm"),
        "deploy.yaml": configmap("deploy"),
        "svc.yaml": configmap("svc"),
        "sub/cm.yaml": configmap("subcm"),
    }
    include = AppSource(directory=DirectorySpec(recurse=True, include="{cm,deploy}.yaml"))
    assert names(await render(files, include)) == ["cm", "deploy"]
    exclude = AppSource(directory=DirectorySpec(recurse=True, exclude="*cm.yaml"))
    assert names(await render(files, exclude)) == ["deploy", "svc"]
    both = AppSource(directory=DirectorySpec(recurse=True, include="*.yaml", exclude="sub/*"))
    assert names(await render(files, both)) == ["cm", "deploy", "svc"]


async def test_a_kustomization_below_a_directory_source_is_read_as_a_plain_file() -> None:
    files: dict[str, str | bytes] = {
        "cm.yaml": configmap("cm"),
        "sub/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "metadata: {name: k}\nresources: [x.yaml]\n"
        ),
    }
    assert names(await render(files, AppSource())) == ["cm"]  # not recursive: not read
    result = await render(files, AppSource(directory=DirectorySpec(recurse=True)))
    # Not built: an object of kind Kustomization, which nothing serves (Argo CD fails too).
    [problem] = [str(p) for p in result.problems]
    assert problem.startswith("sub/kustomization.yaml:1: Kustomization k: unknown kind")


async def test_a_kustomize_source_loads_files_only_under_its_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", KUBECTL_PATH)
    repo = {
        "base/kustomization.yaml": "resources: [cm.yaml]\n",
        "base/cm.yaml": configmap("settings"),
        "shared/extra.yaml": configmap("extra"),
        "app/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\n",
        "app/plain.yaml": configmap("plain"),  # the kustomization alone is built
    }
    renderer = Renderer(context=CTX, app=AppSource())
    ok = await renderer.render(tree_snapshot(repo, "app"), namespaces={"apps"})
    assert names(ok) == ["prod-settings"]  # a base anywhere in the repository
    repo["app/kustomization.yaml"] = "resources: [../base, ../shared/extra.yaml]\n"
    refused = await Renderer(context=CTX, app=AppSource()).render(
        tree_snapshot(repo, "app"), namespaces={"apps"}
    )
    [problem] = [str(p) for p in refused.problems]
    assert problem.startswith("kustomization.yaml: kubectl kustomize failed:"), problem
    assert "is not in or below" in problem, problem
    # Flux's rules (no load restrictions) build the same kustomization.
    flux = await Renderer(context=CTX).render(tree_snapshot(repo, "app"), namespaces={"apps"})
    assert names(flux) == ["extra", "settings"]


async def test_a_named_kustomize_source_without_a_kustomization_is_an_error() -> None:
    result = await render({"cm.yaml": configmap("cm")}, AppSource(source_type=SourceType.KUSTOMIZE))
    assert [str(p) for p in result.problems] == [
        ".: spec.source.kustomize: no kustomization.yaml at the top of the path (a kustomize "
        "source builds one)"
    ]


async def test_create_namespace_adds_the_destination_namespace_never_pruned() -> None:
    ns = ManagedNamespace("shop", labels=(("team", "a"),), annotations=(("owner", "me"),))
    app = AppSource(create_namespace=ns)
    result = await render({"cm.yaml": configmap("cm", ns="shop")}, app)
    [created] = [d for d in result.objects if d.ref.kind == "Namespace"]
    assert result.objects[0] is created  # namespaces first
    assert created.path == "(syncOptions: CreateNamespace=true)"
    meta = created.obj["metadata"]
    assert meta["labels"]["team"] == "a"
    assert meta["annotations"]["owner"] == "me"
    assert created.prune is False
    # The revision's own Namespace wins: no second one.
    again = await render({"cm.yaml": configmap("cm", ns="shop"), "ns.yaml": namespace("shop")}, app)
    [own] = [d for d in again.objects if d.ref.kind == "Namespace"]
    assert own.path == "ns.yaml"
    assert own.prune is True
    # Without it the namespace is missing: refused, as before.
    missing = await render({"cm.yaml": configmap("cm", ns="shop")}, AppSource())
    assert any("namespace" in str(p) for p in missing.problems)


async def test_application_sync_options_apply_to_every_object_unless_it_says_otherwise() -> None:
    own = configmap(
        "own",
        extra=(
            "  annotations:\n"
            "    argocd.argoproj.io/sync-options: Prune=true,ServerSideApply=false\n"
        ),
    )
    files: dict[str, str | bytes] = {"a.yaml": configmap("plain"), "b.yaml": own}
    app = AppSource(prune=False, server_side=True, force=True)
    by_name = {d.ref.name: d for d in (await render(files, app)).objects}
    plain, mine = by_name["plain"], by_name["own"]
    assert (plain.prune, plain.server_side, plain.force) == (False, True, True)
    assert (mine.prune, mine.server_side, mine.force) == (True, False, True)
    default = {d.ref.name: d for d in (await render(files, AppSource())).objects}
    assert (default["plain"].prune, default["plain"].server_side) == (True, False)
