"""Argo CD's AppProject rules through the real CLI (`run --once --interpret argocd` and the
long-lived agent), on real bare repositories and the real SQLite store: each rule refuses
one Application (Argo CD's condition and message on its status, nothing of it applied) and
lets it through once the project permits it; a project that turns strict stops its
Applications and leaves their objects; an AppProject created or edited with kubectl
re-evaluates the Applications that use it at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitkrm.errors import NotFound
from gitkrm.krm import GVK, ObjectRef
from tests.e2e.argocd_apps import ARGOCD, application, other_repository
from tests.e2e.argocd_projects import IN_CLUSTER, app_project, write_projects
from tests.e2e.e2e_support import bootstrap_agent, cm_ref, get_or_none, reading, run_bootstrap
from tests.e2e.manifests import namespace
from tests.server.conftest import Kubectl, gitkrm_serve, kubectl_path
from tests.source.source_gitrepo import RemoteRepo
from tests.support.wait import eventually_async

APPLICATION = GVK(group="argoproj.io", version="v1alpha1", kind="Application")
INVALID = "InvalidSpecError"


@pytest.fixture
def other(tmp_path: Path) -> RemoteRepo:
    return other_repository(tmp_path)


async def sync_projects(
    repo: RemoteRepo, state: Path, *, other_url: str, permissive: bool, drop: str = ""
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Commit the projects (strict or permissive; `drop` a file) and sync once: the run,
    each status."""
    write_projects(repo, other_url=other_url, permissive=permissive)
    if drop:
        repo.remove(drop)
    repo.commit("permissive projects" if permissive else "strict projects")
    repo.push()
    return run_bootstrap(repo.url, state), await applications(state)


async def applications(state: Path) -> dict[str, dict[str, Any]]:
    """Each Application's status, by name (all namespaces)."""
    async with reading(state) as store:
        listed = await store.list(APPLICATION)
    return {o["metadata"]["name"]: o.get("status") or {} for o in listed["items"]}


def conditions(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["message"]) for c in status.get("conditions") or []]


def sync_health(status: dict[str, Any]) -> tuple[str, str]:
    return status["sync"]["status"], status["health"]["status"]


async def present(state: Path, *refs: ObjectRef) -> list[bool]:
    async with reading(state) as store:
        return [await get_or_none(store, r) is not None for r in refs]


def ns_ref(name: str) -> ObjectRef:
    return ObjectRef(group="", kind="Namespace", name=name)


def dest(ns: str, project: str = "team-a") -> str:
    return (
        f"application destination server '{IN_CLUSTER}' and namespace '{ns}' do not match any "
        f"of the allowed destinations in project '{project}'"
    )


