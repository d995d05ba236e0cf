"""SchemaType: the structured-merge-diff view of a schema node.

What field management needs to know of a value's type, read from OpenAPI the way
kube-openapi's schemaconv does: maps (structs, or `additionalProperties` maps) are
granular unless `x-kubernetes-map-type: atomic`; lists follow `x-kubernetes-list-type`
(`atomic`, `set`, `map` keyed by `x-kubernetes-list-map-keys`), else a
`x-kubernetes-patch-strategy: merge` list is keyed by its merge key (a set without one),
else atomic; quantities, int-or-string and RawExtension are untyped scalars; an object
without properties, or one preserving unknown fields, is "deduced" (maps granular, lists
atomic). Nodes resolve lazily and are cached per schema node, like `patch.meta`.

Built-in kinds (from_openapi) also know which struct fields a Go zero value already holds
(non-pointer structs such as `spec` or `template`, required slices such as
`containers`): the API server's Update entries never claim those paths themselves, only
what is under them, and so neither do ours.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, ClassVar, Final, TypeAlias

from gitkrm.patch.fieldmanager.fieldpath import Tree

if TYPE_CHECKING:
    from gitkrm.patch.fieldmanager.create import Plan

Shape: TypeAlias = Callable[[Mapping[str, object]], Tree | None]
"""A compiled create shape (shapes.py): the field set of objects of one shape, else None."""

SCALAR: Final = 0
MAP: Final = 1
LIST: Final = 2
DEDUCED: Final = 3
ATOMIC: Final = 4  # untyped atomic: scalars, lists and maps all leaves

LIST_ATOMIC: Final = 0
LIST_SET: Final = 1
LIST_MAP: Final = 2

_MAX_HOPS = 64
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
# Non-pointer struct fields of the built-in Go types (OpenAPI v2 does not say which
# fields are pointers; these names are non-pointer structs wherever they occur).
_ZERO_STRUCTS: Final = frozenset(
    {"metadata", "spec", "status", "template", "jobTemplate", "strategy", "updateStrategy"}
)
# Key fields whose default the API server's schema carries (OpenAPI v3 `default`), which
# the release's v2-derived schemas lack.
_BUILTIN_KEY_DEFAULTS: Final = {"protocol": "TCP"}


class SchemaType:
    """The SMD type of one schema node; `field(name)` / `elem` give the child types."""

    __slots__ = (
        "_elem",
        "_fields",
        "_node",
        "_resolver",
        "atomic",
        "item_pes",
        "key_defaults",
        "keys",
        "kind",
        "last_walk",
        "list_info",
        "list_type",
        "meta_plans",
        "new_plans",
        "root_plans",
        "shapes",
        "zero",
        "zero_plans",
    )

    _DEDUCED: ClassVar[SchemaType]
    _ATOMIC: ClassVar[SchemaType]
    _SCALAR: ClassVar[SchemaType]

    def __init__(self, kind: int, *, atomic: bool = False) -> None:
        self.kind = kind
        self.atomic = atomic
        self.list_type = LIST_ATOMIC
        self.keys: tuple[str, ...] = ()
        self.key_defaults: tuple[object, ...] = ()
        self.zero: frozenset[str] = frozenset()
        self._node: Mapping[str, object] = {}
        self._resolver: _Resolver | None = None
        self._fields: dict[str, tuple[SchemaType, bool]] = {}
        self._elem: SchemaType | None = None
        # Caches of the create walk (create.py), by map keys / list item keys.
        self.root_plans: dict[tuple[str, ...], Plan] = {}
        self.meta_plans: dict[tuple[str, ...], Plan] = {}
        self.new_plans: dict[tuple[str, ...], Plan] = {}
        self.zero_plans: dict[tuple[str, ...], Plan] = {}
        # An item's (sort key, path element) by its key values and their types.
        self.item_pes: dict[Hashable, tuple[tuple[object, ...], str]] = {}
        self.list_info: tuple[str | None, tuple[str, ...], SchemaType, int] | None = None
        # Compiled create shapes (shapes.py) by root key tuple, and the last walk's result.
        self.shapes: dict[tuple[str, ...], list[Shape]] = {}
        self.last_walk: dict[tuple[str, ...], object] = {}  # a Tree, or shapes' "never"

    @classmethod
    def from_openapi(cls, schemas: Mapping[str, object], name: str) -> SchemaType:
        """The type of definition `name` in a `components.schemas` (or `$defs`) mapping."""
        schemas = _unwrap(schemas)
        node = schemas.get(name)
        if not isinstance(node, Mapping):
            return cls.deduced()
        return _resolver_for(schemas, builtin=True).type_of(node, node)

    @classmethod
    def from_schema(cls, schema: Mapping[str, object]) -> SchemaType:
        """The type of a CRD version's `openAPIV3Schema`."""
        return _Resolver({}, builtin=False).type_of(schema, schema)

    @classmethod
    def deduced(cls) -> SchemaType:
        """No schema: maps granular, lists atomic (SMD's DeducedParseableType)."""
        return cls._DEDUCED

    @property
    def is_leaf(self) -> bool:
        return (
            self.kind in (SCALAR, ATOMIC)
            or self.atomic
            or (self.kind == LIST and self.list_type == LIST_ATOMIC)
        )

    def field(self, name: str) -> tuple[SchemaType, bool]:
        """The type of map key `name`, and whether it is a declared (struct) field."""
        hit = self._fields.get(name)
        if hit is not None:
            return hit
        if self.kind != MAP or self._resolver is None:
            hit = (self._DEDUCED if self.kind == DEDUCED else self._ATOMIC, False)
        else:
            props = self._node.get("properties")
            prop = props.get(name) if isinstance(props, Mapping) else None
            if isinstance(prop, Mapping):
                hit = (self._resolver.type_of(prop, prop), True)
            else:
                hit = (self.elem, False)
        self._fields[name] = hit
        return hit

    @property
    def elem(self) -> SchemaType:
        """The type of list items, or of the values of undeclared map keys."""
        e = self._elem
        if e is None:
            # Undeclared fields of a struct are read as deduced (SMD would refuse them; the
            # store's admission has pruned or rejected them already).
            e = self._DEDUCED if self.kind in (DEDUCED, MAP) else self._ATOMIC
            self._elem = e
        return e

    def __repr__(self) -> str:
        names = {SCALAR: "scalar", MAP: "map", LIST: "list", DEDUCED: "deduced", ATOMIC: "atomic"}
        extra = " atomic" if self.atomic else ""
        if self.kind == LIST:
            extra = f" {('atomic', 'set', 'map')[self.list_type]}{list(self.keys) or ''}"
        return f"SchemaType({names[self.kind]}{extra})"


