"""`gitkrm run --once --apply-mode server-side` with the real CLI: switching a source between
the two apply modes leaves no field behind, and an object too large for the last-applied
annotation syncs in server-side mode only (the shared GitOps scenarios run in both modes in
test_gitops.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.e2e_support import cm_ref, gitkrm, reading
from tests.e2e.manifests import configmap
from tests.source.source_gitrepo import RemoteRepo

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


async def read_cm(state: Path, name: str) -> dict[str, Any]:
    async with reading(state) as store:
        return await store.get(cm_ref(name))


async def test_switching_apply_modes_and_a_large_object(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    flags = ("--repo", repo.url, "--state", str(state), "--agent-name", "e2e")
    repo.write("app.yaml", configmap("app", {"a": "1", "b": "2", "c": "3"}))
    repo.commit("abc")
    repo.push()
    res = gitkrm("run", "--once", *flags, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert LAST_APPLIED in (await read_cm(state, "app"))["metadata"]["annotations"]

    # To server-side, in the same commit as b leaves Git: b goes, and so does the annotation.
    repo.write("app.yaml", configmap("app", {"a": "1", "c": "3"}))
    repo.commit("no b")
    repo.push()
    ss = (*flags, "--apply-mode", "server-side")
    res = gitkrm("run", "--once", *ss, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "1 configured" in res.stdout
    app = await read_cm(state, "app")
    assert app["data"] == {"a": "1", "c": "3"}
    assert LAST_APPLIED not in app["metadata"]["annotations"]
    assert gitkrm("diff", *ss, cwd=tmp_path).returncode == 0

    # A ConfigMap of 600 KiB: server-side apply has no annotation to outgrow.
    big = configmap("big", {"blob": "x" * (600 * 1024)})
    repo.write("big.yaml", big)
    repo.commit("big")
    repo.push()
    res = gitkrm("run", "--once", *flags, cwd=tmp_path)  # client-side: refused before writing
    assert res.returncode == 1
    assert "big.yaml:1: ConfigMap default/big: too big for client-side apply" in res.stderr
    assert "sync with --apply-mode server-side" in res.stderr
    res = gitkrm("run", "--once", *ss, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert len((await read_cm(state, "big"))["data"]["blob"]) == 600 * 1024

    # Back to client-side as c leaves Git: gitkrm's Apply entry tells what to remove.
    repo.remove("big.yaml")
    repo.write("app.yaml", configmap("app", {"a": "1"}))
    repo.commit("no c, no big")
    repo.push()
    res = gitkrm("run", "--once", *flags, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "1 configured, 1 pruned" in res.stdout
    app = await read_cm(state, "app")
    assert app["data"] == {"a": "1"}
    assert LAST_APPLIED in app["metadata"]["annotations"]
    assert gitkrm("diff", *flags, cwd=tmp_path).returncode == 0
