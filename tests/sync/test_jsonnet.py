"""An Argo CD directory source's jsonnet: evaluated as Argo CD evaluates it (imports,
library paths, external variables, top-level arguments), confined to the revision,
evaluated again only when what it read changed, and bounded in time."""

from __future__ import annotations

import pytest

from gitkrm.sync import jsonnet
from gitkrm.sync.appsource import AppSource, DirectorySpec
from gitkrm.sync.appsource_spec import JsonnetSpec, JsonnetVar
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.render import Renderer, RenderResult
from tests.sync.sync_helpers import tree_snapshot

CTX = ParseContext(source="src", default_namespace="apps")

PARAMS = "{ name: 'guestbook-ui', replicas: 2 }\n"
GUESTBOOK = """\
local params = import 'params.libsonnet';
[
  { apiVersion: 'v1', kind: 'Service', metadata: { name: params.name },
    spec: { ports: [{ port: 80 }], selector: { app: params.name } } },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: params.name + '-cfg' },
    data: { replicas: std.toString(params.replicas) } },
]
"""
TLA = """\
local k = import 'k.libsonnet';
function(name='tla', size=1)
  k.cm(name, { size: std.toString(size), env: std.extVar('env'), n: std.toString(std.extVar('n')) })
"""
K = "{ cm(name, data): { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name }, data: data } }\n"  # noqa: E501


def app(**spec: object) -> AppSource:
    return AppSource(directory=DirectorySpec(jsonnet=JsonnetSpec(**spec)))  # type: ignore[arg-type]


def names(result: RenderResult) -> list[str]:
    assert not result.problems, [str(p) for p in result.problems]
    return sorted(d.ref.name for d in result.objects)


def problems(result: RenderResult) -> list[str]:
    return [str(p) for p in result.problems]


async def test_a_jsonnet_file_and_its_import_render_to_objects() -> None:
    repo = {"app/guestbook-ui.jsonnet": GUESTBOOK, "app/params.libsonnet": PARAMS}
    result = await Renderer(context=CTX, app=AppSource()).render(tree_snapshot(repo, "app"))
    assert names(result) == ["guestbook-ui", "guestbook-ui-cfg"]
    # Flux's and gitkrm's own rules leave jsonnet alone, as kustomize-controller does.
    assert (await Renderer(context=CTX).render(tree_snapshot(repo, "app"))).objects == ()


async def test_arguments_variables_and_library_paths_as_the_application_gives_them() -> None:
    repo = {"app/tla.jsonnet": TLA, "vendor/k.libsonnet": K}
    spec = app(
        tlas=(JsonnetVar("name", "sized"), JsonnetVar("size", "3", code=True)),
        ext_vars=(JsonnetVar("env", "prod"), JsonnetVar("n", "1 + 1", code=True)),
        libs=("vendor",),
    )
    result = await Renderer(context=CTX, app=spec).render(tree_snapshot(repo, "app"))
    [obj] = result.objects
    assert (obj.ref.name, obj.obj["data"]) == ("sized", {"size": "3", "env": "prod", "n": "2"})
    without_libs = app(ext_vars=spec.directory.jsonnet.ext_vars)
    refused = await Renderer(context=CTX, app=without_libs).render(tree_snapshot(repo, "app"))
    [problem] = problems(refused)
    assert problem.startswith("tla.jsonnet:1: RUNTIME ERROR: couldn't open import"), problem


async def test_a_file_is_evaluated_again_only_when_what_it_read_changed() -> None:
    repo = {
        "app/guestbook-ui.jsonnet": GUESTBOOK, "app/params.libsonnet": PARAMS,
        "app/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
    }  # fmt: skip
    renderer = Renderer(context=CTX, app=AppSource())
    stage = renderer._jsonnet_stage()
    await renderer.render(tree_snapshot(repo, "app"))
    assert stage.evaluations.evaluated == 1
    repo["app/other.yaml"] = repo["app/other.yaml"].replace("other}", "other, labels: {a: b}}")
    await renderer.render(tree_snapshot(repo, "app"))
    assert stage.evaluations.evaluated == 0  # an unrelated file changed
    repo["app/params.libsonnet"] = PARAMS.replace("2", "3")
    result = await renderer.render(tree_snapshot(repo, "app"))
    assert stage.evaluations.evaluated == 1  # its import changed
    cfg = next(d for d in result.objects if d.ref.name == "guestbook-ui-cfg")
    assert cfg.obj["data"] == {"replicas": "3"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{ a: 1,\n  b: error 'boom' }", "main.jsonnet:2: RUNTIME ERROR: boom"),
        ("{ a: }", "main.jsonnet:1: STATIC ERROR: app/main.jsonnet:1:6: unexpected"),
        ("import '../../secret.json'", "main.jsonnet:1: RUNTIME ERROR: couldn't open import"),
        ("'text'", "main.jsonnet: jsonnet output must be an object or an array of objects"),
    ],
)
async def test_bad_jsonnet_is_a_problem_at_its_line(source: str, expected: str) -> None:
    repo = {"app/main.jsonnet": source, "secret.json": "{}"}  # outside the source path
    result = await Renderer(context=CTX, app=AppSource()).render(tree_snapshot(repo, "app"))
    [problem] = problems(result)
    assert problem.startswith(expected), problem


async def test_an_import_climbing_out_of_the_repository_finds_nothing() -> None:
    repo = {"app/main.jsonnet": "import '../../../../etc/hostname'"}
    result = await Renderer(context=CTX, app=AppSource()).render(tree_snapshot(repo, "app"))
    [problem] = problems(result)
    assert "couldn't open import" in problem
    assert "no such file in the revision" in problem


async def test_an_endless_evaluation_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonnet, "TIMEOUT", 1.0)
    endless = "local f(n) = if n == 0 then {} else f(n + 1) tailstrict; f(1)"
    repo = {"app/main.jsonnet": endless}
    result = await Renderer(context=CTX, app=AppSource()).render(tree_snapshot(repo, "app"))
    assert problems(result) == ["main.jsonnet: jsonnet evaluation did not finish within 1s"]
