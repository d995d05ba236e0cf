"""A source's overlay over its render, in kustomize's semantics (kustomize itself runs)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from gitkrm.source import LocalSource
from gitkrm.sync import kustomize
from gitkrm.sync.overlay_spec import ImageOverride, Overlay, OverlayPatch
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.postbuild import PostBuild
from gitkrm.sync.render import Renderer

APP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: prod}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers:
      - name: web
        image: nginx:1.25
        envFrom: [{configMapRef: {name: settings}}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: web, namespace: default}]
---
apiVersion: v1
kind: Namespace
metadata: {name: extra}
"""


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


async def render(
    root: Path, overlay: Overlay, *, path: str = "apps", namespace: str = "default"
) -> dict[str, Any]:
    """Render `path` of the directory `root` with `overlay`: objects by `Kind ns/name`
    (`namespace`: the source's default namespace)."""
    source = LocalSource(name="s", root=root, path=path, repo_tree=overlay.outside_path)
    renderer = Renderer(
        context=ParseContext(source="s", default_namespace=namespace), overlay=overlay
    )
    result = await renderer.render(await source.snapshot())
    assert result.ok, [str(p) for p in result.problems]
    out = {}
    for d in result.objects:
        out[f"{d.ref.kind} {d.ref.namespace or ''}/{d.ref.name}".replace(" /", " ")] = d
    return out


@pytest.fixture(autouse=True)
def _needs_kustomize() -> None:
    kustomize.command()


