"""ApplicationSets with `pullRequest` and `scmProvider` generators, read as a child source
and made by it (`argocd_appset`, `argocd_scm_hosts`) against the fake GitHub REST API on
loopback (`tests.support.fake_github`), in the shapes of Argo CD's documentation: preview
environments per pull request, an Application per repository of an organization."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitkrm.agent.tree.argocd_appset import INTERPRETER, ApplicationSetSource, GeneratedApplications
from gitkrm.errors import BadRequest, ManifestError
from gitkrm.source import LocalSource
from tests.support.fake_gitea import fake_gitea
from tests.support.fake_github import FakeGitHub, Pull, fake_github

from .flux_objects import Objects
from .test_argocd import parent

TOKEN = "ghp_" + "s3cr3t" * 6
WRONG = "ghp_" + "n0tth3t0k3n" * 4
SHA = "c0ffee" + "0" * 34


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with fake_github(token=TOKEN) as server:
        yield server


def token_secret(value: str = TOKEN) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "github-token", "namespace": "argocd"},
        "data": {"token": base64.b64encode(value.encode()).decode()},
    }  # fmt: skip


def appset(
    generator: dict[str, Any], *, go: bool = False, name: str = "{{branch}}"
) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "previews", "namespace": "argocd"},
        "spec": {
            "goTemplate": go,
            "generators": [generator],
            "template": {
                "metadata": {"name": name},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "https://github.com/myorg/myrepo", "path": "preview",
                               "targetRevision": "{{head_sha}}" if not go else "{{ .head_sha }}"},
                    "destination": {"server": "https://kubernetes.default.svc",
                                    "namespace": "preview"},
                },
            },
        },
    }  # fmt: skip


def pulls(github: FakeGitHub, **fields: Any) -> dict[str, Any]:
    spec = {"owner": "myorg", "repo": "myrepo", "api": github.url,
            "tokenRef": {"secretName": "github-token", "key": "token"}, **fields}  # fmt: skip
    return {"pullRequest": {"github": spec, "requeueAfterSeconds": 10}}


async def source_of(
    obj: dict[str, Any], tmp_path: Path, *objs: dict[str, Any]
) -> ApplicationSetSource:
    spec = await INTERPRETER.child(obj, Objects(parent(), token_secret(), *objs))
    gen = spec.config.generator
    assert isinstance(gen, GeneratedApplications)
    assert spec.config.interval == 10  # the requeue, shorter than the parent's 30 s
    assert TOKEN not in repr(spec)  # the token is in a private file, not in the child
    (tmp_path / "repo").mkdir(exist_ok=True)
    repo = LocalSource(name="repo", root=tmp_path / "repo", repo_tree=True)
    return ApplicationSetSource(name="previews", repository=repo, spec=gen)


async def made(source: ApplicationSetSource) -> dict[str, Any]:
    snap = await source.snapshot()
    apps = [yaml.safe_load(snap.read(p)) for p in sorted(snap.files)]
    return {a["metadata"]["name"]: a for a in apps}


async def test_an_application_per_open_pull_request(github: FakeGitHub, tmp_path: Path) -> None:
    repo = github.add_repo("myorg", "myrepo")
    for n in range(1, 131):  # two pages of 100
        github.open_pull("myorg", "myrepo", Pull(n, f"change {n}", f"feature/n{n}", SHA))
    github.close_pull("myorg", "myrepo", 2)
    repo.pulls[7].labels = ("preview",)
    source = await source_of(appset(pulls(github), name="pr-{{number}}-{{branch_slug}}"), tmp_path)
    apps = await made(source)
    assert len(apps) == 129
    assert "pr-2-feature-n2" not in apps
    app = apps["pr-7-feature-n7"]
    assert app["spec"]["source"]["targetRevision"] == SHA
    asked = [r for r in github.requests if r.path == "/repos/myorg/myrepo/pulls"]
    assert [r.query.get("page") for r in asked] == [None, "2"]
    assert {(r.query["per_page"], r.query["state"], r.authorization) for r in asked} == {
        ("100", "open", "set")
    }
    # within the requeue the host is not asked again; a commit re-makes from the answers
    await source.snapshot()
    assert len([r for r in github.requests if r.path.endswith("/pulls")]) == 2


async def test_labels_and_filters_choose_pull_requests(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_repo("myorg", "myrepo")
    github.open_pull(
        "myorg", "myrepo", Pull(1, "Add login", "feat/login", SHA, labels=("preview",))
    )
    github.open_pull("myorg", "myrepo", Pull(2, "WIP: docs", "docs", SHA, labels=("preview",)))
    github.open_pull("myorg", "myrepo", Pull(3, "Fix", "fix/x", SHA, base_ref="release"))
    github.open_pull("myorg", "myrepo", Pull(4, "Nope", "feat/nope", SHA))
    gen = pulls(github, labels=["preview"])
    gen["pullRequest"]["filters"] = [{"branchMatch": "^feat/", "titleMatch": "Add"}]
    apps = await made(await source_of(appset(gen, name="pr-{{number}}"), tmp_path))
    assert sorted(apps) == ["pr-1"]
    # without labels: any filter lets a pull request through, all of a filter's conditions hold
    gen = pulls(github)
    gen["pullRequest"]["filters"] = [{"branchMatch": "^feat/"}, {"targetBranchMatch": "^release$"}]
    apps = await made(await source_of(appset(gen, name="pr-{{number}}"), tmp_path))
    assert sorted(apps) == ["pr-1", "pr-3", "pr-4"]


async def test_the_parameters_are_argo_cds(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_repo("myorg", "myrepo")
    branch = "Feature/Ünïcode_&_more@" + "x" * 20 + "-" + "y" * 30
    github.open_pull("myorg", "myrepo", Pull(42, "T", branch, SHA, base_ref="main",
                                              labels=("a", "b"), user="dev1"))  # fmt: skip
    obj = appset(pulls(github), go=True, name="pr-{{ .number }}")
    obj["spec"]["template"]["metadata"]["annotations"] = {
        k: f"{{{{ .{k} }}}}" for k in ("branch", "branch_slug", "target_branch",
                                         "target_branch_slug", "head_sha", "head_short_sha",
                                         "head_short_sha_7", "author", "title")
    } | {"labels": "{{ join \",\" .labels }}"}  # fmt: skip
    [app] = (await made(await source_of(obj, tmp_path))).values()
    assert app["metadata"]["name"] == "pr-42"
    assert app["metadata"]["annotations"] == {
        "branch": branch,
        "branch_slug": "feature-unicode-and-moreatxxxxxxxxxxxxxxxxxxxx",  # cut after a word
        "target_branch": "main", "target_branch_slug": "main",
        "head_sha": SHA, "head_short_sha": SHA[:8], "head_short_sha_7": SHA[:7],
        "author": "dev1", "title": "T", "labels": "a,b",
    }  # fmt: skip


async def test_a_host_error_names_the_generator_and_status_never_the_token(
    github: FakeGitHub, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    github.add_repo("myorg", "myrepo")
    caplog.set_level(logging.DEBUG)
    source = await source_of(appset(pulls(github)), tmp_path, token_secret(WRONG))
    with pytest.raises(BadRequest) as e:
        await source.snapshot()
    message = e.value.message
    assert message.startswith(
        "ApplicationSet argocd/previews: spec.generators[0].pullRequest.github: "
    )
    assert "HTTP 401 Unauthorized: Bad credentials" in message
    assert WRONG not in message
    assert WRONG not in caplog.text
    # a missing repository is an error, or nothing with continueOnRepoNotFoundError
    source = await source_of(appset(pulls(github, repo="gone")), tmp_path)
    with pytest.raises(BadRequest) as e:
        await source.snapshot()
    assert e.value.message == (
        "ApplicationSet argocd/previews: spec.generators[0].pullRequest.github: "
        "error listing pull requests: repository myorg/gone not found"
    )
    gen = pulls(github, repo="gone")
    gen["pullRequest"]["continueOnRepoNotFoundError"] = True
    assert await made(await source_of(appset(gen), tmp_path)) == {}


async def test_other_providers_and_app_credentials_are_refused() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"pullRequest": {"gitlab": {"project": "1"}}}, "pullRequest.gitlab: not supported: "
         "gitkrm's pullRequest generator reads GitHub and Gitea, not GitLab"),
        ({"scmProvider": {"azureDevOps": {"organization": "o"}}}, "not Azure DevOps"),
        ({"pullRequest": {"github": {"owner": "o", "repo": "r", "appSecretName": "app"}}},
         "pullRequest.github.appSecretName: not supported: GitHub App credentials"),
        ({"pullRequest": {"github": {"owner": "o", "repo": "r",
                                     "tokenRef": {"secretName": "none", "key": "token"}}}},
         "Secret argocd/none not found"),
    ]  # fmt: skip
    for generator, words in cases:
        with pytest.raises(ManifestError) as e:
            await INTERPRETER.child(appset(generator), Objects(parent()))
        assert words in e.value.message


async def test_an_organizations_repositories_at_their_branches(
    github: FakeGitHub, tmp_path: Path
) -> None:
    github.add_repo("myorg", "web", topics=("team-a",), branches={"main": "a" * 40},
                    files={"main": {"deploy/app.yaml"}})  # fmt: skip
    github.add_repo("myorg", "api", topics=("team-b",), branches={"main": "b" * 40, "v2": "c" * 40},
                    files={"main": {"README.md"}, "v2": {"deploy/app.yaml"}})  # fmt: skip
    github.add_repo("myorg", "old", archived=True, files={"main": {"deploy/x"}})
    scm: dict[str, Any] = {"organization": "myorg", "api": github.url,
           "tokenRef": {"secretName": "github-token", "key": "token"}}  # fmt: skip
    gen: dict[str, Any] = {"scmProvider": {"github": scm, "requeueAfterSeconds": 10,
                           "filters": [{"pathsExist": ["deploy/"]}]}}  # fmt: skip
    obj = appset(gen, name="{{repository}}-{{branchNormalized}}")
    obj["spec"]["template"]["spec"]["source"] = {
        "repoURL": "{{url}}", "targetRevision": "{{sha}}", "path": "deploy",
    }  # fmt: skip
    obj["spec"]["template"]["metadata"]["labels"] = {
        "topics": "{{labels}}", "org": "{{organization}}", "short": "{{short_sha}}"
    }  # fmt: skip
    apps = await made(await source_of(obj, tmp_path))
    assert sorted(apps) == ["old-main", "web-main"]  # api's default branch has no deploy/
    assert apps["web-main"]["spec"]["source"]["repoURL"] == "git@127.0.0.1:myorg/web.git"
    assert apps["web-main"]["metadata"]["labels"] == {"topics": "team-a", "org": "myorg",
                                                      "short": "a" * 8}  # fmt: skip
    # every branch, https clone URLs, archived left out, a repository filter first
    scm |= {"allBranches": True, "excludeArchivedRepos": True}
    gen["scmProvider"] |= {"cloneProtocol": "https", "filters": [
        {"labelMatch": "^team-"}, {"branchMatch": "^v", "pathsExist": ["deploy"]}]}  # fmt: skip
    apps = await made(await source_of(obj, tmp_path))
    assert sorted(apps) == ["api-v2"]
    assert apps["api-v2"]["spec"]["source"]["repoURL"] == f"{github.url}/myorg/api.git"


async def test_gitea_pull_requests_and_repositories(tmp_path: Path) -> None:
    with fake_gitea(token=TOKEN) as gitea:
        gitea.add_repo("myorg", "myrepo", topics=("team-a",), branches={"main": "e" * 40})
        for n in range(1, 41):  # two of Gitea's pages of 30
            gitea.open_pull("myorg", "myrepo", Pull(n, f"change {n}", f"feature/n{n}", SHA))
        ref = {"secretName": "github-token", "key": "token"}
        spec = {"owner": "myorg", "repo": "myrepo", "api": gitea.url + "/", "tokenRef": ref}
        obj = appset({"pullRequest": {"gitea": spec, "requeueAfterSeconds": 10}},
                     name="pr-{{number}}")  # fmt: skip
        apps = await made(await source_of(obj, tmp_path))
        assert len(apps) == 40
        assert apps["pr-40"]["spec"]["source"]["targetRevision"] == SHA
        asked = [r for r in gitea.requests if r.path == "/repos/myorg/myrepo/pulls"]
        assert [(r.query.get("page"), r.authorization) for r in asked] == [
            (None, "set"), ("2", "set")
        ]  # fmt: skip
        scm = {"owner": "myorg", "api": gitea.url, "tokenRef": ref}
        obj = appset({"scmProvider": {"gitea": scm, "requeueAfterSeconds": 10}},
                     name="{{repository}}-{{branch}}")  # fmt: skip
        obj["spec"]["template"]["metadata"]["labels"] = {"l": "{{labels}}", "sha": "{{sha}}"}
        apps = await made(await source_of(obj, tmp_path))
        assert apps["myrepo-main"]["metadata"]["labels"] == {"l": "team-a", "sha": "e" * 40}
        # Gitea needs its server's URL
        del scm["api"]
        with pytest.raises(BadRequest, match=r"scmProvider\.gitea\.api: required"):
            await made(await source_of(obj, tmp_path))


async def test_a_matrix_asks_for_what_its_first_generator_names(
    github: FakeGitHub, tmp_path: Path
) -> None:
    """`pullRequest` under a matrix, its repository named by the list's parameters: each
    repository's pull requests are asked for; `values` are rendered per pull request."""
    for name in ("web", "api"):
        github.add_repo("myorg", name)
        github.open_pull("myorg", name, Pull(1, "t", "fix", SHA))
    github.open_pull("myorg", "api", Pull(2, "t", "feat", SHA))
    inner = pulls(github, repo="{{app}}")
    inner["pullRequest"]["values"] = {"env": "{{app}}-pr-{{number}}"}
    matrix = {"matrix": {"generators": [
        {"list": {"elements": [{"app": "web"}, {"app": "api"}]}}, inner,
    ]}}  # fmt: skip
    apps = await made(await source_of(appset(matrix, name="{{values.env}}"), tmp_path))
    assert sorted(apps) == ["api-pr-1", "api-pr-2", "web-pr-1"]
    asked = sorted(r.path for r in github.requests)
    assert asked == ["/repos/myorg/api/pulls", "/repos/myorg/web/pulls"]
