"""Tolerant readers of object fields: health is computed on whatever a store returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def get_int(obj: Any, *path: str, default: int) -> int:
    value = get(obj, *path)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def get_str(obj: Any, *path: str, default: str = "") -> str:
    value = get(obj, *path)
    return value if isinstance(value, str) else default


def conditions(obj: Any) -> list[Mapping[str, Any]]:
    """status.conditions, keeping only well-formed entries."""
    found = get(obj, "status", "conditions")
    if not isinstance(found, list):
        return []
    return [c for c in found if isinstance(c, Mapping) and isinstance(c.get("type"), str)]


def condition(obj: Any, kind: str) -> Mapping[str, Any] | None:
    for c in conditions(obj):
        if c.get("type") == kind:
            return c
    return None


def condition_is(obj: Any, kind: str, status: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == status
