"""Fuzzing label and field selectors: any string parses to a selector or raises BadRequest;
what parses prints back to a string that parses to the same selector, and matching any
labels or object never raises."""

from __future__ import annotations

from typing import Any, Final

from hypothesis import example, given
from hypothesis import strategies as st

from gitkrm.errors import BadRequest
from gitkrm.krm.fields import FieldSelector, escape_value, parse_field_selector
from gitkrm.krm.labels import (
    LabelSelector,
    Operator,
    Requirement,
    label_selector_from_dict,
    label_selector_from_set,
    parse_label_selector,
)
from gitkrm.krm.selection import parse_int64
from tests.fuzz.fuzz_values import json_values, only_gitkrm_errors

# ---- label selectors ----

_LABEL_PIECES: Final = [
    *("a", "b", "app", "tier", "x.y_z-1", "example.com/app", "k8s.io/", "/x", "a/b/c"),
    *("in", "notin", "IN", "exists", "-a", "a-", "_a", "1", "10", "-1", "+1", "0x1"),
    *("9223372036854775807", "9223372036854775808", "-9223372036854775809", "a" * 63),
    *("a" * 64, "=", "==", "!=", "!", ">", "<", ">=", "(", ")", ",", " ", "\t", "\n", "é"),
    *("\x00", "\\", "'", '"', " in (", " notin (", "()", "(,)", "(a,,b)", ""),
]
LABEL_TEXT: Final = st.one_of(
    st.lists(st.sampled_from(_LABEL_PIECES), max_size=16).map("".join),
    st.text(max_size=40),
)
LABEL_KEYS: Final = st.sampled_from(["a", "b", "app", "example.com/app", "in", "x.y_z-1"])
LABEL_VALUES: Final = st.one_of(
    st.sampled_from(["", "a", "web", "1", "10", "-1", "+5", "in", "x_y.z", "é", " "]),
    st.integers(-(2**64), 2**64).map(str),
    st.text(max_size=6),
)
LABELS: Final = st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=5)


def _check_label_selector(sel: LabelSelector, labels: dict[str, str]) -> None:
    assert isinstance(sel, LabelSelector)
    text = str(sel)
    again = parse_label_selector(text)
    assert again == sel, f"{text!r} parses to {again}"
    assert str(again) == text
    matched = sel.matches(labels)
    assert isinstance(matched, bool)
    assert again.matches(labels) is matched
    for r in sel.requirements:
        assert r.matches(labels) in (True, False)
        pinned = sel.requires_exact_match(r.key)
        if pinned is not None and matched:
            assert labels.get(r.key) == pinned


@given(LABEL_TEXT, LABELS)
@example("x in (a),x notin (a)", {"x": "a"})
@example("x>9223372036854775807", {"x": "9223372036854775808"})
@example("x<-1,x>1", {"x": "0"})
def test_label_selector_strings(text: str, labels: dict[str, str]) -> None:
    sel = only_gitkrm_errors(parse_label_selector, text)
    if isinstance(sel, BadRequest):
        return
    assert isinstance(sel, LabelSelector), f"{type(sel).__name__}: {sel}"
    _check_label_selector(sel, labels)


@st.composite
def requirements(draw: st.DrawFn) -> tuple[str, Operator, list[str]]:
    key = draw(st.one_of(LABEL_KEYS, st.text(max_size=8)))
    op = draw(st.sampled_from(list(Operator)))
    values = draw(st.lists(LABEL_VALUES, max_size=3))
    return key, op, values


@given(st.lists(requirements(), max_size=4), LABELS)
def test_label_requirements_validate_and_print(
    reqs: list[tuple[str, Operator, list[str]]], labels: dict[str, str]
) -> None:
    built: list[Requirement] = []
    for key, op, values in reqs:
        try:
            built.append(Requirement.new(key, op, values))
        except BadRequest:
            continue
        r = built[-1]
        if op in (Operator.GREATER_THAN, Operator.LESS_THAN):
            assert parse_int64(r.values[0]) is not None
    sel = LabelSelector(requirements=tuple(sorted(built, key=lambda r: r.key)))
    _check_label_selector(sel, labels)


