"""Render and validate: every problem of a revision found, located, and nothing let through."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitkrm.source.snapshot import MODE_SYMLINK, FileEntry, MemoryBlobs, Snapshot, git_blob_id
from gitkrm.sync.parse import ParseContext, ParsedFile
from gitkrm.sync.pool import parse_many
from gitkrm.sync.render import Renderer, RenderResult
from tests.support.builders import crd
from tests.support.tools import require_tool
from tests.sync.sync_helpers import configmap, deployment, namespace, snapshot

CTX = ParseContext(source="src", default_namespace="apps")

CRD = yaml.safe_dump(
    crd(spec={"size": {"type": "integer"}}, status_subresource=False), sort_keys=False
)


async def render(
    files: dict[str, str | bytes],
    *,
    namespaces: set[str] | None = None,
    renderer: Renderer | None = None,
) -> RenderResult:
    r = renderer or Renderer(context=CTX)
    return await r.render(
        snapshot(files), namespaces=namespaces if namespaces is not None else {"apps"}
    )


def messages(result: RenderResult) -> list[str]:
    return [str(p) for p in result.problems]


async def test_a_valid_revision_in_apply_order_with_defaults() -> None:
    result = await render(
        {
            "b/app.yaml": deployment(ns="team"),
            "a/cm.json": '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}',
            "ns.yaml": namespace("team"),
            "notes.txt": "not a manifest",
        }
    )
    assert messages(result) == []
    assert [str(d.ref) for d in result.objects] == [
        "Namespace team",
        "ConfigMap apps/j",  # the default namespace
        "Deployment.apps team/web",
    ]
    assert result.files == 3
    web = result.objects[2]
    assert (web.path, web.line) == ("b/app.yaml", 1)
    assert web.obj["metadata"]["labels"] == {"gitkrm.io/source": "src"}


async def test_preparing_drops_what_the_server_owns() -> None:
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apps
  uid: 123
  resourceVersion: "9"
  creationTimestamp: "2024-01-01T00:00:00Z"
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: "{}"
    gitkrm.io/revision: old
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
status: {replicas: 3}
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: apps}
stringData: {password: hunter2}
"""
    result = await render({"m.yaml": text})
    assert messages(result) == []
    web = next(d for d in result.objects if d.ref.kind == "Deployment")
    assert set(web.obj["metadata"]) == {"name", "namespace", "labels"}
    assert "status" not in web.obj
    secret = next(d for d in result.objects if d.ref.kind == "Secret")
    assert secret.obj["data"] == {"password": "aHVudGVyMg=="}
    assert "stringData" not in secret.obj


