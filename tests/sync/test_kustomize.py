"""Which kustomizations a path builds (Flux's rule) and what each build reads."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pytest

from gitkrm.sync.kustomize import (
    MAX_ERROR_CHARS,
    Layout,
    error_text,
    kustomization_files,
    layout,
    tree_key,
    units,
)


def build_layout(
    files: Collection[str],
    contents: Mapping[str, bytes],
    *,
    refused: Mapping[str, str] | None = None,
) -> Layout:
    """The layout of a repository whose source path is its top."""
    data = {f: contents.get(f, b"") for f in files}
    return layout(
        set(files),
        list(units(kustomization_files(files)).dirs),
        lambda paths: {p: data[p] for p in paths},
        refused=refused,
    )


def test_a_kustomization_at_the_top_is_built_alone() -> None:
    found = units(kustomization_files(["kustomization.yaml", "base/kustomization.yaml"]))
    assert found.dirs == ("",)
    assert not found.plain("app.yaml")
    assert not found.plain("base/deploy.yaml")


def test_below_the_top_each_kustomization_directory_is_one_unit_not_descended_into() -> None:
    found = units(
        kustomization_files(
            [
                "apps/kustomization.yaml",
                "apps/podinfo/kustomization.yaml",
                "infra/controllers/kustomization.yaml",
                "infra/configs/Kustomization",
                ".hidden/kustomization.yaml",
                "plain/app.yaml",
            ]
        )
    )
    assert found.dirs == ("apps", "infra/configs", "infra/controllers")
    assert found.plain("plain/app.yaml")
    assert found.plain("infra/namespace.yaml")
    assert not found.plain("apps/podinfo/deploy.yaml")
    assert not found.plain(".hidden/x.yaml")
    assert not found.plain("plain/.draft.yaml")


def test_every_path_naming_field_is_followed_through_the_whole_repository() -> None:
    files = [
        "bases/app/kustomization.yaml",
        "bases/app/deploy.yaml",
        "bases/app/unused.yaml",
        "components/tls/kustomization.yaml",
        "shared/patch.yaml",
        "shared/smp.yaml",
        "shared/json6902.yaml",
        "shared/app.properties",
        "shared/.env",
        "shared/secret.env",
        "shared/crd.json",
        "shared/config.yaml",
        "shared/replace.yaml",
        "shared/schema.json",
        "shared/transformer.yaml",
        "shared/inner-patch.yaml",
        "overlays/dev/kustomization.yaml",
    ]
    contents = {
        "bases/app/kustomization.yaml": b"resources: [deploy.yaml]\n",
        "components/tls/kustomization.yaml": b"kind: Component\n",
        "shared/transformer.yaml": b"apiVersion: builtin\nkind: PatchTransformer\n"
        b"metadata: {name: p}\npath: inner-patch.yaml\n",
        "overlays/dev/kustomization.yaml": b"""\