async def test_namespace_prefix_and_suffix_with_reference_fixups(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    objs = await render(tmp_path, Overlay(namespace="team-a", name_prefix="a-", name_suffix="-1"))
    assert set(objs) == {
        "ConfigMap team-a/a-settings-1", "Deployment team-a/a-web-1",
        "ServiceAccount team-a/a-web-1", "RoleBinding team-a/a-web-1",
        "Namespace team-a",  # kustomize's namespace renames a Namespace (Flux's too)
    }  # fmt: skip
    deploy = objs["Deployment team-a/a-web-1"].obj
    pod = deploy["spec"]["template"]["spec"]
    assert pod["containers"][0]["envFrom"][0]["configMapRef"]["name"] == "a-settings-1"
    assert pod["serviceAccountName"] == "a-web-1"
    subject = objs["RoleBinding team-a/a-web-1"].obj["subjects"][0]
    assert subject == {"kind": "ServiceAccount", "name": "a-web-1", "namespace": "team-a"}
    # Attributed to the file and line they came from; gitkrm's own labels kept.
    assert objs["Deployment team-a/a-web-1"].path == "app.yaml"
    assert objs["Deployment team-a/a-web-1"].line == 6
    assert deploy["metadata"]["labels"]["gitkrm.io/source"] == "s"
    assert "gitkrm.io/overlay-origin" not in deploy["metadata"].get("annotations", {})


async def test_a_target_namespace_moves_subjects_that_name_default_as_fluxs_build_does(
    tmp_path: Path,
) -> None:
    """A Flux child's default namespace is its targetNamespace; still, its build sees a
    ServiceAccount that names no namespace in `default` (kustomize's reading, and Flux's,
    which builds the files as written), so a ClusterRoleBinding's subject `namespace:
    default` names it and is renamed and moved with it (was: left as `sa`/`default`)."""
    crb = (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n"
        "metadata: {name: web}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\n"
        "subjects: [{kind: ServiceAccount, name: web, namespace: default}]\n"
    )
    write(tmp_path, {"apps/app.yaml": APP, "apps/crb.yaml": crb})
    overlay = Overlay(namespace="team-a", name_prefix="a-")
    objs = await render(tmp_path, overlay, namespace="team-a")
    subject = {"kind": "ServiceAccount", "name": "a-web", "namespace": "team-a"}
    assert objs["ClusterRoleBinding a-web"].obj["subjects"] == [subject]
    assert objs["RoleBinding team-a/a-web"].obj["subjects"] == [subject]
    assert objs["Deployment team-a/a-web"].obj["metadata"]["namespace"] == "team-a"


async def test_patches_strategic_and_json6902_with_targets_and_images(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    overlay = Overlay(
        patches=(
            OverlayPatch("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
                         "spec: {replicas: 3}\n"),
            OverlayPatch('[{"op": "add", "path": "/data/extra", "value": "1"}]',
                         (("kind", "ConfigMap"), ("name", "settings"))),
            OverlayPatch("- op: add\n  path: /metadata/annotations\n  value: {patched: 'yes'}\n",
                         (("kind", "ServiceAccount"), ("labelSelector", "missing=label"))),
        ),
        images=(ImageOverride("nginx", new_name="registry.local/nginx", new_tag="1.27"),),
    )  # fmt: skip
    objs = await render(tmp_path, overlay)
    deploy = objs["Deployment default/web"].obj
    assert deploy["spec"]["replicas"] == 3
    assert (
        deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.local/nginx:1.27"
    )
    assert objs["ConfigMap default/settings"].obj["data"] == {"mode": "prod", "extra": "1"}
    assert "annotations" not in objs["ServiceAccount default/web"].obj["metadata"]  # not a target


async def test_common_metadata_is_set_on_metadata_only(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    objs = await render(tmp_path, Overlay(labels=(("team", "a"),), annotations=(("owner", "x"),)))
    deploy = objs["Deployment default/web"].obj
    assert deploy["metadata"]["labels"]["team"] == "a"
    assert deploy["metadata"]["annotations"]["owner"] == "x"
    assert deploy["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert deploy["spec"]["template"]["metadata"]["labels"] == {"app": "web"}


async def test_components_relative_to_the_path_and_confined(tmp_path: Path) -> None:
    write(tmp_path, {
        "apps/app.yaml": APP,
        "components/mon/kustomization.yaml": """\
            apiVersion: kustomize.config.k8s.io/v1alpha1
            kind: Component
            resources: [monitor.yaml]
            patches:
            - path: label.yaml
        """,
        "components/mon/monitor.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                       "metadata: {name: monitor}\n",
        "components/mon/label.yaml": "apiVersion: apps/v1\nkind: Deployment\n"
                                     "metadata: {name: web, labels: {monitored: 'true'}}\n",
    })  # fmt: skip
    objs = await render(tmp_path, Overlay(components=("../components/mon",)))
    assert objs["Deployment default/web"].obj["metadata"]["labels"]["monitored"] == "true"
    assert "ConfigMap default/monitor" in objs
    assert objs["ConfigMap default/monitor"].path == "spec.components"
    source = LocalSource(name="s", root=tmp_path, path="apps", repo_tree=True)
    for bad, message in (
        ("../../../etc", "leaves the repository"),
        ("../apps", "holds no kustomization"),
    ):
        renderer = Renderer(context=ParseContext(source="s", default_namespace="default"),
                            overlay=Overlay(components=(bad,)))  # fmt: skip
        result = await renderer.render(await source.snapshot())
        assert not result.ok
        assert any(message in str(p) for p in result.problems), result.problems


async def test_replicas_and_patch_files_confined_to_the_repository(tmp_path: Path) -> None:
    write(tmp_path, {
        "apps/app.yaml": APP,
        "patches/team.yaml": "- {op: add, path: /metadata/labels/team, value: a}\n",
    })  # fmt: skip
    patch = OverlayPatch("", (("kind", "Deployment"),), path="../patches/team.yaml")
    overlay = Overlay(name_prefix="p-", replicas=(("web", 3),), patches=(patch,))
    source = LocalSource(name="s", root=tmp_path, path="apps", repo_tree=True)
    renderer = Renderer(context=ParseContext(source="s", default_namespace="default"),
                        overlay=overlay)  # fmt: skip

    async def web() -> dict[str, Any]:
        result = await renderer.render(await source.snapshot())
        assert result.ok, [str(p) for p in result.problems]
        [obj] = [d.obj for d in result.objects if d.ref.kind == "Deployment"]
        return obj

    first = await web()
    assert (first["metadata"]["name"], first["spec"]["replicas"]) == ("p-web", 3)
    assert first["metadata"]["labels"]["team"] == "a"
    # an edit of the patch file alone is a new render (its text is in the cache key)
    write(tmp_path, {"patches/team.yaml": "- {op: add, path: /metadata/labels/team, value: b}\n"})
    assert (await web())["metadata"]["labels"]["team"] == "b"
    for bad, message in (
        ("../../etc/passwd", "patches[0].path '../../etc/passwd' leaves the repository"),
        ("../patches/none.yaml", "no file 'patches/none.yaml' in the revision"),
    ):
        wrong = Overlay(patches=(OverlayPatch("", (), path=bad),))
        renderer = Renderer(context=ParseContext(source="s", default_namespace="default"),
                            overlay=wrong)  # fmt: skip
        result = await renderer.render(await source.snapshot())
        assert not result.ok
        assert any(message in str(p) for p in result.problems), result.problems


async def test_a_kustomize_error_is_a_problem_and_renders_are_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    source = LocalSource(name="s", root=tmp_path, path="apps")
    bogus = OverlayPatch("- op: bogus\n  path: /x\n", (("kind", "ConfigMap"),))
    ctx = ParseContext(source="s", default_namespace="default")
    bad = Renderer(context=ctx, overlay=Overlay(patches=(bogus,)))
    result = await bad.render(await source.snapshot())
    assert not result.ok
    assert any("overlay" in str(p) for p in result.problems)
    builds = 0
    real = kustomize.build

    async def counted(root: str, contents: Any, **kw: Any) -> bytes:
        nonlocal builds
        builds += 1
        return await real(root, contents, **kw)

    monkeypatch.setattr(kustomize, "build", counted)
    renderer = Renderer(context=ParseContext(source="s", default_namespace="default"),
                        overlay=Overlay(name_prefix="p-"))  # fmt: skip
    first = await renderer.render(await source.snapshot())
    again = await renderer.render(await source.snapshot())
    assert builds == 1
    assert [d.applied for d in first.objects] == [d.applied for d in again.objects]
    write(tmp_path, {"apps/app.yaml": APP.replace("mode: prod", "mode: dev")})
    changed = await renderer.render(await source.snapshot())
    assert builds == 2
    (tmp_path / "apps" / "app.yaml").write_text("# nothing here yet\n")
    empty = await renderer.render(await source.snapshot())
    assert empty.ok
    assert builds == 2  # nothing to transform: no build
    assert '"mode":"dev"' in next(d.applied for d in changed.objects if d.ref.kind == "ConfigMap")


async def test_secrets_reach_kustomize_through_a_fifo_only(tmp_path: Path) -> None:
    write(tmp_path, {"apps/s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\n"
                                    "stringData: {password: hunter2}\n"})  # fmt: skip
    objs = await render(tmp_path, Overlay(name_prefix="p-"))
    assert objs["Secret default/p-creds"].obj["data"] == {"password": "aHVudGVyMg=="}


async def test_the_overlays_values_take_the_post_build_variables(tmp_path: Path) -> None:
    """Flux substitutes after its build: what the patches and images put in is substituted."""
    write(tmp_path, {"apps/app.yaml": APP})
    overlay = Overlay(
        name_prefix="${env}-",
        patches=(OverlayPatch("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
                              "spec: {replicas: ${replicas}}\n"),),
        images=(ImageOverride("nginx", new_tag="${tag:=1.0}"),),
    )  # fmt: skip
    source = LocalSource(name="s", root=tmp_path, path="apps")
    renderer = Renderer(
        context=ParseContext(source="s", default_namespace="default"), overlay=overlay
    )
    variables = PostBuild(variables={"env": "dev", "replicas": "4"})
    result = await renderer.render(await source.snapshot(), postbuild=variables)
    assert result.ok, [str(p) for p in result.problems]
    deploy = next(d for d in result.objects if d.ref.kind == "Deployment")
    assert deploy.ref.name == "dev-web"
    assert deploy.obj["spec"]["replicas"] == 4
    assert deploy.obj["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.0"
    strict = PostBuild(variables={"env": "dev"}, strict=True)
    refused = await renderer.render(await source.snapshot(), postbuild=strict)
    assert any("patches[0]" in str(p) and "replicas" in str(p) for p in refused.problems)
