"""Credentials for Git remotes, handed to git without ever being written to its config.

HTTPS secrets reach git through a one-off credential helper (configured with GIT_CONFIG_*
environment variables, reading the secret from the environment of that one git process) or
an `http.extraHeader` set the same way; SSH uses GIT_SSH_COMMAND with the key file, a
known_hosts file and strict host key checking. Secrets are read from their file or variable
at every use, so a rotated token is picked up without a restart.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gitkrm.errors import BadRequest, NotFound

from .redact import Redactor

_HELPER = (
    '!f() { test "$1" = get || exit 0; '
    'printf \'username=%s\\npassword=%s\\n\' "$GITKRM_GIT_USERNAME" "$GITKRM_GIT_PASSWORD"; }; f'
)


@dataclass(frozen=True, slots=True)
class SecretRef:
    """A secret kept in a file or an environment variable (never inline in configuration)."""

    file: Path | None = None
    env: str | None = None

    def __post_init__(self) -> None:
        if (self.file is None) == (self.env is None):
            raise BadRequest("a secret reference needs exactly one of 'file' or 'env'")

    def read(self) -> str:
        """The secret, without a trailing newline; errors name where it was looked for."""
        if self.file is not None:
            try:
                value = self.file.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise NotFound(f"secret file {self.file} does not exist") from None
            except OSError as e:
                raise BadRequest(f"secret file {self.file} can't be read: {e.strerror}") from None
            where = f"secret file {self.file}"
        else:
            assert self.env is not None
            if self.env not in os.environ:
                raise NotFound(f"environment variable {self.env} is not set")
            value = os.environ[self.env]
            where = f"environment variable {self.env}"
        value = value.rstrip("\r\n")
        if not value:
            raise BadRequest(f"{where} is empty")
        return value


@dataclass(frozen=True, slots=True)
class HttpsAuth:
    """Basic auth (a password or a token as the password), or a bearer token header."""

    password: SecretRef
    username: str = "git"
    bearer: bool = False


@dataclass(frozen=True, slots=True)
class SshAuth:
    """A private key file (no passphrase) and the known_hosts file the host must be in."""

    key_file: Path
    known_hosts: Path


Auth = HttpsAuth | SshAuth


@dataclass(slots=True)
class GitAuthEnv:
    """What one git invocation needs: extra config pairs, environment and secrets to redact."""

    config: list[tuple[str, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    redactor: Redactor = field(default_factory=Redactor)


class CredentialProvider:
    """Turns an `Auth` (or URL user-info) into a `GitAuthEnv` for each git invocation."""

    def __init__(
        self,
        auth: Auth | None,
        *,
        url_username: str | None = None,
        url_password: str | None = None,
        ca_file: Path | None = None,
    ) -> None:
        self._auth = auth
        self._url_username = url_username
        self._url_password = url_password
        self._ca_file = ca_file
        self._tmpdir: str | None = None
        self._redactor = Redactor([url_password] if url_password else [])

    @property
    def redactor(self) -> Redactor:
        """Knows every secret this provider has handed out so far."""
        return self._redactor

    def env(self) -> GitAuthEnv:
        out = GitAuthEnv(redactor=self._redactor)
        if self._ca_file is not None:
            out.env["GIT_SSL_CAINFO"] = str(self._ca_file)
        out.env["GIT_SSH_COMMAND"] = "ssh -F /dev/null -o BatchMode=yes"
        # Never consult a helper that could store or leak what we hand over.
        out.config.append(("credential.helper", ""))
        auth = self._auth
        if isinstance(auth, SshAuth):
            out.env["GIT_SSH_COMMAND"] = self._ssh_command(auth)
        elif isinstance(auth, HttpsAuth):
            secret = auth.password.read()
            self._redactor.add(secret)
            if auth.bearer:
                out.config.append(("http.extraHeader", f"Authorization: Bearer {secret}"))
            else:
                self._basic(out, auth.username, secret)
        elif self._url_password is not None or self._url_username is not None:
            self._basic(out, self._url_username or "git", self._url_password or "")
        return out

    def _basic(self, out: GitAuthEnv, username: str, password: str) -> None:
        out.config.append(("credential.helper", _HELPER))
        out.env["GITKRM_GIT_USERNAME"] = username
        out.env["GITKRM_GIT_PASSWORD"] = password

    def _ssh_command(self, auth: SshAuth) -> str:
        for p, what in ((auth.key_file, "SSH key file"), (auth.known_hosts, "known_hosts file")):
            if not p.is_file():
                raise NotFound(f"{what} {p} does not exist")
        key = auth.key_file
        if key.stat().st_mode & 0o077:
            # ssh refuses keys readable by others (as mounted Kubernetes secrets often are).
            if self._tmpdir is None:
                self._tmpdir = tempfile.mkdtemp(prefix="gitkrm-ssh-")
            copy = Path(self._tmpdir) / "id"
            copy.unlink(missing_ok=True)
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IRUSR | stat.S_IWUSR)
            with os.fdopen(fd, "wb") as f:
                f.write(key.read_bytes())
            key = copy
        opts = [
            "-F",
            "/dev/null",
            "-i",
            str(key),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "IdentityAgent=none",
            "-o",
            f"UserKnownHostsFile={auth.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=15",
        ]
        return "ssh " + shlex.join(opts)

    def close(self) -> None:
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
