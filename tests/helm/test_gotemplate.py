"""The Go-template subset the chart renderings rely on, against what Go's text/template does."""

from __future__ import annotations

from typing import Any

import pytest

from .gotemplate import Renderer, TemplateError


def run(src: str, dot: Any = None, **defines: str) -> str:
    r = Renderer()
    for name, body in defines.items():
        r.add(name, body)
    r.add("t", src)
    return r.render("t", dot)


def test_trim_markers_eat_whitespace_and_newlines_on_their_side_only() -> None:
    assert run("a  \n  {{- 1 }}  \n  b") == "a1  \n  b"
    assert run("a  \n  {{ 1 -}}  \n  b") == "a  \n  1b"
    assert run("x {{- /* gone */ -}} y") == "xy"


def test_if_else_if_else_and_go_truth() -> None:
    src = "{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}"
    assert run(src, {"a": [1], "b": 1}) == "A"
    assert run(src, {"a": [], "b": "x"}) == "B"
    assert run(src, {"a": {}, "b": 0}) == "C"


def test_range_with_variables_and_else_and_dollar() -> None:
    src = "{{ range $i, $v := .xs }}{{ $i }}={{ $v }}{{ $.sep }}{{ else }}none{{ end }}"
    assert run(src, {"xs": ["a", "b"], "sep": ";"}) == "0=a;1=b;"
    assert run(src, {"xs": [], "sep": ";"}) == "none"


def test_with_rebinds_dot_and_pipelines_pass_the_last_argument() -> None:
    assert run("{{ with .m }}{{ .k | quote }}{{ end }}", {"m": {"k": "v"}}) == '"v"'
    assert run('{{ "ab" | printf "%s-%s" "x" }}') == "x-ab"
    assert run("{{ .x | default 3 }}", {"x": ""}) == "3"


def test_and_or_stop_early_like_go_1_18() -> None:
    # The second operand would fail (a field of nil): Go never evaluates it.
    assert run("{{ if and .m .m.k }}y{{ else }}n{{ end }}", {"m": None}) == "n"
    assert run("{{ or .a .m.k }}", {"a": "first", "m": None}) == "first"


def test_a_parenthesized_value_with_a_field_and_one_without() -> None:
    assert run('{{ (dict "a" 1).a }}') == "1"
    assert run('{{ and (eq .x "y") .z }}', {"x": "y", "z": "zz"}) == "zz"


def test_include_nindent_and_variables_assigned_in_a_block() -> None:
    out = run(
        '{{- $v := "a" }}{{ if true }}{{ $v = "b" }}{{ end }}'
        '{{ $v }}:{{ include "l" . | nindent 2 }}',
        {"n": "x"},
        helpers='{{- define "l" -}}\nk: {{ .n }}\nj: 1\n{{- end }}',
    )
    assert out == "b:\n  k: x\n  j: 1"


def test_to_yaml_sorts_keys_like_helm() -> None:
    assert run("{{ toYaml .m }}", {"m": {"b": 1, "a": [1, "x"]}}) == "a:\n- 1\n- x\nb: 1"


@pytest.mark.parametrize(
    ("src", "complaint"),
    [
        ("{{ nosuch 1 }}", "function 'nosuch' not defined"),
        ("{{ .a.b }}", "nil pointer evaluating"),
        ("{{ if 1 }}", "has no end"),
        ('{{ fail "stop here" }}', "stop here"),
        ('{{ required "need x" .x }}', "need x"),
        ("{{ .m }}", "use toYaml"),
    ],
)
def test_what_go_or_helm_would_refuse_is_an_error(src: str, complaint: str) -> None:
    with pytest.raises(TemplateError, match=complaint):
        run(src, {"m": {"k": 1}})
