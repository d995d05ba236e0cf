"""A fake GitHub REST API on 127.0.0.1, for Argo CD's `pullRequest` and `scmProvider`
generators (the real one can't be reached from tests).

It follows GitHub's published REST API description (docs.github.com/rest and the OpenAPI
description of github/rest-api-description), for the endpoints Argo CD's GitHub
services call, with the JSON shapes published there, limited to the fields Argo CD reads
(and a few beside them, as the real answers carry more than a client reads):

- `GET /repos/{owner}/{repo}/pulls?state=open|closed|all&per_page=&page=` (pulls/list):
  `number`, `state`, `title`, `user.login`, `labels[].name`, `head.ref`, `head.sha`,
  `base.ref`; 404 `{"message": "Not Found"}` for an unknown repository;
- `GET /orgs/{org}/repos?per_page=&page=` (repos/list-for-org): `id`, `name`,
  `full_name`, `owner.login`, `default_branch`, `ssh_url`, `clone_url`, `html_url`,
  `topics`, `archived`;
- `GET /repos/{owner}/{repo}/branches` (repos/list-branches) and
  `.../branches/{branch}` (repos/get-branch): `name`, `commit.sha`; 404 "Branch not found";
- `GET /repos/{owner}/{repo}/contents/{path}?ref=` (repos/get-content): a file's object,
  a directory's list, 404.

Lists are paged as GitHub pages them: `per_page` (30 by default, 100 at most) and `page`,
with a `Link` header of `rel="next"`, `"prev"`, `"first"`, `"last"` URLs. Every path is
served at `/` (api.github.com) and under `/api/v3/` (GitHub Enterprise Server, where
go-github's enterprise client sends it). With a `token`, a request without
`Authorization: Bearer <token>` (or `token <token>`) gets 401 `Bad credentials`.
`fail_with` makes every answer an error of that status, `redirect` a 302 to that URL,
`delay` waits that many seconds before answering. Each request is recorded
(method, path, query, whether it was authorized). It runs on its own thread and event
loop, so a test may block on a subprocess while the agent asks it.
"""

from __future__ import annotations

import asyncio
import math
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web

DOCS = "https://docs.github.com/rest"


@dataclass
class Pull:
    number: int
    title: str
    head_ref: str
    head_sha: str
    base_ref: str = "main"
    labels: tuple[str, ...] = ()
    user: str = "octocat"
    state: str = "open"


@dataclass
class Repo:
    owner: str
    name: str
    id: int
    default_branch: str = "main"
    topics: tuple[str, ...] = ()
    archived: bool = False
    branches: dict[str, str] = field(default_factory=dict)
    """Branch name -> head commit sha."""
    files: dict[str, set[str]] = field(default_factory=dict)
    """Branch name -> the paths of its files."""
    pulls: dict[int, Pull] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    authorization: str


