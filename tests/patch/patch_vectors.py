"""Helpers for running the shared Go test vectors (see vectors/README.md)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from gitkrm.patch import PatchMeta
from gitkrm.patch.values import dedupe_scalars, go_equal, go_sort_by, gofmt, kind

VECTORS = Path(__file__).parent / "vectors"


@cache
def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text())


@cache
def merge_item_meta() -> PatchMeta:
    doc = load("merge-item-schema.json")
    return PatchMeta.from_openapi(doc["components"]["schemas"], "mergeItem")


def same(actual: Any, expected: Any) -> bool:
    """Go's comparison of `json.Marshal` bytes: key order never matters, list order does,
    numbers compare by value and types strictly (`true` is not `1`)."""
    return go_equal(actual, expected)


def sort_merge_lists(doc: Any, meta: PatchMeta) -> Any:
    """Go `sortMergeListsByName`, the test-side normalisation of "sorted" cases."""
    if doc is None:
        return None
    return _sort_map(doc, meta)


def _sort_map(m: dict[str, Any], meta: PatchMeta) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in m.items():
        if k == "$retainKeys" or k.startswith("$deleteFromPrimitiveList"):
            v = go_sort_by(list(v), gofmt)
        elif k.startswith("$setElementOrder") or k == "$patch":
            pass
        elif isinstance(v, dict):
            v = _sort_map(v, meta.field(k).sub)
        elif isinstance(v, list):
            fm = meta.field(k)
            if fm.strategy == "merge":
                v = _sort_array(v, fm.sub, fm.merge_key.primary if fm.merge_key else "")
        out[k] = v
    return out


def _sort_array(items: list[Any], sub: PatchMeta, key: str) -> list[Any]:
    if not items:
        return items
    kinds = {kind(v) for v in items}
    assert len(kinds) == 1, items
    assert "l" not in kinds, items
    if "m" not in kinds:
        return go_sort_by(dedupe_scalars(items), gofmt)
    mapped = [_sort_map(v, sub) for v in items]
    return go_sort_by(mapped, lambda e: gofmt(e.get(key)))
