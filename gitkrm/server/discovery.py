"""API discovery: legacy (`/api`, `/apis`, `/api/v1`, `/apis/<g>[/<v>]`) and aggregated
(apidiscovery.k8s.io v2 and v2beta1, chosen by the Accept header).

Built from the store's Registry, so a CRD's kinds appear as soon as it is established;
the documents are cached until the set of served kinds changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

import orjson

from gitkrm.errors import NotFound
from gitkrm.schema import Registry, ResourceInfo
from gitkrm.schema.registry import version_priority
from gitkrm.server.paths import SERVED_SUBRESOURCES

# kube-apiserver's group order (its APIService priorities); custom groups follow, by name.
_GROUP_ORDER: Final = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "resource.k8s.io",
)
_SUB_VERBS: Final = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "finalize": ["update"],
}
SCALE_KIND: Final = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
DISCOVERY_CONTENT_TYPE: Final = (
    "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
)


def _group_key(group: str) -> tuple[int, str]:
    try:
        return (_GROUP_ORDER.index(group), group)
    except ValueError:
        return (len(_GROUP_ORDER), group)


def _gv(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


class Layout:
    """Served kinds arranged as discovery shows them: groups, versions, resources."""

    def __init__(self, infos: Iterable[ResourceInfo]) -> None:
        by_group: dict[str, dict[str, list[ResourceInfo]]] = {}
        for info in infos:
            by_group.setdefault(info.group, {}).setdefault(info.version, []).append(info)
        self.groups: list[tuple[str, list[tuple[str, list[ResourceInfo]]]]] = []
        for group in sorted(by_group, key=_group_key):
            versions = sorted(by_group[group], key=version_priority)
            self.groups.append(
                (
                    group,
                    [(v, sorted(by_group[group][v], key=lambda i: i.plural)) for v in versions],
                )
            )

    def resources(self, group: str, version: str) -> list[ResourceInfo]:
        for g, versions in self.groups:
            if g == group:
                for v, infos in versions:
                    if v == version:
                        return infos
        raise NotFound("the server could not find the requested resource")

    def versions(self, group: str) -> list[str]:
        for g, versions in self.groups:
            if g == group:
                return [v for v, _ in versions]
        raise NotFound("the server could not find the requested resource")


def _subresources(info: ResourceInfo) -> list[str]:
    return sorted(s for s in info.subresources if s in SERVED_SUBRESOURCES)


def _add_names(entry: dict[str, object], info: ResourceInfo) -> None:
    """A resource's shortNames and categories, when it has any, in its discovery entry."""
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)


def _api_resources(infos: list[ResourceInfo]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for info in infos:
        r: dict[str, object] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": sorted(info.verbs),
        }
        _add_names(r, info)
        out.append(r)
        for sub in _subresources(info):
            s: dict[str, object] = {
                "name": f"{info.plural}/{sub}",
                "singularName": "",
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": _SUB_VERBS[sub],
            }
            if sub == "scale":
                s["group"] = SCALE_KIND["group"]
                s["version"] = SCALE_KIND["version"]
                s["kind"] = SCALE_KIND["kind"]
            out.append(s)
    return out


def _aggregated_resource(info: ResourceInfo) -> dict[str, object]:
    r: dict[str, object] = {
        "resource": info.plural,
        "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": sorted(info.verbs),
    }
    _add_names(r, info)
    subs = []
    for sub in _subresources(info):
        kind = (
            SCALE_KIND
            if sub == "scale"
            else {"group": info.group, "version": info.version, "kind": info.kind}
        )
        subs.append({"subresource": sub, "responseKind": kind, "verbs": _SUB_VERBS[sub]})
    if subs:
        r["subresources"] = subs
    return r


class Discovery:
    """Discovery documents of one registry, cached while its kinds stay the same."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._key: tuple[ResourceInfo, ...] = ()
        self._layout: Layout | None = None
        self._cache: dict[tuple[str, ...], bytes] = {}

    def layout(self) -> Layout:
        key = tuple(self._registry.infos())
        if self._layout is None or key != self._key:
            self._key = key
            self._layout = Layout(key)
            self._cache = {}
        return self._layout

    def _cached(self, key: tuple[str, ...], build: Callable[[Layout], object]) -> bytes:
        layout = self.layout()
        hit = self._cache.get(key)
        if hit is None:
            hit = orjson.dumps(build(layout))
            self._cache[key] = hit
        return hit

    # -- legacy ----------------------------------------------------------------------------

    @staticmethod
    def api_versions(server_address: str) -> bytes:
        return orjson.dumps(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
                ],
            }
        )

    @staticmethod
    def _group(group: str, versions: list[str]) -> dict[str, object]:
        vs = [{"groupVersion": _gv(group, v), "version": v} for v in versions]
        return {"name": group, "versions": vs, "preferredVersion": vs[0]}

    def group_list(self) -> bytes:
        def build(layout: Layout) -> dict[str, object]:
            groups = [
                self._group(g, [v for v, _ in versions]) for g, versions in layout.groups if g
            ]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

        return self._cached(("apis",), build)

    def group(self, group: str) -> bytes:
        def build(layout: Layout) -> dict[str, object]:
            return {
                "kind": "APIGroup",
                "apiVersion": "v1",
                **self._group(group, layout.versions(group)),
            }

        if not group:
            raise NotFound("the server could not find the requested resource")
        return self._cached(("group", group), build)

    def resource_list(self, group: str, version: str) -> bytes:
        def build(layout: Layout) -> dict[str, object]:
            out: dict[str, object] = {"kind": "APIResourceList"}
            if group:
                out["apiVersion"] = "v1"
            out["groupVersion"] = _gv(group, version)
            out["resources"] = _api_resources(layout.resources(group, version))
            return out

        return self._cached(("resources", group, version), build)

    # -- aggregated ------------------------------------------------------------------------

    def aggregated(self, *, core: bool, version: str) -> bytes:
        """The APIGroupDiscoveryList of `/api` (core) or `/apis` (every other group)."""

        def build(layout: Layout) -> dict[str, object]:
            items = []
            for g, versions in layout.groups:
                if (g == "") != core:
                    continue
                md: dict[str, object] = {"creationTimestamp": None}
                if g:
                    md = {"name": g, "creationTimestamp": None}
                items.append(
                    {
                        "metadata": md,
                        "versions": [
                            {
                                "version": v,
                                "resources": [_aggregated_resource(i) for i in infos],
                                "freshness": "Current",
                            }
                            for v, infos in versions
                        ],
                    }
                )
            return {
                "kind": "APIGroupDiscoveryList",
                "apiVersion": f"apidiscovery.k8s.io/{version}",
                "metadata": {},
                "items": items,
            }

        return self._cached(("aggregated", "core" if core else "apis", version), build)
