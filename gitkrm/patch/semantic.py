"""Semantic equality: when two values mean the same thing to Kubernetes.

Used by the diff so that re-applying unchanged manifests to a live object that the server
normalised and defaulted yields an empty patch:

- numbers compare by value (`1 == 1.0`), but never equal booleans or strings;
- `resource.Quantity` fields (only where the schema says so, never in ConfigMap data)
  compare by amount: `500m == 0.5`, `1Gi == 1024Mi`, `1 == "1"`;
- a missing field, `null`, and an empty value are alike where Kubernetes stores them
  alike: for every field (null), for Go maps (schema `additionalProperties`, e.g.
  labels, annotations, nodeSelector, resources.requests: `{}`) and for lists (`[]`),
  which Kubernetes serialises with `omitempty`. An empty *struct* (`emptyDir: {}`,
  `securityContext: {}`) is a value and differs from a missing one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gitkrm.krm.quantity import quantities_equal
from gitkrm.patch.meta import LIST, MAP, FieldMeta, PatchMeta
from gitkrm.patch.values import NUMBER, go_equal, kind

_MISSING: Final = object()
_SCALARS: Final = (str, int, float, bool, type(None))


def semantically_equal(a: object, b: object, meta: PatchMeta | None = None) -> bool:
    """True when objects `a` and `b` (described by `meta`) mean the same to Kubernetes."""
    if isinstance(a, dict) and isinstance(b, dict):
        return maps_equal(a, b, meta or PatchMeta.EMPTY)
    return go_equal(a, b) or (_is_number(a) and _is_number(b) and a == b)


def empty_like(value: object, fm: FieldMeta) -> bool:
    """`value` means "not set" for this field (null, or {} / [] where omitempty applies)."""
    if value is None:
        return True
    if fm.shape == MAP:
        return isinstance(value, dict) and not value
    if fm.shape == LIST:
        return isinstance(value, list) and not value
    return False


def maps_equal(a: Mapping[str, object], b: Mapping[str, object], meta: PatchMeta) -> bool:
    if a is b:
        return True
    for k, va in a.items():
        vb = b.get(k, _MISSING)
        fm = meta.field(k)
        if vb is _MISSING:
            if not empty_like(va, fm):
                return False
        elif not values_equal(va, vb, fm):
            return False
    return all(k in a or empty_like(vb, meta.field(k)) for k, vb in b.items())


def values_equal(a: object, b: object, fm: FieldMeta) -> bool:
    """Semantic equality of two values of the field `fm`."""
    if a is b:
        return True
    ta = type(a)
    if ta is type(b) and ta in _SCALARS:
        if a == b:
            return True
        return fm.quantity and quantities_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return maps_equal(a, b, fm.sub)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        return all(_item_equal(x, y, fm) for x, y in zip(a, b, strict=True))
    if empty_like(a, fm) and empty_like(b, fm):
        return True
    if fm.quantity and quantities_equal(a, b):
        return True
    return _is_number(a) and _is_number(b) and a == b


def _item_equal(x: object, y: object, fm: FieldMeta) -> bool:
    if isinstance(x, dict) and isinstance(y, dict):
        return maps_equal(x, y, fm.sub)
    if type(x) is type(y) and type(x) in _SCALARS and x == y:
        return True
    if fm.quantity and quantities_equal(x, y):
        return True
    return go_equal(x, y)


def _is_number(v: object) -> bool:
    return kind(v) == NUMBER if isinstance(v, int | float) else False