BOMB = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: bomb, namespace: apps}
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
data: {x: "1"}
"""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("apiVersion: v1\nkind: [unclosed\n", "bad.yaml:3: invalid YAML"),
        (BOMB, "too many alias expansions"),
        ("apiVersion: v1\nkind: ConfigMap\nkind: Secret\n", 'duplicate key "kind"'),
        (
            "apiVersion: v9\nkind: Gizmo\nmetadata: {name: g, namespace: apps}\n",
            'unknown kind "Gizmo"',
        ),
        (deployment().replace("replicas: 2", "replicas: many"), "spec.replicas"),
        (
            deployment().replace("replicas: 2", "replicas: 2\n  bogus: 1"),
            'unknown field "spec.bogus"',
        ),
        (
            deployment().replace("labels: {app: web}", "labels: {app: other}"),
            "`selector` does not match",
        ),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: nsx, namespace: apps}\n",
            "Namespace is cluster-scoped: it must not have a namespace",
        ),
        (configmap("c", ns="nowhere"), 'namespace "nowhere" does not exist'),
        (configmap("Bad_Name"), "metadata.name"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-, namespace: apps}\n",
            "generateName is not supported",
        ),
        (b"apiVersion: v1\nkind: ConfigMap\x00\n", "bad.yaml:2: binary file"),
        (b"apiVersion: v1\nkind: Config\xffMap\n", "bad.yaml:2: not UTF-8 text"),
    ],
)
async def test_bad_input_is_a_located_problem(content: str | bytes, expected: str) -> None:
    result = await render({"bad.yaml": content, "good.yaml": configmap("fine")})
    assert not result.ok
    assert len(result.problems) == 1, messages(result)
    assert expected in messages(result)[0]
    assert messages(result)[0].startswith("bad.yaml")


async def test_every_problem_is_reported_not_only_the_first() -> None:
    result = await render(
        {
            "a.yaml": configmap("c", ns="nowhere") + "---\n" + configmap("Bad_Name"),
            "b.yaml": "kind: [\n",
            "c.yaml": configmap("dup"),
            "d.yaml": configmap("dup"),
        }
    )
    got = messages(result)
    assert len(got) == 4, got
    assert any(
        m.startswith("d.yaml:1: ConfigMap apps/dup: duplicate object") and "c.yaml:1" in m
        for m in got
    )


async def test_namespaces_may_come_from_the_revision_or_the_store() -> None:
    assert (await render({"cm.yaml": configmap("c", ns="team"), "ns.yaml": namespace("team")})).ok
    assert (await render({"cm.yaml": configmap("c", ns="team")}, namespaces={"team"})).ok
    assert not (await render({"cm.yaml": configmap("c", ns="team")}, namespaces=set())).ok


async def test_a_huge_file_is_refused_without_reading_it() -> None:
    ok = configmap("c").encode()
    files = {
        "ok.yaml": FileEntry(path="ok.yaml", blob=git_blob_id(ok), size=len(ok)),
        "huge.yaml": FileEntry(path="huge.yaml", blob="0" * 40, size=50 * 1024 * 1024),
    }
    result = await Renderer(context=CTX).render(
        # The huge blob is not in the reader: reading it would fail.
        Snapshot(revision="r", files=files, reader=MemoryBlobs({git_blob_id(ok): ok})),
        namespaces={"apps"},
    )
    assert messages(result) == ["huge.yaml: file is 52,428,800 bytes, over the limit of 8,388,608"]


async def test_symlinks_resolve_inside_and_are_refused_outside() -> None:
    target = configmap("linked").encode()
    links = {
        "in.yaml": b"real/cm.yaml",
        "out.yaml": b"../../etc/passwd",
        "abs.yaml": b"/etc/passwd",
    }
    blobs = {git_blob_id(target): target}
    files = {"real/cm.yaml": FileEntry("real/cm.yaml", git_blob_id(target), len(target))}
    for path, link in links.items():
        blobs[git_blob_id(link)] = link
        files[path] = FileEntry(path, git_blob_id(link), len(link), MODE_SYMLINK)
    result = await Renderer(context=CTX).render(
        Snapshot(revision="r", files=files, reader=MemoryBlobs(blobs)), namespaces={"apps"}
    )
    assert sorted(messages(result)) == [
        "abs.yaml: symlink to '/etc/passwd' leaves the repository",
        "out.yaml: symlink to '../../etc/passwd' leaves the repository",
        "real/cm.yaml:1: ConfigMap apps/linked: duplicate object: ConfigMap apps/linked is "
        "also defined at in.yaml:1",
    ]


async def test_custom_resources_validate_against_crds_of_the_revision_and_the_store() -> None:
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: %s}\n"
    ok = await render({"crd.yaml": CRD, "w.yaml": widget % "3"})
    assert messages(ok) == []
    w = ok.objects[-1]
    assert (w.ref.namespace, w.obj["metadata"]["labels"]["gitkrm.io/source"]) == ("apps", "src")
    bad = await render({"crd.yaml": CRD, "w.yaml": widget % "big"})
    assert len(bad.problems) == 1
    assert "spec.size" in messages(bad)[0]
    assert messages(bad)[0].startswith("w.yaml:1: Widget apps/w: ")
    unknown = await render({"w.yaml": widget % "3"})
    assert 'unknown kind "Widget"' in messages(unknown)[0]
    from tests.sync.sync_helpers import desired

    (parsed,) = desired(CRD)
    known = await Renderer(context=CTX).render(
        snapshot({"w.yaml": widget % "3"}), store_crds=[parsed.obj], namespaces={"apps"}
    )
    assert known.ok


async def test_only_changed_files_are_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []

    async def spy(
        items: Sequence[tuple[str, bytes]], ctx: ParseContext, **kw: Any
    ) -> list[ParsedFile]:
        parsed.extend(p for p, _ in items)
        return await parse_many(items, ctx, **kw)

    monkeypatch.setattr("gitkrm.sync.render_files.parse_many", spy)
    renderer = Renderer(context=CTX)
    files: dict[str, str | bytes] = {f"cm-{i}.yaml": configmap(f"c{i}") for i in range(5)}
    first = await render(files, renderer=renderer)
    assert len(parsed) == 5
    files["cm-2.yaml"] = configmap("c2", data="a: changed")
    parsed.clear()
    second = await render(files, renderer=renderer)
    assert parsed == ["cm-2.yaml"]
    assert second.objects[0] is first.objects[0]  # unchanged objects are shared
    # A revert finds the previous blob still cached.
    files["cm-2.yaml"] = configmap("c2")
    parsed.clear()
    await render(files, renderer=renderer)
    assert parsed == []


async def test_the_process_pool_gives_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    files: dict[str, str | bytes] = {f"d-{i}.yaml": deployment(f"web-{i}") for i in range(12)}
    files["bad.yaml"] = "kind: [\n"
    inline = await render(files)
    monkeypatch.setattr("gitkrm.sync.pool.PARALLEL_MIN_BYTES", 0)
    pooled = await render(files)
    assert [d.applied for d in pooled.objects] == [d.applied for d in inline.objects]
    assert messages(pooled) == messages(inline)


async def test_kustomize_directories_are_rendered_by_kustomize(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/usr/lib/google-cloud-sdk/bin:/usr/bin:/bin")
    files: dict[str, str | bytes] = {
        "base/kustomization.yaml": "resources: [cm.yaml]\n",
        "base/cm.yaml": configmap("settings"),
        "overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\n",
        "plain.yaml": configmap("plain"),
    }
    result = await render(files)
    assert messages(result) == []
    # Flux's rule: each kustomization directory below the path is built on its own.
    assert sorted(d.ref.name for d in result.objects) == ["plain", "prod-settings", "settings"]
    prod = next(d for d in result.objects if d.ref.name == "prod-settings")
    assert prod.path == "overlay/kustomization.yaml"
    assert prod.obj["metadata"]["labels"]["gitkrm.io/source"] == "src"
    broken = await render(
        {
            **files,
            "overlay/kustomization.yaml": "resources: [../base]\npatches: [{path: p.yaml}]\n",
            "overlay/p.yaml": configmap("nothere"),
        }
    )
    assert len(broken.problems) == 1
    # kustomize's own error, whole, naming the kustomization (not kubectl's log line).
    assert messages(broken)[0].startswith(
        "overlay/kustomization.yaml: kubectl kustomize failed: no resource matches strategic "
        'merge patch "ConfigMap.v1.[noGrp]/nothere.apps"'
    ), messages(broken)[0]
    missing = await render({**files, "overlay/kustomization.yaml": "resources: [missing.yaml]\n"})
    assert messages(missing) == [
        "overlay/kustomization.yaml: resources entry 'missing.yaml': 'overlay/missing.yaml' is "
        "not a file or directory of the repository (or an ignore rule excludes it)"
    ]
    escape = await render({**files, "overlay/kustomization.yaml": "resources: [../../x]\n"})
    assert "leaves the repository" in messages(escape)[0]


async def test_kustomize_never_reads_outside_the_repository(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Found by tests/fuzz/test_fuzz_kustomize.py: a base whose reference leaves the source
    # root was reported, yet its overlay was built, and kustomize followed the reference out
    # of the temporary copy of the repository (here to a kustomization planted beside it).
    kubectl = require_tool("kubectl", candidates=["/usr/lib/google-cloud-sdk/bin/kubectl"])
    monkeypatch.setenv("PATH", f"{kubectl.parent}:/usr/bin:/bin")
    outside = tmp_path / "tmp"
    (outside / "canary").mkdir(parents=True)
    (outside / "canary" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (outside / "canary" / "cm.yaml").write_text(configmap("canary"))
    monkeypatch.setattr(tempfile, "tempdir", str(outside))  # where kustomize.build copies to
    files: dict[str, str | bytes] = {
        "base/kustomization.yaml": "resources: [../../canary]\n",
        "overlays/prod/kustomization.yaml": "resources: [../../base]\n",
        "cycle/a/kustomization.yaml": "resources: [../b]\n",
        "cycle/b/kustomization.yaml": "resources: [../a]\n",
        "remote/kustomization.yaml": "resources: [https://github.com/o/r//base?ref=v1]\n",
    }
    result = await render(files)
    assert [d.ref.name for d in result.objects] == []
    assert sorted(messages(result)) == [
        "base/kustomization.yaml: resources entry '../../canary' leaves the repository",
        "cycle/a/kustomization.yaml: kustomizations use each other in a cycle: "
        "cycle/a -> cycle/b -> cycle/a",
        "cycle/b/kustomization.yaml: kustomizations use each other in a cycle: "
        "cycle/a -> cycle/b -> cycle/a",
        "overlays/prod/kustomization.yaml: not rendered: it uses base/kustomization.yaml, "
        "which has a problem",
        "remote/kustomization.yaml: resources entry 'https://github.com/o/r//base?ref=v1' is "
        "remote: gitkrm renders only what the repository holds (vendor the base into the "
        "repository)",
    ]


async def test_kustomize_missing_from_path_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = await render({"k/kustomization.yaml": "resources: []\n"})
    assert messages(result) == [
        "k/kustomization.yaml: rendering a kustomization needs `kustomize` or `kubectl` on PATH; "
        "neither was found"
    ]


async def test_the_last_order_is_reused_only_while_it_still_holds() -> None:
    renderer = Renderer(context=CTX)
    files: dict[str, str | bytes] = {f"cm-{i}.yaml": configmap(f"c{i}") for i in (3, 1, 2)}
    files["d.yaml"] = deployment()
    first = await render(files, renderer=renderer)
    names = [d.ref.name for d in first.objects]
    assert names == ["c1", "c2", "c3", "web"]
    files["cm-2.yaml"] = configmap("c2", data="a: changed")
    second = await render(files, renderer=renderer)
    assert [d.ref.name for d in second.objects] == names
    assert second.objects[1].obj["data"] == {"a": "changed"}
    files["cm-0.yaml"] = configmap("c0")
    files["d.yaml"] = deployment(annotations="    gitkrm.io/wave: '-1'\n")
    third = await render(files, renderer=renderer)
    assert [d.ref.name for d in third.objects] == ["web", "c0", "c1", "c2", "c3"]
    fresh = await render(files)
    assert [d.ref for d in fresh.objects] == [d.ref for d in third.objects]


async def test_a_broken_worker_pool_falls_back_to_parsing_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from concurrent.futures.process import BrokenProcessPool

    from gitkrm.sync import pool

    class Broken:
        """A pool whose workers died (as after an out-of-memory kill)."""

        shut = False

        def submit(self, *args: object, **kwargs: object) -> None:
            raise BrokenProcessPool("a worker died")

        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            self.shut = True

    broken = Broken()
    monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pool, "get_pool", lambda: broken)
    files: dict[str, str | bytes] = {f"d-{i}.yaml": deployment(f"web-{i}") for i in range(4)}
    result = await render(files)
    assert result.ok
    assert len(result.objects) == 4
    assert broken.shut  # dropped: the next big render starts a new pool
