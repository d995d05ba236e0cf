"""`gitkrm run --apply-mode server-side` twice and `gitkrm diff --apply-mode server-side`
with the real CLI over manifests that leave out what the server defaults (#22): the
second run changes nothing and diff says in sync; an object kubectl applied client-side
keeps its last-applied annotation (owned by kubectl-client-side-apply) through a
server-side sync that adopts it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitkrm.krm import Obj, ObjectRef
from tests.e2e.e2e_support import gitkrm, reading, writing
from tests.source.source_gitrepo import RemoteRepo
from tests.support import defaultable
from tests.support.manifests import yaml_text

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def web(replicas: int = 2) -> Obj:
    """The Deployment `web` as `kubectl create --dry-run -o yaml` writes it."""
    return defaultable.deployment(replicas=replicas, image="nginx:1.25", creationTimestamp=None)


MANIFESTS = yaml_text(
    web(),
    defaultable.statefulset(image="postgres:16"),
    defaultable.gadget_crd(),
    defaultable.gadget(),
)

WEB = ObjectRef(group="apps", kind="Deployment", namespace="default", name="web")


async def get(state: Path, ref: ObjectRef) -> dict[str, Any]:
    async with reading(state) as store:
        return await store.get(ref)


def synced(repo: RemoteRepo, state: Path, cwd: Path, message: str, files: Mapping[str, str]) -> str:
    """Commit and push `files` (by path), then `gitkrm run --once --apply-mode server-side`,
    which must succeed: what it printed."""
    for path, text in files.items():
        repo.write(path, text)
    repo.commit(message)
    repo.push()
    res = gitkrm("run", "--once", *flags(repo, state), cwd=cwd)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def flags(repo: RemoteRepo, state: Path) -> tuple[str, ...]:
    return ("--repo", repo.url, "--state", str(state), "--apply-mode", "server-side")


async def test_a_second_server_side_run_changes_nothing(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    out = synced(repo, state, tmp_path, "app", {"app.yaml": MANIFESTS})
    assert "4 created" in out, out
    first = await get(state, WEB)
    diff = gitkrm("diff", *flags(repo, state), cwd=tmp_path)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    res = gitkrm("run", "--once", *flags(repo, state), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert " 0 configured" in res.stdout, res.stdout
    again = await get(state, WEB)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    # A commit next to them: every object is planned again, and found unchanged.
    more = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: more}\n"
    out = synced(repo, state, tmp_path, "more", {"more.yaml": more})
    assert "1 created, 0 configured, 0 pruned, 4 unchanged" in out, out
    assert gitkrm("diff", *flags(repo, state), cwd=tmp_path).returncode == 0


async def test_a_server_side_sync_keeps_another_managers_annotation(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    """Someone `kubectl apply`s (client-side) an object gitkrm syncs server-side: the
    last-applied annotation is kubectl-client-side-apply's, and gitkrm's next syncs
    leave it where it is (they neither own nor set it)."""
    synced(repo, state, tmp_path, "app", {"app.yaml": yaml_text(web())})
    async with writing(state) as store:
        live = await store.get(WEB)
        note = json.dumps(web(), separators=(",", ":"))
        live["metadata"]["annotations"][LAST_APPLIED] = note
        await store.update(live, field_manager="kubectl-client-side-apply")
    out = synced(repo, state, tmp_path, "three", {"app.yaml": yaml_text(web(replicas=3))})
    assert " 1 configured" in out, out
    after = await get(state, WEB)
    assert after["spec"]["replicas"] == 3
    assert after["metadata"]["annotations"][LAST_APPLIED] == note
    assert gitkrm("diff", *flags(repo, state), cwd=tmp_path).returncode == 0
