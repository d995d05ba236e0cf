"""A source tree under the long-lived agent (`gitkrm run`): declaring objects added,
edited and removed in later revisions add, reconfigure and stop child sources, each with
its own worker (pushes into the local bare repository wake every source of it)."""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

from gitkrm.agent.tree.naming import child_name
from gitkrm.krm import ObjectRef
from tests.e2e.e2e_support import cm_ref, kubeconfig_server, read_object, run_agent, wait_for
from tests.e2e.manifests import configmap, gitsource, namespace
from tests.source.source_gitrepo import RemoteRepo

NS = "tree"


def declaring(name: str, path: str) -> str:
    text = gitsource(name, ".", path=path, interval="1h")
    return text.replace("metadata:\n", f"metadata:\n  namespace: {NS}\n", 1)


def api_delete(url: str) -> int:
    """DELETE through the agent's Kubernetes API (as `kubectl delete --wait=false`)."""
    with urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=30) as res:
        status: int = res.status
        return status


async def value(state: Path, name: str) -> str | None:
    obj = await read_object(state, cm_ref(name))
    return None if obj is None else str((obj.get("data") or {}).get("v"))


async def test_children_follow_later_revisions(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("root/ns.yaml", namespace(NS))
    repo.write("root/infra.yaml", declaring("infra", "infra"))
    repo.write("infra/cm.yaml", configmap("infra-cm", {"v": "1"}))
    repo.commit("infra")
    repo.push()
    agent = run_agent(
        "--repo", repo.url, "--path", "root", "--agent-name", "e2e", state=state, tmp_path=tmp_path
    )
    apps = ObjectRef(group="gitkrm.io", kind="GitSource", name="apps", namespace=NS)
    with agent:

        async def is_(name: str, v: str | None) -> bool:
            return await value(state, name) == v

        await wait_for(lambda: is_("infra-cm", "1"), what="the child's first sync")
        # a new declaring object in a later revision
        repo.write("root/apps.yaml", declaring("apps", "apps"))
        repo.write("apps/cm.yaml", configmap("apps-cm", {"v": "1"}))
        repo.commit("apps")
        repo.push()
        await wait_for(lambda: is_("apps-cm", "1"), what="a new child's sync")
        # an edit under a child's path: the child's own worker syncs it
        repo.write("infra/cm.yaml", configmap("infra-cm", {"v": "2"}))
        repo.commit("infra edit")
        repo.push()
        await wait_for(lambda: is_("infra-cm", "2"), what="an edit in a child")
        # the declaring object edited: the child moves to the new path (the old objects pruned)
        repo.write("root/apps.yaml", declaring("apps", "apps2"))
        repo.write("apps2/cm.yaml", configmap("apps2-cm", {"v": "1"}))
        repo.commit("apps moved")
        repo.push()
        await wait_for(lambda: is_("apps2-cm", "1"), what="the reconfigured child's sync")
        await wait_for(lambda: is_("apps-cm", None), what="the old path's objects pruned")
        # the declaring object removed: the child stops, its objects are pruned, no hang
        repo.remove("root/apps.yaml")
        repo.commit("no apps")
        repo.push()
        await wait_for(lambda: is_("apps2-cm", None), what="a removed child's objects pruned")

        async def gone() -> bool:
            return await read_object(state, apps) is None

        await wait_for(gone, what="the declaring GitSource deleted (not left Terminating)")
        child = ObjectRef(
            group="gitkrm.io", kind="GitSource", name=child_name(apps), namespace="gitkrm-system"
        )
        assert await read_object(state, child) is None
        assert await value(state, "infra-cm") == "2"
        # a user deletes a declaring object: its child goes at once (the parent's interval
        # is 1h), and the parent's next pass would create it again from Git
        path = f"/apis/gitkrm.io/v1alpha1/namespaces/{NS}/gitsources/infra"
        assert await asyncio.to_thread(api_delete, kubeconfig_server(state) + path) == 200
        await wait_for(lambda: is_("infra-cm", None), what="a deleted child's objects pruned")
        assert agent.alive, agent.log()
    assert agent.proc.returncode == 0, agent.log()
