"""Tolerant readers of object fields: health is computed on whatever a store returns."""

from __future__ import annotations

from collections.abc import Mapping

from gitkrm.krm.fields import field_value


def get_int(obj: object, *path: str, default: int) -> int:
    value = field_value(obj, *path)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def get_str(obj: object, *path: str, default: str = "") -> str:
    value = field_value(obj, *path)
    return value if isinstance(value, str) else default


def conditions(obj: object) -> list[Mapping[str, object]]:
    """status.conditions, keeping only well-formed entries."""
    found = field_value(obj, "status", "conditions")
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
