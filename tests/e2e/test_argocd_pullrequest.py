"""Preview environments per pull request, as Argo CD users build them: an ApplicationSet
with a `pullRequest` generator over GitHub (the fake GitHub REST API on loopback,
`tests.support.fake_github`, with a token from a Secret the cluster holds) makes an
Application per open pull request, syncing the repository's `preview-app/` at the pull
request's head commit into its own namespace; closing the pull request prunes the
Application and, by Argo CD's resources finalizer, its objects. Through the real CLI
(`run --once --interpret argocd`) on a bare Git remote; the token is never in the
output, the store's objects, the state directory or what gitkrm writes to the remote."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

from gitkrm.krm import ObjectRef
from tests.e2e.argocd_apps import ARGOCD, FINALIZER
from tests.e2e.e2e_support import (
    bootstrap_agent,
    cm_ref,
    get_or_none,
    read_object,
    reading,
    run_bootstrap,
    wait_for,
    writing,
)
from tests.source.source_gitrepo import ENV, RemoteRepo, git
from tests.support.fake_github import FakeGitHub, Pull, fake_github
from tests.support.manifests import yaml_text

TOKEN = "ghp_" + "PrEv1ewT0ken" * 3


def appset(github: FakeGitHub, url: str, *, requeue: int = 60) -> str:
    return yaml_text({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "previews", "namespace": ARGOCD},
        "spec": {
            "generators": [{"pullRequest": {
                "github": {"owner": "myorg", "repo": "myrepo", "api": github.url,
                           "labels": ["preview"],
                           "tokenRef": {"secretName": "github-token", "key": "token"}},
                "requeueAfterSeconds": requeue,
            }}],
            "template": {
                "metadata": {"name": "preview-{{number}}",
                             "labels": {"branch": "{{branch_slug}}"}},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": url, "targetRevision": "{{head_sha}}",
                               "path": "preview-app"},
                    "destination": {"server": "https://kubernetes.default.svc",
                                    "namespace": "preview-{{number}}"},
                    "syncPolicy": {"automated": {"prune": True},
                                   "syncOptions": ["CreateNamespace=true"]},
                },
            },
        },
    })  # fmt: skip


def preview_cm(feature: str) -> str:
    """The preview app: a ConfigMap without a namespace (the Application's destination's)."""
    return yaml_text({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "preview"},
                      "data": {"feature": feature}})  # fmt: skip


def app_ref(name: str) -> ObjectRef:
    return ObjectRef(group="argoproj.io", kind="Application", name=name, namespace=ARGOCD)


APPSET = ObjectRef(group="argoproj.io", kind="ApplicationSet", name="previews", namespace=ARGOCD)


async def put_token(state: Path) -> None:
    """The token's Secret, as an operator creates it (not in Git)."""
    async with writing(state) as store:
        await store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ARGOCD}})
        await store.create({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "github-token", "namespace": ARGOCD},
            "data": {"token": base64.b64encode(TOKEN.encode()).decode()},
        })  # fmt: skip


def feature_branch(repo: RemoteRepo) -> str:
    """`feature/login`, changing the preview app: its head commit."""
    git("checkout", "-q", "-b", "feature/login", cwd=repo.work)
    repo.write("preview-app/cm.yaml", preview_cm("login"))
    sha = repo.commit("login page")
    repo.push("HEAD:refs/heads/feature/login")
    git("checkout", "-q", repo.branch, cwd=repo.work)
    return sha


def everything_written(repo: RemoteRepo, state: Path) -> bytes:
    """Every object of the remote (notes and status branch included) and every file of
    the state directory."""
    objects = subprocess.run(
        ["git", f"--git-dir={repo.bare}", "cat-file", "--batch-all-objects", "--batch"],
        env=ENV, capture_output=True, check=True,
    ).stdout  # fmt: skip
    files = b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file())
    return objects + files


