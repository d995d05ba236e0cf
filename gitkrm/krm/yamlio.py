"""Manifests in and out: YAML read with libyaml and resolved exactly as kubectl resolves it.

kubectl reads YAML with sigs.k8s.io/yaml: go-yaml v2 into `interface{}`, then JSON. So a
plain `yes` is `true`, `0x1F` is 31, but `2024-01-01` and `12:30` stay strings, integral
floats such as `1e3` reach the server as the integer 1000, and map keys become strings.
PyYAML's YAML 1.1 rules differ on all of these (see `goyaml`), so libyaml
(`CSafeLoader`) only builds the node graph here and one small recursive builder turns
nodes into plain dicts with the Go rules. Skipping PyYAML's generic generator-based
constructor also pays for the extra checks (duplicate keys, alias bombs, line numbers)
within the libyaml baseline.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator
from typing import Any, Final, TypeGuard

import orjson
import yaml
from yaml.events import MappingEndEvent, MappingStartEvent, SequenceEndEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gitkrm.errors import ManifestError
from gitkrm.krm.goyaml import (
    HINT_CHARS,
    MERGE_KEY,
    STR,
    TAG,
    float32_g,
    json_float,
    resolve_plain_scalar,
)
from gitkrm.krm.manifest import Manifest
from gitkrm.krm.nesting import MAX_NESTING, nesting_exceeds
from gitkrm.krm.types import Obj
from gitkrm.krm.yamlout import dump_yaml

__all__ = [
    "DEFAULT_MAX_ALIASES",
    "DEFAULT_MAX_BYTES",
    "MAX_NESTING",
    "dump_yaml",
    "load_manifests",
]

DEFAULT_MAX_BYTES: Final = 8 * 1024 * 1024
DEFAULT_MAX_ALIASES: Final = 100
# libyaml's Cython composer recurses in C and crashes the process near 30,000 levels, so
# files that could nest deeper than this are scanned event by event first. The documents of
# files that could nest deeper than MAX_NESTING are measured once built.
_SCAN_ABOVE: Final = 5000
_MERGE_POSITIONS: Final = 1 << 40  # edge positions of `<<` sources, apart from items
_PLAIN: Final = "!gitkrm/plain"  # resolve() marks untagged plain scalars; the builder decides


class GoYamlLoader(yaml.CSafeLoader):
    """libyaml composes the node graph; plain scalars are marked for the Go resolution."""

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else STR
        return TAG + ("seq" if kind is SequenceNode else "map")


class _Failure(Exception):
    """A problem at a node; turned into a ManifestError with the document's context."""

    def __init__(self, message: str, node: Node) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _key_string(key: Any, node: Node) -> str:
    """sigs.k8s.io/yaml turns non-string map keys into JSON object keys."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return float32_g(key)
    hint = ""
    if isinstance(key, dict):  # `name: {{.Name}}` reads as a mapping in a mapping's key
        hint = " (a mapping as a key: an unrendered template placeholder such as {{ .Name }}?)"
    raise _Failure(f"unsupported map key {key!r}{hint}", node)


class _Builder:
    """Turns one file's nodes into plain values; counts alias uses when anchors exist."""

    __slots__ = ("active", "alias_uses", "home", "max_aliases", "track")

    def __init__(self, *, track: bool, max_aliases: int) -> None:
        self.track = track
        self.max_aliases = max_aliases
        self.alias_uses = 0
        # Each node's first (parent, position); reaching it from anywhere else is an alias
        # use, also inside an expanded alias, so nested bombs are counted as they expand.
        self.home: dict[int, tuple[int, int] | None] = {}
        self.active: set[int] = set()

    def build(self, node: Node) -> Any:
        """Build one document; alias uses add up over the whole file."""
        if self.track:
            # Anchors are per document; node ids of earlier documents may be reused.
            self.home.clear()
            return self._tracked(node, None)
        return self._build(node)

    def _tracked(self, node: Node, edge: tuple[int, int] | None) -> Any:
        key = id(node)
        if key in self.active:
            raise _Failure("recursive alias: an anchor is used inside itself", node)
        home = self.home.setdefault(key, edge)
        if home != edge:
            self.alias_uses += 1
            if self.alias_uses > self.max_aliases:
                raise _Failure(
                    f"too many alias expansions (more than {self.max_aliases} in this file)", node
                )
        self.active.add(key)
        try:
            return self._build(node)
        finally:
            self.active.discard(key)

    def _build(self, node: Node) -> Any:
        cls = node.__class__
        if cls is ScalarNode:
            tag = node.tag
            if tag is _PLAIN:
                v = node.value
                if v and v[0] not in HINT_CHARS:
                    return v
                v = resolve_plain_scalar(v)
                if v.__class__ is float and not math.isfinite(v):
                    raise _Failure(f"unsupported value {node.value}: JSON has no NaN or Inf", node)
                return v
            if tag == STR:
                return node.value
            return self._tagged_scalar(node)
        if cls is MappingNode:
            return self._mapping(node)
        if cls is SequenceNode:
            if self.track:
                return [self._tracked(n, (id(node), i)) for i, n in enumerate(node.value)]
            return [self._build(n) for n in node.value]
        raise _Failure(f"unexpected YAML node {cls.__name__}", node)

    def _mapping(self, node: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        lines: dict[str, int] = {}
        merges: list[Node] = []
        track = self.track
        build = self._build
        for i, (key_node, value_node) in enumerate(node.value):
            if key_node.__class__ is ScalarNode and key_node.tag is _PLAIN:
                k = key_node.value
                if k == MERGE_KEY:
                    merges.append(value_node)
                    continue
                if k and k[0] in HINT_CHARS:
                    k = _key_string(self._build(key_node), key_node)
            elif key_node.__class__ is ScalarNode and key_node.tag == STR:
                k = key_node.value
            else:
                kv = self._tracked(key_node, (id(node), ~i)) if track else build(key_node)
                k = _key_string(kv, key_node)
            if k in out:
                raise _Failure(f'duplicate key "{k}" (first defined at line {lines[k]})', key_node)
            lines[k] = key_node.start_mark.line + 1
            out[k] = self._tracked(value_node, (id(node), i)) if track else build(value_node)
        if merges:
            self._merge(out, merges, node)
        return out

    def _merge(self, out: dict[str, Any], merges: list[Node], node: Node) -> None:
        """`<<: *base` and `<<: [*a, *b]`: explicit keys win, earlier merge sources win."""
        sources: list[Node] = []
        for m in merges:
            sources.extend(m.value if m.__class__ is SequenceNode else [m])
        for j, src in enumerate(sources):
            if src.__class__ is not MappingNode:
                raise _Failure("map merge requires map or sequence of maps as the value", src)
            edge = (id(node), _MERGE_POSITIONS + j)
            merged = self._tracked(src, edge) if self.track else self._build(src)
            for k, v in merged.items():
                out.setdefault(k, v)

    def _tagged_scalar(self, node: Any) -> Any:
        """Explicit `!!int 3`, `!!binary ...`; unknown tags keep the text, as go-yaml does."""
        tag: str = node.tag
        text: str = node.value
        if not tag.startswith(TAG):
            return text
        short = tag[len(TAG) :]
        if short in ("str", "timestamp", "merge"):
            return text
        if short == "binary":
            try:
                return base64.b64decode(text).decode("utf-8", "replace")
            except ValueError as e:
                raise _Failure(f"invalid !!binary data: {e}", node) from None
        value = resolve_plain_scalar(text)
        if short == "null" and value is None:
            return None
        if short == "bool" and isinstance(value, bool):
            return value
        if short == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if (
            short == "float"
            and isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
        ):
            return value
        if short in ("null", "bool", "int", "float"):
            raise _Failure(f"cannot decode `{text}` as a !!{short}", node)
        return text


def _describe(root: Node) -> str | None:
    """`Kind namespace/name` read straight from the nodes, for error messages."""
    if root.__class__ is not MappingNode:
        return None
    kind = name = namespace = None
    for k, v in root.value:
        if k.value == "kind" and v.__class__ is ScalarNode and kind is None:
            kind = v.value
        elif k.value == "metadata" and v.__class__ is MappingNode:
            for mk, mv in v.value:
                if mv.__class__ is ScalarNode and mk.value in ("name", "namespace"):
                    if mk.value == "name":
                        name = mv.value
                    else:
                        namespace = mv.value
    if not kind:
        return None
    if not name:
        return str(kind)
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _first_key_line(node: Node) -> int:
    if node.__class__ is MappingNode and node.value:
        return _line(node.value[0][0])
    return _line(node)


_KIND_NAMES: Final[dict[type, str]] = {dict: "a mapping", list: "a list"}


def _check_object(obj: Any, *, path: str, line: int, what: str, desc: str | None) -> Obj:
    """A document or List item must be a mapping with string apiVersion and kind."""
    if not isinstance(obj, dict):
        found = _KIND_NAMES.get(type(obj), f"a scalar ({obj!r})")
        raise ManifestError(
            f"{what} is {found}, not a mapping (an object with apiVersion and kind)",
            path=path,
            line=line,
        )
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    missing = [f for f, v in (("apiVersion", api_version), ("kind", kind)) if not v]
    if missing:
        raise ManifestError(
            f"{what} has no {' and no '.join(missing)}", path=path, line=line, object=desc
        )
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise ManifestError(
            f"{what}: apiVersion and kind must be strings", path=path, line=line, object=desc
        )
    return obj


def _expand(obj: Obj, node: Node | None, *, path: str, line: int, index: int) -> Iterator[Manifest]:
    """`kind: List` (and typed `XList`) documents stand for their items, as in kubectl."""
    kind: str = obj["kind"]
    items = obj.get("items")
    if not (kind.endswith("List") and isinstance(items, list)):
        yield Manifest(obj=obj, path=path, line=line, index=index)
        return
    item_lines: list[int] = []
    if node is not None and node.__class__ is MappingNode:
        for k, v in node.value:
            if k.value == "items" and v.__class__ is SequenceNode:
                item_lines = [_first_key_line(n) for n in v.value]
    for i, item in enumerate(items):
        item_line = item_lines[i] if i < len(item_lines) else line
        if isinstance(item, dict) and kind != "List":
            # Typed lists (DeploymentList) may leave their items' apiVersion/kind out.
            item.setdefault("apiVersion", obj["apiVersion"])
            item.setdefault("kind", kind[: -len("List")])
        checked = _check_object(item, path=path, line=item_line, what=f"{kind} item {i}", desc=None)
        yield Manifest(obj=checked, path=path, line=item_line, index=index)


def _byte_size(data: bytes | str) -> int:
    if isinstance(data, bytes):
        return len(data)
    return len(data) if data.isascii() else len(data.encode("utf-8", "surrogatepass"))


def _nesting_bound(data: bytes | str) -> int:
    """An upper bound on nesting: every collection starts at one of these characters."""
    if isinstance(data, bytes):
        return sum(data.count(c) for c in (b"[", b"{", b"-", b"?", b":"))
    return sum(data.count(c) for c in ("[", "{", "-", "?", ":"))


def _too_deep(path: str, line: int | None) -> ManifestError:
    return ManifestError(
        f"document is nested too deeply (more than {MAX_NESTING} levels)", path=path, line=line
    )


def _libyaml_too_deep(e: yaml.YAMLError) -> TypeGuard[yaml.MarkedYAMLError]:
    """libyaml 0.2.6 and later stop at their own nesting limit (1,000) before ours can."""
    return isinstance(e, yaml.MarkedYAMLError) and "maximum nesting depth" in (e.problem or "")


def _mark_line(e: yaml.MarkedYAMLError) -> int | None:
    mark = e.problem_mark or e.context_mark
    return mark.line + 1 if mark is not None else None


def _check_nesting(data: bytes | str, *, path: str) -> None:
    """Reject nesting deeper than MAX_NESTING before libyaml composes (and recurses)."""
    loader = GoYamlLoader(data)
    depth = 0
    try:
        while (event := loader.get_event()) is not None:
            cls = event.__class__
            if cls is MappingStartEvent or cls is SequenceStartEvent:
                depth += 1
                if depth > MAX_NESTING:
                    mark = event.start_mark
                    raise _too_deep(path, mark.line + 1 if mark is not None else None)
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                depth -= 1
    except yaml.YAMLError as e:
        if _libyaml_too_deep(e):
            raise _too_deep(path, _mark_line(e)) from None
        # any other error is reported with its line by the real parse
    finally:
        loader.dispose()


def load_manifests(
    data: bytes | str,
    *,
    path: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_aliases: int = DEFAULT_MAX_ALIASES,
) -> list[Manifest]:
    """Every object of one manifest file, with its line; ManifestError on any problem.

    YAML files may hold many documents (empty ones are skipped); a `.json` path is read
    with orjson as one object. Lists are expanded into their items.
    """
    size = _byte_size(data)
    if size > max_bytes:
        raise ManifestError(
            f"file is {size} bytes, more than the limit of {max_bytes} bytes", path=path
        )
    bound = _nesting_bound(data)
    if path.endswith(".json"):
        return _load_json(data, path=path, measure=bound > MAX_NESTING)
    if bound > _SCAN_ABOVE:
        _check_nesting(data, path=path)
    has_anchor = (b"&" in data) if isinstance(data, bytes) else ("&" in data)
    # Built documents nest as their text does (checked just above when the text is long),
    # except where aliases expand.
    measure = bound > MAX_NESTING and (has_anchor or bound <= _SCAN_ABOVE)
    builder = _Builder(track=has_anchor, max_aliases=max_aliases)
    loader = GoYamlLoader(data)
    out: list[Manifest] = []
    index = -1
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                root = loader.get_node()
                if root is None:
                    break
            except yaml.MarkedYAMLError as e:
                line = _mark_line(e)
                if _libyaml_too_deep(e):
                    raise _too_deep(path, line) from None
                problem = " ".join(p for p in (e.context, e.problem) if p)
                raise ManifestError(f"invalid YAML: {problem}", path=path, line=line) from None
            except yaml.YAMLError as e:
                raise ManifestError(f"invalid YAML: {e}", path=path) from None
            index += 1
            if root.__class__ is ScalarNode and root.tag is _PLAIN and root.value == "":
                continue  # an empty document: `---` alone or only comments
            line = _first_key_line(root)
            try:
                obj = builder.build(root)
            except _Failure as f:
                raise ManifestError(
                    f.message, path=path, line=_line(f.node), object=_describe(root)
                ) from None
            except RecursionError:
                raise _too_deep(path, line) from None
            if measure and nesting_exceeds(obj):
                raise _too_deep(path, line)
            checked = _check_object(
                obj, path=path, line=line, what="document", desc=_describe(root)
            )
            out.extend(_expand(checked, root, path=path, line=line, index=index))
    finally:
        loader.dispose()
    return out


def _json_numbers(value: Any) -> Any:
    """Integral floats become ints, as after the API server's JSON decoding."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list | float):
                value[k] = _json_numbers(v)
        return value
    if isinstance(value, list):
        return [_json_numbers(v) for v in value]
    if isinstance(value, float):
        return json_float(value)
    return value


def _load_json(data: bytes | str, *, path: str, measure: bool) -> list[Manifest]:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise ManifestError(f"invalid JSON: {e.msg}", path=path, line=e.lineno) from None
    if measure and nesting_exceeds(obj):
        raise _too_deep(path, 1)
    obj = _json_numbers(obj)
    desc = None
    if isinstance(obj, dict) and isinstance(obj.get("kind"), str):
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        desc = f"{obj['kind']} {name}" if isinstance(name, str) else obj["kind"]
    checked = _check_object(obj, path=path, line=1, what="document", desc=desc)
    return list(_expand(checked, None, path=path, line=1, index=0))