resources: [../../bases/app]
components: [../../components/tls]
patches: [{path: ../../shared/patch.yaml}]
patchesStrategicMerge: [../../shared/smp.yaml]
patchesJson6902: [{target: {kind: Deployment, name: x}, path: ../../shared/json6902.yaml}]
configMapGenerator:
- {name: c, files: [app=../../shared/app.properties], envs: [../../shared/.env]}
secretGenerator:
- {name: s, env: ../../shared/secret.env}
crds: [../../shared/crd.json]
configurations: [../../shared/config.yaml]
replacements: [{path: ../../shared/replace.yaml}]
openapi: {path: ../../shared/schema.json}
transformers: [../../shared/transformer.yaml]
""",
    }
    lay = build_layout(files, contents)
    assert lay.problems == {
        # Plugin configuration paths are relative to the kustomization that names them.
        "overlays/dev/kustomization.yaml": "path entry 'inner-patch.yaml': "
        "'overlays/dev/inner-patch.yaml' is not a file or directory of the repository "
        "(or an ignore rule excludes it)"
    }
    contents["shared/transformer.yaml"] = contents["shared/transformer.yaml"].replace(
        b"inner-patch", b"../../shared/inner-patch"
    )
    lay = build_layout(files, contents)
    assert lay.problems == {}
    assert lay.roots == ["bases/app", "components/tls", "overlays/dev"][::2]
    assert lay.components == ["components/tls"]
    assert lay.needs["overlays/dev"] == set(files) - {"bases/app/unused.yaml"}
    assert lay.needs["bases/app"] == {"bases/app/kustomization.yaml", "bases/app/deploy.yaml"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"resources: [../../outside]\n", "resources entry '../../outside' leaves the repository"),
        (b"resources: [/etc]\n", "'/etc' is an absolute path"),
        (b"bases: [github.com/o/r//base?ref=v1]\n", "is remote"),
        (b"transformers: [git::https://x/y]\n", "is remote"),
        (b"generators: [../../../tmp/gen]\n", "generators entry '../../../tmp/gen' leaves"),
        (b"patches: [{path: ../../../etc/passwd}]\n", "patches[0].path entry"),
        (b"configMapGenerator: [{name: c, files: [k=../../x]}]\n", "configMapGenerator[0].files"),
        (b"openapi: {path: /etc/schema.json}\n", "openapi.path entry"),
        (b"crds: [../../crd.yaml]\n", "crds entry '../../crd.yaml' leaves the repository"),
        (b"resources: [plain]\n", "the directory 'k/plain' holds no kustomization"),
        (b"resources: x\n", "must be a list"),
        (b"- a\n", "must be a mapping"),
        (b"resources: [\n", "invalid kustomization"),
        # kustomize's own refusal ("must specify --enable-helm") names a flag nobody can pass
        (b"helmCharts: [{name: mini, releaseName: r}]\n", "helmCharts: kustomize's Helm chart"),
        (b"helmChartInflationGenerator: [{chartName: m}]\n", "a Flux HelmRelease"),
        (b"helmCharts: [{name: m}]\n", "or an Argo CD Application's Helm source"),
    ],
)
def test_bad_kustomizations(text: bytes, message: str) -> None:
    lay = build_layout(["k/kustomization.yaml", "k/plain/a.yaml"], {"k/kustomization.yaml": text})
    assert message in lay.problems["k/kustomization.yaml"]
    assert lay.roots == ["k"]  # a root with a problem is never built: the renderer skips it


def test_a_directory_with_two_kustomization_files_is_refused_as_kustomize_refuses_it() -> None:
    files = ["base/kustomization.yaml", "base/Kustomization", "k/kustomization.yml"]
    text = b"resources: []\n"
    lay = build_layout(
        files, dict.fromkeys(files, text) | {"k/kustomization.yml": b"resources: [../base]\n"}
    )
    assert lay.problems == {
        "base/kustomization.yaml": "several kustomization files (kustomization.yaml, "
        "Kustomization): kustomize refuses the directory (Found multiple kustomization "
        "files); keep one",
        "k/kustomization.yml": "not rendered: it uses base/kustomization.yaml, which has a problem",
    }


def test_a_symlink_out_of_the_repository_is_named_when_a_build_reaches_it() -> None:
    lay = build_layout(
        ["k/kustomization.yaml"],
        {"k/kustomization.yaml": b"resources: [../linked/cm.yaml]\n"},
        refused={"linked": "symlink to '/etc' leaves the repository"},
    )
    assert lay.problems == {
        "k/kustomization.yaml": "resources entry '../linked/cm.yaml': symlink to '/etc' "
        "leaves the repository"
    }


def test_tree_key_follows_content() -> None:
    a = tree_key("k", [("k/a.yaml", "1"), ("k/b.yaml", "2")])
    assert a == tree_key("k", [("k/b.yaml", "2"), ("k/a.yaml", "1")])
    assert a != tree_key("k", [("k/a.yaml", "1"), ("k/b.yaml", "3")])


def test_kustomize_errors_are_whole_and_bounded() -> None:
    err = (
        b'E1126 20:20:14.474368    1815 run.go:72] "command failed" err="accumulating '
        b"resources: accumulation err='accumulating resources from \\\"/tmp/k1/base\\\"'\\n"
        b'second line"\n'
    )
    text = error_text(err, tmp="/tmp/k1", returncode=1)
    assert text == (
        "accumulating resources: accumulation err='accumulating resources from \"base\"'\n"
        "  second line"
    )
    block = (
        b'E1126 20:23:54.422785    4560 run.go:72] "command failed" err=<\n'
        b"\taccumulating resources: '/tmp/k1/apps'\n\tpatch: '[x]'\n >\n"
    )
    assert error_text(block, tmp="/tmp/k1", returncode=1) == (
        "accumulating resources: 'apps'\n  patch: '[x]'"
    )
    long = error_text(b"x" * (MAX_ERROR_CHARS * 2), tmp="/tmp/k1", returncode=1)
    assert long.endswith(f" ... ({MAX_ERROR_CHARS:,} more characters)")
    assert error_text(b"", tmp="/tmp/k1", returncode=3) == "exit code 3"


# ---- found by tests/fuzz/test_fuzz_kustomize.py ----


def test_a_base_with_a_problem_keeps_its_overlays_from_rendering() -> None:
    # The base's escape was reported, but the overlay was still built: kustomize then
    # followed `../../../etc` from the temporary copy, outside the repository.
    files = ["base/kustomization.yaml", "overlays/prod/kustomization.yaml"]
    lay = build_layout(
        files,
        {
            "base/kustomization.yaml": b"resources: [../../../etc]\n",
            "overlays/prod/kustomization.yaml": b"resources: [../../base]\n",
        },
    )
    assert lay.roots == ["base", "overlays/prod"]
    assert lay.problems == {
        "base/kustomization.yaml": "resources entry '../../../etc' leaves the repository",
        "overlays/prod/kustomization.yaml": "not rendered: it uses base/kustomization.yaml, "
        "which has a problem",
    }


def test_cycles_are_problems_not_silence() -> None:
    files = ["a/kustomization.yaml", "b/kustomization.yaml", "self/kustomization.yaml"]
    lay = build_layout(
        files,
        {
            "a/kustomization.yaml": b"resources: [../b]\n",
            "b/kustomization.yaml": b"components: [../a]\n",
            "self/kustomization.yaml": b"resources: [.]\n",
        },
    )
    assert lay.problems == {
        "a/kustomization.yaml": "kustomizations use each other in a cycle: a -> b -> a",
        "b/kustomization.yaml": "kustomizations use each other in a cycle: a -> b -> a",
        "self/kustomization.yaml": "kustomizations use each other in a cycle: self -> self",
    }


def test_references_must_name_something_of_the_repository() -> None:
    # Kustomize tries what is not a local path as a remote base.
    lay = build_layout(
        ["k/kustomization.yaml", "k/a.yaml"],
        {"k/kustomization.yaml": b"resources: [a.yaml, example.com/org/repo]\n"},
    )
    assert lay.problems == {
        "k/kustomization.yaml": "resources entry 'example.com/org/repo': "
        "'k/example.com/org/repo' is not a file or directory of the repository "
        "(or an ignore rule excludes it)"
    }


def test_inline_transformer_configurations_are_not_paths() -> None:
    text = b"transformers:\n- |\n  apiVersion: builtin\n  kind: LabelTransformer\n"
    lay = build_layout(["k/kustomization.yaml"], {"k/kustomization.yaml": text})
    assert lay.problems == {}
    assert lay.needs["k"] == {"k/kustomization.yaml"}
