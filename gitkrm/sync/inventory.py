"""The inventory: which objects a source has applied, the authority for pruning.

Kept in the target store itself as ConfigMaps in `gitkrm-system` (docs/reference.md), in the
cli-utils layout: label `cli-utils.sigs.k8s.io/inventory-id: <agent>.<source>`, one data
key per object, `<namespace>_<name>_<group>_<kind>` (cli-utils' ObjMetadata string:
empty namespace and group stay empty, colons of RBAC names become `__`), value "".
Sharded as `gitkrm-inventory-<source>`, `-1`, `-2`, ... under the object size limit, and
written in one batch, so a reader never sees half of a write.

The engine writes the union of old and new before it touches any object and narrows it
after the apply: a crash at any point leaves a superset, never an orphan.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gitkrm.errors import AlreadyExists, BadRequest, Conflict
from gitkrm.krm import GVK, Obj, ObjectRef
from gitkrm.store import BatchOp, BatchOpKind, Store
from gitkrm.sync import keys
from gitkrm.sync.objkey import parse_key

SHARD_BYTES: Final = 900_000  # data bytes per ConfigMap, under the 1 MiB object limit
CONFIGMAP: Final = GVK(group="", version="v1", kind="ConfigMap")
NAMESPACE: Final = GVK(group="", version="v1", kind="Namespace")
FIELD_MANAGER: Final = "gitkrm"


def shard_name(source: str, index: int) -> str:
    base = keys.INVENTORY_PREFIX + source
    return base if index == 0 else f"{base}-{index}"


def shards(object_keys: Iterable[str], *, source: str, inventory_id: str) -> list[Obj]:
    """The ConfigMaps holding the keys (at least one, so an empty inventory is recorded)."""
    datas: list[dict[str, str]] = [{}]
    size = 0
    for key in sorted(object_keys):
        cost = len(key) + 8  # key, quotes, colon, empty value, comma
        if size + cost > SHARD_BYTES and datas[-1]:
            datas.append({})
            size = 0
        datas[-1][key] = ""
        size += cost
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": shard_name(source, i),
                "namespace": keys.INVENTORY_NAMESPACE,
                "labels": {keys.INVENTORY_ID: inventory_id, keys.MANAGED_BY: keys.MANAGER},
            },
            "data": data,
        }
        for i, data in enumerate(datas)
    ]


@dataclass(frozen=True, slots=True)
class Inventory:
    """An inventory as read: its entries (object keys, see `objkey`), and each shard's
    resourceVersion."""

    entries: frozenset[str] = frozenset()
    versions: Mapping[str, str] = field(default_factory=dict)

    def refs(self) -> list[ObjectRef]:
        """The objects named, parsed (malformed keys, written by hand, are skipped)."""
        out = []
        for k in sorted(self.entries):
            with contextlib.suppress(BadRequest):
                out.append(parse_key(k))
        return out


def _from_items(items: Iterable[Mapping[str, Any]]) -> Inventory:
    object_keys: set[str] = set()
    versions: dict[str, str] = {}
    for cm in items:
        md = keys.metadata(cm)
        versions[str(md.get("name"))] = str(md.get("resourceVersion") or "")
        data = cm.get("data")
        if isinstance(data, dict):
            object_keys.update(data)
    return Inventory(frozenset(object_keys), versions)


async def read(
    store: Store, *, source: str, inventory_id: str, cache: Inventory | None = None
) -> Inventory:
    """The inventory of a source (empty when it was never written); `cache` is returned
    as is when no shard changed since it was read or written."""
    out = await store.list(
        CONFIGMAP,
        namespace=keys.INVENTORY_NAMESPACE,
        label_selector=f"{keys.INVENTORY_ID}={inventory_id}",
    )
    prefix = keys.INVENTORY_PREFIX + source
    items = [
        cm
        for cm in out.get("items") or ()
        if str(keys.metadata(cm).get("name", "")) == prefix
        or str(keys.metadata(cm).get("name", "")).startswith(prefix + "-")
    ]
    if cache is not None:
        versions = {
            str(keys.metadata(cm).get("name")): str(keys.metadata(cm).get("resourceVersion") or "")
            for cm in items
        }
        if versions == cache.versions:
            return cache
    return _from_items(items)


async def ensure_namespace(store: Store) -> str | None:
    """Create `gitkrm-system` unless it exists; the new object's resourceVersion, or None."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": keys.INVENTORY_NAMESPACE}}
    try:
        made = await store.create(body, field_manager=FIELD_MANAGER)
    except AlreadyExists:
        return None
    return str(keys.metadata(made).get("resourceVersion") or "")


async def write(
    store: Store,
    object_keys: Iterable[str],
    *,
    current: Inventory,
    source: str,
    inventory_id: str,
) -> Inventory:
    """Replace the inventory with `object_keys` in one batch; shards no longer needed go.

    On a Conflict (the inventory changed since it was read) it is read again and written
    again: the caller's set is what the inventory must say. The namespace must exist
    (`ensure_namespace`).
    """
    wanted = frozenset(object_keys)
    for attempt in range(3):
        ops: list[BatchOp] = []
        made = shards(wanted, source=source, inventory_id=inventory_id)
        names = set()
        for cm in made:
            name = cm["metadata"]["name"]
            names.add(name)
            rv = current.versions.get(name)
            if rv is None:
                ops.append(BatchOp(op=BatchOpKind.CREATE, obj=cm))
            else:
                cm["metadata"]["resourceVersion"] = rv
                ops.append(BatchOp(op=BatchOpKind.UPDATE, obj=cm))
        for name in sorted(set(current.versions) - names):
            ops.append(
                BatchOp(
                    op=BatchOpKind.DELETE,
                    ref=ObjectRef(
                        group="", kind="ConfigMap", name=name, namespace=keys.INVENTORY_NAMESPACE
                    ),
                )
            )
        try:
            written = await store.batch(ops, field_manager=FIELD_MANAGER)
        except (Conflict, AlreadyExists) as e:
            if attempt == 2:
                raise Conflict(
                    f"inventory {shard_name(source, 0)} in {keys.INVENTORY_NAMESPACE} keeps "
                    f"changing or belongs to another agent: {e.message}"
                ) from e
            current = await read(store, source=source, inventory_id=inventory_id)
            continue
        versions = {
            str(keys.metadata(o).get("name")): str(keys.metadata(o).get("resourceVersion"))
            for o, op in zip(written, ops, strict=True)
            if op.op is not BatchOpKind.DELETE
        }
        return Inventory(wanted, versions)
    raise AssertionError("unreachable")  # pragma: no cover
