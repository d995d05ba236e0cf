"""Signature verification of the synced commit against a keyring of armored public keys.

As Flux's `verify: {mode: head}`: the head commit must carry a good OpenPGP signature made
by a key of the keyring; anything else (unsigned, unknown key, bad, expired or revoked) is
refused and never becomes a snapshot. gpg runs with a private, temporary GNUPGHOME that
holds only the keyring, so nothing the host trusts is trusted here.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from gitkrm.errors import BadRequest, InternalError, NotFound

from .errors import UntrustedRevision
from .gitcli import GitRunner, base_env


class VerifyMode(StrEnum):
    HEAD = "head"


@dataclass(frozen=True, slots=True)
class VerifySpec:
    keyring: Path
    mode: VerifyMode = VerifyMode.HEAD


_REFUSALS = {
    "BADSIG": "its signature is bad",
    "EXPKEYSIG": "it is signed by an expired key",
    "REVKEYSIG": "it is signed by a revoked key",
    "EXPSIG": "its signature has expired",
}


def judge(status: str, *, trusted: frozenset[str]) -> tuple[str | None, str]:
    """(primary key fingerprint, "") for a good signature by a trusted key, else (None, why)."""
    lines = [ln.split()[1:] for ln in status.splitlines() if ln.startswith("[GNUPG:] ")]
    if not lines:
        return None, "it is not signed"
    words = {ln[0] for ln in lines if ln}
    for word, why in _REFUSALS.items():
        if word in words:
            return None, why
    if "NO_PUBKEY" in words or "ERRSIG" in words:
        key = next((ln[1] for ln in lines if ln and ln[0] in ("NO_PUBKEY", "ERRSIG")), "?")
        return None, f"it is signed by key {key}, which is not in the keyring"
    valid = [ln for ln in lines if ln and ln[0] == "VALIDSIG"]
    if "GOODSIG" not in words or not valid:
        return None, "its signature could not be verified"
    primary = valid[0][-1].upper()
    if primary not in trusted:
        return None, f"it is signed by key {primary}, which is not in the keyring"
    return primary, ""


class CommitVerifier:
    """Checks commits with `git verify-commit` against the keyring of one `VerifySpec`."""

    def __init__(self, spec: VerifySpec) -> None:
        self.spec = spec
        self._home: Path | None = None
        self._stamp: tuple[int, int] | None = None
        self._trusted: frozenset[str] = frozenset()

    async def _gpg(self, *args: str) -> str:
        assert self._home is not None
        try:
            proc = await asyncio.create_subprocess_exec(
                "gpg",
                "--batch",
                "--no-tty",
                "--homedir",
                str(self._home),
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=base_env({}),
            )
        except FileNotFoundError:
            raise InternalError("gpg is not installed (needed to verify signatures)") from None
        try:
            async with asyncio.timeout(60):
                out, err = await proc.communicate()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        if proc.returncode != 0:
            detail = err.decode("utf-8", "replace").strip().splitlines()
            raise BadRequest(
                f"keyring {self.spec.keyring} can't be read by gpg: {' / '.join(detail[-2:])}"
            )
        return out.decode("utf-8", "replace")

    async def _load(self) -> None:
        """Import the keyring into a fresh home, again whenever the file changes."""
        try:
            st = self.spec.keyring.stat()
        except FileNotFoundError:
            raise NotFound(f"keyring {self.spec.keyring} does not exist") from None
        stamp = (st.st_mtime_ns, st.st_size)
        if self._home is not None and stamp == self._stamp:
            return
        self.close()
        self._home = Path(tempfile.mkdtemp(prefix="gitkrm-gpg-"))
        (self._home / "gpg.conf").write_text("trust-model always\nno-autostart\n")
        await self._gpg("--quiet", "--import", str(self.spec.keyring))
        listing = await self._gpg("--with-colons", "--fingerprint", "--list-keys")
        fprs: set[str] = set()
        primary = False
        for line in listing.splitlines():
            kind = line.split(":", 1)[0]
            if kind == "pub":
                primary = True
            elif kind == "sub":
                primary = False
            elif kind == "fpr" and primary:
                fprs.add(line.split(":")[9].upper())
                primary = False
        if not fprs:
            raise BadRequest(f"keyring {self.spec.keyring} holds no public key")
        self._trusted = frozenset(fprs)
        self._stamp = stamp

    async def verify(self, runner: GitRunner, revision: str) -> str:
        """The fingerprint of the key that signed `revision`, or `UntrustedRevision`."""
        await self._load()
        assert self._home is not None
        result = await runner.run(
            "verify-commit",
            "--raw",
            revision,
            env={"GNUPGHOME": str(self._home)},
            ok_codes=(0, 1),
            what=f"verify-commit {revision[:12]}",
        )
        fingerprint, why = judge(result.stderr, trusted=self._trusted)
        if fingerprint is None:
            raise UntrustedRevision(revision=revision, reason=why)
        return fingerprint

    def close(self) -> None:
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
            self._stamp = None
