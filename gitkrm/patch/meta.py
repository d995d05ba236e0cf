"""PatchMeta: how each field of a kind merges, read from its OpenAPI / JSON schema.

The patch layer knows no Kubernetes kinds; the schema layer hands it schemas and this
module reads the extensions that drive strategic merge:

- `x-kubernetes-patch-strategy` (`merge`, `replace`, `retainKeys`, `merge,retainKeys`) and
  `x-kubernetes-patch-merge-key`, exactly as apimachinery's `PatchMetaFromOpenAPIV3`;
- for structural (CRD) schemas, `x-kubernetes-list-type` / `x-kubernetes-list-map-keys`
  (`map` lists merge by their keys, `set` lists merge as sets, others are atomic) and
  `x-kubernetes-map-type: atomic`;
- which fields hold a `resource.Quantity`, for semantic equality.

Resolution is lazy: a `PatchMeta` is a thin wrapper over one schema node, its fields are
resolved on first lookup and cached, and child metas are shared per schema node, so a
Deployment's meta costs nothing to build and recursive schemas (JSONSchemaProps) are fine.
Fields the schema does not describe get "no metadata": maps merge key by key, lists are
replaced whole, like JSON merge patch.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Final

from gitkrm.krm.types import JSONObject, JSONValue
from gitkrm.patch.failures import PatchFailure
from gitkrm.patch.values import gofmt, hkey

STRUCT: Final = "struct"
MAP: Final = "map"
LIST: Final = "list"
SCALAR: Final = "scalar"
UNKNOWN: Final = "unknown"

_QUANTITY_SUFFIX = "resource.Quantity"
_MAX_HOPS = 64


class MergeKey:
    """The identity of an element of a merging list: one key, or several (list-map-keys).

    A single key behaves exactly like apimachinery's merge key. Several keys (only from
    structural schemas) identify an element by all of them; a missing secondary key takes
    its schema default (the API server would default it), else null. The first key is
    always required.
    """

    __slots__ = ("defaults", "multi", "names", "primary")

    def __init__(self, names: tuple[str, ...], defaults: tuple[JSONValue, ...] = ()) -> None:
        self.names = names
        self.primary = names[0]
        self.multi = len(names) > 1
        self.defaults: tuple[JSONValue, ...] = defaults or (None,) * len(names)

    def present(self, m: Mapping[str, object]) -> bool:
        return self.primary in m

    def raw(self, m: Mapping[str, JSONValue]) -> JSONValue | tuple[JSONValue, ...]:
        """The key value(s) of an element (null where missing), for index lookups."""
        if not self.multi:
            return m.get(self.primary)
        return tuple(m.get(n, d) for n, d in zip(self.names, self.defaults, strict=True))

    def value(self, m: Mapping[str, JSONValue]) -> Hashable:
        """A hashable identity with Go `==` semantics (`1 == 1.0`, `true != 1`)."""
        try:
            if not self.multi:
                v = m.get(self.primary)
                return v if type(v) is str else hkey(v)
            return tuple(hkey(m.get(n, d)) for n, d in zip(self.names, self.defaults, strict=True))
        except TypeError as e:
            raise PatchFailure(f"merge key {self.primary!r} must be a scalar") from e

    def text(self, m: Mapping[str, JSONValue]) -> str | tuple[str, ...]:
        """The `%v` text Go sorts merging lists by (a tuple of texts for several keys)."""
        if not self.multi:
            return gofmt(m.get(self.primary))
        return tuple(gofmt(m.get(n, d)) for n, d in zip(self.names, self.defaults, strict=True))

    def stub(self, m: Mapping[str, JSONValue]) -> JSONObject:
        """The key fields of an element (a `$setElementOrder` entry, a delete directive)."""
        if not self.multi:
            return {self.primary: m[self.primary]}
        return {n: m[n] for n in self.names if n in m}

    def __repr__(self) -> str:
        return ",".join(self.names)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class FieldMeta:
    """How one field merges, and the meta of what it holds (its map, or its list items)."""

    strategy: str
    """`merge`, `replace` or "" (none: maps merge, lists are atomic)."""
    retain_keys: bool
    merge_key: MergeKey | None
    shape: str
    """STRUCT, MAP (a Go map: additionalProperties), LIST, SCALAR or UNKNOWN."""
    quantity: bool
    """The value (a scalar, or each list item) is a `resource.Quantity`."""
    sub: PatchMeta
    """The meta of the map this field holds, or of its list items."""

    def __repr__(self) -> str:
        strategy = ",".join(
            s for s in (self.strategy, "retainKeys" if self.retain_keys else "") if s
        )
        return (
            f"FieldMeta(strategy={strategy!r}, merge_key={self.merge_key!r}, "
            f"shape={self.shape!r}, quantity={self.quantity})"
        )


class _Resolver:
    """Shared state of one schema collection: ref lookup and one PatchMeta per node."""

    __slots__ = ("list_types", "metas", "schemas")

    def __init__(self, schemas: Mapping[str, object], *, list_types: bool) -> None:
        self.schemas = schemas
        self.list_types = list_types
        self.metas: dict[int, PatchMeta] = {}

    def deref(self, node: Mapping[str, object]) -> tuple[Mapping[str, object], bool]:
        """Follow `$ref` and single-`allOf` wrappers; also report a Quantity on the way."""
        quantity = _is_quantity_node(node)
        for _ in range(_MAX_HOPS):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                quantity = quantity or name.endswith(_QUANTITY_SUFFIX)
                target = self.schemas.get(name)
                node = target if isinstance(target, Mapping) else {}
                quantity = quantity or _is_quantity_node(node)
                continue
            all_of = node.get("allOf")
            if (
                isinstance(all_of, list)
                and all_of
                and isinstance(all_of[0], Mapping)
                and ("$ref" in all_of[0] or not _has_structure(node))
            ):
                node = all_of[0]
                quantity = quantity or _is_quantity_node(node)
                continue
            break
        return node, quantity

    def meta_for(self, node: Mapping[str, object]) -> PatchMeta:
        key = id(node)
        meta = self.metas.get(key)
        if meta is None:
            meta = PatchMeta(_node=node, _resolver=self)
            self.metas[key] = meta
        return meta

    def build_field(self, prop: Mapping[str, object]) -> FieldMeta:
        target, quantity = self.deref(prop)
        shape = _shape(target)
        items = target.get("items") if shape == LIST else None
        if isinstance(items, Mapping):
            elem, quantity = self.deref(items)
        else:
            elem = target
        strategy, retain, merge_key = self._strategy(prop, target, elem)
        return FieldMeta(
            strategy=strategy,
            retain_keys=retain,
            merge_key=merge_key,
            shape=shape,
            quantity=quantity,
            sub=self.meta_for(elem),
        )

    def _strategy(
        self, prop: Mapping[str, object], target: Mapping[str, object], elem: Mapping[str, object]
    ) -> tuple[str, bool, MergeKey | None]:
        raw = prop.get("x-kubernetes-patch-strategy")
        mk = prop.get("x-kubernetes-patch-merge-key")
        if raw is not None or mk is not None:
            strategies = raw.split(",") if isinstance(raw, str) else []
            if raw is not None and not isinstance(raw, str):
                raise PatchFailure(f"expected a string, but received a {type(raw).__name__}")
            retain, strategy = _split_strategies(strategies)
            key = MergeKey((mk,)) if isinstance(mk, str) and mk else None
            return strategy, retain, key
        if not self.list_types:
            return "", False, None
        list_type = prop.get("x-kubernetes-list-type", target.get("x-kubernetes-list-type"))
        if list_type == "map":
            names = prop.get("x-kubernetes-list-map-keys", target.get("x-kubernetes-list-map-keys"))
            if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
                props = elem.get("properties") or {}
                defaults = tuple(
                    (props.get(n) or {}).get("default") if isinstance(props, Mapping) else None
                    for n in names
                )
                return "merge", False, MergeKey(tuple(names), defaults)
            return "", False, None
        if list_type == "set":
            return "merge", False, None
        map_type = prop.get("x-kubernetes-map-type", target.get("x-kubernetes-map-type"))
        if map_type == "atomic":
            return "replace", False, None
        return "", False, None


def _split_strategies(strategies: list[str]) -> tuple[bool, str]:
    """apimachinery `extractRetainKeysPatchStrategy`: (retainKeys?, the other strategy)."""
    if not strategies:
        return False, ""
    if len(strategies) == 1:
        return (True, "") if strategies[0] == "retainKeys" else (False, strategies[0])
    if len(strategies) == 2:
        if strategies[0] == "retainKeys":
            return True, strategies[1]
        if strategies[1] == "retainKeys":
            return True, strategies[0]
    raise PatchFailure(f"unexpected patch strategy: [{' '.join(strategies)}]")


def _types(node: Mapping[str, object]) -> tuple[object, ...]:
    t = node.get("type")
    if isinstance(t, list):
        return tuple(t)
    return (t,) if t is not None else ()


def _has_structure(node: Mapping[str, object]) -> bool:
    return any(k in node for k in ("properties", "items", "additionalProperties", "type"))


def _shape(node: Mapping[str, object]) -> str:
    if isinstance(node.get("properties"), Mapping):
        return STRUCT
    types = _types(node)
    if "items" in node or "array" in types:
        return LIST
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping) or extra is True:
        return MAP
    if node.get("x-kubernetes-preserve-unknown-fields") or "object" in types:
        return UNKNOWN
    if types or "oneOf" in node or "anyOf" in node or node.get("x-kubernetes-int-or-string"):
        return SCALAR
    return UNKNOWN


def _is_quantity_node(node: Mapping[str, object]) -> bool:
    """A structural-schema quantity, as controller-gen writes `resource.Quantity`."""
    if not node.get("x-kubernetes-int-or-string"):
        return False
    pattern = node.get("pattern")
    return isinstance(pattern, str) and "[KMGTPE]i" in pattern


class PatchMeta:
    """Strategic-merge metadata of one object schema; `field(key)` tells how key merges."""

    __slots__ = ("_extra", "_fields", "_node", "_props", "_resolver")

    EMPTY: ClassVar[PatchMeta]

    def __init__(
        self,
        *,
        _node: Mapping[str, object] | None = None,
        _resolver: _Resolver | None = None,
    ) -> None:
        node = _node or {}
        props = node.get("properties")
        extra = node.get("additionalProperties")
        self._node = node
        self._resolver = _resolver
        self._props: Mapping[str, object] = props if isinstance(props, Mapping) else {}
        self._extra: Mapping[str, object] | None = extra if isinstance(extra, Mapping) else None
        self._fields: dict[str, FieldMeta] = {}

    @classmethod
    def from_openapi(
        cls, schemas: Mapping[str, object], name: str, *, list_types: bool = False
    ) -> PatchMeta:
        """The meta of schema `name` in an OpenAPI v3 `components.schemas` mapping.

        Also accepts a JSON-schema `$defs` mapping (refs like `#/$defs/X` or
        `/api/_definitions.json#/$defs/X`: a ref resolves by its last `/` segment), or a
        whole document holding either. Like the API server's strategic merge patch, only
        the `x-kubernetes-patch-*` extensions count unless `list_types=True`.
        """
        schemas = _unwrap(schemas)
        resolver = _resolver_for(schemas, list_types=list_types)
        node = schemas.get(name)
        if not isinstance(node, Mapping):
            raise PatchFailure(f"no schema named {name!r}").public()
        target, _ = resolver.deref(node)
        return resolver.meta_for(target)

    @classmethod
    def from_schema(
        cls, schema: Mapping[str, object], *, schemas: Mapping[str, object] | None = None
    ) -> PatchMeta:
        """The meta of an inline structural schema (a CRD version's `openAPIV3Schema`).

        `x-kubernetes-list-type: map` lists merge by their `x-kubernetes-list-map-keys`,
        `set` lists merge as sets of scalars, other lists are atomic; `$ref`s resolve in
        `schemas` when given.
        """
        resolver = _Resolver(_unwrap(schemas or {}), list_types=True)
        target, _ = resolver.deref(schema)
        return resolver.meta_for(target)

    @classmethod
    def empty(cls) -> PatchMeta:
        """No metadata: maps merge key by key, lists are replaced (JSON merge semantics)."""
        return cls.EMPTY

    @property
    def is_empty(self) -> bool:
        return not self._props and self._extra is None

    def field(self, key: str) -> FieldMeta:
        """How field `key` merges; unknown fields get no metadata (never an error)."""
        f = self._fields.get(key)
        if f is None:
            f = self._build(key)
            self._fields[key] = f
        return f

    def _build(self, key: str) -> FieldMeta:
        prop = self._props.get(key)
        if not isinstance(prop, Mapping):
            prop = self._extra
        if prop is None or self._resolver is None:
            return _UNKNOWN_FIELD
        try:
            return self._resolver.build_field(prop)
        except PatchFailure as e:
            raise e.at(key) from None

    def __repr__(self) -> str:
        fields = ",".join(sorted(self._props)[:6])
        return f"PatchMeta({fields}{',...' if len(self._props) > 6 else ''})"


PatchMeta.EMPTY = PatchMeta()
_UNKNOWN_FIELD: Final = FieldMeta(
    strategy="",
    retain_keys=False,
    merge_key=None,
    shape=UNKNOWN,
    quantity=False,
    sub=PatchMeta.EMPTY,
)

_RESOLVERS: dict[tuple[int, bool], tuple[Mapping[str, object], _Resolver]] = {}
_MAX_RESOLVERS = 16


def _unwrap(schemas: Mapping[str, object]) -> Mapping[str, object]:
    components = schemas.get("components")
    if isinstance(components, Mapping) and isinstance(components.get("schemas"), Mapping):
        inner: Mapping[str, object] = components["schemas"]
        return inner
    defs = schemas.get("$defs")
    if isinstance(defs, Mapping) and "$schema" in schemas:
        return defs
    return schemas


def _resolver_for(schemas: Mapping[str, object], *, list_types: bool) -> _Resolver:
    """One resolver (and so one meta cache) per schema collection, shared across kinds."""
    key = (id(schemas), list_types)
    hit = _RESOLVERS.get(key)
    if hit is not None and hit[0] is schemas:
        return hit[1]
    resolver = _Resolver(schemas, list_types=list_types)
    if len(_RESOLVERS) >= _MAX_RESOLVERS:
        _RESOLVERS.pop(next(iter(_RESOLVERS)))
    _RESOLVERS[key] = (schemas, resolver)
    return resolver
