"""Flux's envsubst, ported: a vector for every expression form it evaluates (our own values,
data/envsubst_vectors.json), its parse errors, and the text around expressions left exactly
as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitkrm.sync.envsubst import SubstitutionError, substitute
from gitkrm.sync.envsubst_match import BadPattern, match

_VECTORS = json.loads((Path(__file__).parent / "data" / "envsubst_vectors.json").read_text())


@pytest.mark.parametrize("case", _VECTORS["cases"], ids=lambda c: c["input"][:40])
def test_flux_vectors(case: dict[str, Any]) -> None:
    if case["error"]:
        with pytest.raises(SubstitutionError, match="variable not set"):
            substitute(case["input"], case["params"], strict=case["strict"])
    else:
        assert substitute(case["input"], case["params"], strict=case["strict"]) == case["output"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: ${var", "missing closing brace"),
        ("${}", "unable to parse variable name"),
        ("${var-default}", "missing closing brace"),  # drone's parser has no `-` form
        ("${#}", "bad substitution"),
        ("${var/}", "bad substitution"),
        ("${var:=", "unable to parse substitution within function"),
    ],
)
def test_bad_expressions(text: str, message: str) -> None:
    with pytest.raises(SubstitutionError, match=message) as info:
        substitute(text, {"var": "x"})
    assert "${" in info.value.message  # the expression is quoted


def test_error_lines_count_from_the_start_of_the_text() -> None:
    with pytest.raises(SubstitutionError) as info:
        substitute("a: 1\nb: ${ok}\nc: $$x\nd: ${bad\n", {"ok": "1"})
    assert info.value.line == 3
    with pytest.raises(SubstitutionError) as info:
        substitute("a: 1\n\nb: ${unset}\n", {}, strict=True)
    assert info.value.line == 2


def test_text_without_expressions_is_unchanged_but_dollars_are_unescaped() -> None:
    text = "price: $5 and $$HOME and \\\\ and ${a} $"
    assert substitute(text, {"a": "A"}) == "price: $5 and $HOME and \\\\ and A $"
    assert substitute("no dollars", {}) == "no dollars"


def test_multibyte_values_count_bytes_as_flux_does() -> None:
    assert substitute("${v} ${#v}", {"v": "héllo"}) == "héllo 6"


def test_shell_patterns() -> None:
    assert match("*.tar.gz", "a/b.tar.gz")  # `*` crosses `/` in Flux's fork
    assert match("a?c", "a/c")
    assert match("[a-c]x", "bx")
    assert not match("[^a-c]x", "bx")
    assert not match("abc", "abd")
    with pytest.raises(BadPattern):
        match("[", "x")
