"""Reading the live state of the objects a plan needs, in as few requests as it takes.

Many objects of one kind: one paginated list of the kind (it also shows objects of the
same name that this source does not own). A few: one get each. A kind the store does not
serve (its CRD is in this revision, not applied yet) has no live objects.

Where the store stands: `current_revision`, and `contiguous`, whether only our own writes
moved it since (then nobody else wrote meanwhile).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gitkrm.errors import NotFound
from gitkrm.krm import GVK, GroupKind, Obj, ObjectRef
from gitkrm.store import Store
from gitkrm.sync import keys

LIST_ABOVE: Final = 32  # objects of one kind; fewer are read one by one
PAGE: Final = 2000
NAMESPACE: Final = GVK(group="", version="v1", kind="Namespace")
CRD: Final = GVK(group="apiextensions.k8s.io", version="v1", kind="CustomResourceDefinition")


def _key(obj: Obj) -> tuple[str, str]:
    md = keys.metadata(obj)
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


async def list_all(store: Store, gvk: GVK, *, label_selector: str | None = None) -> list[Obj]:
    """Every object of a kind (all namespaces), page by page."""
    items, _ = await list_at(store, gvk, label_selector=label_selector)
    return items


async def list_at(
    store: Store, gvk: GVK, *, label_selector: str | None = None
) -> tuple[list[Obj], str]:
    """Every object of a kind, and the store revision the list was read at."""
    items: list[Obj] = []
    token: str | None = None
    revision: str | None = None
    while True:
        page = await store.list(gvk, label_selector=label_selector, limit=PAGE, continue_=token)
        items.extend(page.get("items") or ())
        md = page.get("metadata") or {}
        if revision is None:
            revision = str(md.get("resourceVersion") or "")
        token = md.get("continue") or None
        if not token:
            return items, revision


async def current_revision(store: Store) -> str:
    """The store's revision now (a list's resourceVersion): watches start from here."""
    page = await store.list(NAMESPACE, limit=1)
    return str((page.get("metadata") or {}).get("resourceVersion") or "")


def contiguous(since: str, after: str, ours: set[int]) -> bool:
    """Whether every revision in (since, after] is one of our writes (integer revisions,
    as the embedded store and etcd count them): then nobody else wrote meanwhile."""
    try:
        lo, hi = int(since), int(after)
    except ValueError:
        return False
    return hi - lo <= len(ours) and all(rv in ours for rv in range(lo + 1, hi + 1))


async def read(store: Store, wanted: Mapping[ObjectRef, GVK]) -> dict[ObjectRef, Obj | None]:
    """The live object of each ref (None: absent), read at the version given with it."""
    by_kind: dict[GroupKind, list[ObjectRef]] = {}
    for ref in wanted:
        by_kind.setdefault(GroupKind(group=ref.group, kind=ref.kind), []).append(ref)
    out: dict[ObjectRef, Obj | None] = {}
    for refs in by_kind.values():
        gvk = wanted[refs[0]]
        if len(refs) >= LIST_ABOVE:
            try:
                found = {_key(o): o for o in await list_all(store, gvk)}
            except NotFound:
                found = {}
            for ref in refs:
                out[ref] = found.get((ref.namespace or "", ref.name))
            continue
        for ref in refs:
            versioned = ObjectRef(
                group=ref.group,
                kind=ref.kind,
                name=ref.name,
                namespace=ref.namespace,
                version=wanted[ref].version or None,
            )
            try:
                out[ref] = await store.get(versioned)
            except NotFound:
                out[ref] = None
    return out
