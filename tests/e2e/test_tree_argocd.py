"""An Argo CD app of apps through the real CLI (`run --once --interpret argocd`), on real
bare repositories and the real SQLite store: the first sync of the whole tree with
`--wait`, an edit in a leaf, an Application removed with the resources finalizer (its
objects pruned, no Terminating hang) and one without it (its objects left), an Application
without automated sync (OutOfSync, nothing applied), a child on a second repository, and
`kubectl get applications` against the embedded API showing Synced and Healthy."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from gitkrm.agent.tree.naming import child_name
from gitkrm.errors import NotFound
from gitkrm.krm import GVK, ObjectRef
from tests.e2e.argocd_apps import ARGOCD, application, other_repository, ui, write_app_of_apps
from tests.e2e.e2e_support import (
    bootstrap_agent,
    cm_ref,
    get_or_none,
    kubeconfig_server,
    read_object,
    reading,
    run_bootstrap,
)
from tests.server.conftest import Kubectl, gitkrm_serve, kubectl_path
from tests.source.source_gitrepo import RemoteRepo
from tests.support.wait import eventually, eventually_async

APPLICATION = GVK(group="argoproj.io", version="v1alpha1", kind="Application")


def app_ref(name: str) -> ObjectRef:
    return ObjectRef(group="argoproj.io", kind="Application", name=name, namespace=ARGOCD)


def deploy_ref(name: str, namespace: str) -> ObjectRef:
    return ObjectRef(group="apps", kind="Deployment", name=name, namespace=namespace)


async def statuses(state: Path) -> dict[str, tuple[str, str]]:
    """Each Application's (sync status, health status)."""
    async with reading(state) as store:
        listed = await store.list(APPLICATION, ARGOCD)
    return {
        o["metadata"]["name"]: (
            o.get("status", {}).get("sync", {}).get("status", ""),
            o.get("status", {}).get("health", {}).get("status", ""),
        )
        for o in listed["items"]
    }


@pytest.fixture
def other(tmp_path: Path) -> RemoteRepo:
    return other_repository(tmp_path)


def kubectl_get_applications(state: Path, home: Path) -> str:
    """`kubectl get applications -o wide` through `gitkrm serve` on the state dir."""
    with gitkrm_serve(state, state.parent / "serve.log"):
        kubectl = Kubectl(kubectl_path(), state / "kubeconfig", home)
        return kubectl("get", "applications", "-n", ARGOCD, "-o", "wide")


async def test_an_app_of_apps_syncs_edits_and_removes_children(
    repo: RemoteRepo, state: Path, other: RemoteRepo, tmp_path: Path
) -> None:
    write_app_of_apps(repo, other=other)
    repo.commit("app of apps")
    repo.push()
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    manual_child = child_name(app_ref("manual"))
    assert f"{manual_child}: compared revision " in res.stdout
    assert (
        f"{manual_child}: compared revision {repo.head()[:12]}: 2 object(s) differ, not "
        "applied" in res.stdout
    )
    assert await statuses(state) == {
        "root": ("Synced", "Healthy"),
        "guestbook": ("Synced", "Healthy"),
        "kustomize-guestbook": ("Synced", "Healthy"),
        "keeper": ("Synced", "Healthy"),
        "other": ("Synced", "Healthy"),
        "manual": ("OutOfSync", "Missing"),  # no automated sync: compared, not applied
    }
    async with reading(state) as store:
        web = await get_or_none(store, deploy_ref("guestbook-ui", "guestbook"))
        assert web is not None  # the destination namespace, created (CreateNamespace=true)
        assert web["status"]["availableReplicas"] == 1
        # the kustomize source's namePrefix, replicas and a patch file outside its path
        kust = await get_or_none(store, deploy_ref("kust-guestbook-ui", "kustomized"))
        assert kust is not None
        assert kust["spec"]["replicas"] == 2
        assert kust["metadata"]["labels"]["team"] == "a"
        assert await get_or_none(store, cm_ref("other-cm", "other"))  # second repository
        assert await get_or_none(store, cm_ref("manual-cm", "manual")) is None
        project = ObjectRef(group="argoproj.io", kind="AppProject", name="default",
                            namespace=ARGOCD)  # fmt: skip
        assert await get_or_none(store, project) is not None  # synced with its CRD
        ns = await get_or_none(store, ObjectRef(group="", kind="Namespace", name="guestbook"))
        assert ns is not None
        assert ns["metadata"]["annotations"]["gitkrm.io/prune"] == "disabled"
        gb = await get_or_none(store, app_ref("guestbook"))
        assert gb is not None
        op = gb["status"]["operationState"]
        assert op["phase"] == "Succeeded"
        assert gb["status"]["sync"]["revision"] == op["syncResult"]["revision"]
        assert {r["kind"] for r in gb["status"]["resources"]} == {
            "Namespace", "Deployment", "Service"
        }  # fmt: skip
        manual = await get_or_none(store, app_ref("manual"))
        assert manual is not None
        assert "operationState" not in manual["status"]
        elsewhere = await get_or_none(store, app_ref("other"))  # HEAD: its default branch
        assert elsewhere is not None
        assert "conditions" not in elsewhere["status"]  # nothing it asks for is left undone
        assert elsewhere["status"]["sync"]["status"] == "Synced"
    shown = kubectl_get_applications(state, tmp_path / "home")
    rows = [line.split() for line in shown.splitlines()]
    assert rows[0] == ["NAME", "SYNC", "STATUS", "HEALTH", "STATUS", "REVISION", "PROJECT"]
    by_name = {r[0]: r[1:] for r in rows[1:]}
    assert by_name["guestbook"][:2] == ["Synced", "Healthy"]
    assert by_name["guestbook"][3] == "default"
    assert by_name["manual"][:2] == ["OutOfSync", "Missing"]

    # an edit in a leaf: applied, the Application Synced at the new revision
    repo.write("guestbook/guestbook-ui.yaml", ui("guestbook-ui", replicas=2))
    repo.commit("two replicas")
    repo.push()
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    web = await read_object(state, deploy_ref("guestbook-ui", "guestbook"))
    assert web is not None
    assert web["spec"]["replicas"] == 2
    gb = await read_object(state, app_ref("guestbook"))
    assert gb is not None
    assert gb["status"]["sync"] == {**gb["status"]["sync"], "status": "Synced",
                                    "revision": repo.head()}  # fmt: skip

    # removed from Git: with the resources finalizer its objects go (no Terminating hang);
    # without it they stay (Argo CD's cascade rule)
    repo.remove("apps/guestbook.yaml")
    repo.remove("apps/keeper.yaml")
    repo.commit("fewer apps")
    repo.push()
    res = run_bootstrap(repo.url, state)
    assert res.returncode == 0, res.stdout + res.stderr
    async with reading(state) as store:
        assert await get_or_none(store, app_ref("guestbook")) is None
        assert await get_or_none(store, app_ref("keeper")) is None
        assert await get_or_none(store, deploy_ref("guestbook-ui", "guestbook")) is None
        assert await get_or_none(store, cm_ref("keeper-cm", "keeper")) is not None
        # the namespace Argo CD created is never deleted with the Application
        assert await get_or_none(store, ObjectRef(group="", kind="Namespace", name="guestbook"))
        assert await get_or_none(store, deploy_ref("kust-guestbook-ui", "kustomized"))


