"""`gitkrm plan` of feature branches against the embedded store: what merging would do, and
its exit codes (0 nothing to do, 1 changes, 2 error, 3 refused by a guard)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.plan_repo import Repo, cli, plan_json, seeded
from tests.sync.sync_helpers import configmap


def _synced(capsys: pytest.CaptureFixture[str], repo: Repo, state: Path) -> list[str]:
    flags = ["--repo", repo.url, "--source-name", "apps", "--state", str(state)]
    code, _, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    return flags


def test_exit_codes_of_a_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    repo = seeded(tmp_path)
    flags = _synced(capsys, repo, tmp_path / "st")

    code, out, _ = cli(capsys, "plan", *flags, "--branch", "main")
    assert code == 0
    assert "plan: 4 unchanged" in out

    repo.checkout("feature")
    repo.write("cm-0.yaml", configmap("cm-0", ns="default", data="a: changed"))
    repo.write("new.yaml", configmap("new", ns="default"))
    repo.commit_to(branch="feature")
    code, out, _ = cli(capsys, "plan", *flags, "--branch", "feature")
    assert code == 1
    assert "plan: 1 to create, 1 to configure, 3 unchanged" in out
    assert "configure  ConfigMap default/cm-0 (cm-0.yaml:1)" in out
    assert "+  a: changed" in out

    repo.checkout("broken")
    repo.write("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    repo.commit_to(branch="broken")
    code, out, _ = cli(capsys, "plan", *flags, "--branch", "broken")
    assert code == 2
    assert "bad.yaml:1: ConfigMap" in out

    repo.checkout("wipe")
    for i in range(4):
        repo.remove(f"cm-{i}.yaml")
    repo.commit_to(branch="wipe")
    code, out, _ = cli(capsys, "plan", *flags, "--branch", "wipe")
    assert code == 3
    assert "REFUSED by the EmptyRevision guard" in out

    code, doc, _ = plan_json(capsys, *flags, "--branch", "no-such-branch")
    assert code == 2
    assert doc["exitCode"] == 2
    assert doc["sources"][0]["result"] == "error"


def test_nothing_is_written(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    repo = seeded(tmp_path)
    state = tmp_path / "st"
    code, _, _ = cli(capsys, "plan", "--repo", repo.url, "--state", str(state))
    assert code == 1
    assert not state.exists()


def test_an_edit_of_the_store_after_the_last_sync_is_planned_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A plan trusts the last-applied configurations only while the store is exactly what
    the last settled sync left; after another writer's edit every object is diffed."""
    from tests.cli.test_unchanged import _edit

    repo = Repo(tmp_path / "repo")
    repo.write("cm.yaml", configmap("cfg", ns="default"))
    repo.write("other.yaml", configmap("other", ns="default"))
    repo.commit("seed")
    state = tmp_path / "st"
    flags = _synced(capsys, repo, state)
    repo.checkout("feature")
    repo.write("other.yaml", configmap("other", ns="default", data="a: '2'"))
    repo.commit_to(branch="feature")
    code, out, _ = cli(capsys, "plan", *flags, "--branch", "feature")
    assert code == 1
    assert "plan: 1 to configure, 1 unchanged" in out
    _edit(state)  # cfg's data edited in the store, its last-applied annotation kept
    code, out, _ = cli(capsys, "plan", *flags, "--branch", "feature")
    assert code == 1
    assert "plan: 2 to configure" in out
    assert "-  a: edited" in out


def test_any_ref_and_a_base_commit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--ref refs/pull/N/head` (what a Git host keeps for a pull request) and `--base` as a
    commit sha, as the CI jobs of docs/plan.md pass them."""
    from tests.source.source_gitrepo import git

    repo = seeded(tmp_path, n=2)
    base = git("rev-parse", "HEAD", cwd=repo.work)
    repo.checkout("pr")
    repo.write("cm-1.yaml", configmap("cm-1", ns="default", data="a: pr"))
    git("commit", "-q", "-am", "pr", cwd=repo.work)
    git("push", "-q", "origin", "HEAD:refs/pull/1/head", cwd=repo.work)
    flags = ["--repo", repo.url, "--state", str(tmp_path / "st")]
    code, doc, _ = plan_json(capsys, *flags, "--ref", "refs/pull/1/head", "--base", base)
    assert code == 1
    s = doc["sources"][0]
    assert s["ref"] == "ref 'refs/pull/1/head'"
    assert s["revision"] == git("rev-parse", "HEAD", cwd=repo.work)
    assert s["base"]["revision"] == base
    assert [r["name"] for r in s["base"]["changed"]] == ["cm-1"]
    code, _, err = cli(capsys, "plan", *flags, "--ref", "pull/1/head")
    assert code == 2
    assert "must be a full ref name" in err
