"""Signature verification of the head commit against the fixture keyring."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitkrm.errors import BadRequest, Forbidden, NotFound
from gitkrm.source import GitSource, Snapshot, UntrustedRevision, VerifySpec
from gitkrm.source.verify import judge
from tests.source.source_gitrepo import RemoteRepo, SourceFactory
from tests.support.tools import require_tool

FIXTURES = Path(__file__).parent / "fixtures"
TRUSTED = "FC8862882FBC8A5D209F8B0F515BCAF12DC53368"
UNTRUSTED = "FFEA1CEB6EBDB3D6D4C4602F2EE5C1A3B1FB473F"
KEYRING = FIXTURES / "trusted.pub.asc"


@pytest.fixture(autouse=True)
def _gpg() -> None:
    require_tool("gpg", what="gpg (gnupg)")


@pytest.fixture
def signing_home() -> Iterator[Path]:
    """A GNUPGHOME holding both fixture secret keys, for making signed commits."""
    home = Path(tempfile.mkdtemp(prefix="gk-sign-"))
    home.chmod(0o700)
    for key in ("trusted.sec.asc", "untrusted.sec.asc"):
        subprocess.run(
            ["gpg", "--batch", "--quiet", "--homedir", str(home), "--import", str(FIXTURES / key)],
            check=True,
            capture_output=True,
        )
    yield home
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)
    shutil.rmtree(home, ignore_errors=True)


def status(*lines: str) -> str:
    return "".join(f"[GNUPG:] {ln}\n" for ln in lines)


def test_judge_reads_gpg_status_lines() -> None:
    trusted = frozenset({TRUSTED})
    good = status(
        "GOODSIG 515BCAF12DC53368 test",
        f"VALIDSIG {TRUSTED} 2026-01-01 0 0 4 0 22 8 00 {TRUSTED}",
    )
    assert judge(good, trusted=trusted) == (TRUSTED, "")
    assert judge(good, trusted=frozenset({UNTRUSTED}))[0] is None
    assert judge("", trusted=trusted) == (None, "it is not signed")
    missing = status(
        f"ERRSIG 2EE5C1A3B1FB473F 22 8 00 0 9 {UNTRUSTED}", "NO_PUBKEY 2EE5C1A3B1FB473F"
    )
    assert "not in the keyring" in judge(missing, trusted=trusted)[1]
    for word, why in (("BADSIG", "bad"), ("EXPKEYSIG", "expired"), ("REVKEYSIG", "revoked")):
        assert why in judge(status(f"{word} 515BCAF12DC53368 test"), trusted=trusted)[1]


async def _at_a_trusted_head(
    remote: RemoteRepo, make_source: SourceFactory, signing_home: Path
) -> tuple[GitSource, Snapshot]:
    """A verifying source and its snapshot of the remote's head, signed by a trusted key."""
    remote.write("app.yaml", "kind: App\n")
    sha = remote.sign_commit("signed", gnupghome=signing_home, key=TRUSTED)
    remote.push()
    src = make_source(remote.url, verify=VerifySpec(keyring=KEYRING))
    snap = await src.snapshot()
    assert snap.revision == sha
    return src, snap


async def test_trusted_head_is_accepted(
    remote: RemoteRepo, make_source: SourceFactory, signing_home: Path
) -> None:
    await _at_a_trusted_head(remote, make_source, signing_home)


@pytest.mark.parametrize("signer", [None, UNTRUSTED])
async def test_unsigned_or_untrusted_head_is_refused(
    remote: RemoteRepo, make_source: SourceFactory, signing_home: Path, signer: str | None
) -> None:
    src, snap = await _at_a_trusted_head(remote, make_source, signing_home)
    remote.write("app.yaml", "kind: Evil\n")
    if signer is None:
        bad = remote.commit("unsigned")
    else:
        bad = remote.sign_commit("untrusted", gnupghome=signing_home, key=signer)
    remote.push()
    with pytest.raises(UntrustedRevision) as err:
        await src.snapshot()
    assert isinstance(err.value, Forbidden)
    assert err.value.revision == bad
    assert bad in err.value.message
    expected = "not signed" if signer is None else "2EE5C1A3B1FB473F, which is not in the keyring"
    assert expected in err.value.message
    assert src.last is snap
    assert snap.read("app.yaml") == b"kind: App\n"
    verifies = src.git.calls["verify-commit"]
    with pytest.raises(UntrustedRevision):
        await src.snapshot()  # the refusal is remembered while the head stays there
    assert src.git.calls["verify-commit"] == verifies

    remote.write("app.yaml", "kind: Fixed\n")
    fixed = remote.sign_commit("fixed", gnupghome=signing_home, key=TRUSTED)
    remote.push()
    assert (await src.snapshot()).revision == fixed


async def test_bad_keyring_is_a_clear_error(
    remote: RemoteRepo, make_source: SourceFactory, tmp_path: Path
) -> None:
    remote.publish(files={"app.yaml": "kind: App\n"})
    src = make_source(remote.url, verify=VerifySpec(keyring=tmp_path / "absent.asc"))
    with pytest.raises(NotFound, match=r"absent\.asc"):
        await src.snapshot()
    (tmp_path / "junk.asc").write_text("not a key\n")
    junk = make_source(remote.url, verify=VerifySpec(keyring=tmp_path / "junk.asc"), cache="c2")
    with pytest.raises(BadRequest, match=r"junk\.asc"):
        await junk.snapshot()
