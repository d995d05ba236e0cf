"""What the API needs from a custom kind's CRD: printer columns and scale paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitkrm.krm import Obj, ObjectRef
from gitkrm.schema import ResourceInfo
from gitkrm.store.protocol import Store


async def crd_version(store: Store, info: ResourceInfo) -> tuple[Obj, Mapping[str, Any]]:
    """The CRD of a custom kind and its entry for `info.version`."""
    crd = await store.get(
        ObjectRef(
            group="apiextensions.k8s.io",
            kind="CustomResourceDefinition",
            name=f"{info.plural}.{info.group}",
        )
    )
    for v in (crd.get("spec") or {}).get("versions") or ():
        if isinstance(v, Mapping) and v.get("name") == info.version:
            return crd, v
    return crd, {}
