"""Dependencies of a chart that are not in its `charts/`: fetched from an HTTP chart
repository (`index.yaml` and `.tgz` over aiohttp, the runtime HTTP client) or an OCI registry
(`oci://`, through Helm's registry client), the version picked by Helm's semver constraint at
every sync (or pinned by `Chart.lock`), and cached by digest in the state dir.

Credentials come from files (`spec.helm.repositories`) and are never logged; a loopback
registry (`127.0.0.1`, `localhost`) is spoken to over plain HTTP, any other over HTTPS.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ssl
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gitkrm.charts.library import ChartError, helm
from gitkrm.charts.spec import RepositoryAuth
from gitkrm.source.bounded import read_bounded
from gitkrm.source.semver import newest
from gitkrm.source.sweep import sweep, touch

MAX_INDEX: Final = 32 * 1024 * 1024
MAX_ARCHIVE: Final = 16 * 1024 * 1024
TIMEOUT: Final = 60.0
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Dependency:
    """One `dependencies` entry of Chart.yaml that is not in `charts/`."""

    name: str
    version: str  # a constraint, or the exact version Chart.lock pins
    repository: str


@dataclass(frozen=True, slots=True)
class Resolved:
    name: str
    version: str
    digest: str  # sha256:<hex> of the archive
    data: bytes = b""

    @property
    def filename(self) -> str:
        return f"charts/{self.name}-{self.version}.tgz"


def missing_dependencies(
    chart_yaml: bytes, chart_lock: bytes | None, paths: Iterable[str], *, chart: str
) -> list[Dependency]:
    """The dependencies Helm would find nowhere in `charts/` (paths relative to the chart)."""
    meta = yaml_mapping(chart_yaml, "Chart.yaml", chart)
    declared = meta.get("dependencies") or []
    if not isinstance(declared, list):
        raise ChartError(chart, "Chart.yaml: dependencies must be a list")
    pinned: dict[str, str] = {}
    if chart_lock is not None:
        for d in yaml_mapping(chart_lock, "Chart.lock", chart).get("dependencies") or []:
            if isinstance(d, dict) and d.get("name"):
                pinned[str(d["name"])] = str(d.get("version") or "")
    present = set()
    for p in paths:
        if p.startswith("charts/"):
            head = p[len("charts/") :].split("/")[0]
            present.add(head)
    out: list[Dependency] = []
    for d in declared:
        if not isinstance(d, dict) or not d.get("name"):
            raise ChartError(chart, "Chart.yaml: every dependency needs a name")
        name = str(d["name"])
        repo = str(d.get("repository") or "")
        if name in present or any(h.startswith(name + "-") and h.endswith(".tgz") for h in present):
            continue
        if not repo.startswith(("http://", "https://", "oci://", "file://")):
            raise ChartError(
                chart,
                f"dependency {name!r} ({repo or 'no repository'}) is not in charts/: vendor it "
                "there, or give an http(s)://, oci:// or file:// repository",
            )
        out.append(Dependency(name, pinned.get(name) or str(d.get("version") or "*"), repo))
    return out


def yaml_mapping(data: bytes, what: str, chart: str) -> dict[str, Any]:
    """A YAML mapping of a chart (Chart.yaml, Chart.lock, a value file, an index)."""
    try:
        loaded = yaml.load(data, Loader=_Loader) or {}
    except yaml.YAMLError as e:
        raise ChartError(chart, f"{what}: {e}") from None
    if not isinstance(loaded, dict):
        raise ChartError(chart, f"{what} is not a mapping")
    return loaded


def _loopback(host: str) -> bool:
    return host.split(":")[0] in ("127.0.0.1", "localhost", "[::1]")


_IN_MEMORY: Final = 32
"""Archives a fetcher keeps in memory (the disk cache keeps more, `source.sweep`)."""


class ChartFetcher:
    """Fetches dependencies; archives are kept in `cache_dir` by digest (in memory without
    one), so an unchanged pick is read from disk, not downloaded."""

    def __init__(
        self, *, cache_dir: Path | None = None, auth: Sequence[RepositoryAuth] = ()
    ) -> None:
        self.cache_dir = cache_dir
        self.auth = tuple(auth)
        self._memory: dict[str, bytes] = {}

    def _auth_for(self, url: str) -> RepositoryAuth | None:
        hits = [a for a in self.auth if url.startswith(a.url.rstrip("/"))]
        return max(hits, key=lambda a: len(a.url)) if hits else None

    async def fetch(self, dep: Dependency, *, chart: str) -> Resolved:
        if dep.repository.startswith("oci://"):
            return await asyncio.to_thread(self._oci, dep, chart)
        return await self._http(dep, chart)

    # -- the cache -----------------------------------------------------------------------

    def _cached(self, key: str) -> bytes | None:
        hit = self._memory.get(key)
        if hit is None and self.cache_dir is not None:
            path = self.cache_dir / f"{key.replace(':', '-')}.tgz"
            try:
                hit = path.read_bytes()
            except OSError:
                return None
            touch(path)
            self._memory[key] = hit
        return hit

    def _keep(self, key: str, data: bytes) -> None:
        self._memory[key] = data
        while len(self._memory) > _IN_MEMORY:  # the oldest go: a moving version adds one
            del self._memory[next(iter(self._memory))]
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = self.cache_dir / f"{key.replace(':', '-')}.tgz"
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
            sweep(self.cache_dir, keep=path)

    # -- HTTP chart repositories -----------------------------------------------------------

    async def _http(self, dep: Dependency, chart: str) -> Resolved:
        import aiohttp

        base = dep.repository.rstrip("/") + "/"
        auth = self._auth_for(dep.repository)
        headers: dict[str, str] = {}
        ssl_ctx: ssl.SSLContext | bool = True
        if auth is not None:
            if auth.username:
                token = base64.b64encode(f"{auth.username}:{_secret(auth, chart)}".encode())
                headers["Authorization"] = "Basic " + token.decode()
            if auth.ca_file is not None or auth.ca_data:
                ssl_ctx = ssl.create_default_context(
                    cafile=str(auth.ca_file) if auth.ca_file is not None else None,
                    cadata=auth.ca_data or None,
                )
        shown = _redacted(dep.repository)
        timeout = aiohttp.ClientTimeout(total=TIMEOUT)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:

                async def get(url: str, limit: int) -> bytes:
                    # Credentials go to the repository's own host only, never to a mirror.
                    same = urllib.parse.urlsplit(url).netloc == urllib.parse.urlsplit(base).netloc
                    return await _get(session, url, limit, ssl_ctx, chart, headers if same else {})

                index = await get(base + "index.yaml", MAX_INDEX)
                entry = _pick(index, dep, chart, shown)
                digest = f"sha256:{entry['digest']}" if entry.get("digest") else ""
                data = self._cached(digest) if digest else None
                if data is None:
                    url = urllib.parse.urljoin(base, str((entry.get("urls") or [""])[0]))
                    data = await get(url, MAX_ARCHIVE)
                    got = "sha256:" + hashlib.sha256(data).hexdigest()
                    if digest and got != digest:
                        raise ChartError(
                            chart,
                            f"dependency {dep.name} {entry['version']} from {shown}: the archive's "
                            f"digest {got} is not the index's {digest}",
                        )
                    digest = got
                    self._keep(digest, data)
        except aiohttp.ClientError as e:
            raise ChartError(chart, f"chart repository {shown}: {_plain(e)}") from None
        except TimeoutError:
            raise ChartError(chart, f"chart repository {shown}: timed out") from None
        return Resolved(dep.name, str(entry["version"]), digest, data)

    # -- OCI registries ----------------------------------------------------------------------

    def _oci(self, dep: Dependency, chart: str) -> Resolved:
        h = helm(chart)
        ref = f"{dep.repository.rstrip('/')}/{dep.name}"
        host = ref[len("oci://") :].split("/")[0]
        plain = _loopback(host)
        try:
            with h.RegistryClient(plain_http=plain) as client:
                auth = self._auth_for(dep.repository)
                if auth is not None and auth.username:
                    client.login(host, auth.username, _secret(auth, chart), plain_http=plain)
                version = newest(client.tags(ref), dep.version)
                if version is None:
                    raise ChartError(
                        chart, f"dependency {dep.name}: no version of {ref} matches {dep.version!r}"
                    )
                manifest = str(client.resolve(f"{ref}:{version}")["digest"])
                data = self._cached(manifest)
                if data is None:
                    import tempfile

                    with tempfile.TemporaryDirectory() as tmp:
                        client.pull(ref, version=version, destination=tmp, plain_http=plain)
                        data = Path(tmp, f"{dep.name}-{version}.tgz").read_bytes()
                    self._keep(manifest, data)
        except h.HelmError as e:
            raise ChartError(chart, f"OCI registry {ref}: {' '.join(str(e).split())}") from None
        return Resolved(dep.name, version, "sha256:" + hashlib.sha256(data).hexdigest(), data)


def _pick(index: bytes, dep: Dependency, chart: str, shown: str) -> Mapping[str, Any]:
    doc = yaml_mapping(index, f"{shown}/index.yaml", chart)
    entries = [e for e in (doc.get("entries") or {}).get(dep.name) or [] if isinstance(e, dict)]
    by_version = {str(e.get("version")): e for e in entries}
    version = newest(by_version, dep.version)
    if version is None:
        raise ChartError(
            chart,
            f"dependency {dep.name}: no version in {shown} matches {dep.version!r} "
            f"(it has {', '.join(sorted(by_version)) or 'none'})",
        )
    return by_version[version]


async def _get(
    session: Any,
    url: str,
    limit: int,
    ssl_ctx: ssl.SSLContext | bool,
    chart: str,
    headers: Mapping[str, str],
) -> bytes:
    async with session.get(url, ssl=ssl_ctx, headers=dict(headers)) as r:
        if r.status != 200:
            raise ChartError(chart, f"GET {_redacted(url)}: HTTP {r.status}")
        data = await read_bounded(r.content, limit)
        if data is None:
            raise ChartError(chart, f"GET {_redacted(url)}: more than {limit:,} bytes")
        return data


def _secret(auth: RepositoryAuth, chart: str) -> str:
    if auth.password is not None:
        return auth.password
    if auth.password_file is None:
        return ""
    try:
        return auth.password_file.read_text().strip()
    except OSError as e:
        raise ChartError(chart, f"password file {auth.password_file}: {e.strerror or e}") from None


def _redacted(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


def _plain(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__