async def test_each_project_rule_refuses_an_application_and_then_lets_it_through(
    repo: RemoteRepo, state: Path, other: RemoteRepo, tmp_path: Path
) -> None:
    res, apps = await sync_projects(repo, state, other_url=other.url, permissive=False)
    assert res.returncode == 1, res.stdout + res.stderr
    assert (
        "error: Application argocd/missing: Application referencing project nowhere which "
        "does not exist" in res.stdout
    )
    refused = {
        "missing": [(INVALID, "Application referencing project nowhere which does not exist")],
        "wrong-repo": [
            (INVALID, f"application repo {other.url} is not permitted in project 'team-a'")
        ],
        "wrong-dest": [(INVALID, dest("prod"))],
        "private": [(INVALID, dest("team-a-private", "team-b"))],  # a `!` destination
        "elsewhere": [
            (
                "UnknownError",
                "application 'elsewhere' in namespace 'apps-x' is not "
                "permitted to use project 'team-a'",
            )
        ],
    }
    for name, conds in refused.items():
        assert conditions(apps[name]) == conds, name
        assert sync_health(apps[name]) == ("Unknown", "Unknown"), name
    # The objects' rules fail the whole sync: nothing of it applied, not even the rest.
    secrets, cluster = apps["secrets"], apps["cluster"]
    [(kind, message)] = conditions(secrets)
    assert kind in ("SyncError", "ComparisonError")
    assert "Secret team-a-secrets/team-a-password: resource :Secret is not permitted in " \
           "project team-a" in message  # fmt: skip
    [(_, message)] = conditions(cluster)
    assert "resource rbac.authorization.k8s.io:ClusterRole is not permitted in project " \
           "team-a" in message  # fmt: skip
    assert secrets["sync"]["status"] == "OutOfSync"
    [(_, message)] = conditions(apps["stray"])
    assert "ConfigMap stray-x/stray: namespace stray-x is not permitted in project 'team-a'" in (
        message
    )
    assert await present(
        state, cm_ref("before-the-secret", "team-a-secrets"), ns_ref("team-a-secrets"),
        cm_ref("beside-the-role", "team-a-cluster"), cm_ref("plain", "team-a-private"),
        cm_ref("plain", ARGOCD), cm_ref("other-cm", "team-a-wrong-repo"),
        cm_ref("stray", "stray-x"), ns_ref("stray-x"),
    ) == [False] * 8  # fmt: skip
    # What the project permits syncs: the root (project default, not in the target: Argo
    # CD's permissive default), good (Namespace whitelisted).
    for name in ("root", "good"):
        assert sync_health(apps[name]) == ("Synced", "Healthy"), name
    assert await present(state, cm_ref("plain", "team-a-good")) == [True]
    # A deny window open now: compared, not applied (Argo CD's automated sync waits)
    assert sync_health(apps["windowed"]) == ("OutOfSync", "Missing")
    assert conditions(apps["windowed"]) == []
    assert await present(state, cm_ref("plain", "windowed")) == [False]
    assert "compared revision" in res.stdout
    # kubectl shows Argo CD's condition
    with gitkrm_serve(state, tmp_path / "serve.log"):
        kubectl = Kubectl(kubectl_path(), state / "kubeconfig", tmp_path / "home")
        shown = kubectl(
            "get",
            "application",
            "missing",
            "-n",
            ARGOCD,
            "-o",
            "jsonpath={.status.conditions[0].type}: {.status.conditions[0].message}",
        )
    assert shown == f"{INVALID}: Application referencing project nowhere which does not exist"

    # every rule relaxed: each Application syncs
    res, apps = await sync_projects(repo, state, other_url=other.url, permissive=True)
    assert res.returncode == 0, res.stdout + res.stderr
    for name, status in apps.items():
        assert sync_health(status) == ("Synced", "Healthy"), (name, status.get("conditions"))
        assert conditions(status) == [], name
    assert await present(
        state, cm_ref("before-the-secret", "team-a-secrets"), cm_ref("plain", ARGOCD),
        ObjectRef(group="", kind="Secret", name="team-a-password", namespace="team-a-secrets"),
        ObjectRef(group="rbac.authorization.k8s.io", kind="ClusterRole", name="team-a-reader"),
        cm_ref("plain", "team-a-private"), cm_ref("plain", "team-a-elsewhere"),
        cm_ref("other-cm", "team-a-wrong-repo"), cm_ref("plain", "prod"),
        cm_ref("plain", "windowed"),  # an allow window open now
        cm_ref("stray", "stray-x"),
    ) == [True] * 10  # fmt: skip

    # strict again: the Applications it refuses stop; their objects stay (Argo CD's
    # InvalidSpecError touches no resource). The Secret, gone from Git and no longer
    # permitted, is out of Argo CD's sight: left in place, not pruned.
    res, apps = await sync_projects(
        repo, state, other_url=other.url, permissive=False, drop="secrets/secret.yaml"
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert conditions(apps["private"]) == [(INVALID, dest("team-a-private", "team-b"))]
    assert sync_health(apps["private"]) == ("Unknown", "Unknown")
    assert apps["private"]["resources"]  # what the last reconciliation found stays
    assert await present(state, cm_ref("plain", "team-a-private")) == [True]
    assert sync_health(apps["secrets"]) == ("Synced", "Healthy"), apps["secrets"]
    secret = ObjectRef(group="", kind="Secret", name="team-a-password", namespace="team-a-secrets")
    assert await present(state, secret) == [True]


async def test_an_appproject_made_or_edited_with_kubectl_re_evaluates_its_applications(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    repo.write("bootstrap/ns.yaml", namespace(ARGOCD))
    body = application("late", repo.url, "late", dest="late")
    repo.write("bootstrap/late.yaml", body.replace('"project": "default"', '"project": "late"'))
    repo.write("late/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\n")
    repo.commit("an application of a project not made yet")
    repo.push()
    with bootstrap_agent(repo.url, state, tmp_path, interval="1h") as agent:

        async def status() -> dict[str, Any]:
            try:
                return (await applications(state)).get("late") or {}
            except NotFound:
                return {}

        missing = [(INVALID, "Application referencing project late which does not exist")]

        async def refused() -> bool:
            return conditions(await status()) == missing

        await eventually_async(refused, timeout=90, message="late refused")
        kubectl = Kubectl(kubectl_path(), state / "kubeconfig", tmp_path / "home")
        everything: dict[str, Any] = {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        }
        kubectl("apply", "-f", "-", input=app_project("late", **everything))

        async def synced() -> bool:
            st = await status()
            return bool(st) and sync_health(st) == ("Synced", "Healthy") and not conditions(st)

        await eventually_async(synced, timeout=60, message="late synced")
        assert await present(state, cm_ref("late", "late")) == [True]
        strict: dict[str, Any] = {
            **everything,
            "namespaceResourceBlacklist": [{"group": "", "kind": "ConfigMap"}],
        }
        kubectl("apply", "-f", "-", input=app_project("late", **strict))

        # the interval is an hour, and nothing else changed: the AppProject's watch re-reads
        # the Application, whose child then syncs under the new rules
        async def failed() -> bool:
            return any(
                "resource :ConfigMap is not permitted in project late" in m
                for _, m in conditions(await status())
            )

        await eventually_async(failed, timeout=60, message="late failed")
        assert await present(state, cm_ref("late", "late")) == [True]  # not pruned
        assert agent.stop() == 0
