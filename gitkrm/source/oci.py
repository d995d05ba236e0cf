"""A small client of the OCI distribution API (`/v2/`), for artifacts `flux push artifact`
makes: list tags, resolve a tag or digest to its manifest, fetch a blob.

Every body is bounded and every digest verified (a manifest against the digest asked for
or the one the registry names, a blob against its descriptor), so a registry or proxy
can't substitute content. Auth is anonymous, Basic, or the token flow a registry's
`WWW-Authenticate: Bearer realm=...,service=...,scope=...` asks for (credentials, if any,
sent to the realm). Credentials go to the registry's own host and its token realm only,
never to a host a redirect names, and are never logged or put in an error.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from gitkrm.errors import (
    BadRequest,
    GitkrmError,
    Invalid,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
)
from gitkrm.source.bounded import SessionClient, read_bounded
from gitkrm.source.links import next_link

if TYPE_CHECKING:
    import aiohttp

OCI_MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST: Final = "application/vnd.docker.distribution.manifest.v2+json"
FLUX_CONTENT: Final = "application/vnd.cncf.flux.content.v1.tar+gzip"
FLUX_CONFIG: Final = "application/vnd.cncf.flux.config.v1+json"
MAX_MANIFEST: Final = 4 * 1024 * 1024
MAX_TAG_PAGES: Final = 50
TIMEOUT: Final = 60.0
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
_PART: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME: Final = re.compile(rf"^{_PART}(?:/{_PART})*$")
_CHALLENGE: Final = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True, slots=True)
class Credentials:
    """A registry's username and password (or identity token); never shown."""

    username: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Repository:
    """`oci://host[:port]/name`; `insecure`: plain HTTP."""

    host: str
    name: str
    insecure: bool = False

    @classmethod
    def parse(cls, url: str, *, insecure: bool = False) -> Repository:
        if not url.startswith("oci://"):
            raise BadRequest(f"{url!r} is not an oci:// URL")
        host, _, name = url[len("oci://") :].rstrip("/").partition("/")
        if "@" in host:
            raise BadRequest(f"{url!r}: give credentials in a Secret, not in the URL")
        if not host or not name or not _NAME.match(name):
            raise BadRequest(f"{url!r} must be oci://<host>/<repository> (lower-case path)")
        return cls(host=host, name=name, insecure=insecure)

    @property
    def url(self) -> str:
        return f"oci://{self.host}/{self.name}"

    def api(self, tail: str) -> str:
        scheme = "http" if self.insecure else "https"
        return f"{scheme}://{self.host}/v2/{self.name}/{tail}"


@dataclass(frozen=True, slots=True)
class Layer:
    media_type: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class Manifest:
    """An image manifest: its own digest (the artifact's revision) and its layers."""

    digest: str
    media_type: str
    config_media_type: str
    layers: tuple[Layer, ...]
    annotations: Mapping[str, str]


def check_digest(value: str) -> str:
    if not _DIGEST.match(value):
        raise BadRequest(f"digest {value!r} must be sha256:<64 lower-case hex digits>")
    return value


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def parse_manifest(data: bytes, *, digest: str, where: str) -> Manifest:
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        media = str(doc.get("mediaType") or OCI_MANIFEST)
        if media not in (OCI_MANIFEST, DOCKER_MANIFEST):
            raise ValueError(f"media type {media!r} is not an image manifest (an index?)")
        layers = tuple(
            Layer(str(x["mediaType"]), check_digest(str(x["digest"])), int(x["size"]))
            for x in doc.get("layers") or ()
        )
        config = doc.get("config") or {}
        notes = {str(k): str(v) for k, v in (doc.get("annotations") or {}).items()}
    except (ValueError, KeyError, TypeError, BadRequest) as e:
        raise Invalid(f"{where}: the manifest can't be read: {e}") from None
    return Manifest(digest, media, str(config.get("mediaType") or ""), layers, notes)


