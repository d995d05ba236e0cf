"""Label selectors: the `labelSelector=` string form and the structured `matchLabels` form.

The grammar, messages and matching rules follow apimachinery (pkg/labels/selector.go,
metav1.LabelSelectorAsSelector) so that a selector accepted or rejected by kubectl here
is accepted or rejected the same way by a real API server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from gitkrm.errors import BadRequest
from gitkrm.krm.label_parser import ParseError, parse_requirements
from gitkrm.krm.selection import (
    MISSING,
    Code,
    Compiled,
    Operator,
    Requirement,
    compile_requirement,
    go_quote,
    match_compiled,
)

__all__ = [
    "LabelSelector",
    "Operator",
    "Requirement",
    "label_selector_from_dict",
    "label_selector_from_set",
    "parse_label_selector",
]


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """An AND of requirements, sorted by key (stable), as apimachinery keeps them.

    `LabelSelector()` selects everything; `LabelSelector.nothing()` selects nothing (the
    meaning of a *missing* structured selector, e.g. `metav1.LabelSelectorAsSelector(nil)`).
    """

    requirements: tuple[Requirement, ...] = ()
    selects_nothing: bool = False
    _compiled: tuple[Compiled, ...] = field(
        init=False, repr=False, compare=False, hash=False, default=()
    )

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_compiled", tuple(compile_requirement(r) for r in self.requirements)
        )

    @classmethod
    def everything(cls) -> LabelSelector:
        return _EVERYTHING

    @classmethod
    def nothing(cls) -> LabelSelector:
        return _NOTHING

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (the nothing-selector is not)."""
        return not self.requirements and not self.selects_nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.selects_nothing:
            return False
        if labels is None:
            labels = {}
        get = labels.get
        for key, code, payload in self._compiled:
            v = get(key, MISSING)
            if code is Code.IN:
                if v not in payload:
                    return False
            elif code is Code.NOT_IN:
                if v in payload:
                    return False
            elif code is Code.EXISTS:
                if v is MISSING:
                    return False
            elif code is Code.NOT_EXISTS:
                if v is not MISSING:
                    return False
            elif not match_compiled((key, code, payload), labels):
                return False
        return True

    def requires_exact_match(self, key: str) -> str | None:
        """The single value `key` must have, if the selector pins it (for index look-ups)."""
        for r in self.requirements:
            if r.key == key:
                if (
                    r.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                    and len(r.values) == 1
                ):
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_EVERYTHING: Final = LabelSelector()
_NOTHING: Final = LabelSelector(selects_nothing=True)


def _sorted_by_key(reqs: Iterable[Requirement]) -> tuple[Requirement, ...]:
    return tuple(sorted(reqs, key=lambda r: r.key))


def label_selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    """Exact-match selector for a plain map (a Service's or RC's `spec.selector`).

    Not validated, like apimachinery's SelectorFromSet; an empty or missing map selects
    everything.
    """
    if not labels:
        return _EVERYTHING
    return LabelSelector(
        requirements=_sorted_by_key(
            Requirement(key=k, operator=Operator.EQUALS, values=(v,)) for k, v in labels.items()
        )
    )


_STRUCTURED_OPS: Final = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def label_selector_from_dict(sel: Mapping[str, object] | None) -> LabelSelector:
    """The structured form (`matchLabels` / `matchExpressions`), as LabelSelectorAsSelector.

    `None` selects nothing; `{}` (no labels, no expressions) selects everything.
    Invalid keys, values or operators raise BadRequest.
    """
    if sel is None:
        return _NOTHING
    if not isinstance(sel, Mapping):
        raise BadRequest(f"label selector must be an object, got {type(sel).__name__}")
    match_labels = sel.get("matchLabels") or {}
    exprs = sel.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise BadRequest("matchLabels must be a map of strings")
    if not isinstance(exprs, list):
        raise BadRequest("matchExpressions must be a list")
    if not match_labels and not exprs:
        return _EVERYTHING
    reqs: list[Requirement] = []
    for k, v in match_labels.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise BadRequest(f"matchLabels[{k}]: must be a string, got {v!r}")
        reqs.append(Requirement.new(k, Operator.EQUALS, (v,)))
    for i, expr in enumerate(exprs):
        if not isinstance(expr, Mapping):
            raise BadRequest(f"matchExpressions[{i}]: must be an object")
        key = expr.get("key")
        op_name = expr.get("operator")
        values = expr.get("values") or []
        op = _STRUCTURED_OPS.get(op_name) if isinstance(op_name, str) else None
        if op is None:
            shown = go_quote(op_name) if isinstance(op_name, str) else repr(op_name)
            raise BadRequest(f"{shown} is not a valid label selector operator")
        if not isinstance(key, str):
            raise BadRequest(f"matchExpressions[{i}].key: must be a string")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise BadRequest(f"matchExpressions[{i}].values: must be a list of strings")
        reqs.append(Requirement.new(key, op, values))
    return LabelSelector(requirements=_sorted_by_key(reqs))


def parse_label_selector(text: str) -> LabelSelector:
    """Parse `labelSelector=` syntax (`a=b,c!=d,e in (f,g),!h,i`); "" selects everything.

    Raises BadRequest with apimachinery's message for any syntax or validation error.
    """
    if not isinstance(text, str):
        raise BadRequest(f"label selector must be a string, got {type(text).__name__}")
    if not text.strip(" \t\r\n"):
        return _EVERYTHING
    try:
        reqs = parse_requirements(text)
    except ParseError as e:
        raise BadRequest(str(e)) from None
    return LabelSelector(requirements=_sorted_by_key(reqs))
