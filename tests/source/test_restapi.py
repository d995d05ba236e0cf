"""The REST client of Git hosts (`gitkrm.source.restapi`) against the fake GitHub API on
loopback: `Link` pages, bounded answers, errors naming the status but never the token."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.source.credentials import SecretRef
from gitkrm.source.restapi import ApiError, RestApi, RestClient, next_page
from tests.support.fake_github import Pull, fake_github

TOKEN = "ghp_" + "R3stT0ken" * 4


def test_next_page_is_the_page_of_the_next_link_wherever_it_stands() -> None:
    link = (
        '<https://api.github.com/x?page=2&per_page=100>; rel="prev", '
        '<https://api.github.com/x?page=4&per_page=100>; rel="next", '
        '<https://api.github.com/x?page=9&per_page=100>; rel="last"'
    )
    assert next_page(link) == "4"
    assert next_page('<https://api.github.com/x?page=1>; rel="first"') is None
    assert next_page(None) is None


async def test_pages_bounds_and_errors(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with fake_github(token=TOKEN) as github:
        github.add_repo("o", "r")
        for n in range(1, 8):
            github.open_pull("o", "r", Pull(n, "t", f"b{n}", "a" * 40))
        api = RestApi(base=github.url + "/", token=SecretRef(file=token_file))
        async with RestClient(api) as client:
            pulls = await client.pages("repos/o/r/pulls", {"per_page": "3"})
            assert [p["number"] for p in pulls or ()] == [7, 6, 5, 4, 3, 2, 1]
            assert await client.pages("repos/o/gone/pulls", missing_ok=True) is None
            assert await client.exists("repos/o/r/branches/main")
            assert not await client.exists("repos/o/r/branches/nope")
        async with RestClient(RestApi(base=api.base, token=api.token, max_body=100)) as client:
            with pytest.raises(ApiError, match="more than 100 bytes"):
                await client.get("repos/o/r/pulls")
        token_file.write_text("wrong-" + TOKEN)
        async with RestClient(api) as client:
            with pytest.raises(ApiError) as e:
                await client.get("repos/o/r/pulls")
        assert e.value.status == 401
        assert e.value.message == (
            f"GET {github.url}/repos/o/r/pulls: HTTP 401 Unauthorized: Bad credentials"
        )
        github.fail_with = 502
        async with RestClient(RestApi(base=api.base)) as client:
            with pytest.raises(ApiError, match="HTTP 502 Bad Gateway"):
                await client.pages("repos/o/r/pulls")


async def test_no_token_leaves_for_another_host_and_slow_hosts_time_out(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with fake_github(token=TOKEN) as github, fake_github() as elsewhere:
        github.add_repo("o", "r")
        github.redirect = f"{elsewhere.url}/repos/o/r/pulls"
        api = RestApi(base=github.url + "/", token=SecretRef(file=token_file), timeout=0.5)
        async with RestClient(api) as client:
            with pytest.raises(ApiError, match="redirected to another host"):
                await client.get("repos/o/r/pulls")
            assert elsewhere.requests == []  # never asked, so never sent the token
            github.redirect, github.delay = None, 2.0
            with pytest.raises(ApiError, match=r"timed out after 0\.5s"):
                await client.get("repos/o/r/pulls")
