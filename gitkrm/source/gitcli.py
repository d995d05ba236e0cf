"""Running the `git` CLI safely: isolated config, no prompts, timeouts, clear errors.

Every failure becomes a `gitkrm.errors` class whose message went through the redactor, so
neither a token nor URL user-info can reach a log, a status or an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitkrm.errors import (
    GitkrmError,
    InternalError,
    NotFound,
    ServiceUnavailable,
    Timeout,
    Unauthorized,
)

from .credentials import GitAuthEnv
from .redact import Redactor

DEFAULT_TIMEOUT = 120.0

log = logging.getLogger(__name__)


class CorruptCache(InternalError):
    """The local cache repository is damaged; the caller wipes it and clones again."""


@dataclass(frozen=True, slots=True)
class GitResult:
    stdout: bytes
    stderr: str


_AUTH = (
    "authentication failed",
    "could not read username",
    "could not read password",
    "access denied",
    "permission denied (publickey",
    "permission denied, please try again",
    "host key verification failed",
    "returned error: 401",
    "returned error: 403",
    "invalid username or password",
    "terminal prompts disabled",
)
_NOT_FOUND = (
    "repository not found",
    "' not found",
    "does not appear to be a git repository",
    "returned error: 404",
    "couldn't find remote ref",
    "no such ref",
    "not our ref",
    "no such remote ref",
    "does not allow request for unadvertised object",
)
_UNAVAILABLE = (
    "could not resolve host",
    "connection refused",
    "failed to connect",
    "connection timed out",
    "operation timed out",
    "network is unreachable",
    "no route to host",
    "connection reset",
    "the remote end hung up",
    "early eof",
    "ssl certificate problem",
    "ssl_connect",
    "gnutls",
    "unable to access",
    "returned error: 5",
    "connection closed by",
    "kex_exchange_identification",
    "could not read from remote repository",
)
_CORRUPT = (
    "not a git repository",
    "is corrupt",
    "corrupt loose object",
    "packfile",
    "bad object",
    "bad tree object",
    "invalid object",
    "unable to read",
    "inflate",
    "loose object",
    "does not match index",
    "index file",
    "bad config",
    "bad numeric config",
    "missing blob object",
    "missing tree object",
    "object file",
    "unable to parse",
    "bad signature",
    "fatal: object ",
    "not a valid object",
)


def _first_lines(stderr: str, limit: int = 3) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    meaningful = [ln for ln in lines if ln.lower().startswith(("fatal", "error"))] or lines
    return " / ".join(meaningful[:limit]) or "no error output"


def _line_with(stderr: str, needles: Sequence[str]) -> str | None:
    """The first stderr line that names one of `needles` (the line that explains)."""
    for line in stderr.splitlines():
        low = line.lower()
        if any(n in low for n in needles):
            return line.strip()
    return None


def classify(stderr: str, *, what: str, remote: bool) -> GitkrmError:
    """Map git's stderr to the error a caller can act on; `what` names the operation."""
    checks: list[tuple[Sequence[str], type[GitkrmError], str]] = []
    if remote:
        checks += [
            (_AUTH, Unauthorized, "access denied"),
            (_NOT_FOUND, NotFound, "not found"),
            (_UNAVAILABLE, ServiceUnavailable, "remote unreachable"),
        ]
    checks.append((_CORRUPT, CorruptCache, "local cache is damaged"))
    for needles, cls, summary in checks:
        line = _line_with(stderr, needles)
        if line is not None:
            return cls(f"{what}: {summary} ({line})")
    return InternalError(f"{what} failed: {_first_lines(stderr)}")


def base_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The process environment with git isolated from user/system config and prompts."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GIT_", "GITKRM_GIT_")) and k not in ("SSH_ASKPASS", "SSH_AUTH_SOCK")
    }
    env.update(
        LC_ALL="C",
        LANGUAGE="C",
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_HTTP_LOW_SPEED_LIMIT="1000",
        GIT_HTTP_LOW_SPEED_TIME="60",
    )
    env.update(extra)
    return env


class GitRunner:
    """Runs git commands against one repository (or none), counting them by subcommand."""

    def __init__(self, *, git_dir: Path | None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.git_dir = git_dir
        self.timeout = timeout
        self.calls: Counter[str] = Counter()

    async def run(
        self,
        *args: str,
        auth: GitAuthEnv | None = None,
        redactor: Redactor | None = None,
        what: str | None = None,
        remote: bool = False,
        in_repo: bool = True,
        env: Mapping[str, str] | None = None,
        ok_codes: Sequence[int] = (0,),
    ) -> GitResult:
        """Run `git <args>`; raise a classified, redacted error unless the exit code is ok.

        `in_repo=False` runs outside the repository (`ls-remote` needs none, and must work
        while the cache is damaged).
        """
        redact = redactor or (auth.redactor if auth else Redactor())
        extra: dict[str, str] = dict(env or {})
        config: list[tuple[str, str]] = []
        if auth is not None:
            extra.update(auth.env)
            config.extend(auth.config)
        extra["GIT_CONFIG_COUNT"] = str(len(config))
        for i, (k, v) in enumerate(config):
            extra[f"GIT_CONFIG_KEY_{i}"] = k
            extra[f"GIT_CONFIG_VALUE_{i}"] = v
        argv = ["git"]
        if self.git_dir is not None and in_repo:
            argv.append(f"--git-dir={self.git_dir}")
        argv.extend(args)
        sub = args[0] if args else "git"
        self.calls[sub] += 1
        label = redact(what or f"git {sub}")
        limit = self.timeout
        started = time.perf_counter()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=base_env(extra),
                # Outside the cache, stay out of whatever repository the agent runs in.
                cwd=None if in_repo else "/",
                start_new_session=True,
            )
        except FileNotFoundError:
            raise InternalError("the git command is not installed (not found on PATH)") from None
        try:
            async with asyncio.timeout(limit):
                out, err = await proc.communicate()
        except TimeoutError:
            raise Timeout(f"{label}: no answer within {limit:g}s") from None
        finally:
            if proc.returncode is None:
                # A cancelled or timed-out git may have an ssh or https helper child.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        stderr = err.decode("utf-8", "replace")
        log.debug(
            "git %s: exit %s in %.0f ms",
            redact(" ".join(args)),
            proc.returncode,
            (time.perf_counter() - started) * 1000,
        )
        if proc.returncode not in ok_codes:
            exc = classify(stderr, what=label, remote=remote)
            exc.message = redact(exc.message)
            exc.args = (exc.message,)
            raise exc
        return GitResult(out, redact(stderr))
