"""A Flux `OCIRepository` (`source.toolkit.fluxcd.io/v1`, `v1beta2`) as the artifact a
Kustomization's child syncs (`gitkrm.source.oci_source`), read as source-controller reads
it: `url` `oci://host/name`, `ref` (`digest` before `semver` (with `semverFilter`) before
`tag`; none: `latest`), `layerSelector` (`mediaType`; `operation` `extract` or `copy`),
`insecure` (plain HTTP), `secretRef` (a `kubernetes.io/dockerconfigjson` Secret: the
entry of the registry's host), `certSecretRef` (`ca.crt`), `interval`, `timeout`,
`suspend`. Credentials stay in memory, masked from logs (`krm.masking`). What gitkrm
does not do (signature verification, cloud providers' credentials, proxies, client
certificates) is reported as not honoured, never silently dropped.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from gitkrm.errors import BadRequest
from gitkrm.krm import Obj, ObjectRef, masking
from gitkrm.source import GitRef, RefKind
from gitkrm.source.oci import Credentials, Repository, check_digest
from gitkrm.source.oci_source import OciArtifact
from gitkrm.source.semver import Constraint

from .fields import Fail
from .flux_repo import Repository as Origin
from .flux_repo import duration, ignore_lines
from .model import Unhonoured

_HONOURED: Final = frozenset(
    {"url", "ref", "layerSelector", "insecure", "secretRef", "certSecretRef", "interval",
     "timeout", "suspend", "provider", "ignore"}
)  # fmt: skip
_REASONS: Final = {
    "verify": "signatures (cosign, notation) of OCI artifacts are not verified",
    "proxySecretRef": "proxies are not supported",
    "serviceAccountName": "image pull secrets of a service account are not read; give "
    "spec.secretRef",
}


def _secret_value(secret: Obj, key: str) -> str | None:
    data = secret.get("data") or {}
    string = secret.get("stringData") or {}
    if key in string:
        return str(string[key])
    if key not in data:
        return None
    try:
        return base64.b64decode(str(data[key]), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _host_of(key: str) -> str:
    """A `.dockerconfigjson` entry's registry host (`https://host/v1/` and `host` alike)."""
    key = key.split("://", 1)[-1]
    return key.split("/", 1)[0].lower()


def registry_credentials(secret: Obj, host: str, fail: Callable[[str], Exception]) -> Credentials:
    """The `.dockerconfigjson` entry of `host`: `username`/`password`, or `auth`."""
    text = _secret_value(secret, ".dockerconfigjson")
    if text is None:
        raise fail("the Secret has no .dockerconfigjson (type kubernetes.io/dockerconfigjson)")
    try:
        auths = json.loads(text).get("auths") or {}
    except (ValueError, AttributeError):
        raise fail(".dockerconfigjson is not JSON with 'auths'") from None
    entry = next((v for k, v in auths.items() if _host_of(k) == host.lower()), None)
    if not isinstance(entry, Mapping):
        raise fail(f".dockerconfigjson has no entry for the registry {host}")
    username, password = entry.get("username"), entry.get("password")
    if (not username or not password) and entry.get("auth"):
        try:
            username, _, password = base64.b64decode(str(entry["auth"])).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise fail(f".dockerconfigjson entry of {host}: 'auth' is not base64") from None
    if not password:
        raise fail(f".dockerconfigjson entry of {host} has no password")
    masking.remember([v for v in (str(password), str(entry.get("auth") or "")) if v])
    return Credentials(username=str(username or ""), password=str(password))


async def read_oci_repository(
    ref: ObjectRef, *, get: Callable[[ObjectRef], Awaitable[Obj | None]], fail: Fail
) -> tuple[Origin, OciArtifact]:
    """The artifact the OCIRepository `ref` names; errors name the Kustomization's
    `spec.sourceRef` and the OCIRepository's field."""
    obj = await get(ref)
    where = f"OCIRepository {ref.namespace}/{ref.name}"
    if obj is None:
        raise fail("spec.sourceRef", f"{where} not found")

    def bad(field: str, message: str) -> Exception:
        return fail("spec.sourceRef", f"{where}: {field}: {message}")

    spec: Mapping[str, Any] = obj.get("spec") or {}
    unhonoured = [
        Unhonoured(f"{where} spec.{k}", _REASONS.get(k, "not a field gitkrm knows"))
        for k in spec
        if k not in _HONOURED
    ]
    provider = str(spec.get("provider") or "generic")
    if provider != "generic":
        unhonoured.append(
            Unhonoured(f"{where} spec.provider", f"{provider}: only the generic provider "
                       "(spec.secretRef's credentials) is supported")
        )  # fmt: skip
    url = str(spec.get("url") or "")
    insecure = bool(spec.get("insecure"))
    try:
        repository = Repository.parse(url, insecure=insecure)
    except BadRequest as e:
        raise bad("spec.url", e.message) from None
    given: Mapping[str, Any] = spec.get("ref") or {}
    digest = str(given.get("digest") or "") or None
    semver = str(given.get("semver") or "") or None
    tag = str(given.get("tag") or "latest")
    gref = GitRef(RefKind.TAG, tag)
    try:
        if digest:
            check_digest(digest)
        elif semver:
            Constraint.parse(semver)
            gref = GitRef(RefKind.SEMVER, semver)
    except BadRequest as e:
        raise bad("spec.ref.digest" if digest else "spec.ref.semver", e.message) from None
    semver_filter = str(given.get("semverFilter") or "") or None
    if semver_filter:
        try:
            re.compile(semver_filter)
        except re.error as e:
            raise bad("spec.ref.semverFilter", f"{semver_filter!r}: {e}") from None
    selector: Mapping[str, Any] = spec.get("layerSelector") or {}
    operation = str(selector.get("operation") or "extract")
    if operation not in ("extract", "copy"):
        raise bad("spec.layerSelector.operation", f"{operation!r}: extract or copy")
    credentials = ca = None
    for field in ("secretRef", "certSecretRef"):
        named = spec.get(field) or {}
        if not named:
            continue
        name = str(named.get("name") or "")
        secret = await get(ObjectRef(group="", kind="Secret", name=name, namespace=ref.namespace))
        if secret is None:
            raise bad(f"spec.{field}", f"Secret {ref.namespace}/{name} not found")
        if field == "secretRef":
            credentials = registry_credentials(
                secret, repository.host, lambda m: bad("spec.secretRef", m)
            )
            continue
        ca = _secret_value(secret, "ca.crt")
        if _secret_value(secret, "tls.crt") is not None:
            unhonoured.append(
                Unhonoured(f"{where} spec.certSecretRef", "client certificates (tls.crt, "
                           "tls.key) are not presented; ca.crt is used")
            )  # fmt: skip
    artifact = OciArtifact(
        url=repository.url,
        tag=tag,
        semver=semver,
        semver_filter=semver_filter,
        digest=digest,
        media_type=str(selector.get("mediaType") or "") or None,
        insecure=insecure,
        credentials=credentials,
        ca_data=ca,
        timeout=duration(spec.get("timeout"), "spec.timeout", bad),
    )
    origin = Origin(
        url=repository.url,
        ref=gref,
        interval=duration(spec.get("interval"), "spec.interval", bad),
        timeout=artifact.timeout,
        suspend=bool(spec.get("suspend")),
        ignore=ignore_lines(spec.get("ignore"), bad),
        unhonoured=tuple(unhonoured),
    )
    return origin, artifact