SchemaType._DEDUCED = SchemaType(DEDUCED)
SchemaType._ATOMIC = SchemaType(ATOMIC)
SchemaType._SCALAR = SchemaType(SCALAR)


def _types(node: Mapping[str, object]) -> tuple[object, ...]:
    t = node.get("type")
    if isinstance(t, list):
        return tuple(x for x in t if x != "null")
    return (t,) if t is not None else ()


class _Resolver:
    """One schema collection: `$ref` lookup and one SchemaType per (field, node)."""

    __slots__ = ("builtin", "cache", "schemas")

    def __init__(self, schemas: Mapping[str, object], *, builtin: bool) -> None:
        self.schemas = schemas
        self.builtin = builtin
        self.cache: dict[tuple[int, int], SchemaType] = {}

    def deref(self, node: Mapping[str, object]) -> tuple[Mapping[str, object], str]:
        name = ""
        for _ in range(_MAX_HOPS):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                target = self.schemas.get(name)
                node = target if isinstance(target, Mapping) else {}
                continue
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
                node = all_of[0]
                continue
            break
        return node, name

    def type_of(self, prop: Mapping[str, object], raw: Mapping[str, object]) -> SchemaType:
        key = (id(prop), id(raw))
        hit = self.cache.get(key)
        if hit is None:
            hit = self._build(prop)
            self.cache[key] = hit
        return hit

    def _build(self, prop: Mapping[str, object]) -> SchemaType:
        node, name = self.deref(prop)
        if name in (_QUANTITY, _INT_OR_STRING) or node.get("x-kubernetes-int-or-string"):
            return SchemaType._SCALAR
        if name == _RAW_EXTENSION:
            return SchemaType._ATOMIC
        types = _types(node)
        if "items" in node or "array" in types:
            return self._list(prop, node)
        props = node.get("properties")
        extra = node.get("additionalProperties")
        map_type = prop.get("x-kubernetes-map-type", node.get("x-kubernetes-map-type"))
        if isinstance(props, Mapping) or isinstance(extra, Mapping) or extra is True:
            t = SchemaType(MAP, atomic=map_type == "atomic")
            t._node = node
            t._resolver = self
            if isinstance(extra, Mapping):
                t._elem = self.type_of(extra, extra)
            elif extra is True or node.get("x-kubernetes-preserve-unknown-fields"):
                t._elem = SchemaType._DEDUCED
            if self.builtin and isinstance(props, Mapping):
                t.zero = self._zero_fields(node, props)
            return t
        if "object" in types or not types or node.get("x-kubernetes-preserve-unknown-fields"):
            if map_type == "atomic":
                return SchemaType(MAP, atomic=True)
            if "oneOf" in node or "anyOf" in node:
                return SchemaType._SCALAR
            return SchemaType._DEDUCED
        return SchemaType._SCALAR

    def _list(self, prop: Mapping[str, object], node: Mapping[str, object]) -> SchemaType:
        t = SchemaType(LIST)
        items = node.get("items")
        t._elem = self.type_of(items, items) if isinstance(items, Mapping) else SchemaType._ATOMIC
        list_type = prop.get("x-kubernetes-list-type", node.get("x-kubernetes-list-type"))
        strategy = prop.get("x-kubernetes-patch-strategy", node.get("x-kubernetes-patch-strategy"))
        if list_type is not None:
            if list_type == "set":
                t.list_type = LIST_SET
            elif list_type == "map":
                keys = prop.get(
                    "x-kubernetes-list-map-keys", node.get("x-kubernetes-list-map-keys")
                )
                if isinstance(keys, list) and keys and all(isinstance(k, str) for k in keys):
                    t.list_type = LIST_MAP
                    t.keys = tuple(sorted(keys))
        elif isinstance(strategy, str) and "merge" in strategy.split(","):
            mk = prop.get("x-kubernetes-patch-merge-key", node.get("x-kubernetes-patch-merge-key"))
            if isinstance(mk, str) and mk:
                t.list_type = LIST_MAP
                t.keys = (mk,)
            else:
                t.list_type = LIST_SET
        if t.list_type == LIST_MAP and isinstance(items, Mapping):
            t.key_defaults = self._key_defaults(items, t.keys)
        return t

    def _key_defaults(
        self, items: Mapping[str, object], keys: tuple[str, ...]
    ) -> tuple[object, ...]:
        elem, _ = self.deref(items)
        props = elem.get("properties")
        out: list[object] = []
        for k in keys:
            p = props.get(k) if isinstance(props, Mapping) else None
            if isinstance(p, Mapping) and "default" in p:
                out.append(p["default"])
            elif self.builtin and k in _BUILTIN_KEY_DEFAULTS:
                out.append(_BUILTIN_KEY_DEFAULTS[k])
            else:
                out.append(_NO_DEFAULT)
        return tuple(out)

    def _zero_fields(
        self, node: Mapping[str, object], props: Mapping[str, object]
    ) -> frozenset[str]:
        required = node.get("required")
        req = set(required) if isinstance(required, list) else set()
        out: set[str] = set()
        for name, prop in props.items():
            if not isinstance(prop, Mapping):
                continue
            target, _ = self.deref(prop)
            if isinstance(target.get("properties"), Mapping):
                map_type = prop.get("x-kubernetes-map-type", target.get("x-kubernetes-map-type"))
                if map_type != "atomic" and (name in _ZERO_STRUCTS or name in req):
                    out.add(name)
            elif ("items" in target or "array" in _types(target)) and name in req:
                out.add(name)
        return frozenset(out)


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


_NO_DEFAULT: Final = _NoDefault()
NO_DEFAULT: Final = _NO_DEFAULT

_RESOLVERS: dict[int, tuple[Mapping[str, object], _Resolver]] = {}


def _unwrap(schemas: Mapping[str, object]) -> Mapping[str, object]:
    components = schemas.get("components")
    if isinstance(components, Mapping) and isinstance(components.get("schemas"), Mapping):
        inner: Mapping[str, object] = components["schemas"]
        return inner
    defs = schemas.get("$defs")
    if isinstance(defs, Mapping):
        return defs
    return schemas


def _resolver_for(schemas: Mapping[str, object], *, builtin: bool) -> _Resolver:
    hit = _RESOLVERS.get(id(schemas))
    if hit is not None and hit[0] is schemas:
        return hit[1]
    resolver = _Resolver(schemas, builtin=builtin)
    if len(_RESOLVERS) >= 8:
        _RESOLVERS.pop(next(iter(_RESOLVERS)))
    _RESOLVERS[id(schemas)] = (schemas, resolver)
    return resolver