class FakeGitHub:
    """See the module docstring. `url` is the base (`http://127.0.0.1:<port>`)."""

    prefix = "/api/v3"
    """Where the API is served besides `/` (GitHub Enterprise Server's path)."""
    per_page = ("per_page", 30, 100)
    """The page size's parameter, default and maximum."""

    def __init__(self, *, token: str | None = None) -> None:
        self.token = token
        self.repos: dict[tuple[str, str], Repo] = {}
        self.requests: list[Request] = []
        self.fail_with: int | None = None
        self.redirect: str | None = None
        self.delay = 0.0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        started = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(started,), daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the fake GitHub did not start")
        self.url = f"http://127.0.0.1:{self.port}"

    # -- what a test sets ----------------------------------------------------------------

    def add_repo(self, owner: str, name: str, **fields: Any) -> Repo:
        with self._lock:
            repo = Repo(owner=owner, name=name, id=1000 + len(self.repos), **fields)
            repo.branches.setdefault(repo.default_branch, "0" * 40)
            self.repos[(owner, name)] = repo
            return repo

    def open_pull(self, owner: str, name: str, pull: Pull) -> None:
        with self._lock:
            self.repos[(owner, name)].pulls[pull.number] = pull

    def close_pull(self, owner: str, name: str, number: int) -> None:
        with self._lock:
            self.repos[(owner, name)].pulls[number].state = "closed"

    # -- the server ----------------------------------------------------------------------

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        started.set()
        self._loop.run_forever()

    def close(self) -> None:
        async def stop() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path.removeprefix(self.prefix)
        auth = request.headers.get("Authorization", "")
        authorized = bool(self.token) and auth in (f"Bearer {self.token}", f"token {self.token}")
        if self.delay:
            await asyncio.sleep(self.delay)
        with self._lock:
            self.requests.append(Request("GET", path, dict(request.query), auth and "set"))
            if self.redirect is not None:
                raise web.HTTPFound(self.redirect)
            if self.fail_with is not None:
                return _error(self.fail_with, "Server Error" if self.fail_with >= 500 else "Error")
            if self.token and not authorized:
                return _error(401, "Bad credentials")
            parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
            return self._route(request, parts)

    def _route(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        if len(parts) == 3 and parts[0] == "orgs" and parts[2] == "repos":
            repos = [r for r in self.repos.values() if r.owner == parts[1]]
            if not repos:
                return _error(404, "Not Found")
            return self._page(request, [self.repo_json(r) for r in repos])
        if len(parts) < 4 or parts[0] != "repos":
            return _error(404, "Not Found")
        repo = self.repos.get((parts[1], parts[2]))
        if repo is None:
            return _error(404, "Not Found")
        what, rest = parts[3], parts[4:]
        if what == "labels" and not rest:
            return self._page(request, [{"id": i, "name": t} for i, t in enumerate(repo.topics)])
        if what == "pulls" and not rest:
            state = request.query.get("state", "open")
            pulls = [p for _, p in sorted(repo.pulls.items(), reverse=True)
                     if state == "all" or p.state == state]  # fmt: skip
            return self._page(request, [self.pull_json(p, repo) for p in pulls])
        if what == "branches" and not rest:
            branches = [self.branch_json(n, s) for n, s in sorted(repo.branches.items())]
            return self._page(request, branches)
        if what == "branches":
            name = "/".join(rest)
            if name not in repo.branches:
                return _error(404, "Branch not found")
            return web.json_response(self.branch_json(name, repo.branches[name]))
        if what == "contents":
            ref = request.query.get("ref") or repo.default_branch
            files = repo.files.get(ref, set())
            wanted = "/".join(rest).strip("/")
            if wanted in files:
                return web.json_response({"type": "file", "name": rest[-1], "path": wanted,
                                          "sha": "1" * 40, "size": 1})  # fmt: skip
            inside = sorted(f for f in files if f.startswith(wanted + "/"))
            if inside:
                return web.json_response(
                    [{"type": "file", "name": f.rsplit("/", 1)[-1], "path": f} for f in inside]
                )
            return _error(404, "Not Found")
        return _error(404, "Not Found")

    def _page(self, request: web.Request, items: list[Any]) -> web.StreamResponse:
        """GitHub's paging: `per_page` (30, at most 100), `page`, and a `Link` header."""
        key, default, most = self.per_page
        per_page = max(1, min(most, int(request.query.get(key, str(default)))))
        page = max(1, int(request.query.get("page", "1")))
        last = max(1, math.ceil(len(items) / per_page))
        response = web.json_response(items[(page - 1) * per_page : page * per_page])

        def link(n: int, rel: str) -> str:
            query = {**request.query, "page": str(n), key: str(per_page)}
            return f'<{self.url}{request.path}?{urllib.parse.urlencode(query)}>; rel="{rel}"'

        links = []
        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if links:
            response.headers["Link"] = ", ".join(links)
        return response

    def repo_json(self, r: Repo) -> dict[str, Any]:
        return _repo_json(r, self.url)

    def pull_json(self, p: Pull, r: Repo) -> dict[str, Any]:
        return _pull_json(p, r, self.url)

    def branch_json(self, name: str, sha: str) -> dict[str, Any]:
        return {"name": name, "commit": {"sha": sha, "url": f"commits/{sha}"}, "protected": False}


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"message": message, "documentation_url": DOCS}, status=status)


def _repo_json(r: Repo, url: str) -> dict[str, Any]:
    host = urllib.parse.urlsplit(url).netloc
    return {
        "id": r.id, "name": r.name, "full_name": f"{r.owner}/{r.name}",
        "owner": {"login": r.owner, "type": "Organization"}, "private": False,
        "default_branch": r.default_branch, "archived": r.archived, "topics": list(r.topics),
        "html_url": f"{url}/{r.owner}/{r.name}",
        "clone_url": f"{url}/{r.owner}/{r.name}.git",
        "ssh_url": f"git@{host.split(':')[0]}:{r.owner}/{r.name}.git",
    }  # fmt: skip


def _pull_json(p: Pull, r: Repo, url: str) -> dict[str, Any]:
    repo = _repo_json(r, url)
    return {
        "url": f"{url}/repos/{r.owner}/{r.name}/pulls/{p.number}", "number": p.number,
        "state": p.state, "title": p.title, "draft": False,
        "user": {"login": p.user, "type": "User"},
        "labels": [{"id": i + 1, "name": n, "color": "ededed"} for i, n in enumerate(p.labels)],
        "head": {"label": f"{r.owner}:{p.head_ref}", "ref": p.head_ref, "sha": p.head_sha,
                 "repo": repo},
        "base": {"label": f"{r.owner}:{p.base_ref}", "ref": p.base_ref,
                 "sha": r.branches.get(p.base_ref, "0" * 40), "repo": repo},
    }  # fmt: skip


Host = TypeVar("Host", bound=FakeGitHub)


@contextmanager
def serving(host: type[Host], *, token: str | None = None) -> Iterator[Host]:
    """A fake host of this API's kind (`FakeGitHub` or a subclass), closed after."""
    server = host(token=token)
    try:
        yield server
    finally:
        server.close()


def fake_github(*, token: str | None = None) -> AbstractContextManager[FakeGitHub]:
    return serving(FakeGitHub, token=token)
