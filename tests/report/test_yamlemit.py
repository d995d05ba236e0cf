from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.report.yamlemit import dump, scalar

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
