"""What the store needs to know about a kind, looked up in the schema Registry once."""

from __future__ import annotations

from gitkrm.errors import BadRequest, NotFound
from gitkrm.krm import GVK, GroupKind, join_api_version
from gitkrm.schema import Registry, ResourceInfo

NAMESPACE_GK = GroupKind(group="", kind="Namespace")
CRD_GK = GroupKind(group="apiextensions.k8s.io", kind="CustomResourceDefinition")


def gk_key(group: str, kind: str) -> str:
    """The `gk` column: `apps/Deployment`, `/Namespace`."""
    return f"{group}/{kind}"


class Kind:
    """A group/kind as stored: its storage version and the facts writes depend on,
    precomputed (writes read them for every object of a 10,000-object batch)."""

    __slots__ = (
        "constrains",
        "custom",
        "generation",
        "group",
        "has_status",
        "info",
        "is_crd",
        "is_namespace",
        "is_pod",
        "key",
        "kind",
        "namespaced",
        "resource",
        "storage_api_version",
    )

    def __init__(self, info: ResourceInfo) -> None:
        self.info = info
        self.group = info.group
        self.kind = info.kind
        self.key = gk_key(info.group, info.kind)
        self.storage_api_version = join_api_version(info.group, info.version)
        # `deployments.apps` / `namespaces`: how the API server names it in messages.
        self.resource = f"{info.plural}.{info.group}" if info.group else info.plural
        self.namespaced = info.namespaced
        self.custom = info.custom
        self.generation = info.generation
        self.has_status = "status" in info.subresources
        self.is_namespace = info.group == "" and info.kind == "Namespace"
        self.is_pod = info.group == "" and info.kind == "Pod"
        # LimitRange and ResourceQuota: where they are decides what writes are admitted by
        # (constraints.Constrained).
        self.constrains = info.group == "" and info.kind in ("LimitRange", "ResourceQuota")
        self.is_crd = info.group == CRD_GK.group and info.kind == CRD_GK.kind


class Kinds:
    """Cache of `Kind` per group/kind, dropped whenever CRDs change."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._by_gk: dict[tuple[str, str], Kind] = {}
        self._served: dict[GVK, ResourceInfo] = {}
        self._by_type: dict[tuple[str, str], tuple[GVK, Kind]] = {}

    def invalidate(self) -> None:
        self._by_gk.clear()
        self._served.clear()
        self._by_type.clear()

    def served(self, gvk: GVK) -> ResourceInfo:
        """The info of the version a request names (NotFound when it is not served)."""
        info = self._served.get(gvk)
        if info is None:
            info = self.registry.info(gvk)
            self._served[gvk] = info
        return info

    def of_type(self, api_version: object, kind: object) -> tuple[GVK, Kind]:
        """The requested GVK (checked to be served) and stored kind of an object's
        apiVersion and kind fields."""
        key = (api_version, kind)
        hit = self._by_type.get(key)  # type: ignore[arg-type]
        if hit is not None:
            return hit
        if not isinstance(kind, str) or not kind:
            raise BadRequest("object has no kind")
        if not isinstance(api_version, str):
            raise BadRequest(f"apiVersion must be a non-empty string, got {api_version!r}")
        gvk = GVK.from_api_version(api_version, kind)
        self.served(gvk)
        out = (gvk, self.of(gvk.group, gvk.kind))
        self._by_type[(api_version, kind)] = out
        return out

    def of(self, group: str, kind: str) -> Kind:
        """The stored form of a group/kind (NotFound when no version is served)."""
        k = self._by_gk.get((group, kind))
        if k is not None:
            return k
        versions = self.registry.versions_of(GroupKind(group=group, kind=kind))
        if not versions:
            raise NotFound(f'no matches for kind "{kind}" in group "{group}"')
        storage = versions[0]
        for v in versions:
            if v.storage_version:
                for w in versions:
                    if w.version == v.storage_version:
                        storage = w
                        break
                break
        k = Kind(storage)
        self._by_gk[(group, kind)] = k
        return k
