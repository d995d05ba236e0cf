"""Tolerant readers of object fields: health is computed on whatever a store returns."""

from __future__ import annotations

from collections.abc import Mapping


def get(obj: object, *path: str) -> object:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def get_int(obj: object, *path: str, default: int) -> int:
    value = get(obj, *path)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def get_str(obj: object, *path: str, default: str = "") -> str:
    value = get(obj, *path)
    return value if isinstance(value, str) else default


def conditions(obj: object) -> list[Mapping[str, object]]:
    """status.conditions, keeping only well-formed entries."""
    found = get(obj, "status", "conditions")
    if not isinstance(found, list):
        return []
    return [c for c in found if isinstance(c, Mapping) and isinstance(c.get("type"), str)]


def condition(obj: object, kind: str) -> Mapping[str, object] | None:
    for c in conditions(obj):
        if c.get("type") == kind:
            return c
    return None


def condition_is(obj: object, kind: str, status: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == status