async def test_a_repository_carrying_argo_cds_crds_syncs_and_owns_them(
    repo: RemoteRepo, state: Path
) -> None:
    import yaml

    from gitkrm.agent.tree.argocd_crds import crds

    installed = []
    for crd in crds():  # as Argo CD's install manifest carries them (no gitkrm labels)
        crd["metadata"]["labels"] = {"app.kubernetes.io/part-of": "argocd"}
        installed.append(yaml.safe_dump(crd))
    repo.write("bootstrap/crds.yaml", "---\n".join(installed))
    repo.write("bootstrap/argocd-ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n"
               f"  name: {ARGOCD}\n")  # fmt: skip
    repo.write("bootstrap/guestbook.yaml", application("guestbook", repo.url, "guestbook",
                                                       dest="guestbook"))  # fmt: skip
    repo.write("guestbook/guestbook-ui.yaml", ui("guestbook-ui"))
    repo.commit("argo cd's crds and one application")
    repo.push()
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    owned = await read_object(
        state,
        ObjectRef(group="apiextensions.k8s.io", kind="CustomResourceDefinition",
                  name="applications.argoproj.io"),
    )  # fmt: skip
    assert owned is not None
    assert owned["metadata"]["labels"]["gitkrm.io/source"] == "default"
    assert owned["metadata"]["labels"]["app.kubernetes.io/part-of"] == "argocd"  # Git's
    assert await statuses(state) == {"guestbook": ("Synced", "Healthy")}


async def resource_versions(state: Path) -> dict[str, str]:
    async with reading(state) as store:
        listed = await store.list(APPLICATION, ARGOCD)
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in listed["items"]}


def passes_of(server: str, source: str) -> float:
    """How many passes of `source` the agent's /metrics counted (quiet ones too)."""
    with urllib.request.urlopen(f"{server}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("gitkrm_sync_duration_seconds_count") and f'source="{source}"' in line
    )


async def test_the_long_lived_agent_leaves_settled_applications_alone(
    repo: RemoteRepo, state: Path, other: RemoteRepo, tmp_path: Path
) -> None:
    """Application statuses are written with the object (no status subresource): settled
    ones are not rewritten pass after pass, and a manual one's comparisons stay quiet."""
    write_app_of_apps(repo, other=other)
    repo.commit("app of apps")
    repo.push()
    expected = {
        "root": ("Synced", "Healthy"), "guestbook": ("Synced", "Healthy"),
        "kustomize-guestbook": ("Synced", "Healthy"), "keeper": ("Synced", "Healthy"),
        "other": ("Synced", "Healthy"), "manual": ("OutOfSync", "Missing"),
    }  # fmt: skip
    with bootstrap_agent(repo.url, state, tmp_path, interval="2s") as agent:

        async def settled() -> bool:
            try:
                return await statuses(state) == expected
            except NotFound:  # the agent has not made its store yet
                return False

        await eventually_async(settled, timeout=90, message="the applications settled")
        before = await resource_versions(state)
        server = kubeconfig_server(state)
        manual = child_name(app_ref("manual"))
        counted = passes_of(server, manual)
        eventually(lambda: passes_of(server, manual) >= counted + 3, timeout=60,
                   message="three more passes of the manual application")  # fmt: skip
        assert await resource_versions(state) == before, agent.log()
        assert agent.stop() == 0
