"""Public GitOps repositories end to end through the CLI (issue #16, Tests).

Each corpus case (tests/corpus/cases.py) is copied into a Git repository (a bare remote on
disk and a work clone) and taken through what a new user does, every step a `gitkrm`
process: `validate` and the first `run --once --wait` agree (tests/support/verdicts.py: the
same verdict and the same objects; for a refused revision the same problems,
tests/support/validate_run.py), that run reaches Current on the embedded target (the
bundled controllers run), `diff` finds nothing, an edit is committed (`diff` shows exactly
the objects its sync then changes) and synced, `git revert` of it is synced and brings back
the objects of the first sync, and `history` lists the three revisions as synced.

A case that fails today for a reason another piece of work fixes is a strict xfail (the
reason is in the case table): it turns red once fixed, until the entry is removed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Final

import orjson
import pytest

from gitkrm.errors import NotFound
from gitkrm.krm import Obj
from gitkrm.sync import inventory
from gitkrm.sync.keys import LAST_APPLIED, REVISION
from gitkrm.sync.objkey import parse_key
from tests.corpus.cases import CASES, Case
from tests.e2e.e2e_support import gitkrm, reading
from tests.source.source_gitrepo import RemoteRepo, git
from tests.support.validate_run import assert_same_problems, run_problems, validate_problems
from tests.support.verdicts import inventory_keys, validate_outcome

AGENT: Final = "corpus"
SOURCE: Final = "default"


def _param(case: Case) -> Any:
    if case.xfail is None:
        return pytest.param(case, id=case.id)
    mark = pytest.mark.xfail(strict=True, reason=case.xfail, raises=AssertionError)
    return pytest.param(case, id=case.id, marks=mark)


def _desired(obj: Obj) -> dict[str, Any]:
    """What a sync decides about an object: the configuration it applied, its labels and
    every field but metadata and status (a controller's annotations, uids and
    resourceVersions and gitkrm's revision annotation left out)."""
    md = obj["metadata"]
    applied = (md.get("annotations") or {}).get(LAST_APPLIED)
    return {
        "applied": orjson.loads(applied) if applied else None,
        "labels": md.get("labels"),
        **{k: v for k, v in obj.items() if k not in ("metadata", "status")},
    }


async def _objects(state: Path) -> dict[str, dict[str, Any]]:
    """Every object of the source's inventory as `_desired` sees it, by inventory key."""
    async with reading(state) as store:
        inv = await inventory.read(store, source=SOURCE, inventory_id=f"{AGENT}.{SOURCE}")
        out: dict[str, dict[str, Any]] = {}
        for key, ref in zip(sorted(inv.entries), inv.refs(), strict=True):
            try:
                obj = await store.get(ref)
            except NotFound as e:
                raise AssertionError(f"{key} is in the inventory but not in the store") from e
            assert obj["metadata"].get("annotations", {}).get(REVISION), key
            out[key] = _desired(obj)
        return out


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _diff_name(key: str) -> str:
    """How `diff` names the object of an inventory key, version left out: `<group>.<Kind>.
    <namespace>.<name>`, empty parts dropped."""
    ref = parse_key(key)
    return ".".join(p for p in (ref.group, ref.kind, ref.namespace, ref.name) if p)


def _diffed(text: str) -> set[str]:
    """The objects a `diff` output shows (its `diff -u -N live/<name> merged/<name>` lines),
    named as `_diff_name` does: the version (the part before the kind) left out."""
    out = set()
    for line in text.splitlines():
        if line.startswith("diff -u -N live/"):
            parts = line.split()[3].removeprefix("live/").split(".")
            kind = next(i for i, p in enumerate(parts) if p[:1].isupper())
            out.add(".".join(parts[: kind - 1] + parts[kind:]))
    return out


def _synced_ok(res: Any, what: str) -> None:
    assert res.returncode == 0, f"{what} exited {res.returncode}:\n{res.stdout}{res.stderr}"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
async def test_corpus_repository(case: Case, repo: RemoteRepo, state: Path, tmp_path: Path) -> None:
    case.copy_to(repo.work)
    first = repo.commit(f"{case.repo}: vendored")
    repo.push()
    flags = ("--repo", repo.url, "--path", case.path, "--state", str(state), "--agent-name", AGENT)

    # validate_outcome renders in-process with asyncio.run: off this test's event loop.
    checked = await asyncio.to_thread(validate_outcome, repo.work / case.path)
    wait = ("--wait", "--timeout", "60s")
    synced = gitkrm("run", *flags, "--once", *wait, "--log-format", "json", cwd=tmp_path)
    applied = await inventory_keys(state)
    if case.invalid:
        assert (checked.ok, synced.returncode, applied) == (False, 1, frozenset()), (
            f"{case.id} must be refused by both, nothing applied:\n{checked.output}\n---\n"
            f"{synced.stdout}{synced.stderr}"
        )
        assert_same_problems(
            validate_problems(checked.output, relative_to=str(repo.work / case.path)),
            run_problems(synced.stderr),
        )
        return
    assert checked.ok, f"validate refuses what run synced:\n{checked.output}"
    _synced_ok(synced, "the first run --once --wait")
    assert "are Current" in synced.stdout, synced.stdout
    assert checked.keys == applied, ("validate and run differ", checked.keys ^ applied)
    before = await _objects(state)
    assert before, "the first sync applied nothing"

    in_sync = gitkrm("diff", *flags, cwd=tmp_path)
    assert in_sync.returncode == 0, f"diff after the sync:\n{in_sync.stdout}{in_sync.stderr}"

    assert case.edit is not None, f"{case.id} needs an edit"
    case.edit.apply(repo.work)
    edited = repo.commit(f"{case.id}: {case.edit.new.strip()}")
    repo.push()
    foreseen = gitkrm("diff", *flags, cwd=tmp_path)
    assert foreseen.returncode == 1, f"diff of the edit:\n{foreseen.stdout}{foreseen.stderr}"
    _synced_ok(gitkrm("run", *flags, "--once", cwd=tmp_path), "the sync of the edit")
    after_edit = await _objects(state)
    changed = _changed(before, after_edit)
    assert changed, f"the edit of {case.edit.file} changed no object"
    assert _diffed(foreseen.stdout) == {_diff_name(k) for k in changed}, foreseen.stdout

    git("revert", "--no-edit", "HEAD", cwd=repo.work)
    reverted = repo.head()
    repo.push()
    _synced_ok(gitkrm("run", *flags, "--once", cwd=tmp_path), "the sync of the revert")
    after_revert = await _objects(state)
    assert after_revert == before, (
        f"after the revert these objects differ from the first sync: "
        f"{_changed(before, after_revert)}"
    )

    listed = gitkrm("history", "--state", str(state), "-o", "json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    results = {
        c["commit"]: [(s["agent"], s["source"], s["result"]) for s in c["syncs"]]
        for c in orjson.loads(listed.stdout)["commits"]
    }
    for commit in (first, edited, reverted):
        assert results.get(commit) == [(AGENT, SOURCE, "Succeeded")], (commit, results)
