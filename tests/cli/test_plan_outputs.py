"""`gitkrm plan`'s outputs on a feature branch: JSON valid against its schema, Markdown for a
pull request (a summary first, diffs collapsed, bounded in size), Secret data and values
substituted from Secrets masked, hooks, waves, refused objects, and `--base`."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gitkrm.agent.state import store_url
from gitkrm.cli.plan_text import MARKDOWN_LIMIT
from gitkrm.krm import Obj, masking
from gitkrm.store import open_store
from tests.cli.plan_repo import Repo, cli, plan_json
from tests.sync.sync_helpers import configmap

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs/schemas/plan.schema.json").read_text()
)
PASSWORD = "Planted-pw-55821"
SECRET_VALUE = "db-Token-90417"

SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default}
stringData: {password: %s}
"""
SETTINGS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {token: "${db_token}", mode: %s}
"""
HOOK = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: default
  annotations:
    argocd.argoproj.io/hook: PreSync
    argocd.argoproj.io/hook-delete-policy: HookSucceeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox}]
"""


def _waved(name: str, wave: int) -> str:
    return configmap(name, ns="default", extra=f"  annotations: {{gitkrm.io/wave: '{wave}'}}\n")


async def _create(state: Path, objects: list[Obj]) -> None:
    store = await open_store(store_url(state))
    try:
        for obj in objects:
            await store.create(obj)
    finally:
        await store.close()


def _setup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Repo, list[str]]:
    """main synced (a Secret, a substituted ConfigMap); `feature` changes both, adds a
    hook, two waves and an object another source owns."""
    masking.forget_all()
    repo = Repo(tmp_path / "repo")
    repo.write("secret.yaml", SECRET % "first-pw-0001")
    repo.write("settings.yaml", SETTINGS % "a")
    repo.write("old.yaml", configmap("old", ns="default"))
    repo.commit("seed")
    state = tmp_path / "st"
    state.mkdir()
    token = {"db_token": base64.b64encode(SECRET_VALUE.encode()).decode()}
    other = yaml.safe_load(configmap("taken", ns="default"))
    other["metadata"]["labels"] = {"gitkrm.io/source": "other"}
    vars_ = {"apiVersion": "v1", "kind": "Secret", "data": token,
             "metadata": {"name": "vars", "namespace": "gitkrm-system"}}  # fmt: skip
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gitkrm-system"}}
    asyncio.run(_create(state, [ns, vars_, other]))
    config = tmp_path / "sources.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "gitkrm.io/v1alpha1",
                "kind": "GitSource",
                "metadata": {"name": "apps"},
                "spec": {"url": repo.url, "substituteFrom": [{"kind": "Secret", "name": "vars"}]},
            }
        )
    )
    flags = ["--config", str(config), "--state", str(state)]
    code, _, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    repo.checkout("feature")
    repo.write("secret.yaml", SECRET % PASSWORD)
    repo.write("settings.yaml", SETTINGS % "b")
    repo.write("hook.yaml", HOOK)
    repo.write("first.yaml", _waved("first", 1))
    repo.write("second.yaml", _waved("second", 2))
    repo.write("taken.yaml", configmap("taken", ns="default"))
    repo.remove("old.yaml")
    repo.commit_to(branch="feature")
    return repo, flags


def _with_ref(flags: list[str], tmp_path: Path, ref: str) -> list[str]:
    """The flags with the GitSource tracking `ref` (a --config describes its own ref)."""
    config = tmp_path / "sources.yaml"
    obj = yaml.safe_load(config.read_text())
    obj["spec"]["ref"] = {"branch": ref}
    config.write_text(yaml.safe_dump(obj))
    return flags


def test_json_of_a_feature_branch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, flags = _setup(tmp_path, capsys)
    flags = _with_ref(flags, tmp_path, "feature")
    code, out, _ = cli(capsys, "plan", "-o", "json", *flags)
    assert code == 1
    assert PASSWORD not in out
    assert SECRET_VALUE not in out
    assert base64.b64encode(PASSWORD.encode()).decode() not in out
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    s = doc["sources"][0]
    assert s["result"] == "changes"
    actions = {(o["action"], o["name"]) for o in s["objects"]}
    assert {("create", "first"), ("create", "second"), ("configure", "creds")} <= actions
    assert {("configure", "settings"), ("prune", "old"), ("refuse", "taken")} <= actions
    refused = next(o for o in s["objects"] if o["name"] == "taken")
    assert "other" in refused["message"]
    settings = next(o for o in s["objects"] if o["name"] == "settings")
    assert "token: '***'" in settings["diff"] or "token: ***" in settings["diff"]
    assert "+  mode: b" in settings["diff"]
    assert s["hooks"] == [
        {"phase": "PreSync", "group": "batch", "kind": "Job", "name": "migrate",
         "namespace": "default", "path": "hook.yaml", "line": 1,
         "deletePolicies": ["HookSucceeded"]},
    ]  # fmt: skip
    waves = [(w["name"], [r["name"] for r in w["objects"]]) for w in s["waves"]]
    assert waves[-2:] == [("wave 1", ["first"]), ("wave 2", ["second"])]
    assert s["counts"]["refuse"] == 1
    assert s["counts"]["prune"] == 1