STRUCTURED: Final = st.one_of(
    st.none(),
    json_values(max_leaves=8),
    st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": st.one_of(
                st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=3), json_values(max_leaves=4)
            ),
            "matchExpressions": st.one_of(
                st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "key": st.one_of(LABEL_KEYS, json_values(max_leaves=2)),
                            "operator": st.one_of(
                                st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt"]),
                                json_values(max_leaves=2),
                            ),
                            "values": st.one_of(
                                st.lists(LABEL_VALUES, max_size=3), json_values(max_leaves=3)
                            ),
                        },
                    ),
                    max_size=3,
                ),
                json_values(max_leaves=4),
            ),
        },
    ),
)


@given(STRUCTURED, LABELS)
@example({"matchLabels": {"a": None}}, {})
@example({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}, {})
@example({"matchExpressions": [{"key": "a", "operator": ["In"]}]}, {})
def test_structured_label_selectors(sel: Any, labels: dict[str, str]) -> None:
    got = only_gitkrm_errors(label_selector_from_dict, sel)
    if isinstance(got, BadRequest):
        return
    assert isinstance(got, LabelSelector), f"{type(got).__name__}: {got}"
    if got.selects_nothing:
        assert not got.matches(labels)
        return
    _check_label_selector(got, labels)


@given(st.one_of(st.none(), st.dictionaries(st.text(max_size=6), st.text(max_size=6))), LABELS)
def test_selectors_from_sets_match_their_set(
    match: dict[str, str] | None, labels: dict[str, str]
) -> None:
    sel = label_selector_from_set(match)
    assert sel.matches({**labels, **(match or {})})


# ---- field selectors ----

_FIELD_PIECES: Final = [
    *("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "a", ""),
    *("=", "==", "!=", "!", ",", "\\", "\\,", "\\=", "\\\\", "\\x", " ", "é", "\x00", "=="),
]
FIELD_TEXT: Final = st.one_of(
    st.lists(st.sampled_from(_FIELD_PIECES), max_size=14).map("".join),
    st.text(max_size=40),
)
KINDS: Final = st.sampled_from(
    [
        *(("", "Pod"), ("", "Node"), ("", "Event"), ("events.k8s.io", "Event"), ("batch", "Job")),
        *(("", "Secret"), ("apps", "ReplicaSet"), ("example.com", "Widget"), ("", "")),
    ]
)
OBJECTS: Final = st.one_of(
    st.dictionaries(
        st.sampled_from(["apiVersion", "kind", "metadata", "spec", "status", "type", "x"]),
        json_values(
            st.sampled_from(["name", "namespace", "nodeName", "phase", "podIPs", "ip", "a"]),
            max_leaves=10,
        ),
        max_size=6,
    ),
    st.builds(
        lambda kind, md, status: {"apiVersion": "v1", "kind": kind, "metadata": md, **status},
        st.sampled_from(["Pod", "Node", "Event", "Job"]),
        st.fixed_dictionaries({"name": st.text(max_size=4), "namespace": st.text(max_size=4)}),
        st.dictionaries(st.sampled_from(["status", "spec"]), json_values(max_leaves=6)),
    ),
)


@given(FIELD_TEXT, OBJECTS, KINDS)
@example("a=\\", {}, ("", "Pod"))
@example("metadata.name!=a\\,b", {"metadata": {"name": "a,b"}}, ("", "Pod"))
@example("status.podIP=1", {"apiVersion": "v1", "kind": "Pod", "status": {"podIPs": [1]}}, ("", ""))
def test_field_selector_strings(text: str, obj: dict[str, Any], kind: tuple[str, str]) -> None:
    sel = only_gitkrm_errors(parse_field_selector, text)
    if isinstance(sel, BadRequest):
        return
    assert isinstance(sel, FieldSelector), f"{type(sel).__name__}: {sel}"
    printed = str(sel)
    again = parse_field_selector(printed)
    assert again == sel, f"{printed!r} parses to {again}"
    assert str(again) == printed
    for r in sel.requirements:
        assert parse_field_selector(f"{r.field}={escape_value(r.value)}").requirements[0].value == (
            r.value
        )
    matched = sel.matches(obj)
    assert isinstance(matched, bool)
    assert again.matches(obj) is matched
    group, k = kind
    only_gitkrm_errors(sel.check_supported, group=group, kind=k)
