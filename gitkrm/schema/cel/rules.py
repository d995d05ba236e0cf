"""CRD `x-kubernetes-validations`: CEL rules evaluated as apiextensions-apiserver does.

Each rule sees `self` (the value at its schema node) and, for a transition rule on update,
`oldSelf` (the correlated old value: through properties, additionalProperties and map-list
keys; never through atomic lists). Failures are worded as kube-apiserver words them:
`spec: Invalid value: "object": failed rule: <rule>` (or the message, messageExpression,
reason and fieldPath given). `CrdRules.of` compiles a schema's rules once; a schema without
rules costs nothing and imports no CEL runtime.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gitkrm.errors import Cause
from gitkrm.schema import fielderrors as fe
from gitkrm.schema.structural import PathT, Schema

_OLD_SELF = re.compile(r"\boldSelf\b")
_PLAIN = frozenset({"self", "oldSelf"})
_OPTIONAL = frozenset({"self", "__oldSelf", "__hasOldSelf"})


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled rule of a schema node."""

    source: str
    message: str
    message_expression: Any  # runtime.Program | None
    reason: str
    field_path: PathT
    uses_old_self: bool
    optional_old_self: bool
    program: Any  # runtime.Program

    def error_string(self) -> str:
        return self.message.strip() or self.source.strip()


@dataclass(slots=True)
class _Node:
    """A schema node with rules at or below it."""

    type: str
    rules: list[Rule] = field(default_factory=list)
    properties: dict[str, _Node] = field(default_factory=dict)
    additional: _Node | None = None
    items: _Node | None = None
    list_type: str = "atomic"
    map_keys: tuple[str, ...] = ()
    passes: Any = None  # one program: every rule without oldSelf holds (the fast path)


@dataclass(frozen=True, slots=True)
class RuleError:
    """A rule that does not compile, at its place in the schema."""

    path: str
    rule: str
    message: str


