"""Kind to REST resource, from the cluster's discovery documents, cached.

Two requests (aggregated discovery of `/api` and `/apis`, apidiscovery.k8s.io v2, or v2beta1)
describe every served kind; servers without it get the legacy walk (`/api/v1`, `/apis`,
then one request per group version). The cache is read again on a miss (a kind whose CRD
appeared since) and after the store writes a CustomResourceDefinition; concurrent misses
share one refresh.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Final

from gitkrm.errors import GitkrmError, NotFound
from gitkrm.krm import GVK
from gitkrm.store.kube.client import KubeClient

_AGGREGATED: Final = (
    ", ".join(
        f"application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
        for v in ("v2", "v2beta1")
    )
    + ", application/json"
)


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind lives: its REST path prefix and whether it is namespaced."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The collection (no name) or object path; a namespaced kind without a namespace
        is its cluster-wide collection (lists, watches) or `default` (objects)."""
        base = self.base
        if self.namespaced and (namespace or name):
            base = f"{base}/namespaces/{namespace or 'default'}"
        base = f"{base}/{self.plural}"
        return f"{base}/{name}" if name else base


@dataclass(frozen=True, slots=True)
class _Table:
    by_gvk: dict[tuple[str, str, str], Resource]
    preferred: dict[tuple[str, str], str]  # (group, kind) -> the group's preferred version


class Discovery:
    """The cluster's kinds, cached (see the module docstring)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._table: _Table | None = None
        self._started = 0.0
        self._lock = asyncio.Lock()
        self._stale = False
        self.refreshes = 0

    def invalidate(self) -> None:
        """Read the documents again on the next lookup (a CRD was written)."""
        self._stale = True

    async def resource(self, group: str, version: str | None, kind: str) -> Resource:
        """The resource of a kind at `version` (the group's preferred version when None);
        NotFound when the cluster does not serve it, after one refresh."""
        hit = None if self._stale else self._lookup(group, version, kind)
        if hit is not None:
            return hit
        await self._refresh(since=time.monotonic())
        hit = self._lookup(group, version, kind)
        if hit is None:
            v = f"{group}/{version}" if group and version else (version or group or "core")
            raise NotFound(f'the server has no resource for kind "{kind}" in {v}')
        return hit

    async def gvk(self, group: str, version: str | None, kind: str) -> GVK:
        r = await self.resource(group, version, kind)
        return GVK(group=r.group, version=r.version, kind=r.kind)

    def _lookup(self, group: str, version: str | None, kind: str) -> Resource | None:
        t = self._table
        if t is None:
            return None
        if version is None:
            version = t.preferred.get((group, kind))
            if version is None:
                return None
        return t.by_gvk.get((group, version, kind))

    async def _refresh(self, *, since: float) -> None:
        """Read the documents again, unless a refresh started after `since` (then the
        miss that asked is answered by it: concurrent misses share one)."""
        async with self._lock:
            if self._started > since:
                return
            self._started = time.monotonic()
            self._stale = False
            self._table = await self._load()
            self.refreshes += 1

    async def _load(self) -> _Table:
        by_gvk: dict[tuple[str, str, str], Resource] = {}
        preferred: dict[tuple[str, str], str] = {}
        core = await self._client.request("GET", "/api", headers={"accept": _AGGREGATED})
        if core.get("kind") == "APIGroupDiscoveryList":
            apis = await self._client.request("GET", "/apis", headers={"accept": _AGGREGATED})
            for doc in (core, apis):
                for item in doc.get("items") or ():
                    _aggregated(item, by_gvk, preferred)
            return _Table(by_gvk, preferred)
        for v in core.get("versions") or ("v1",):
            await self._legacy("", str(v), by_gvk, preferred)
        groups = await self._client.request("GET", "/apis")
        for g in groups.get("groups") or ():
            name = str(g.get("name") or "")
            pref = (g.get("preferredVersion") or {}).get("version")
            versions = [str(v.get("version")) for v in g.get("versions") or ()]
            if pref in versions:  # the preferred version first: it wins `preferred`
                versions.remove(pref)
                versions.insert(0, pref)
            for v in versions:
                try:
                    await self._legacy(name, v, by_gvk, preferred)
                except GitkrmError:
                    continue  # an aggregated API that is down: its kinds are not served
        return _Table(by_gvk, preferred)

    async def _legacy(
        self,
        group: str,
        version: str,
        by_gvk: dict[tuple[str, str, str], Resource],
        preferred: dict[tuple[str, str], str],
    ) -> None:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        doc = await self._client.request("GET", path)
        for r in doc.get("resources") or ():
            name = str(r.get("name") or "")
            if not name or "/" in name:
                continue
            kind = str(r.get("kind") or "")
            by_gvk[(group, version, kind)] = Resource(
                group=group,
                version=version,
                kind=kind,
                plural=name,
                namespaced=bool(r.get("namespaced")),
            )
            preferred.setdefault((group, kind), version)


def _aggregated(
    item: dict[str, Any],
    by_gvk: dict[tuple[str, str, str], Resource],
    preferred: dict[tuple[str, str], str],
) -> None:
    """One APIGroupDiscovery: versions are listed preferred first."""
    group = str((item.get("metadata") or {}).get("name") or "")
    for ver in item.get("versions") or ():
        version = str(ver.get("version") or "")
        for r in ver.get("resources") or ():
            rk = r.get("responseKind") or {}
            kind = str(rk.get("kind") or "")
            if not kind:
                continue
            by_gvk[(group, version, kind)] = Resource(
                group=group,
                version=version,
                kind=kind,
                plural=str(r.get("resource") or ""),
                namespaced=r.get("scope") == "Namespaced",
            )
            preferred.setdefault((group, kind), version)
