"""An ApplicationSet's `syncPolicy.applicationsSync` through the real CLI: `create-update`
keeps an Application (and its objects) that is no longer generated, `create-only` leaves a
generated Application as it was made when the template changes."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.argocd_apps import ARGOCD, application_set
from tests.e2e.e2e_support import cm_ref, get_or_none, reading, run_bootstrap
from tests.e2e.manifests import configmap, namespace
from tests.source.source_gitrepo import RemoteRepo


def app_ref(name: str) -> ObjectRef:
    return ObjectRef(group="argoproj.io", kind="Application", name=name, namespace=ARGOCD)


def appset(url: str, policy: str, *envs: str, annotation: str, root: str) -> str:
    elements = {"list": {"elements": [{"env": e} for e in envs]}}
    return application_set(
        f"envs-{policy}", elements, app_name=f"{policy}-{{{{env}}}}", repo_url=url,
        path=f"{root}/{{{{env}}}}", destination={}, sync_policy={"automated": {"prune": True}},
        syncPolicy={"applicationsSync": policy},
        templatePatch=f"metadata: {{annotations: {{note: '{annotation}'}}}}",
    )  # fmt: skip


def write(repo: RemoteRepo, *envs: str, annotation: str) -> None:
    repo.write("bootstrap/update.yaml", appset(repo.url, "create-update", *envs,
                                               annotation=annotation, root="envs"))  # fmt: skip
    repo.write("bootstrap/only.yaml", appset(repo.url, "create-only", *envs,
                                             annotation=annotation, root="only"))  # fmt: skip
    repo.commit(f"environments {', '.join(envs)}; note {annotation}")
    repo.push()


async def test_create_update_keeps_and_create_only_does_not_update(
    repo: RemoteRepo, state: Path
) -> None:
    for env in ("dev", "prod"):
        repo.write(f"envs/{env}/ns.yaml", namespace(env))
        repo.write(f"envs/{env}/cm.yaml", configmap(f"{env}-config", {"env": env}, namespace=env))
        repo.write(f"only/{env}/cm.yaml", configmap(f"{env}-only", {"env": env}))
    write(repo, "dev", "prod", annotation="one")
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    async with reading(state) as store:
        for name in ("create-update-dev", "create-update-prod", "create-only-prod"):
            made = await get_or_none(store, app_ref(name))
            assert made is not None, name
            assert made["metadata"]["annotations"]["note"] == "one"
        assert await get_or_none(store, cm_ref("prod-config", "prod")) is not None

    write(repo, "dev", annotation="two")  # prod no longer generated; the template changed
    res = run_bootstrap(repo.url, state, "--wait", "--timeout", "2m")
    assert res.returncode == 0, res.stdout + res.stderr
    async with reading(state) as store:
        kept = await get_or_none(store, app_ref("create-update-prod"))
        assert kept is not None, res.stdout  # create-update deletes nothing
        assert await get_or_none(store, cm_ref("prod-config", "prod")) is not None
        updated = await get_or_none(store, app_ref("create-update-dev"))
        assert updated is not None
        assert updated["metadata"]["annotations"]["note"] == "two"
        only = await get_or_none(store, app_ref("create-only-dev"))
        assert only is not None
        assert only["metadata"]["annotations"]["note"] == "one"  # create-only: as made
        assert await get_or_none(store, app_ref("create-only-prod")) is not None
