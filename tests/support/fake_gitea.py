"""A fake Gitea REST API on 127.0.0.1: `FakeGitHub`'s repositories and pull requests
served as Gitea's published API description (its swagger, `/api/swagger` of a Gitea
server) has them, under `/api/v1/`, for the endpoints Argo CD's Gitea services call:
pulls (`number`, `title`, `user.login`, `labels[].name`, `head.ref`, `head.sha`,
`base.ref`), `orgs/{org}/repos` (`id`, `name`, `owner.login`, `default_branch`,
`ssh_url`, `clone_url`, `html_url`, `archived`), `repos/{o}/{r}/labels` (`id`, `name`:
the test's topics), branches (`name`, `commit.id`), contents. Pages are Gitea's: `limit`
(30 by default, 50 at most), `page`, a `Link` header. The token goes as
`Authorization: token <token>`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from tests.support.fake_github import FakeGitHub, Pull, Repo, serving

__all__ = ["FakeGitea", "Pull", "fake_gitea"]


class FakeGitea(FakeGitHub):
    prefix = "/api/v1"
    per_page = ("limit", 30, 50)

    def repo_json(self, r: Repo) -> dict[str, Any]:
        out = super().repo_json(r)
        del out["topics"]
        return out

    def branch_json(self, name: str, sha: str) -> dict[str, Any]:
        return {"name": name, "commit": {"id": sha, "message": "change"}, "protected": False}


def fake_gitea(*, token: str | None = None) -> AbstractContextManager[FakeGitea]:
    return serving(FakeGitea, token=token)
