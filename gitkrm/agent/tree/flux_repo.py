"""A Flux `GitRepository` as the repository a child source syncs.

A GitRepository whose URL names the repository the parent syncs (`repourl`: in any
spelling, or the remote of the local clone the parent syncs) *is* that repository: the
child takes the parent's URL, ref and credentials (unless the GitRepository asks for
another ref). Any
other URL is a repository of its own, with its `ref`, `interval`, `timeout` and
`secretRef` credentials: the Secret's `username`/`password`, `bearerToken`, or
`identity`/`known_hosts` (and `ca.crt`), written to files of a private directory (mode
0600, removed when the process ends) because gitkrm's credentials are read from files at
every use. Values are never logged.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import hashlib
import hmac
import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from gitkrm.errors import BadRequest
from gitkrm.krm import Obj, ObjectRef
from gitkrm.source import Auth, GitRef, HttpsAuth, RefKind, SecretRef, SshAuth

from ..config import SourceConfig
from ..duration import parse_duration
from .fields import Fail, unhonoured_fields
from .flux_spec import GitRepository, GitRepositorySpec
from .model import Unhonoured
from .naming import child_name
from .repourl import clone_of, has_ref, same_repository

BOOTSTRAP: Final = ("flux-system", "flux-system")
"""The namespace and name of `flux bootstrap`'s GitRepository."""
_SAID: set[str] = set()  # the sources that logged their use of BOOTSTRAP
log = logging.getLogger(__name__)

HONOURED: Final = frozenset({"url", "ref", "interval", "timeout", "secretRef", "suspend", "ignore"})
_UNHONOURED: Final = {
    "include": "including other GitRepositories' artifacts is not supported",
    "recurseSubmodules": "submodules are not checked out",
    "verify": "commit signature verification of a GitRepository is not supported (use "
    "GitSource spec.verify)",
    "proxySecretRef": "proxies are not supported",
    "provider": "only the generic provider (a Secret's credentials) is supported",
    "sparseCheckout": "the whole repository is fetched",
}


@dataclass(frozen=True, slots=True)
class Repository:
    """Where a child's files come from."""

    url: str
    ref: GitRef | None
    auth: Auth | None = None
    ca_file: Path | None = None
    interval: float | None = None
    timeout: float | None = None
    suspend: bool = False
    is_parent: bool = False  # the parent's repository at the parent's ref
    ignore: str | None = None  # a GitRepository's spec.ignore
    unhonoured: tuple[Unhonoured, ...] = ()

    def child_config(
        self, *, declared_by: ObjectRef, path: str, parent: SourceConfig
    ) -> SourceConfig:
        """The config of a child reading `path` of this repository, as far as a Flux
        Kustomization's and an Argo CD Application's are alike: named after its declaring
        object, this URL, ref and credentials, the parent's adoption policy and
        interpreters, and the parent's commit verification at the parent's own ref."""
        return SourceConfig(
            name=child_name(declared_by),
            url=self.url,
            ref=self.ref,
            path=path,
            ignore=self.ignore,
            adoption=parent.adoption,
            auth=self.auth,
            ca_file=self.ca_file,
            verify=parent.verify if self.is_parent else None,
            interpret=parent.interpret,
        )


def git_ref(ref: Mapping[str, Any] | None, fail: Fail, *, at: str) -> GitRef:
    """Flux's precedence: commit, name, semver, tag, branch; `master` when none."""
    ref = ref or {}

    def make(kind: RefKind, name: str, field: str) -> GitRef:
        try:
            return GitRef(kind, name)
        except BadRequest as e:
            raise fail(f"{at}.{field}", e.message) from None

    if ref.get("commit"):
        return make(RefKind.COMMIT, str(ref["commit"]), "commit")
    name = ref.get("name")
    if name:
        name = str(name)
        for prefix, kind in (("refs/heads/", RefKind.BRANCH), ("refs/tags/", RefKind.TAG)):
            if name.startswith(prefix):
                return make(kind, name.removeprefix(prefix), "name")
        raise fail(f"{at}.name", f"{name!r}: only refs/heads/* and refs/tags/* are supported")
    if ref.get("semver"):
        return make(RefKind.SEMVER, str(ref["semver"]), "semver")
    if ref.get("tag"):
        return make(RefKind.TAG, str(ref["tag"]), "tag")
    return make(RefKind.BRANCH, str(ref.get("branch") or "master"), "branch")


