"""Argo CD's rules over a Git host's answers (`argocd_scm`, pure) and go-github's base URL
of an `api` (`argocd_scm_rest.github_base`)."""

from __future__ import annotations

import pytest

from gitkrm.agent.tree.argocd_scm import slug
from gitkrm.agent.tree.argocd_scm_rest import github_base


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        ("feature/login", "feature-login"),
        ("  Fix_Bug #12  ", "fix-bug-12"),
        ("a&b@c", "aandbatc"),
        ("it's “quoted”", "its-quoted"),
        ("café—crème", "cafe-creme"),
        ("--x__", "x"),
        ("x" * 60, "x" * 50),  # one word: cut at 50
        ("abc-" * 20, "abc-" * 11 + "abc"),  # cut at the last dash, index 50 at most
    ],
)
def test_branch_slug_is_gosimple_slug_as_argo_cd_sets_it(branch: str, expected: str) -> None:
    assert slug(branch) == expected


@pytest.mark.parametrize(
    ("api", "base"),
    [
        ("", "https://api.github.com/"),
        ("https://github.example.org", "https://github.example.org/api/v3/"),
        ("https://github.example.org/api/v3", "https://github.example.org/api/v3/"),
        ("https://api.example.org", "https://api.example.org/"),
        ("http://127.0.0.1:8080/ghe/", "http://127.0.0.1:8080/ghe/api/v3/"),
    ],
)
def test_the_api_base_is_go_githubs_enterprise_url(api: str, base: str) -> None:
    assert github_base(api) == base
