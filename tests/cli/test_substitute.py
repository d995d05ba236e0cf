"""Flux's post-build substitution through the CLI on real Git repositories: every form,
strict and non-strict, `substituteFrom` ConfigMaps and Secrets (optional and missing),
disabled objects, errors that name file, line and object, re-rendering when a variable
changes, and Secret-sourced values masked in every output."""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path
from typing import Any

import pytest

from gitkrm.cli.main import main
from gitkrm.krm import Obj, ObjectRef, masking
from gitkrm.store import open_store
from tests.cli.cli_store import stored
from tests.source.source_gitrepo import RemoteRepo

FORMS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: forms
  namespace: ${ns:=default}
data:
  plain: ${var}
  length: "${#var}"
  upper_first: ${lower^}
  upper: ${lower^^}
  lower_first: ${var,}
  lower: ${var,,}
  offset: ${var:6}
  slice: ${var:0:5}
  strip_prefix: ${path#*/}
  strip_longest_prefix: ${path##*/}
  strip_suffix: ${path%.*}
  strip_longest_suffix: ${path%%.*}
  replace_first: ${var/o/0}
  replace_all: ${var//o/0}
  replace_prefix: ${var/#Hello/Bye}
  replace_suffix: ${var/%World/All}
  assign_default: ${unset:=fallback}
  use_default: ${unset:-fallback}
  equal_default: ${unset=fallback}
  empty_default: ${empty:-was-empty}
  nested: ${unset:=${lower^^}}
  escaped: $${var}
  money: costs $5 and $$6
  number: "${count}"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: ${count}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:${tag:=1.27}"}]}
"""
EXPECTED = {
    "plain": "Hello-World",
    "length": "11",
    "upper_first": "Shout",
    "upper": "SHOUT",
    "lower_first": "hello-World",
    "lower": "hello-world",
    "offset": "World",
    "slice": "Hello",
    "strip_prefix": "b/c.tar.gz",
    "strip_longest_prefix": "c.tar.gz",
    "strip_suffix": "a/b/c.tar",
    "strip_longest_suffix": "a/b/c",
    "replace_first": "Hell0-World",
    "replace_all": "Hell0-W0rld",
    "replace_prefix": "Bye-World",
    "replace_suffix": "Hello-All",
    "assign_default": "fallback",
    "use_default": "fallback",
    "equal_default": "fallback",
    "empty_default": "was-empty",
    "nested": "SHOUT",
    "escaped": "${var}",
    "money": "costs $5 and $6",
    "number": "3",
}
VARS = ["var=Hello-World", "lower=shout", "path=a/b/c.tar.gz", "empty=", "count=3"]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run_once(capsys: pytest.CaptureFixture[str], state: Path, *args: str) -> tuple[int, str, str]:
    """`gitkrm run --once` keeping its state in `state`; `args` name the source and flags."""
    return cli(capsys, "run", "--once", "--state", str(state), *args)


def sub_args(*pairs: str) -> list[str]:
    return [a for p in pairs for a in ("--substitute", p)]


def read(state: Path, kind: str, name: str, ns: str = "default") -> Obj | None:
    return stored(state, kind, name, ns, "apps" if kind == "Deployment" else "")


def configmap_data(state: Path, name: str) -> Any:
    """The `data` of ConfigMap default/`name` in the store; the ConfigMap must exist."""
    cm = read(state, "ConfigMap", name)
    assert cm is not None, f"ConfigMap default/{name} was not applied"
    return cm.get("data")


CONFIGMAP_C = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n"


async def _create(state: Path, objs: list[Obj]) -> None:
    store = await open_store("sqlite:///" + str(state / "store.db"))
    try:
        for obj in objs:
            await store.create(obj)
    finally:
        await store.close()


def repo_with(tmp_path: Path, files: dict[str, str]) -> RemoteRepo:
    repo = RemoteRepo(tmp_path / "srv")
    repo.publish("manifests", files)
    return repo


def test_every_form_renders_as_flux_renders_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = repo_with(tmp_path, {"apps/forms.yaml": FORMS})
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--repo", repo.url, *sub_args(*VARS))
    assert code == 0, err
    assert configmap_data(state, "forms") == EXPECTED
    dep = read(state, "Deployment", "web")
    assert dep is not None
    assert dep["spec"]["replicas"] == 3  # an unquoted number became an integer
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, {"a": "${x:=d}", "b": "$$y"}),
        ({"substituteStrategy": "Always"}, {"a": "d", "b": "$y"}),
    ],
    ids=["WithVariables", "Always"],
)
def test_without_variables_only_the_always_strategy_substitutes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: dict[str, Any], expected: Any
) -> None:
    """Flux substitutes only when a variable is defined (its default WithVariables strategy),
    unless the strategy is Always."""
    text = CONFIGMAP_C
    text += "data: {a: '${x:=d}', b: $$y}\n"
    repo = repo_with(tmp_path, {"c.yaml": text})
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--config", str(_config(tmp_path, repo, spec)))
    assert code == 0, err
    assert configmap_data(state, "c") == expected


def test_strict_mode_refuses_an_unset_variable_naming_file_line_and_object(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = CONFIGMAP_C
    text += 'data:\n  a: "${set}"\n  b: "${missing}"\n  c: ${other:=ok}\n'
    repo = repo_with(tmp_path, {"dir/c.yaml": text})
    state = tmp_path / "state"
    code, _, err = run_once(
        capsys, state, "--repo", repo.url, "--substitute", "set=1", "--substitute-strict"
    )
    assert code == 1
    assert (
        "dir/c.yaml:6: ConfigMap default/c: variable substitution: variable not set "
        '(strict mode): "missing"' in err
    )
    assert read(state, "ConfigMap", "c") is None  # nothing of the revision applied
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--substitute", "set=1")
    assert code == 0, err
    assert configmap_data(state, "c") == {"a": "1", "b": "", "c": "ok"}


def test_a_bad_expression_names_file_line_and_object_and_nothing_is_applied(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: default}\n"
    bad = "kind: ConfigMap\napiVersion: v1\nmetadata: {name: bad, namespace: default}\n"
    bad += "data:\n  a: x\n  b: ${oops:-\n"
    repo = repo_with(tmp_path, {"a.yaml": good + "data: {v: '${v}'}\n", "b.yaml": bad})
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--substitute", "v=1")
    assert code == 1
    assert "b.yaml:6: ConfigMap default/bad: variable substitution: " in err
    assert read(state, "ConfigMap", "good") is None
    # validate and diff say the same
    code, _, err = cli(capsys, "validate", str(repo.work), "--substitute", "v=1")
    assert code == 1
    assert "b.yaml:6: ConfigMap default/bad: variable substitution" in err


def test_objects_that_disable_substitution_are_left_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\n  namespace: default\n"
        "  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\n"
        "data: {run.sh: 'echo ${HOME} $$ ${v}'}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labelled\n  namespace: default\n"
        "  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\n"
        "data: {a: '${v}'}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: subst, namespace: default}\n"
        "data: {a: '${v}'}\n"
    )
    repo = repo_with(tmp_path, {"c.yaml": text})
    state = tmp_path / "state"
    code, _, err = run_once(
        capsys, state, "--repo", repo.url, "--substitute", "v=1", "--substitute-strict"
    )
    assert code == 0, err
    assert (read(state, "ConfigMap", "script") or {})["data"] == {"run.sh": "echo ${HOME} $$ ${v}"}
    assert (read(state, "ConfigMap", "labelled") or {})["data"] == {"a": "${v}"}
    assert (read(state, "ConfigMap", "subst") or {})["data"] == {"a": "1"}


def test_kustomize_output_is_substituted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = repo_with(
        tmp_path,
        {
            "app/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: p-\n",
            "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
            "data: {env: '${env}'}\n",
        },
    )
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--substitute", "env=prod")
    assert code == 0, err
    assert (read(state, "ConfigMap", "p-c") or {})["data"] == {"env": "prod"}


def _config(tmp_path: Path, repo: RemoteRepo, spec: dict[str, Any]) -> Path:
    import yaml

    path = tmp_path / "sources.yaml"
    obj = {
        "apiVersion": "gitkrm.io/v1alpha1",
        "kind": "GitSource",
        "metadata": {"name": "apps"},
        "spec": {"url": repo.url, **spec},
    }
    path.write_text(yaml.safe_dump(obj))
    return path


def _var_source(name: str, kind: str, values: dict[str, str]) -> Obj:
    obj: Obj = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "gitkrm-system"},
    }
    if kind == "Secret":
        obj["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    else:
        obj["data"] = values
    return obj


SETTINGS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data:
  cluster: ${cluster}
  region: ${region}
  password: ${db_password}
  inline: ${inline}
"""
PASSWORD = "s3cret-Planted-7731"


def test_substitute_from_configmaps_and_secrets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    masking.forget_all()
    repo = repo_with(tmp_path, {"settings.yaml": SETTINGS})
    state = tmp_path / "state"
    spec = {
        "substitute": {"inline": "from-spec", "region": "spec-wins"},
        "substituteFrom": [
            {"kind": "ConfigMap", "name": "cluster-vars"},
            {"kind": "Secret", "name": "cluster-secrets"},
            {"kind": "ConfigMap", "name": "maybe", "optional": True},
        ],
    }
    config = _config(tmp_path, repo, spec)
    # The ConfigMap is missing and not optional: the revision is refused, naming it.
    code, _, err = run_once(capsys, state, "--config", str(config))
    assert code == 1
    assert "substituteFrom ConfigMap gitkrm-system/cluster-vars: not found" in err
    asyncio.run(
        _create(
            state,
            [
                _var_source("cluster-vars", "ConfigMap", {"cluster": "eu-1", "region": "cm"}),
                _var_source("cluster-secrets", "Secret", {"db_password": PASSWORD}),
            ],
        )
    )
    with caplog.at_level(logging.DEBUG):
        code, out, err = cli(capsys, "diff", "--config", str(config), "--state", str(state))
        assert code == 1
        assert "cluster: eu-1" in out
        assert PASSWORD not in out + err  # a Secret's value, shown in a ConfigMap: masked
        assert "password: '***'" in out or "password: ***" in out
        code, out, err = run_once(capsys, state, "--config", str(config))
        assert code == 0, err
    assert configmap_data(state, "settings") == {
        "cluster": "eu-1",
        "region": "spec-wins",
        "password": PASSWORD,
        "inline": "from-spec",
    }
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert PASSWORD not in logged + out + err
    # A changed variable renders the revision again (the render cache keys on it).
    asyncio.run(_update_secret(state, "cluster-secrets", {"db_password": PASSWORD + "-2"}))
    code, out, err = run_once(capsys, state, "--config", str(config))
    assert code == 0, err
    assert "1 configured" in out
    assert (read(state, "ConfigMap", "settings") or {})["data"]["password"] == PASSWORD + "-2"


async def _update_secret(state: Path, name: str, values: dict[str, str]) -> None:
    store = await open_store("sqlite:///" + str(state / "store.db"))
    try:
        ref = ObjectRef(group="", kind="Secret", name=name, namespace="gitkrm-system")
        obj = await store.get(ref)
        obj["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
        await store.update(obj)
    finally:
        await store.close()


def test_invalid_variable_names_are_refused_as_flux_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = repo_with(tmp_path, {"settings.yaml": SETTINGS})
    state = tmp_path / "state"
    code, _, err = run_once(capsys, state, "--repo", repo.url, "--substitute", "my-var=1")
    assert code == 1
    assert "variable 'my-var' from spec.substitute is not a valid name" in err


def test_substitute_flags_need_a_single_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\n")
    code, _, err = cli(capsys, "run", "--config", str(config), "--substitute", "a=1")
    assert code == 2
    assert "--substitute: describe the sources in --config instead" in err
    code, _, err = cli(capsys, "run", "--repo", str(tmp_path), "--substitute", "novalue")
    assert code == 2
    assert "--substitute 'novalue': expected KEY=VALUE" in err