class Client(SessionClient):
    """One session with one repository of a registry (`async with Client(...) as c`)."""

    def __init__(
        self,
        repository: Repository,
        *,
        credentials: Credentials | None = None,
        ca_data: str | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        self.repository = repository
        self._credentials = credentials
        self._ssl: ssl.SSLContext | bool = (
            ssl.create_default_context(cadata=ca_data) if ca_data else True
        )
        self._timeout = timeout
        self._authorization: str | None = None

    async def __aenter__(self) -> Client:
        self._open(self._timeout)
        return self

    # -- the API -----------------------------------------------------------------------

    async def tags(self) -> list[str]:
        """All tags of the repository (following `Link` pages, bounded)."""
        out: list[str] = []
        url: str | None = self.repository.api("tags/list")
        for _ in range(MAX_TAG_PAGES):
            if url is None:
                return out
            body, headers = await self._get(url, limit=MAX_MANIFEST, accept="application/json")
            try:
                out.extend(str(t) for t in json.loads(body).get("tags") or ())
            except (ValueError, AttributeError):
                raise Invalid(f"{self.repository.url}: the tag list can't be read") from None
            url = _next_page(url, headers.get("Link"))
        raise Invalid(f"{self.repository.url}: more than {MAX_TAG_PAGES} pages of tags")

    async def manifest(self, reference: str) -> Manifest:
        """The manifest of a tag or a digest, its digest verified."""
        sep = "@" if ":" in reference else ":"
        where = f"{self.repository.url}{sep}{reference}"
        body, headers = await self._get(
            self.repository.api(f"manifests/{reference}"),
            limit=MAX_MANIFEST,
            accept=f"{OCI_MANIFEST}, {DOCKER_MANIFEST}",
            missing=f"{where}: not found",
        )
        got = _sha256(body)
        expected = headers.get("Docker-Content-Digest", got)
        if reference.startswith("sha256:"):
            expected = reference
        if got != expected:
            raise Invalid(f"{where}: the manifest's digest is {got}, not {expected}")
        return parse_manifest(body, digest=got, where=where)

    async def blob(self, layer: Layer, *, limit: int) -> bytes:
        """A blob's bytes, at most `limit`, verified against its descriptor."""
        where = f"{self.repository.url}@{layer.digest}"
        if layer.size > limit:
            raise Invalid(f"{where}: the layer has {layer.size:,} bytes, over {limit:,}")
        body, _ = await self._get(
            self.repository.api(f"blobs/{layer.digest}"), limit=limit, missing=f"{where}: not found"
        )
        got = _sha256(body)
        if got != layer.digest:
            raise Invalid(f"{where}: the blob's digest is {got}: refused")
        return body

    # -- HTTP ---------------------------------------------------------------------------

    async def _get(
        self, url: str, *, limit: int, accept: str = "*/*", missing: str = ""
    ) -> tuple[bytes, Mapping[str, str]]:
        import aiohttp

        assert self._session is not None, "use `async with Client(...)`"
        shown = f"{self.repository.url} ({urllib.parse.urlsplit(url).path})"
        own = urllib.parse.urlsplit(url).netloc
        try:
            for attempt in range(2):
                target, hops = url, 0
                while True:
                    headers = {"Accept": accept}
                    if self._authorization and urllib.parse.urlsplit(target).netloc == own:
                        headers["Authorization"] = self._authorization
                    async with self._session.get(
                        target, headers=headers, ssl=self._ssl, allow_redirects=False
                    ) as r:
                        if r.status in (301, 302, 303, 307, 308) and hops < 5:
                            target = urllib.parse.urljoin(target, r.headers.get("Location", ""))
                            hops += 1
                            continue
                        if r.status == 401 and attempt == 0:
                            challenge = r.headers.get("WWW-Authenticate", "")
                            break
                        if r.status == 404 and missing:
                            raise NotFound(missing)
                        if r.status in (401, 403):
                            raise _denied(shown, r.status, self._credentials is not None)
                        if r.status != 200:
                            raise ServiceUnavailable(f"GET {shown}: HTTP {r.status}")
                        return await _body(r, limit, shown), dict(r.headers)
                await self._authorize(challenge, shown)
        except aiohttp.ClientError as e:
            raise ServiceUnavailable(f"GET {shown}: {' '.join(str(e).split())}") from None
        except TimeoutError:
            raise ServiceUnavailable(f"GET {shown}: timed out") from None
        raise ServiceUnavailable(f"GET {shown}: unauthorized")  # pragma: no cover

    async def _authorize(self, challenge: str, shown: str) -> None:
        """Answer a 401's challenge: Basic with the credentials, or a Bearer token."""
        scheme, _, rest = challenge.partition(" ")
        basic = None
        if self._credentials is not None:
            pair = f"{self._credentials.username}:{self._credentials.password}".encode()
            basic = "Basic " + base64.b64encode(pair).decode()
        if scheme.lower() == "basic":
            if basic is None:
                raise _denied(shown, 401, False)
            self._authorization = basic
            return
        if scheme.lower() != "bearer":
            raise ServiceUnavailable(f"{shown}: unsupported authentication {scheme!r}")
        params = dict(_CHALLENGE.findall(rest))
        realm = params.get("realm", "")
        if not realm.startswith(("https://", "http://")):
            raise ServiceUnavailable(f"{shown}: the token realm {realm!r} is not a URL")
        query = {"service": params.get("service", "")}
        query["scope"] = params.get("scope") or f"repository:{self.repository.name}:pull"
        token_url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(query)
        assert self._session is not None
        headers = {"Authorization": basic} if basic else {}
        async with self._session.get(token_url, headers=headers, ssl=self._ssl) as r:
            if r.status != 200:
                raise _denied(shown, r.status, basic is not None)
            try:
                doc: dict[str, Any] = json.loads(await _body(r, MAX_MANIFEST, shown))
            except ValueError:
                raise ServiceUnavailable(f"{shown}: the token service answered no JSON") from None
        token = doc.get("token") or doc.get("access_token")
        if not isinstance(token, str) or not token:
            raise ServiceUnavailable(f"{shown}: the token service gave no token")
        self._authorization = f"Bearer {token}"


async def _body(r: aiohttp.ClientResponse, limit: int, shown: str) -> bytes:
    """The whole body, refused past `limit` bytes."""
    data = await read_bounded(r.content, limit)
    if data is None:
        raise Invalid(f"GET {shown}: more than {limit:,} bytes")
    return data


def _denied(shown: str, status: int, with_credentials: bool) -> GitkrmError:
    how = "with the Secret's credentials" if with_credentials else "anonymously (no secretRef)"
    return Unauthorized(f"{shown}: access denied {how} (HTTP {status})")


def _next_page(url: str, link: str | None) -> str | None:
    target = next_link(link)
    return None if target is None else urllib.parse.urljoin(url, target)


__all__ = [
    "DOCKER_MANIFEST",
    "FLUX_CONFIG",
    "FLUX_CONTENT",
    "OCI_MANIFEST",
    "Client",
    "Credentials",
    "Layer",
    "Manifest",
    "Repository",
    "check_digest",
]
