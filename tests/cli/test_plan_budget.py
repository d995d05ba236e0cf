"""The prune budget: a revision that would prune most objects is refused by `gitkrm plan`
(exit 3) and by the agent (nothing written; the GitSource status, the note and the status
file say why) until its commit carries `Gitkrm-Allow-Prune: <n>`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gitkrm.agent.state import store_url
from gitkrm.krm import GVK, ObjectRef
from gitkrm.store import open_store
from tests.cli.plan_repo import cli, plan_json, seeded
from tests.source.source_gitrepo import git


def _read(state: Path) -> tuple[dict[str, Any], list[str]]:
    """The GitSource `apps` and the names of the ConfigMaps in namespace default."""

    async def go() -> tuple[dict[str, Any], list[str]]:
        store = await open_store(store_url(state), read_only=True)
        try:
            ref = ObjectRef(group="gitkrm.io", kind="GitSource", name="apps",
                            namespace="gitkrm-system", version="v1alpha1")  # fmt: skip
            gs = await store.get(ref)
            listed = await store.list(
                GVK(group="", version="v1", kind="ConfigMap"), namespace="default"
            )
            return gs, sorted(o["metadata"]["name"] for o in listed["items"])
        finally:
            await store.close()

    return asyncio.run(go())


def test_a_branch_deleting_most_objects_is_refused_until_the_trailer_allows_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = seeded(tmp_path, n=12)
    state = tmp_path / "st"
    flags = ["--repo", repo.url, "--source-name", "apps", "--agent-name", "a1",
             "--state", str(state)]  # fmt: skip
    code, _, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err

    repo.checkout("cleanup")
    for i in range(1, 12):
        repo.remove(f"cm-{i}.yaml")
    repo.commit_to("clean up", branch="cleanup")
    code, doc, _ = plan_json(capsys, *flags, "--branch", "cleanup")
    assert code == 3
    source = doc["sources"][0]
    assert source["result"] == "refused"
    assert source["guard"]["name"] == "PruneBudgetExceeded"
    assert "would prune 11 of the 12 objects" in source["guard"]["message"]
    assert "'Gitkrm-Allow-Prune: 11'" in source["guard"]["message"]
    assert source["counts"]["prune"] == 11  # what it stopped is shown
    assert source["pruneBudget"] == {
        "count": 10, "percent": 25, "inventory": 12, "limit": 10, "prunes": 11,
    }  # fmt: skip
    code, doc, _ = plan_json(capsys, *flags, "--branch", "cleanup", "--prune-budget", "11")
    assert code == 1  # a raised budget lets it pass
    code, _, err = cli(capsys, "diff", *flags, "--branch", "cleanup")
    assert code == 2  # diff has no exit code of its own for a guard: an error
    assert "would prune 11 of the 12 objects" in err

    # Merged without the trailer: the agent refuses it whole.
    head = git("rev-parse", "HEAD", cwd=repo.work)
    git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=repo.work)
    code, out, err = cli(capsys, "run", "--once", *flags)
    assert code == 1
    assert "would prune 11 of the 12 objects" in out + err
    gs, names = _read(state)
    assert len(names) == 12  # nothing pruned
    ready = next(c for c in gs["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PruneBudgetExceeded")
    assert "Gitkrm-Allow-Prune: 11" in ready["message"]
    note = git("notes", "--ref", "gitkrm/a1", "show", head, cwd=repo.bare)
    assert "would prune 11 of the 12 objects" in note
    status_file = git("show", "gitkrm/status:status/a1.yaml", cwd=repo.bare)
    assert head in status_file
    assert "would prune 11 of the 12 objects" in status_file

    # A follow-up commit approving the prunes passes, in the plan and in the agent.
    repo.commit("clean up\n\nGitkrm-Allow-Prune: 11")
    code, doc, _ = plan_json(capsys, *flags, "--branch", "main")
    assert code == 1
    assert "guard" not in doc["sources"][0]
    assert doc["sources"][0]["pruneBudget"]["allowedByTrailer"] == 11
    code, out, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, out + err
    assert "11 pruned" in out
    gs, names = _read(state)
    assert names == ["cm-0"]
    ready = next(c for c in gs["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"


def test_too_small_an_approval_is_still_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = seeded(tmp_path, n=12)
    state = tmp_path / "st"
    flags = ["--repo", repo.url, "--state", str(state)]
    code, _, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    for i in range(1, 12):
        repo.remove(f"cm-{i}.yaml")
    repo.commit("clean up\n\nGitkrm-Allow-Prune: 5")
    code, doc, _ = plan_json(capsys, *flags)
    assert code == 3
    assert "trailer approves only 5" in doc["sources"][0]["guard"]["message"]
