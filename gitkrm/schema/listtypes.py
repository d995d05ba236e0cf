"""`x-kubernetes-list-type` checks of custom resources: `set` items unique, `map` items
unique by their `x-kubernetes-list-map-keys` (`Duplicate value` causes, as kube reports)."""

from __future__ import annotations

from typing import Any

import orjson

from gitkrm.errors import Cause
from gitkrm.schema import fielderrors as fe

PathT = tuple[str | int, ...]


def list_type_errors(obj: object, schema: dict[str, Any], path: PathT = ()) -> list[Cause]:
    out: list[Cause] = []
    _walk(obj, schema, path, out)
    return out


def _walk(obj: object, schema: dict[str, Any], path: PathT, out: list[Cause]) -> None:
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, value in obj.items():
            sub = props.get(key) if isinstance(props, dict) else None
            if sub is None and isinstance(extra, dict):
                sub = extra
            if isinstance(sub, dict) and isinstance(value, dict | list):
                _walk(value, sub, (*path, key), out)
    elif isinstance(obj, list):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            _unique_set(obj, path, out)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            _unique_map(obj, keys, path, out)
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(obj):
                if isinstance(item, dict | list):
                    _walk(item, items, (*path, i), out)


def _unique_set(items: list[object], path: PathT, out: list[Cause]) -> None:
    seen: set[bytes] = set()
    for i, item in enumerate(items):
        key = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
        if key in seen:
            out.append(fe.duplicate(fe.path_of((*path, i)), item))
        seen.add(key)


def _unique_map(items: list[object], keys: list[str], path: PathT, out: list[Cause]) -> None:
    seen: set[bytes] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        ident = {k: item.get(k) for k in keys}
        key = orjson.dumps(ident, option=orjson.OPT_SORT_KEYS)
        if key in seen:
            out.append(fe.duplicate(fe.path_of((*path, i)), ident))
        seen.add(key)
