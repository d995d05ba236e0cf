"""Resource paths: `/api/v1/...` and `/apis/<group>/<version>/...` to what they name.

/api/v1/namespaces/{ns}/{resource}[/{name}[/{subresource}]]
/api/v1/{resource}[/{name}[/{subresource}]]      cluster-scoped, or all namespaces
/api/v1/watch/...                                 the deprecated watch form
/api/v1/namespaces/{name}[/status|/finalize]      a Namespace itself
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gitkrm.errors import NotFound
from gitkrm.krm import ObjectRef
from gitkrm.schema import Registry, ResourceInfo

SERVED_SUBRESOURCES: Final = frozenset({"status", "scale", "finalize"})
_NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})


def not_found() -> NotFound:
    return NotFound("the server could not find the requested resource")


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource path names: a collection, an object, or an object's subresource."""

    info: ResourceInfo
    namespace: str | None  # None: cluster-scoped, or a list across namespaces
    name: str | None
    subresource: str | None
    watch_path: bool = False

    @property
    def ref(self) -> ObjectRef:
        assert self.name is not None
        return ObjectRef(
            group=self.info.group,
            kind=self.info.kind,
            name=self.name,
            namespace=self.namespace,
            version=self.info.version,
        )

    @property
    def resource(self) -> str:
        return self.info.plural


def _lookup(registry: Registry, group: str, version: str, resource: str) -> ResourceInfo:
    try:
        info = registry.info_for_resource(group=group, version=version, resource=resource)
    except NotFound:
        raise not_found() from None
    if info.plural != resource:  # REST paths name the plural only
        raise not_found()
    return info


def parse_target(registry: Registry, *, group: str, version: str, segments: list[str]) -> Target:
    """The target of the segments after `/api/v1` or `/apis/<group>/<version>`."""
    watch_path = False
    if segments and segments[0] == "watch":
        watch_path = True
        segments = segments[1:]
    if not segments or any(s == "" for s in segments):
        raise not_found()
    namespace: str | None = None
    rest = segments
    if segments[0] == "namespaces" and len(segments) >= 3:
        if group == "" and segments[2] in _NAMESPACE_SUBRESOURCES and len(segments) == 3:
            rest = segments  # namespaces/{name}/{status|finalize}
        else:
            namespace = segments[1]
            rest = segments[2:]
    if len(rest) > 3:
        raise not_found()
    info = _lookup(registry, group, version, rest[0])
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if namespace is not None and not info.namespaced:
        raise not_found()
    if namespace is None and name is not None and info.namespaced:
        raise not_found()
    if sub is not None and (sub not in SERVED_SUBRESOURCES or sub not in info.subresources):
        raise not_found()
    if watch_path and sub is not None:
        raise not_found()
    return Target(info=info, namespace=namespace, name=name, subresource=sub, watch_path=watch_path)