async def read_repository(
    ref: ObjectRef,
    *,
    parent: SourceConfig,
    get: Callable[[ObjectRef], Awaitable[Obj | None]],
    fail: Fail,
) -> Repository:
    """The repository the GitRepository `ref` names (`fail` builds errors naming the
    Kustomization's `spec.sourceRef`)."""
    obj = await get(ref)
    if obj is None and (ref.namespace, ref.name) == BOOTSTRAP:
        # `flux bootstrap` writes this GitRepository (gotk-sync.yaml) naming the repository
        # itself; a repository whose bootstrap files are placeholders has none, and gitkrm
        # syncing it stands where bootstrap would: the repository being synced.
        if parent.name not in _SAID:
            _SAID.add(parent.name)
            log.info(
                "source %s: GitRepository flux-system/flux-system is not defined: read as "
                "the repository being synced (flux bootstrap's)", parent.name,
            )  # fmt: skip
        return Repository(
            url=parent.url, ref=parent.ref, auth=parent.auth, ca_file=parent.ca_file,
            is_parent=True,
        )  # fmt: skip
    if obj is None:
        raise fail("spec.sourceRef", f"GitRepository {ref.namespace}/{ref.name} not found")
    repo = cast(GitRepository, obj)
    spec: GitRepositorySpec = repo.get("spec") or {}
    where = f"GitRepository {ref.namespace}/{ref.name}"

    def repo_fail(field: str, message: str) -> Exception:
        return fail("spec.sourceRef", f"{where}: {field}: {message}")

    url = spec.get("url")
    if not url:
        raise repo_fail("spec.url", "required")
    unhonoured = tuple(
        unhonoured_fields(spec, at=f"{where} spec", known=HONOURED, reasons=_UNHONOURED)
    )
    interval = duration(spec.get("interval"), "spec.interval", repo_fail)
    timeout = duration(spec.get("timeout"), "spec.timeout", repo_fail)
    suspend = bool(spec.get("suspend"))
    ignore = ignore_lines(spec.get("ignore"), repo_fail)
    same = same_repository(url, parent)
    clone = not same and await clone_of(url, parent)
    if same or clone:
        asked = spec.get("ref")
        gref = (
            git_ref(cast("Mapping[str, Any]", asked), repo_fail, at="spec.ref") if asked else None
        )
        if parent.ref is None or gref is None or gref == parent.ref:
            return Repository(
                url=parent.url, ref=parent.ref, auth=parent.auth, ca_file=parent.ca_file,
                interval=interval, timeout=timeout, suspend=suspend, is_parent=True,
                ignore=ignore, unhonoured=unhonoured,
            )  # fmt: skip
    if same or (clone and gref is not None and await has_ref(parent.url, gref)):
        return Repository(
            url=parent.url, ref=gref, auth=parent.auth, ca_file=parent.ca_file,
            interval=interval, timeout=timeout, suspend=suspend, ignore=ignore,
            unhonoured=unhonoured,
        )  # fmt: skip
    gref = git_ref(cast("Mapping[str, Any]", spec.get("ref")), repo_fail, at="spec.ref")
    auth, ca_file = None, None
    secret_ref = spec.get("secretRef")
    if secret_ref:
        name = secret_ref.get("name")
        if not name:
            raise repo_fail("spec.secretRef.name", "required")
        secret = await get(ObjectRef(group="", kind="Secret", name=name, namespace=ref.namespace))
        if secret is None:
            raise repo_fail("spec.secretRef", f"Secret {ref.namespace}/{name} not found")
        auth, ca_file = credentials(secret, url=url, fail=repo_fail)
    return Repository(
        url=url, ref=gref, auth=auth, ca_file=ca_file, interval=interval, timeout=timeout,
        suspend=suspend, ignore=ignore, unhonoured=unhonoured,
    )  # fmt: skip


def ignore_lines(value: object, fail: Fail) -> str | None:
    """`spec.ignore` of a GitRepository or an OCIRepository: .sourceignore lines."""
    if value is not None and not isinstance(value, str):
        raise fail("spec.ignore", "must be a string of .sourceignore lines")
    return value


def duration(value: object, field: str, fail: Fail) -> float | None:
    """A Go duration of a field (None when absent); `fail` names the field otherwise."""
    if value is None:
        return None
    try:
        return parse_duration(str(value), what=field)
    except BadRequest as e:
        raise fail(field, e.message) from None


def _decoded(secret: Obj, key: str, fail: Fail) -> bytes | None:
    data = secret.get("data") or {}
    string = secret.get("stringData") or {}
    if key in string:
        return str(string[key]).encode()
    if key not in data:
        return None
    try:
        return base64.b64decode(str(data[key]), validate=True)
    except (binascii.Error, ValueError):
        raise fail("spec.secretRef", f"data key {key!r} of the Secret is not base64") from None


def credentials(secret: Obj, *, url: str, fail: Fail) -> tuple[Auth | None, Path | None]:
    """The Secret's credentials as gitkrm's `Auth` (and CA file), their values in private
    files."""

    def get(key: str) -> bytes | None:
        return _decoded(secret, key, fail)

    ca = get("ca.crt") or get("caFile")
    ca_file = private_file(ca, ".crt") if ca else None
    identity, known_hosts = get("identity"), get("known_hosts")
    if identity is not None:
        if known_hosts is None:
            raise fail(
                "spec.secretRef", "an SSH identity needs known_hosts (gitkrm checks host keys)"
            )
        key = private_file(identity, ".key")
        return SshAuth(key_file=key, known_hosts=private_file(known_hosts, ".hosts")), ca_file
    token = get("bearerToken")
    if token is not None:
        return HttpsAuth(
            password=SecretRef(file=private_file(token, ".token")), bearer=True
        ), ca_file
    password = get("password")
    if password is not None:
        username = (get("username") or b"git").decode("utf-8", "replace").strip()
        return HttpsAuth(
            password=SecretRef(file=private_file(password, ".password")), username=username
        ), ca_file
    if ca_file is None:
        raise fail(
            "spec.secretRef",
            "the Secret holds none of username/password, bearerToken, identity/known_hosts, ca.crt",
        )
    return None, ca_file


_LOCK = threading.Lock()
_DIR: list[Path] = []
_KEY: Final = os.urandom(32)


def _private_dir() -> Path:
    with _LOCK:
        if not _DIR:
            d = Path(tempfile.mkdtemp(prefix="gitkrm-flux-"))  # mode 0700
            atexit.register(shutil.rmtree, d, True)
            _DIR.append(d)
        return _DIR[0]


def private_file(data: bytes, suffix: str) -> Path:
    """A file of `data` (mode 0600) named by a keyed digest of it: the same credentials
    give the same path, so a child's configuration stays equal while they do."""
    name = hmac.new(_KEY, data, hashlib.sha256).hexdigest()[:24] + suffix
    path = _private_dir() / name
    if not path.exists():
        tmp = path.with_suffix(suffix + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, stat.S_IRUSR | stat.S_IWUSR)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return path
