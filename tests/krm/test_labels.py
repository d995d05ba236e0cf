"""Label selectors: grammar and messages as apimachinery's labels.Parse, matching semantics."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.errors import BadRequest
from gitkrm.krm.labels import (
    LabelSelector,
    Operator,
    Requirement,
    label_selector_from_dict,
    label_selector_from_set,
    parse_label_selector,
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("   ", ""),
        ("x=a", "x=a"),
        ("x==a", "x==a"),
        ("x!=a", "x!=a"),
        ("x", "x"),
        ("!x", "!x"),
        ("  x  =  a  ,  y  ", "x=a,y"),
        ("x in (b,a)", "x in (a,b)"),
        ("x notin (a)", "x notin (a)"),
        ("x in ()", "x in ()"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("x in (,a)", "x in (,a)"),
        ("x=", "x="),
        ("y=a,x=b", "x=b,y=a"),
        # `x=a,b` is `x=a` AND `b exists` (not an error) in apimachinery's grammar.
        ("x=a,b", "b,x=a"),
        ("in in (in,notin)", "in in (in,notin)"),
        ("example.com/app=web", "example.com/app=web"),
        ("x>1", "x>1"),
        ("x<10", "x<10"),
        ("x in (a),x notin (b)", "x in (a),x notin (b)"),
    ],
)
def test_parse_canonical_form(text: str, canonical: str) -> None:
    sel = parse_label_selector(text)
    assert str(sel) == canonical
    assert parse_label_selector(str(sel)) == sel


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        ("x in", "unable to parse requirement: found '' expected: '('"),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x in (a b)", "found 'b', expected: ',' or ')'"),
        ("x,", "found '', expected: identifier after ','"),
        (",x", "found ',', expected: !, identifier, or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x=a=b", "found '=', expected: ',' or 'end of string'"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        ("-x=a", 'unable to parse requirement: key: Invalid value: "-x"'),
        ("x=-a", 'values[0][x]: Invalid value: "-a"'),
        ("x=" + "a" * 64, "must be no more than 63 characters"),
        ("a/b/c", "a qualified name must consist of"),
        ("/x", "prefix part must be non-empty"),
        ("x>a", "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as exc:
        parse_label_selector(text)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("x=a", {"x": "a"}, True),
        ("x=a", {"x": "b"}, False),
        ("x=a", {}, False),
        ("x!=a", {}, True),  # Kubernetes: != matches objects without the key
        ("x!=a", {"x": "a"}, False),
        ("x notin (a,b)", {}, True),
        ("x notin (a,b)", {"x": "b"}, False),
        ("x notin (a,b)", {"x": "c"}, True),
        ("x in (a,b)", {"x": "b"}, True),
        ("x in (a,b)", {}, False),
        ("x", {"x": ""}, True),
        ("x", {}, False),
        ("!x", {}, True),
        ("!x", {"x": "a"}, False),
        ("x=", {"x": ""}, True),
        ("x=", {}, False),
        ("x>1", {"x": "2"}, True),
        ("x>1", {"x": "1"}, False),
        ("x>1", {"x": "two"}, False),
        ("x<1", {"x": "-5"}, True),
        ("x<1", {}, False),
        ("x=a,y", {"x": "a", "y": "1"}, True),
        ("x=a,y", {"x": "a"}, False),
        ("", {}, True),
    ],
)
def test_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_matches_none_labels_and_everything_nothing() -> None:
    assert parse_label_selector("x!=a").matches(None)
    assert not parse_label_selector("x").matches(None)
    assert LabelSelector.everything().matches(None)
    assert LabelSelector.everything().empty
    assert not LabelSelector.nothing().matches({"a": "b"})
    assert not LabelSelector.nothing().empty
    assert str(LabelSelector.nothing()) == ""


def test_requires_exact_match() -> None:
    sel = parse_label_selector("app=web,tier in (a,b),env in (prod)")
    assert sel.requires_exact_match("app") == "web"
    assert sel.requires_exact_match("env") == "prod"
    assert sel.requires_exact_match("tier") is None
    assert sel.requires_exact_match("other") is None


def test_requirement_matches_alone() -> None:
    r = Requirement.new("x", Operator.NOT_IN, ["a"])
    assert r.matches(None)
    assert not r.matches({"x": "a"})


def test_from_set() -> None:
    sel = label_selector_from_set({"b": "2", "a": "1"})
    assert str(sel) == "a=1,b=2"
    assert sel.matches({"a": "1", "b": "2", "c": "3"})
    assert not sel.matches({"a": "1"})
    assert label_selector_from_set({}).empty
    assert label_selector_from_set(None).empty


def test_from_dict_forms() -> None:
    sel = label_selector_from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "ready", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist", "values": []},
            ],
        }
    )
    assert str(sel) == "app=web,env notin (dev),!legacy,ready,tier in (a,b)"
    assert sel.matches({"app": "web", "tier": "a", "ready": "y"})
    assert not sel.matches({"app": "web", "tier": "a", "ready": "y", "legacy": "1"})
    assert not sel.matches({"app": "web", "tier": "a", "ready": "y", "env": "dev"})
    assert parse_label_selector(str(sel)) == sel


def test_from_dict_empty_and_none() -> None:
    assert label_selector_from_dict({}).empty
    assert label_selector_from_dict({}).matches({"a": "b"})
    assert label_selector_from_dict({"matchLabels": {}, "matchExpressions": []}).empty
    assert label_selector_from_dict(None) == LabelSelector.nothing()
    assert not label_selector_from_dict(None).matches({})


@pytest.mark.parametrize(
    ("sel", "message"),
    [
        (
            {"matchExpressions": [{"key": "t", "operator": "In"}]},
            "values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "t", "operator": "NotIn", "values": []}]},
            "values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "t", "operator": "Exists", "values": ["a"]}]},
            "values set must be empty for exists and does not exist",
        ),
        (
            {"matchExpressions": [{"key": "t", "operator": "Equals", "values": ["a"]}]},
            '"Equals" is not a valid label selector operator',
        ),
        ({"matchExpressions": [{"key": "t"}]}, "is not a valid label selector operator"),
        ({"matchLabels": {"a": 1}}, "matchLabels[a]: must be a string"),
        ({"matchLabels": {"-a": "b"}}, 'key: Invalid value: "-a"'),
        ({"matchLabels": {"a": "b c"}}, 'values[0][a]: Invalid value: "b c"'),
        ({"matchExpressions": "x"}, "matchExpressions must be a list"),
        ({"matchExpressions": [{"key": 1, "operator": "Exists"}]}, "key: must be a string"),
        ([1], "label selector must be an object"),
    ],
)
def test_from_dict_errors(sel: object, message: str) -> None:
    with pytest.raises(BadRequest) as exc:
        label_selector_from_dict(sel)  # type: ignore[arg-type]
    assert message in str(exc.value)


def test_multiple_errors_are_aggregated() -> None:
    with pytest.raises(BadRequest) as exc:
        label_selector_from_dict({"matchExpressions": [{"key": "-k", "operator": "In"}]})
    text = str(exc.value)
    assert text.startswith("[")
    assert "key: Invalid value" in text
    assert "can't be empty" in text


def test_not_a_string() -> None:
    with pytest.raises(BadRequest):
        parse_label_selector(None)  # type: ignore[arg-type]


# ---- property tests ----

_KEYS = st.sampled_from(["a", "b", "app", "example.com/tier", "in", "notin", "x.y_z-1"])
_VALUES = st.sampled_from(["", "a", "b", "web", "1", "10", "-", "in", "x_y.z"]).filter(
    lambda v: v != "-"
)
_INTS = st.integers(min_value=-1000, max_value=1000).map(str)


@st.composite
def _requirements(draw: st.DrawFn) -> Requirement:
    key = draw(_KEYS)
    op = draw(st.sampled_from(list(Operator)))
    if op in (Operator.IN, Operator.NOT_IN):
        vals = draw(st.lists(_VALUES, min_size=1, max_size=3))
    elif op in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        vals = []
    elif op in (Operator.GREATER_THAN, Operator.LESS_THAN):
        vals = [draw(_INTS.filter(lambda v: not v.startswith("-")))]
    else:
        vals = [draw(_VALUES)]
    return Requirement.new(key, op, vals)


_SELECTORS = st.lists(_requirements(), max_size=4).map(
    lambda rs: LabelSelector(requirements=tuple(sorted(rs, key=lambda r: r.key)))
)
_LABELS = st.dictionaries(_KEYS, st.one_of(_VALUES, _INTS), max_size=4)


def _reference(sel: LabelSelector, labels: Mapping[str, str]) -> bool:
    for r in sel.requirements:
        has = r.key in labels
        v = labels.get(r.key)
        if r.operator in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            ok = has and v in r.values
        elif r.operator in (Operator.NOT_IN, Operator.NOT_EQUALS):
            ok = not has or v not in r.values
        elif r.operator is Operator.EXISTS:
            ok = has
        elif r.operator is Operator.DOES_NOT_EXIST:
            ok = not has
        else:
            try:
                n = int(v) if isinstance(v, str) and v.lstrip("+-").isdigit() else None
            except ValueError:
                n = None
            bound = int(r.values[0])
            if n is None:
                ok = False
            else:
                ok = n > bound if r.operator is Operator.GREATER_THAN else n < bound
        if not ok:
            return False
    return True


@settings(max_examples=200, deadline=None)
@given(_SELECTORS)
def test_string_round_trip(sel: LabelSelector) -> None:
    assert parse_label_selector(str(sel)) == sel


@settings(max_examples=200, deadline=None)
@given(_SELECTORS, _LABELS)
def test_matching_agrees_with_reference(sel: LabelSelector, labels: dict[str, str]) -> None:
    assert sel.matches(labels) is _reference(sel, labels)
    assert parse_label_selector(str(sel)).matches(labels) is _reference(sel, labels)


_ALPHABET = st.sampled_from(list("ab=!(), \tinotxyz/.-_<>1\\é"))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(_ALPHABET, max_size=20), st.text(max_size=20)))
def test_garbage_parses_or_raises_bad_request(text: str) -> None:
    try:
        sel = parse_label_selector(text)
    except BadRequest:
        return
    assert parse_label_selector(str(sel)) == sel