async def test_a_pull_request_opened_and_closed_makes_and_prunes_its_preview(
    repo: RemoteRepo, state: Path
) -> None:
    with fake_github(token=TOKEN) as github:
        github.add_repo("myorg", "myrepo")
        repo.write("bootstrap/previews.yaml", appset(github, repo.url))
        repo.write("preview-app/cm.yaml", preview_cm("none"))
        repo.commit("previews")
        repo.push()
        head = feature_branch(repo)
        await put_token(state)
        outputs = []

        res = run_bootstrap(repo.url, state, "--wait", "--timeout", "1m")
        outputs.append(res.stdout + res.stderr)
        assert res.returncode == 0, outputs[-1]
        async with reading(state) as store:
            made = await get_or_none(store, APPSET)
            assert made is not None
            assert made["status"].get("resources", []) == []

        # a pull request without the label makes nothing; with it, a preview
        github.open_pull("myorg", "myrepo", Pull(3, "Other", "other", "d" * 40))
        github.open_pull("myorg", "myrepo", Pull(7, "Login page", "feature/login", head,
                                                  labels=("preview",)))  # fmt: skip
        res = run_bootstrap(repo.url, state, "--wait", "--timeout", "1m")
        outputs.append(res.stdout + res.stderr)
        assert res.returncode == 0, outputs[-1]
        async with reading(state) as store:
            app = await get_or_none(store, app_ref("preview-7"))
            assert app is not None, outputs[-1]
            assert app["metadata"]["finalizers"] == [FINALIZER]
            assert app["metadata"]["labels"]["branch"] == "feature-login"
            assert app["status"]["sync"] == {"status": "Synced", "revision": head} | {
                k: v for k, v in app["status"]["sync"].items() if k not in ("status", "revision")
            }
            cm = await get_or_none(store, cm_ref("preview", "preview-7"))
            assert cm is not None
            assert cm["data"] == {"feature": "login"}
            assert await get_or_none(store, app_ref("preview-3")) is None
            made = await get_or_none(store, APPSET)
            assert made is not None
            assert [r["name"] for r in made["status"]["resources"]] == ["preview-7"]
        assert {r.authorization for r in github.requests} == {"set"}

        github.close_pull("myorg", "myrepo", 7)
        res = run_bootstrap(repo.url, state, "--wait", "--timeout", "1m")
        outputs.append(res.stdout + res.stderr)
        assert res.returncode == 0, outputs[-1]
        async with reading(state) as store:
            assert await get_or_none(store, app_ref("preview-7")) is None, outputs[-1]
            assert await get_or_none(store, cm_ref("preview", "preview-7")) is None  # finalizer

        # a host that fails: the ApplicationSet's error names the generator and the status
        github.fail_with = 503
        res = run_bootstrap(repo.url, state, "--wait", "--timeout", "1m")
        outputs.append(res.stdout + res.stderr)
        async with reading(state) as store:
            made = await get_or_none(store, APPSET)
            assert made is not None
            conds = {c["type"]: c for c in made["status"]["conditions"]}
            assert conds["ErrorOccurred"]["status"] == "True"
            message = conds["ErrorOccurred"]["message"]
            assert "spec.generators[0].pullRequest.github" in message, message
            assert "HTTP 503" in message, message

    for out in outputs:
        assert TOKEN not in out
    assert TOKEN.encode() not in everything_written(repo, state)


async def test_the_agent_asks_the_host_at_the_requeue_interval(
    repo: RemoteRepo, state: Path, tmp_path: Path
) -> None:
    """A long-lived agent (its interval an hour) sees a pull request opened, then closed,
    within the generator's `requeueAfterSeconds` (2 s), with no commit to the repository."""
    with fake_github(token=TOKEN) as github:
        github.add_repo("myorg", "myrepo")
        repo.write("bootstrap/previews.yaml", appset(github, repo.url, requeue=2))
        repo.write("preview-app/cm.yaml", preview_cm("none"))
        repo.commit("previews")
        repo.push()
        head = feature_branch(repo)
        await put_token(state)
        with bootstrap_agent(repo.url, state, tmp_path, interval="1h") as agent:

            async def asked() -> bool:
                made = await read_object(state, APPSET)
                conds = {c["type"]: c["status"] for c in ((made or {}).get("status") or {})
                         .get("conditions") or ()}  # fmt: skip
                return conds.get("ResourcesUpToDate") == "True"

            await wait_for(asked, within=60, what="the ApplicationSet made (of no PR)")
            github.open_pull("myorg", "myrepo", Pull(7, "Login page", "feature/login", head,
                                                      labels=("preview",)))  # fmt: skip

            async def preview() -> bool:
                cm = await read_object(state, cm_ref("preview", "preview-7"))
                return cm is not None and cm["data"] == {"feature": "login"}

            await wait_for(preview, within=60, what="the preview of the opened pull request")
            github.close_pull("myorg", "myrepo", 7)

            async def gone() -> bool:
                return await read_object(state, app_ref("preview-7")) is None and (
                    await read_object(state, cm_ref("preview", "preview-7")) is None
                )

            await wait_for(gone, within=60, what="the preview of the closed pull request pruned")
            log = agent.log()
        asks = [r for r in github.requests if r.path == "/repos/myorg/myrepo/pulls"]
        assert len(asks) >= 3  # asked again and again, not only at the start
    assert TOKEN not in log
    assert TOKEN.encode() not in everything_written(repo, state)
