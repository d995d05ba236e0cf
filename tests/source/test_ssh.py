"""Git over SSH to an unprivileged-style sshd of the test's own, with known_hosts checking."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gitkrm.errors import NotFound, Unauthorized
from gitkrm.source import SshAuth
from tests.source.source_gitrepo import RemoteRepo, SourceFactory
from tests.source.source_sshd import Sshd, keygen, require_tools


@pytest.fixture(autouse=True)
def _tools() -> None:
    require_tools()


@pytest.fixture
def sshd(tmp_path: Path, remote: RemoteRepo) -> Iterator[Sshd]:
    remote.publish(files={"app.yaml": "kind: App\n"})
    with Sshd(tmp_path / "sshd") as server:
        yield server


async def test_ssh_key_with_known_hosts(
    sshd: Sshd, remote: RemoteRepo, make_source: SourceFactory
) -> None:
    src = make_source(
        sshd.url(remote.bare),
        auth=SshAuth(key_file=sshd.client_key, known_hosts=sshd.known_hosts),
    )
    snap = await src.snapshot()
    assert snap.read("app.yaml") == b"kind: App\n"
    sha = remote.publish(files={"app.yaml": "kind: App2\n"})
    assert await src.poll() == sha
    assert (await src.snapshot()).read("app.yaml") == b"kind: App2\n"


async def test_key_readable_by_others_is_still_used(
    sshd: Sshd, remote: RemoteRepo, make_source: SourceFactory
) -> None:
    sshd.client_key.chmod(0o644)  # as a mounted Kubernetes secret often is
    src = make_source(
        sshd.url(remote.bare),
        auth=SshAuth(key_file=sshd.client_key, known_hosts=sshd.known_hosts),
    )
    assert (await src.snapshot()).read("app.yaml") == b"kind: App\n"


async def test_unknown_key_is_unauthorized(
    sshd: Sshd, remote: RemoteRepo, make_source: SourceFactory, tmp_path: Path
) -> None:
    other = keygen(tmp_path / "other_key")
    src = make_source(
        sshd.url(remote.bare), auth=SshAuth(key_file=other, known_hosts=sshd.known_hosts)
    )
    with pytest.raises(Unauthorized, match="Permission denied"):
        await src.snapshot()


async def test_host_not_in_known_hosts_is_refused(
    sshd: Sshd, remote: RemoteRepo, make_source: SourceFactory, tmp_path: Path
) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    src = make_source(
        sshd.url(remote.bare), auth=SshAuth(key_file=sshd.client_key, known_hosts=empty)
    )
    with pytest.raises(Unauthorized, match="Host key verification failed"):
        await src.snapshot()


async def test_missing_key_file(sshd: Sshd, remote: RemoteRepo, make_source: SourceFactory) -> None:
    src = make_source(
        sshd.url(remote.bare),
        auth=SshAuth(key_file=Path("/nonexistent/key"), known_hosts=sshd.known_hosts),
    )
    with pytest.raises(NotFound, match="/nonexistent/key"):
        await src.snapshot()