class CrdRules:
    """The compiled rules of one structural schema."""

    def __init__(self, root: _Node, errors: list[RuleError]) -> None:
        self._root = root
        self.errors = errors

    @classmethod
    def of(cls, schema: Schema, where: str = "openAPIV3Schema") -> CrdRules | None:
        """Compile every rule of `schema`, or None when it has none."""
        if "x-kubernetes-validations" not in _text(schema):
            return None
        errors: list[RuleError] = []
        root = _build(schema, where, errors)
        return cls(root, errors) if root is not None else None

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        """Causes for every failed rule on a create (old None) or update."""
        out: list[Cause] = []
        root_self = dict(obj)
        meta = obj.get("metadata")
        if isinstance(meta, dict):  # the root sees only name and generateName of metadata
            root_self["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
        old_self: dict[str, Any] | None = None
        if old is not None:
            old_self = dict(old)
            old_meta = old.get("metadata")
            if isinstance(old_meta, dict):
                old_self["metadata"] = {
                    k: old_meta[k] for k in ("name", "generateName") if k in old_meta
                }
        _walk(self._root, root_self, old_self, old is not None, (), out)
        return out


def rule_errors(schema: Schema, path: str) -> list[Cause]:
    """Rules of a CRD version's schema that do not compile, as the CRD's causes."""
    rules = CrdRules.of(schema, path)
    if rules is None:
        return []
    return [fe.invalid(e.path, e.rule, e.message) for e in rules.errors]


def _text(schema: Schema) -> str:
    import orjson

    return orjson.dumps(schema).decode()


def _build(schema: Schema, where: str, errors: list[RuleError]) -> _Node | None:
    node = _Node(type=str(schema.get("type") or ""))
    for i, raw in enumerate(schema.get("x-kubernetes-validations") or ()):
        if isinstance(raw, dict):
            rule = _compile(raw, f"{where}.x-kubernetes-validations[{i}]", errors)
            if rule is not None:
                node.rules.append(rule)
    node.passes = _fast_path(node.rules)
    props = schema.get("properties")
    if isinstance(props, dict):
        for key, sub in props.items():
            if isinstance(sub, dict):
                child = _build(sub, f"{where}.properties[{key}]", errors)
                if child is not None:
                    node.properties[key] = child
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        node.additional = _build(extra, f"{where}.additionalProperties", errors)
    items = schema.get("items")
    if isinstance(items, dict):
        node.items = _build(items, f"{where}.items", errors)
        node.list_type = str(schema.get("x-kubernetes-list-type") or "atomic")
        node.map_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    if node.rules or node.properties or node.additional or node.items:
        return node
    return None


def _fast_path(rules: list[Rule]) -> Any:
    """The conjunction of a node's rules that read no oldSelf: one evaluation (one conversion
    of the value) admits a valid object; the rules run one by one only when it is not true."""
    from gitkrm.schema.cel.runtime import CelError, compile_expression

    plain = [r for r in rules if not r.uses_old_self and not r.optional_old_self]
    if len(plain) < 2:
        return None
    try:
        return compile_expression(" && ".join(f"({r.source})" for r in plain), _PLAIN)
    except CelError:
        return None


def _compile(raw: dict[str, Any], where: str, errors: list[RuleError]) -> Rule | None:
    from gitkrm.schema.cel.runtime import CelError, compile_expression

    source = raw.get("rule")
    if not isinstance(source, str) or not source.strip():
        return None
    optional = raw.get("optionalOldSelf") is True
    uses_old = bool(_OLD_SELF.search(source))
    try:
        if optional:
            wrapped = (
                "cel.bind(oldSelf, __hasOldSelf ? optional.of(__oldSelf) : optional.none(), "
                f"{source})"
            )
            program = compile_expression(wrapped, _OPTIONAL)
        else:
            program = compile_expression(source, _PLAIN)
    except CelError as e:
        errors.append(RuleError(f"{where}.rule", source, f"compilation failed: {e}"))
        return None
    message_expression = None
    if isinstance(raw.get("messageExpression"), str) and raw["messageExpression"].strip():
        try:
            message_expression = compile_expression(raw["messageExpression"], _PLAIN)
        except CelError as e:
            errors.append(
                RuleError(
                    f"{where}.messageExpression",
                    raw["messageExpression"],
                    f"messageExpression compilation failed: {e}",
                )
            )
            return None
    return Rule(
        source=source,
        message=str(raw.get("message") or ""),
        message_expression=message_expression,
        reason=str(raw.get("reason") or ""),
        field_path=parse_field_path(str(raw.get("fieldPath") or "")),
        uses_old_self=uses_old,
        optional_old_self=optional,
        program=program,
    )


def parse_field_path(text: str) -> PathT:
    """`.spec.ports` or `.labels['a.b']` as path parts (no numeric indexes, as kube allows)."""
    return tuple(
        m.group(1) or m.group(2) for m in re.finditer(r"\.([^.\[\]]+)|\['([^']*)'\]", text)
    )


def _walk(node: _Node, value: Any, old: Any, has_old: bool, path: PathT, out: list[Cause]) -> None:
    if value is None:
        return
    if node.rules:
        _evaluate(node, value, old, has_old, path, out)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else None
        for key, child in node.properties.items():
            if key in value:
                _walk(child, value[key], _get(old_map, key), _has(old_map, key), (*path, key), out)
        if node.additional is not None:
            for key, item in value.items():
                if key not in node.properties:
                    sub = node.additional
                    _walk(sub, item, _get(old_map, key), _has(old_map, key), (*path, key), out)
    elif isinstance(value, list) and node.items is not None:
        olds = old if isinstance(old, list) else None
        for i, item in enumerate(value):
            prior, found = _correlate(node, item, olds)
            _walk(node.items, item, prior, found, (*path, i), out)


def _get(mapping: dict[str, Any] | None, key: str) -> Any:
    return mapping.get(key) if mapping is not None else None


def _has(mapping: dict[str, Any] | None, key: str) -> bool:
    return mapping is not None and mapping.get(key) is not None


def _correlate(node: _Node, item: Any, olds: list[Any] | None) -> tuple[Any, bool]:
    if olds is None:
        return None, False
    if node.list_type == "map" and node.map_keys and isinstance(item, dict):
        key = tuple(item.get(k) for k in node.map_keys)
        for prior in olds:
            if isinstance(prior, dict) and tuple(prior.get(k) for k in node.map_keys) == key:
                return prior, True
    elif node.list_type == "set":
        for prior in olds:
            if prior == item:
                return prior, True
    return None, False


def _evaluate(
    node: _Node, value: Any, old: Any, has_old: bool, path: PathT, out: list[Cause]
) -> None:
    from gitkrm.schema.cel.runtime import CelError

    where = fe.path_of(path)
    shown = node.type
    fast = False
    if node.passes is not None:
        try:
            fast = node.passes.evaluate({"self": value, "oldSelf": old}) is True
        except CelError:
            fast = False
    for rule in node.rules:
        if fast and not rule.uses_old_self and not rule.optional_old_self:
            continue  # the fast path found it true
        if rule.uses_old_self and not has_old and not rule.optional_old_self:
            continue  # a transition rule runs only where an old value correlates
        if rule.optional_old_self:
            data = {"self": value, "__oldSelf": old, "__hasOldSelf": has_old}
        else:
            data = {"self": value, "oldSelf": old}
        try:
            result = rule.program.evaluate(data)
        except CelError as e:
            out.append(fe.invalid(where, shown, f"{e} evaluating rule: {rule.error_string()}"))
            continue
        if result is True:
            continue
        if result is not False:
            out.append(
                fe.invalid(
                    where,
                    shown,
                    f"rule did not evaluate to a bool evaluating rule: {rule.error_string()}",
                )
            )
            continue
        target = fe.path_of((*path, *rule.field_path)) if rule.field_path else where
        detail = _message(rule, {"self": value, "oldSelf": old})
        out.append(_cause(rule.reason, target, shown, detail))


def _message(rule: Rule, data: dict[str, Any]) -> str:
    from gitkrm.schema.cel.runtime import message_text

    text = message_text(rule.message_expression, data)
    if text is not None:
        return text
    if rule.message.strip():
        return rule.message.strip()
    return f"failed rule: {rule.source.strip()}"


def _cause(reason: str, path: str, shown: str, detail: str) -> Cause:
    if reason == fe.FORBIDDEN:
        return fe.forbidden(path, detail)
    if reason == fe.REQUIRED:
        return fe.required(path, detail)
    if reason == fe.DUPLICATE:
        return fe.duplicate(path, shown)
    return fe.invalid(path, shown, detail)


__all__ = ["CrdRules", "Rule", "RuleError", "parse_field_path", "rule_errors"]
