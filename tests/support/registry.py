"""A real OCI registry on loopback: Debian's `docker-registry` (distribution), started on
127.0.0.1 at a free port with its storage in a temporary directory, and stopped after.

`.ci/run` installs the package; without it a test using the fixture skips locally and fails
under CI=true (`require_tool`).
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.net import free_port
from tests.support.tools import require_tool
from tests.support.wait import eventually

_CONFIG = """\
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""
_AUTH = """\
auth:
  htpasswd:
    realm: gitkrm-test
    path: {path}
"""


@dataclass(frozen=True, slots=True)
class Registry:
    """A running registry: `host` is `127.0.0.1:<port>`, `url` its `oci://` root."""

    host: str

    @property
    def url(self) -> str:
        return f"oci://{self.host}"

    def tags(self, repository: str) -> list[str]:
        url = f"http://{self.host}/v2/{repository}/tags/list"
        with urllib.request.urlopen(url, timeout=5) as r:
            tags: list[str] = json.loads(r.read())["tags"] or []
            return tags


def _ready(host: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}/v2/", timeout=1) as r:
            return bool(r.status == 200)
    except urllib.error.HTTPError as e:
        return e.code == 401  # up, and asking for credentials
    except (urllib.error.URLError, OSError):
        return False


def _bcrypt(password: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # libxcrypt's bcrypt: the only hash distribution's htpasswd reads

        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))


def start_registry(
    directory: Path, *, users: dict[str, str] | None = None, auth: str = ""
) -> tuple[subprocess.Popen[bytes], Registry]:
    """`users` (name -> password): an htpasswd registry (Basic auth over plain HTTP);
    `auth`: another `auth:` section of the configuration (`registry_token`)."""
    binary = require_tool("docker-registry", what="the Debian package docker-registry")
    port = free_port()
    config = directory / "config.yml"
    (directory / "data").mkdir(parents=True, exist_ok=True)
    text = _CONFIG.format(root=directory / "data", port=port)
    if users:
        htpasswd = directory / "htpasswd"
        htpasswd.write_text("".join(f"{u}:{_bcrypt(p)}\n" for u, p in users.items()))
        text += _AUTH.format(path=htpasswd)
    text += auth
    config.write_text(text)
    with (directory / "registry.log").open("wb") as log:  # the child keeps its own copy
        proc = subprocess.Popen(
            [str(binary), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
    host = f"127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(  # not AssertionError: eventually() would retry it
                f"docker-registry exited {proc.returncode}: "
                + (directory / "registry.log").read_text()[-2000:]
            )
        return _ready(host)

    eventually(up, timeout=20, message="the OCI registry answers /v2/")
    return proc, Registry(host)


def stop_registry(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """An empty registry for the tests of one module."""
    proc, registry = start_registry(tmp_path_factory.mktemp("registry"))
    try:
        yield registry
    finally:
        stop_registry(proc)


__all__ = ["Registry", "oci_registry", "start_registry", "stop_registry"]
