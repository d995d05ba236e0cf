from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.report.yamlemit import NotOurs, dump, load, scalar

AMBIGUOUS = [
    "",
    "yes",
    "No",
    "ON",
    "null",
    "~",
    "1",
    "0x1F",
    "1e3",
    ".5",
    "2024-01-01",
    "12:30",
    " lead",
    "trail ",
    "a: b",
    "a #b",
    "#c",
    "- x",
    "[x]",
    "{x}",
    "*alias",
    "&anchor",
    "!tag",
    "%dir",
    "@at",
    "`tick",
    "'q'",
    '"q"',
    "multi\nline",
    "tab\there",
    "caf\u00e9",
    "\u2028",
    "\x00\x07",
    "---",
    "...",
    "?",
    "|",
    ">",
]


@pytest.mark.parametrize("text", AMBIGUOUS)
def test_strings_read_back_as_the_same_string(text: str) -> None:
    for loader in (yaml.CSafeLoader, yaml.SafeLoader):
        assert yaml.load(f"k: {scalar(text)}\n", Loader=loader) == {"k": text}


def test_plain_strings_stay_plain() -> None:
    assert scalar("team-0") == "team-0"
    assert scalar("apps/Deployment") == "apps/Deployment"
    assert scalar("yes") == '"yes"'
    assert scalar("0abc") == '"0abc"'


def test_leaf_mappings_are_one_line_each() -> None:
    doc = {"objects": [{"kind": "Service", "name": "a"}, {"kind": "Service", "name": "b"}]}
    text = dump(doc, header="hello\nworld")
    assert text.splitlines() == [
        "# hello",
        "# world",
        "objects:",
        "- {kind: Service, name: a}",
        "- {kind: Service, name: b}",
    ]


def test_nested_and_empty_values() -> None:
    doc = {
        "a": {"b": {"c": [1, 2], "d": {}}, "e": []},
        "f": [{"g": {"h": 1}, "i": [True, None, 1.5]}],
        "counts": {"x": 0},
    }
    assert yaml.safe_load(dump(doc)) == doc


def test_unsupported_values_are_refused() -> None:
    with pytest.raises(TypeError):
        scalar(object())
    with pytest.raises(TypeError):
        dump({"a": [[1]]})


scalars = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)
keys = st.text(min_size=1, max_size=10)
leaf = st.dictionaries(keys, scalars, max_size=5)
values = st.recursive(
    st.one_of(scalars, leaf),
    lambda inner: st.one_of(
        st.dictionaries(keys, inner, max_size=4),
        st.lists(
            st.one_of(scalars, leaf, st.dictionaries(keys, inner, min_size=1, max_size=3)),
            max_size=4,
        ),
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(keys, values, max_size=5))
def test_any_document_reads_back_the_same(doc: dict[str, Any]) -> None:
    assert yaml.load(dump(doc), Loader=yaml.CSafeLoader) == doc


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(keys, values, max_size=5),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30),
)
def test_load_reads_what_dump_wrote_as_pyyaml_does(doc: dict[str, Any], header: str) -> None:
    text = dump(doc, header=header)
    expected = yaml.load(text, Loader=yaml.CSafeLoader)
    try:
        got = load(text)
    except NotOurs:
        return  # floats and some escapes are left to PyYAML
    assert got == expected
    assert [type(v) for v in _leaves(got)] == [type(v) for v in _leaves(expected)]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in [k, *_leaves(v)]]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


def test_load_reads_a_report_document_without_pyyaml() -> None:
    doc = {
        "apiVersion": "gitkrm.io/v1alpha1",
        "sources": {
            "default": {
                "counts": {"created": 2, "failed": 0},
                "errors": ['a "quoted", message: here', "caf\u00e9 \U0001f600"],
                "objects": [
                    {"group": "", "kind": "Service", "name": "web", "health": "Current"},
                    {"group": "apps", "kind": "Deployment", "name": "yes", "health": "Failed"},
                ],
                "empty": {},
                "none": [],
                "flag": True,
                "missing": None,
            }
        },
    }
    text = dump(doc, header="a header")
    assert load(text) == doc == yaml.load(text, Loader=yaml.CSafeLoader)
    assert load(text.encode()) == doc


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\n\nb: 2\n",  # a blank line
        "a: 1 # a comment\n",
        "a: 1\n# a comment\n",
        "a: yes\n",  # YAML 1.1 reads a boolean
        "a: 1.5\n",
        "a: 0x1F\n",
        "a: 012\n",
        "a: b\n  c\n",  # a folded plain scalar
        "a:\n  - 1\n",  # an indented sequence
        "a: [1, 2]\n",
        "a: {b: {c: 1}}\n",
        "a: 'single'\n",
        '"\\ud83d\\ude00": 1\n',  # a pair JSON joins and YAML does not
        "a: 1",  # no newline at the end
        "---\na: 1\n",
        "a:\tb\n",
        "a: caf\u00e9\n",  # dump writes ASCII only
        "a: 1 \n",
    ],
)
def test_load_leaves_anything_else_to_a_yaml_reader(text: str) -> None:
    with pytest.raises(NotOurs):
        load(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab1-:{}[], \n\"'#\\u.", max_size=40))
def test_load_never_disagrees_with_pyyaml(text: str) -> None:
    try:
        got = load(text)
    except NotOurs:
        return
    assert got == yaml.load(text, Loader=yaml.CSafeLoader)
