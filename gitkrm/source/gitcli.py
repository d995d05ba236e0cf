"""Running the `git` CLI safely: isolated config, no prompts, timeouts, clear errors.

Every git process gitkrm starts goes through a `GitRunner`: `run` (asyncio), `run_sync`
(its twin for the synchronous readers of `gitkrm history` and `gitkrm status`) and `popen`
(the long-lived `cat-file --batch-command` of `CatFile`) build the command line and the
environment the same way, give git no terminal (stdin is /dev/null unless input is
given), bound each command by a timeout, and turn every failure into a `gitkrm.errors`
class whose message went through the redactor, so neither a token nor URL user-info can
reach a log, a status or an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

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


class GitMissing(InternalError):
    """There is no `git` command on PATH."""


@dataclass(frozen=True, slots=True)
class GitResult:
    stdout: bytes
    stderr: str
    returncode: int = 0


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


def user_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The process environment as it is (the user's git configuration and credential
    helpers apply: `gitkrm history` on the user's own clone), without prompts."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **extra}


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


@dataclass(frozen=True, slots=True)
class _Command:
    """One git invocation, ready to start: what `run`, `run_sync` and `popen` share."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    label: str
    redact: Callable[[str], str]
    remote: bool
    ok_codes: Sequence[int]

    def spawn(self, input: bytes | None) -> dict[str, Any]:
        """How `run` and `run_sync` start it: stdin piped only for `input`, stdout and
        stderr captured, in its own session (so a timeout can kill its helpers too)."""
        return {
            "stdin": subprocess.DEVNULL if input is None else subprocess.PIPE,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.PIPE,
            "env": self.env,
            "cwd": self.cwd,
            "start_new_session": True,
        }

    def timed_out(self, timeout: float) -> Timeout:
        return Timeout(f"{self.label}: no answer within {timeout:g}s")


def _kill_group(pid: int) -> None:
    """Kill a cancelled or timed-out git and its ssh or https helper children."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


class GitKeywords(TypedDict, total=False):
    """How `GitRunner.run` runs one command: `auth` (credentials' environment and config),
    `redactor` (else the auth's), `what` (the label errors name), `remote` (errors
    classified as a remote's), `in_repo` (with `--git-dir`; default True), `env`,
    `ok_codes` (default (0,)) and `cwd`."""

    auth: GitAuthEnv | None
    redactor: Redactor | None
    what: str | None
    remote: bool
    in_repo: bool
    env: Mapping[str, str] | None
    ok_codes: Sequence[int]
    cwd: Path | None


class GitRunner:
    """Runs git commands against one repository (or none), counting them by subcommand.

    `user_config=True` runs git with the user's own configuration and environment (a
    clone the user reads with `gitkrm history`); otherwise git is isolated from it
    (`base_env`: no global or system config, no ssh agent, no prompts)."""

    def __init__(
        self,
        *,
        git_dir: Path | None,
        timeout: float = DEFAULT_TIMEOUT,
        user_config: bool = False,
    ) -> None:
        self.git_dir = git_dir
        self.timeout = timeout
        self.user_config = user_config
        self.calls: Counter[str] = Counter()

    def _command(self, args: Sequence[str], options: GitKeywords) -> _Command:
        auth = options.get("auth")
        redactor = options.get("redactor")
        env = options.get("env")
        in_repo = options.get("in_repo", True)
        cwd = options.get("cwd")
        redact = redactor or (auth.redactor if auth else Redactor())
        extra: dict[str, str] = dict(env or {})
        config: list[tuple[str, str]] = []
        if auth is not None:
            extra.update(auth.env)
            config.extend(auth.config)
        if config or not self.user_config:
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
        if cwd is None and not in_repo:
            cwd = Path("/")  # outside the cache, stay out of whatever repository we run in
        return _Command(
            argv=argv,
            env=user_env(extra) if self.user_config else base_env(extra),
            cwd=None if cwd is None else str(cwd),
            label=redact(options.get("what") or f"git {sub}"),
            redact=redact,
            remote=options.get("remote", False),
            ok_codes=options.get("ok_codes", (0,)),
        )

    def _result(
        self, cmd: _Command, returncode: int | None, out: bytes, err: bytes, started: float
    ) -> GitResult:
        stderr = err.decode("utf-8", "replace")
        log.debug(
            "git %s: exit %s in %.0f ms",
            cmd.redact(" ".join(cmd.argv[1:])),
            returncode,
            (time.perf_counter() - started) * 1000,
        )
        if returncode not in cmd.ok_codes:
            exc = classify(stderr, what=cmd.label, remote=cmd.remote)
            exc.message = cmd.redact(exc.message)
            exc.args = (exc.message,)
            raise exc
        return GitResult(out, cmd.redact(stderr), returncode or 0)

    async def run(
        self,
        *args: str,
        input: bytes | None = None,
        **options: Unpack[GitKeywords],
    ) -> GitResult:
        """Run `git <args>`; raise a classified, redacted error unless the exit code is ok.

        `in_repo=False` runs outside the repository (`ls-remote` needs none, and must work
        while the cache is damaged); `input` is written to git's stdin (else /dev/null).
        """
        cmd = self._command(args, options)
        started = time.perf_counter()
        try:
            proc = await asyncio.create_subprocess_exec(*cmd.argv, **cmd.spawn(input))
        except FileNotFoundError:
            raise _no_git() from None
        try:
            async with asyncio.timeout(self.timeout):
                out, err = await proc.communicate(input)
        except TimeoutError:
            raise cmd.timed_out(self.timeout) from None
        finally:
            if proc.returncode is None:
                _kill_group(proc.pid)
                await proc.wait()
        return self._result(cmd, proc.returncode, out, err, started)

    def run_sync(
        self,
        *args: str,
        input: bytes | None = None,
        **options: Unpack[GitKeywords],
    ) -> GitResult:
        """`run` for callers without an event loop (the same command, environment, timeout
        and errors); it blocks the calling thread."""
        cmd = self._command(args, options)
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd.argv, **cmd.spawn(input))
        except FileNotFoundError:
            raise _no_git() from None
        try:
            out, err = proc.communicate(input, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise cmd.timed_out(self.timeout) from None
        finally:
            if proc.returncode is None:
                _kill_group(proc.pid)
                proc.communicate()
        return self._result(cmd, proc.returncode, out, err, started)

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """A long-lived git with pipes on stdin and stdout (`cat-file --batch-command`):
        the same command line and environment as `run`; the caller talks to it, bounds
        its reads and ends it. Its stderr is discarded."""
        cmd = self._command(args, {})
        try:
            return subprocess.Popen(
                cmd.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=cmd.env,
                cwd=cmd.cwd,
            )
        except FileNotFoundError:
            raise _no_git() from None


def _no_git() -> GitMissing:
    return GitMissing("the git command is not installed (not found on PATH)")
