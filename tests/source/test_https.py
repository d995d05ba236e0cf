"""Credentials over a real TLS `git http-backend` with basic auth on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitkrm.errors import GitkrmError, NotFound, ServiceUnavailable, Unauthorized
from gitkrm.source import HttpsAuth, SecretRef
from tests.source.source_gitrepo import RemoteRepo, SourceFactory
from tests.source.source_https import GitHttpsServer, require_tools


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools()


USER = "robot"
TOKEN = "tok-3f9a1c77e2b84d5cSECRET"
WRONG = "wrong-9c1d2e3f4a5bWRONGTOKEN"


@pytest.fixture
def server(remote: RemoteRepo, tmp_path: Path) -> Iterator[GitHttpsServer]:
    remote.publish(files={"app.yaml": "kind: App\n"})
    certs = tmp_path / "certs"
    certs.mkdir()
    with GitHttpsServer(remote.bare.parent, username=USER, password=TOKEN, certs=certs) as srv:
        yield srv


def assert_no_secret_in(cache: Path, *secrets: str) -> None:
    """No file of the cache (config, FETCH_HEAD, packs, logs...) holds a secret."""
    for dirpath, _, names in os.walk(cache):
        for name in names:
            data = (Path(dirpath) / name).read_bytes()
            for s in secrets:
                assert s.encode() not in data, f"{s!r} found in {dirpath}/{name}"


async def test_token_from_file(
    server: GitHttpsServer, make_source: SourceFactory, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    src = make_source(
        server.url("remote.git"),
        auth=HttpsAuth(username=USER, password=SecretRef(file=token_file)),
        ca_file=server.cert,
    )
    snap = await src.snapshot()
    assert snap.read("app.yaml") == b"kind: App\n"
    assert await src.snapshot() is snap
    assert_no_secret_in(tmp_path / "cache", TOKEN)
    assert "credential" not in (tmp_path / "cache" / "config").read_text()


async def test_token_from_env_as_bearer(
    server: GitHttpsServer,
    make_source: SourceFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITKRM_TEST_TOKEN", TOKEN)
    src = make_source(
        server.url("remote.git"),
        auth=HttpsAuth(password=SecretRef(env="GITKRM_TEST_TOKEN"), bearer=True),
        ca_file=server.cert,
    )
    snap = await src.snapshot()
    assert snap.read("app.yaml") == b"kind: App\n"
    assert f"Bearer {TOKEN}" in server.auth_headers
    assert_no_secret_in(tmp_path / "cache", TOKEN)


async def test_basic_auth_from_url_userinfo(
    server: GitHttpsServer, make_source: SourceFactory, tmp_path: Path
) -> None:
    url = server.url("remote.git").replace("https://", f"https://{USER}:{TOKEN}@")
    src = make_source(url, ca_file=server.cert)
    assert TOKEN not in repr(src.spec)
    snap = await src.snapshot()
    assert snap.read("app.yaml") == b"kind: App\n"
    assert_no_secret_in(tmp_path / "cache", TOKEN, f"{USER}:")


@pytest.mark.parametrize("how", ["file", "env", "url"])
async def test_wrong_credentials_are_unauthorized_and_never_shown(
    server: GitHttpsServer,
    make_source: SourceFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    url = server.url("remote.git")
    auth = None
    if how == "file":
        (tmp_path / "wrong").write_text(WRONG)
        auth = HttpsAuth(username=USER, password=SecretRef(file=tmp_path / "wrong"))
    elif how == "env":
        monkeypatch.setenv("GITKRM_TEST_TOKEN", WRONG)
        auth = HttpsAuth(username=USER, password=SecretRef(env="GITKRM_TEST_TOKEN"))
    else:
        url = url.replace("https://", f"https://{USER}:{WRONG}@")
    src = make_source(url, auth=auth, ca_file=server.cert)
    with pytest.raises(Unauthorized) as err:
        await src.snapshot()
    text = f"{err.value} {err.value.message} {err.value.to_status()} {err.value.args!r}"
    assert WRONG not in text
    assert f"{USER}:" not in text
    assert "127.0.0.1" in text  # the remote is still named
    assert any(h.startswith("Basic ") for h in server.auth_headers)
    if (tmp_path / "cache").exists():
        assert_no_secret_in(tmp_path / "cache", WRONG)


async def test_no_credentials_is_unauthorized(
    server: GitHttpsServer, make_source: SourceFactory
) -> None:
    src = make_source(server.url("remote.git"), ca_file=server.cert)
    with pytest.raises(Unauthorized):
        await src.poll()


async def test_untrusted_certificate_is_refused(
    server: GitHttpsServer, make_source: SourceFactory, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text(TOKEN)
    src = make_source(
        server.url("remote.git"),
        auth=HttpsAuth(username=USER, password=SecretRef(file=tmp_path / "token")),
    )
    with pytest.raises(ServiceUnavailable, match="certificate") as err:
        await src.snapshot()
    assert TOKEN not in str(err.value)


async def test_missing_secret_names_where_it_was_looked_for(
    server: GitHttpsServer, make_source: SourceFactory, tmp_path: Path
) -> None:
    src = make_source(
        server.url("remote.git"),
        auth=HttpsAuth(password=SecretRef(file=tmp_path / "absent")),
        ca_file=server.cert,
    )
    with pytest.raises(NotFound, match="absent"):
        await src.snapshot()
    env_src = make_source(
        server.url("remote.git"),
        auth=HttpsAuth(password=SecretRef(env="GITKRM_TEST_UNSET_VAR")),
        ca_file=server.cert,
        cache="c2",
    )
    with pytest.raises(GitkrmError, match="GITKRM_TEST_UNSET_VAR"):
        await env_src.snapshot()


async def test_logs_never_show_credentials(
    server: GitHttpsServer,
    make_source: SourceFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG", logger="gitkrm")
    url = server.url("remote.git").replace("https://", f"https://{USER}:{TOKEN}@")
    await make_source(url, ca_file=server.cert).snapshot()
    bad = make_source(url.replace(TOKEN, WRONG), ca_file=server.cert, cache="c2")
    with pytest.raises(Unauthorized):
        await bad.snapshot()
    assert "ls-remote" in caplog.text
    assert TOKEN not in caplog.text
    assert WRONG not in caplog.text
    assert f"{USER}:" not in caplog.text
