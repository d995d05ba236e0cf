"""Where an Application's source comes from: `repoURL` and `targetRevision`.

A `repoURL` naming the repository the parent syncs (`repourl`: in any spelling, or the
remote of the local clone the parent syncs, at a ref the clone has) is that repository:
the child takes the parent's URL and credentials, and with `targetRevision`
`HEAD` (or none) the parent's ref. Another URL is a repository of its own,
with the credentials of Argo CD's repository Secrets in the Application's namespace
(label `argocd.argoproj.io/secret-type: repository` whose `url` is the same repository, or
`repo-creds` whose `url` is a prefix of it): `username`/`password`, or `sshPrivateKey`
with the known hosts of the `argocd-ssh-known-hosts-cm` ConfigMap. Values go to private
files (`flux_repo.credentials`), never into logs.

`targetRevision`: a full commit sha is that commit; `refs/heads/x` and `refs/tags/x` say
which; a name that looks like a version (`v1.2.3`, `1.2`) is a tag; a semver range
(`1.2.*`, `>=1.0.0 <2.0.0`, `^1.2`, `*-0`) is the highest tag it allows, resolved again at
every poll (Argo CD's `versions.MaxVersion`, Masterminds' rules: a pre-release only where
the range names one); any other name is a branch (Argo CD asks the remote; gitkrm decides
without I/O). `HEAD` (or none) of another repository is its remote's `HEAD`: the default
branch, whatever it is named, followed when it changes.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any, Final

from gitkrm.errors import BadRequest
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.source import Auth, GitRef, RefKind
from gitkrm.source.spec import HEAD

from ..config import SourceConfig
from .argocd_spec import KNOWN_HOSTS_CONFIGMAP, SECRET_TYPE_LABEL
from .fields import Fail
from .flux_repo import Repository, credentials
from .model import Context
from .repourl import clone_of, has_ref, normalise_url, same_repository

_SHA: Final = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_VERSION: Final = re.compile(r"^v?\d+(\.\d+)*([-+].*)?$")
_RANGE: Final = re.compile(r"[<>=~^*|, ]|\.x\b|\.X\b")
_SECRET: Final = GVK(group="", version="v1", kind="Secret")


def target_ref(revision: str, fail: Fail, *, at: str) -> GitRef | None:
    """`targetRevision` as a GitRef; None for `HEAD` (or empty)."""
    rev = revision.strip()
    if rev in ("", "HEAD"):
        return None

    def make(kind: RefKind, name: str) -> GitRef:
        try:
            return GitRef(kind, name)
        except BadRequest as e:
            raise fail(at, e.message) from None

    if _SHA.match(rev):
        return make(RefKind.COMMIT, rev)
    for prefix, kind in (("refs/heads/", RefKind.BRANCH), ("refs/tags/", RefKind.TAG)):
        if rev.startswith(prefix):
            return make(kind, rev.removeprefix(prefix))
    if _VERSION.match(rev):
        return make(RefKind.TAG, rev)
    if _RANGE.search(rev):
        return make(RefKind.SEMVER, rev)  # the highest tag the range allows, as Argo CD
    return make(RefKind.BRANCH, rev)


async def repository(
    url: str, revision: str, *, namespace: str, ctx: Context, fail: Fail, at: str
) -> Repository:
    """The repository and ref of one source (`at`: the source's field, for errors)."""
    parent: SourceConfig = ctx.parent
    ref = target_ref(revision, fail, at=f"{at}.targetRevision")
    at_parent_ref = ref is None or ref == parent.ref
    if same_repository(url, parent) or (
        await clone_of(url, parent)
        and (at_parent_ref or (ref is not None and await has_ref(parent.url, ref)))
    ):
        return Repository(
            url=parent.url,
            ref=parent.ref if ref is None else ref,
            auth=parent.auth,
            ca_file=parent.ca_file,
            is_parent=at_parent_ref,
        )
    if ref is None:  # the remote's default branch, whatever it is named, as Argo CD
        ref = GitRef(RefKind.REF, HEAD)
    auth, ca_file = await _credentials(url, namespace=namespace, ctx=ctx, fail=fail, at=at)
    return Repository(url=url, ref=ref, auth=auth, ca_file=ca_file)


def _data(secret: Obj, key: str) -> tuple[str, Any] | None:
    for where in ("stringData", "data"):
        values = secret.get(where) or {}
        if key in values:
            return where, values[key]
    return None


def secret_text(secret: Obj, key: str) -> str:
    """A Secret's value (stringData or base64 data) as text; "" when absent."""
    found = _data(secret, key)
    if found is None:
        return ""
    where, value = found
    if where == "stringData":
        return str(value)
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


async def repository_secret(url: str, *, namespace: str, ctx: Context) -> Obj | None:
    """The Secret whose credentials Argo CD would use for `url`: a `repository` Secret of
    that URL, else the `repo-creds` Secret with the longest matching URL prefix."""
    want = normalise_url(url)
    best: tuple[int, Obj] | None = None
    for kind, exact in (("repository", True), ("repo-creds", False)):
        found = await ctx.list(
            _SECRET, namespace=namespace, label_selector=f"{SECRET_TYPE_LABEL}={kind}"
        )
        for secret in found:
            their = secret_text(secret, "url")
            if not their:
                continue
            if exact and normalise_url(their) == want:
                best = (1 << 30, secret)
                break
            prefix = url.startswith(their) or want.startswith(normalise_url(their))
            if not exact and prefix and (best is None or len(their) > best[0]):
                best = (len(their), secret)
        if best is not None:
            break
    return None if best is None else best[1]


async def _credentials(
    url: str, *, namespace: str, ctx: Context, fail: Fail, at: str
) -> tuple[Auth | None, Path | None]:
    """The credentials of `repository_secret`, as gitkrm's Git `Auth` (values in files)."""
    secret = await repository_secret(url, namespace=namespace, ctx=ctx)
    if secret is None:
        return None, None
    name = (secret.get("metadata") or {}).get("name") or ""

    def secret_fail(field: str, message: str) -> Exception:
        return fail(f"{at}.repoURL", f"repository Secret {namespace}/{name}: {message}")

    shaped: dict[str, dict[str, Any]] = {
        "metadata": {"name": name, "namespace": namespace},
        "data": {},
    }
    for theirs, ours in (
        ("username", "username"),
        ("password", "password"),
        ("sshPrivateKey", "identity"),
    ):
        value = _data(secret, theirs)
        if value is not None:
            shaped.setdefault(value[0], {})[ours] = value[1]
    if _data(secret, "sshPrivateKey") is not None:
        hosts = await ctx.get(
            ObjectRef(group="", kind="ConfigMap", name=KNOWN_HOSTS_CONFIGMAP, namespace=namespace)
        )
        known = str(((hosts or {}).get("data") or {}).get("ssh_known_hosts") or "")
        if known:
            shaped.setdefault("stringData", {})["known_hosts"] = known
    if not any(shaped.get(k) for k in ("data", "stringData")):
        return None, None
    return credentials(shaped, url=url, fail=secret_fail)
