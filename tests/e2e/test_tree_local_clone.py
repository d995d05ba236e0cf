"""`gitkrm run --repo .` in a clone of a GitOps repository whose Applications and
GitRepositories name the clone's remote: at the parent's revision, or a branch or tag the
clone has, the children are the clone (its local commits included), not a fetch of a
remote that is not even reachable here (`git.invalid` never resolves)."""

from __future__ import annotations

from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.argocd_apps import ARGOCD, application, ui
from tests.e2e.e2e_support import get_or_none, reading, run_bootstrap
from tests.e2e.manifests import git_repository, kustomization, namespace
from tests.source.source_gitrepo import RemoteRepo, git

REMOTE = "https://git.invalid/example/fleet.git"
SPELLED = "git@git.invalid:example/fleet"  # the same repository, spelled as ssh


async def deployments(state: Path, *names: str) -> dict[str, bool]:
    async with reading(state) as store:
        return {
            n: await get_or_none(
                store, ObjectRef(group="apps", kind="Deployment", name=n, namespace=n)
            )
            is not None
            for n in names
        }


async def test_argo_cd_applications_naming_the_clones_remote_read_the_clone(
    repo: RemoteRepo, state: Path
) -> None:
    git("remote", "set-url", "origin", REMOTE, cwd=repo.work)
    repo.write("bootstrap/argocd-ns.yaml", namespace(ARGOCD))
    repo.write("bootstrap/root.yaml", application("root", REMOTE, "apps", dest=ARGOCD,
                                                  create_namespace=False))  # fmt: skip
    repo.write("apps/web.yaml", application("web", SPELLED, "web", dest="web"))
    repo.write("apps/pinned.yaml", application("pinned", REMOTE, "pinned", dest="pinned",
                                               targetRevision="v9"))  # fmt: skip
    repo.write("apps/stable.yaml", application("stable", REMOTE, "stable", dest="stable",
                                               targetRevision="stable"))  # fmt: skip
    repo.write("web/ui.yaml", ui("web"))
    repo.write("pinned/ui.yaml", ui("pinned"))
    repo.commit("app of apps, not pushed")  # only the clone has it
    git("checkout", "-q", "-b", "stable", cwd=repo.work)
    repo.write("stable/ui.yaml", ui("stable"))  # on the clone's own branch stable only
    repo.commit("stable")
    git("checkout", "-q", "main", cwd=repo.work)
    res = run_bootstrap(str(repo.work), state)
    code, out = res.returncode, res.stdout + res.stderr
    assert await deployments(state, "web", "stable", "pinned") == {
        "web": True, "stable": True, "pinned": False
    }  # fmt: skip
    # Another revision of the remote is the remote, as named: unreachable here, said so.
    assert "git.invalid" in out
    assert code == 1, out


async def test_flux_git_repositories_naming_the_clones_remote_read_the_clone(
    repo: RemoteRepo, state: Path
) -> None:
    git("remote", "set-url", "origin", REMOTE, cwd=repo.work)
    repo.write("bootstrap/flux-ns.yaml", namespace("flux-system"))
    web = kustomization(
        "web", "./web", source=("GitRepository", "fleet"), interval="1m", wait=None,
        timeout=None, targetNamespace="web",
    )  # fmt: skip
    repo.write("bootstrap/sync.yaml", git_repository("fleet", REMOTE) + "---\n" + web)
    repo.write("web/ns.yaml", namespace("web"))
    repo.write("web/ui.yaml", ui("web"))
    repo.commit("flux layout, not pushed")
    res = run_bootstrap(str(repo.work), state, "--branch", "main", interpret="flux")
    code, out = res.returncode, res.stdout + res.stderr
    assert code == 0, out
    assert await deployments(state, "web") == {"web": True}
