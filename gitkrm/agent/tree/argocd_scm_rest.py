"""GitHub's and Gitea's REST APIs as Argo CD's services read them (go-github v69, Gitea's
Go SDK). The two answer the same questions in nearly the same shapes; a `Flavor` holds
where they differ.

Pull requests: `GET repos/{owner}/{repo}/pulls?state=open` (GitHub: `&per_page=100`),
every page, those carrying all of `labels` kept; a 404 is no such repository.
Repositories: `GET orgs/{org}/repos` (the SSH clone URL unless `cloneProtocol: https`:
GitHub's `clone_url`, Gitea's `html_url`; archived ones left out with
`excludeArchivedRepos`; labels: GitHub's `topics`, Gitea's `GET repos/{o}/{r}/labels`),
each at its default branch (`GET repos/{o}/{r}/branches/{b}`: a 404 is an empty
repository on GitHub, an error on Gitea, as Argo CD has them) or, with `allBranches`,
every branch (`GET repos/{o}/{r}/branches`); a path exists when
`GET repos/{o}/{r}/contents/{path}?ref={branch}` answers (a file or a directory).

GitHub's `api` is go-github's enterprise base URL: without it `https://api.github.com/`;
with it, `api/v3/` is added unless the path ends so or the host is an `api.` one.
Gitea's is `<api>/api/v1/`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gitkrm.source.credentials import SecretRef
from gitkrm.source.restapi import RestApi, RestClient

from .argocd_scm import HostRepository, PullRequest

PUBLIC_GITHUB: Final = "https://api.github.com/"


@dataclass(frozen=True, slots=True)
class Flavor:
    """Where a host's API differs from GitHub's."""

    name: str
    scheme: str
    """`Authorization: <scheme> <token>`."""
    headers: tuple[tuple[str, str], ...] = ()
    page_size: tuple[tuple[str, str], ...] = ()
    https_url: str = "clone_url"
    commit_sha: str = "sha"
    topics: bool = True
    """Labels are the repository's `topics` (else its labels, asked)."""
    empty_when_no_default_branch: bool = True
    owner_from_repository: bool = True
    """A repository's organization is its `owner.login` (else the one asked about)."""

    def rest_api(self, api: str, token: SecretRef | None, *, insecure: bool = False) -> RestApi:
        base = github_base(api) if self.name == "GitHub" else api.rstrip("/") + "/api/v1/"
        return RestApi(
            base=base, token=token, scheme=self.scheme, headers=self.headers, insecure=insecure
        )


GITHUB: Final = Flavor(
    name="GitHub",
    scheme="Bearer",
    headers=(
        ("Accept", "application/vnd.github.v3+json"),
        ("X-GitHub-Api-Version", "2022-11-28"),
        ("User-Agent", "gitkrm"),
    ),
    page_size=(("per_page", "100"),),
)
GITEA: Final = Flavor(
    name="Gitea", scheme="token", https_url="html_url", commit_sha="id", topics=False,
    empty_when_no_default_branch=False, owner_from_repository=False,
)  # fmt: skip


def github_base(api: str) -> str:
    """go-github's `WithEnterpriseURLs` base URL of `api` (`PUBLIC_GITHUB` when empty)."""
    if not api:
        return PUBLIC_GITHUB
    parts = urllib.parse.urlsplit(api)
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    host = parts.hostname or ""
    if not path.endswith("/api/v3/") and not host.startswith("api.") and ".api." not in host:
        path += "api/v3/"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


async def pull_requests(
    client: RestClient, flavor: Flavor, *, owner: str, repo: str, labels: tuple[str, ...]
) -> list[PullRequest] | None:
    """The open pull requests with all of `labels`; None: no such repository."""
    pulls = await client.pages(
        f"repos/{_q(owner)}/{_q(repo)}/pulls", {"state": "open", **dict(flavor.page_size)},
        missing_ok=True,
    )  # fmt: skip
    if pulls is None:
        return None
    out = []
    for p in pulls:
        names = tuple(_text(x.get("name")) for x in p.get("labels") or ())
        if not all(want in names for want in labels):
            continue
        head, base = p.get("head") or {}, p.get("base") or {}
        out.append(
            PullRequest(
                number=int(p.get("number") or 0), title=_text(p.get("title")),
                branch=_text(head.get("ref")), target_branch=_text(base.get("ref")),
                head_sha=_text(head.get("sha")), labels=names,
                author=_text((p.get("user") or {}).get("login")),
            )
        )  # fmt: skip
    return out


class Repositories:
    """Argo CD's `GithubProvider` and `GiteaProvider`."""

    def __init__(
        self, client: RestClient, flavor: Flavor, *, owner: str, all_branches: bool,
        exclude_archived: bool,
    ) -> None:  # fmt: skip
        self.client = client
        self.flavor = flavor
        self.owner = owner
        self.all_branches = all_branches
        self.exclude_archived = exclude_archived

    async def list_repos(self, clone_protocol: str) -> list[HostRepository]:
        if clone_protocol not in ("", "ssh", "https"):
            raise ValueError(f"unknown clone protocol for {self.flavor.name} {clone_protocol}")
        found = await self.client.pages(f"orgs/{_q(self.owner)}/repos", dict(self.flavor.page_size))
        out = []
        for r in found or ():
            name = _text(r.get("name"))
            if self.flavor.topics:
                labels = tuple(_text(t) for t in r.get("topics") or ())
            else:
                asked = await self.client.pages(f"repos/{_q(self.owner)}/{_q(name)}/labels")
                labels = tuple(_text(x.get("name")) for x in asked or ())
            if self.exclude_archived and r.get("archived"):
                continue
            https = clone_protocol == "https"
            owner = (
                (r.get("owner") or {}).get("login") if self.flavor.owner_from_repository else None
            )
            out.append(
                HostRepository(
                    organization=_text(owner or self.owner), repository=name,
                    url=_text(r.get(self.flavor.https_url if https else "ssh_url")),
                    branch=_text(r.get("default_branch")), labels=labels,
                    repository_id=r.get("id"),
                )
            )  # fmt: skip
        return out

    async def get_branches(self, repo: HostRepository) -> list[HostRepository]:
        where = f"repos/{_q(repo.organization)}/{_q(repo.repository)}/branches"
        branches: list[Mapping[str, Any]]
        if not self.all_branches:
            missing_ok = self.flavor.empty_when_no_default_branch
            one, _ = await self.client.get(f"{where}/{_q(repo.branch)}", missing_ok=missing_ok)
            branches = [] if one is None else [one]
        else:
            branches = await self.client.pages(where, dict(self.flavor.page_size)) or []
        return [
            HostRepository(
                organization=repo.organization, repository=repo.repository, url=repo.url,
                branch=_text(b.get("name")),
                sha=_text((b.get("commit") or {}).get(self.flavor.commit_sha)),
                labels=repo.labels, repository_id=repo.repository_id,
            )
            for b in branches
        ]  # fmt: skip

    async def repo_has_path(self, repo: HostRepository, path: str) -> bool:
        return await self.client.exists(
            f"repos/{_q(repo.organization)}/{_q(repo.repository)}/contents/"
            f"{urllib.parse.quote(path.strip('/'), safe='/')}",
            {"ref": repo.branch},
        )