def test_markdown_and_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, flags = _setup(tmp_path, capsys)
    flags = _with_ref(flags, tmp_path, "feature")
    code, md, _ = cli(capsys, "plan", "-o", "markdown", *flags)
    assert code == 1
    assert md.startswith("### gitkrm plan: changes\n")
    table = md.split("\n\n")[1].splitlines()
    assert table[0].startswith("| source | revision | create | configure | prune |")
    assert table[2].startswith("| apps | `")
    assert table[2].endswith("| 2 | 2 | 1 | 0 | 1 |")
    assert "- **refuse** ConfigMap default/taken" in md
    assert "- hooks that would run: PreSync Job.batch default/migrate" in md
    assert "<details><summary>configure Secret default/creds</summary>" in md
    assert PASSWORD not in md
    assert SECRET_VALUE not in md
    code, text, _ = cli(capsys, "plan", *flags)
    assert code == 1
    assert "    PreSync   Job.batch default/migrate (hook.yaml:1)" in text
    assert "  wave order:" in text
    assert PASSWORD not in text
    assert SECRET_VALUE not in text


def test_markdown_is_bounded_and_says_what_was_cut(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("keep.yaml", configmap("keep", ns="default"))
    repo.commit("seed")
    repo.checkout("big")
    for i in range(60):
        repo.write(f"big-{i}.yaml", configmap(f"big-{i}", ns="default", data=f"v: '{'x' * 2000}'"))
    repo.commit_to(branch="big")
    code, md, _ = cli(capsys, "plan", "-o", "markdown", "--repo", repo.url, "--branch", "big",
                      "--state", str(tmp_path / "st"))  # fmt: skip
    assert code == 1
    assert len(md) <= MARKDOWN_LIMIT
    shown = md.count("<details>")
    assert 0 < shown < 61
    assert f"_{61 - shown} of 61 diffs not shown" in md
    assert "| default | `" in md
    assert "| 61 | 0 | 0 | 0 | 0 |" in md


def test_base_lists_the_objects_whose_rendering_differs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo")
    for name in ("a", "b", "c"):
        repo.write(f"{name}.yaml", configmap(name, ns="default"))
    repo.commit("seed")
    repo.checkout("feature")
    repo.write("a.yaml", configmap("a", ns="default", data="a: changed"))
    repo.remove("b.yaml")
    repo.write("d.yaml", configmap("d", ns="default"))
    repo.commit_to(branch="feature")
    flags = ["--repo", repo.url, "--state", str(tmp_path / "st"), "--branch", "feature"]
    code, doc, _ = plan_json(capsys, *flags, "--base", "main")
    assert code == 1
    jsonschema.validate(doc, SCHEMA)
    base = doc["sources"][0]["base"]
    assert base["ref"] == "branch 'main'"
    names = {k: [r["name"] for r in base[k]] for k in ("added", "changed", "removed")}
    assert names == {"added": ["d"], "changed": ["a"], "removed": ["b"]}
    code, out, _ = cli(capsys, "plan", *flags, "--base", "main")
    assert "rendering against base branch 'main'" in out
    assert "    changed  ConfigMap default/a" in out


def test_a_chart_version_bump(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.charts.chart_files import bump, shop_files
    from tests.sync.sync_helpers import namespace

    repo = Repo(tmp_path / "repo")
    repo.write("namespaces.yaml", namespace("shop"))
    for path, data in shop_files("apps/shop").items():
        repo.write(path, data)
    repo.commit("shop 1.0.0")
    flags = ["--repo", repo.url, "--namespace", "shop", "--state", str(tmp_path / "st")]
    code, _, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    repo.checkout("bump")
    for path, data in bump(shop_files("apps/shop"), "1.1.0", "apps/shop").items():
        repo.write(path, data)
    repo.commit_to("shop 1.1.0", branch="bump")
    code, doc, _ = plan_json(capsys, *flags, "--branch", "bump", "--base", "main")
    assert code == 1
    jsonschema.validate(doc, SCHEMA)
    s = doc["sources"][0]
    deploy = next(o for o in s["objects"] if o["kind"] == "Deployment")
    assert deploy["action"] == "configure"
    assert deploy["path"].startswith("apps/shop/templates/")
    assert "-    helm.sh/chart: shop-1.0.0" in deploy["diff"]
    assert "+    helm.sh/chart: shop-1.1.0" in deploy["diff"]
    assert s["counts"]["create"] == 0
    assert s["counts"]["prune"] == 0
    assert next((h["phase"], h["name"]) for h in s["hooks"]) == ("PreSync", "shop-migrate-upgrade")
    assert {r["kind"] for r in s["base"]["changed"]} >= {"Deployment", "ConfigMap"}


def test_markdown_of_several_sources_says_whose_lines_they_are() -> None:
    from gitkrm.cli.plan_text import markdown

    def source(name: str, hook: str) -> dict[str, Any]:
        counts = dict.fromkeys(("create", "configure", "prune", "unchanged", "refuse"), 0)
        return {
            "source": name, "revision": "a" * 40, "counts": counts, "errors": [],
            "objects": [],
            "hooks": [{"phase": "PreSync", "kind": "Job", "group": "batch",
                       "namespace": name, "name": hook}],
            "base": {"ref": "branch 'main'", "added": [], "changed": [], "removed": []},
        }  # fmt: skip

    md = markdown({"exitCode": 0, "sources": [source("web", "migrate"), source("db", "seed")]})
    assert "**web**\n\n- hooks that would run: PreSync Job.batch web/migrate\n" in md
    assert "**db**\n\n- hooks that would run: PreSync Job.batch db/seed\n" in md
    one = markdown({"exitCode": 0, "sources": [source("web", "migrate")]})
    assert "**web**" not in one  # one source: the table says whose
