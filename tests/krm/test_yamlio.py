"""Reading manifests as kubectl does (go-yaml v2 then JSON) and writing them as kubectl."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.errors import BadRequest, ManifestError
from gitkrm.krm.goyaml import needs_quotes, resolve_plain_scalar
from gitkrm.krm.yamlio import load_manifests
from gitkrm.krm.yamlout import dump_yaml


def _value(text: str) -> Any:
    """The value of `v:` written as `text` in a ConfigMap-like document."""
    doc = f"apiVersion: v1\nkind: X\nv: {text}\n"
    return load_manifests(doc, path="t.yaml")[0].obj["v"]


# go-yaml v2 (sigs.k8s.io/yaml/goyaml.v2 resolve.go), then JSON encoding and decoding.
SCALARS: list[tuple[str, Any]] = [
    # booleans: YAML 1.1 words, exact spellings only
    *[(w, True) for w in ["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"]],
    *[(w, False) for w in ["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "OFF"]],
    ("yES", "yES"),
    ("tRUE", "tRUE"),
    ("oN", "oN"),
    # null
    ("~", None),
    ("null", None),
    ("Null", None),
    ("NULL", None),
    ("", None),
    ("nULL", "nULL"),
    # integers: Go's ParseInt base 0 after removing underscores
    ("0", 0),
    ("12", 12),
    ("+12", 12),
    ("-12", -12),
    ("012", 10),
    ("0o12", 10),
    ("0O12", 10),
    ("0x1F", 31),
    ("-0x1F", -31),
    ("0b101", 5),
    ("1_000", 1000),
    ("0x_1F", 31),
    ("9223372036854775807", 9223372036854775807),
    ("18446744073709551615", 18446744073709551615),  # uint64
    ("18446744073709551616", 18446744073709551616),  # float64, integral below 1e21 -> int
    ("0x1FFFFFFFFFFFFFFFFF", 0x1FFFFFFFFFFFFFFFFF),  # big.Int
    ("0x", "0x"),
    ("0o8", "0o8"),
    ("0b2", "0b2"),
    # floats; integral ones are integers once they went through JSON
    ("1e3", 1000),
    ("3.0", 3),
    ("1.", 1),
    ("08", 8),
    ("1.5", 1.5),
    ("-1.5e-3", -0.0015),
    (".5", 0.5),
    ("-.5", -0.5),
    ("1e21", 1e21),
    ("1e400", "1e400"),  # ParseFloat overflows: a string
    (".", "."),
    ("1.2.3", "1.2.3"),
    # no timestamps, no base 60
    ("2024-01-01", "2024-01-01"),
    ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
    ("12:30", "12:30"),
    ("1:20:30", "1:20:30"),
    # plain text
    ("nginx:1.25", "nginx:1.25"),
    ("100m", "100m"),
    ("128Mi", "128Mi"),
    ("a-b", "a-b"),
    ("<<", "<<"),
    ("=", "="),
    # quoted and tagged
    ('"yes"', "yes"),
    ("'012'", "012"),
    ('""', ""),
    ("!!str 12", "12"),
    ("!!int '12'", 12),
    ("!!float 1", 1),
    ("!!float 1.5", 1.5),
    ("!!bool yes", True),
    ("!!null ''", None),
    ("!!binary aGVsbG8=", "hello"),
    ("!!timestamp 2024-01-01", "2024-01-01"),
    ("!custom value", "value"),
]


@pytest.mark.parametrize(("text", "expected"), SCALARS)
def test_scalar_resolution(text: str, expected: Any) -> None:
    got = _value(text)
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize("text", [".inf", "-.Inf", "+.INF", ".nan", ".NaN", "!!float .inf"])
def test_nan_and_inf_are_rejected(text: str) -> None:
    with pytest.raises(ManifestError, match=r"JSON has no NaN or Inf|cannot decode"):
        _value(text)


@pytest.mark.parametrize("text", ["!!int abc", "!!bool 1", "!!null x", "!!float yes"])
def test_wrong_explicit_tags(text: str) -> None:
    with pytest.raises(ManifestError, match="cannot decode"):
        _value(text)


def test_map_keys_become_strings() -> None:
    doc = "apiVersion: v1\nkind: X\ndata:\n  yes: a\n  1: b\n  1.5: c\n  '1': d\n  on: e\n"
    with pytest.raises(ManifestError, match='duplicate key "1"'):
        load_manifests(doc, path="t.yaml")
    doc = "apiVersion: v1\nkind: X\ndata:\n  yes: a\n  2: b\n  1.5: c\n  'no': d\n  0x10: e\n"
    data = load_manifests(doc, path="t.yaml")[0].obj["data"]
    assert data == {"true": "a", "2": "b", "1.5": "c", "no": "d", "16": "e"}
    with pytest.raises(ManifestError, match="unsupported map key None"):
        load_manifests("apiVersion: v1\nkind: X\ndata: {~: a}\n", path="t.yaml")
    # a Go template's placeholder left unrendered (argo-cd's testdata/declarative-apps)
    with pytest.raises(ManifestError, match="unrendered template placeholder") as e:
        load_manifests("apiVersion: v1\nkind: X\nmetadata:\n  name: {{.Name}}\n", path="t.yaml")
    assert e.value.line == 4


APP_7 = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-7, namespace: team-7, labels: {app: app-7, tier: web}}
spec:
  replicas: 3
  selector: {matchLabels: {app: app-7}}
  template:
    metadata: {labels: {app: app-7}}
    spec:
      containers:
      - name: web
        image: nginx:1.7
        ports: [{containerPort: 80}]
        env: [{name: MODE, value: prod}, {name: IDX, value: "7"}]
        resources: {requests: {cpu: 100m, memory: 128Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: app-7, namespace: team-7}
spec: {selector: {app: app-7}, ports: [{port: 80, targetPort: 80}]}
"""


def test_w10k_style_file() -> None:
    ms = load_manifests(APP_7.encode(), path="apps/app-7.yaml")
    container = ms[0].obj["spec"]["template"]["spec"]["containers"][0]
    assert container == {
        "name": "web",
        "image": "nginx:1.7",
        "ports": [{"containerPort": 80}],
        "env": [{"name": "MODE", "value": "prod"}, {"name": "IDX", "value": "7"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    assert ms[0].obj["spec"]["replicas"] == 3
    assert ms[1].obj == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "app-7", "namespace": "team-7"},
        "spec": {"selector": {"app": "app-7"}, "ports": [{"port": 80, "targetPort": 80}]},
    }
    assert [(m.line, m.index, m.path) for m in ms] == [
        (1, 0, "apps/app-7.yaml"),
        (17, 1, "apps/app-7.yaml"),
    ]
    assert ms[1].location == "apps/app-7.yaml:17"


def test_lines_indexes_and_empty_documents() -> None:
    text = (
        "# leading comment\n"
        "---\n"
        "---\n"
        "# just a comment\n"
        "---\n"
        "\n"
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata: {name: a}\n"
        "---\n"
        "---\n"
    )
    ms = load_manifests(text, path="c.yaml")
    assert len(ms) == 1
    assert ms[0].line == 7
    assert ms[0].index == 2
    assert load_manifests("", path="e.yaml") == []
    assert load_manifests("# nothing\n", path="e.yaml") == []


def test_list_expansion() -> None:
    text = (
        "apiVersion: v1\n"
        "kind: List\n"
        "items:\n"
        "- apiVersion: v1\n"
        "  kind: ConfigMap\n"
        "  metadata: {name: a}\n"
        "- apiVersion: v1\n"
        "  kind: Secret\n"
        "  metadata: {name: b}\n"
    )
    ms = load_manifests(text, path="l.yaml")
    assert [(m.obj["kind"], m.line, m.index) for m in ms] == [("ConfigMap", 4, 0), ("Secret", 7, 0)]
    typed = "apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- metadata: {name: d}\n"
    (m,) = load_manifests(typed, path="d.yaml")
    assert m.obj == {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    with pytest.raises(ManifestError, match=r"l\.yaml:4: List item 0 has no apiVersion"):
        load_manifests("apiVersion: v1\nkind: List\nitems:\n- kind: A\n", path="l.yaml")
    with pytest.raises(ManifestError, match="List item 0 is a scalar"):
        load_manifests("apiVersion: v1\nkind: List\nitems: [1]\n", path="l.yaml")


def test_json_files() -> None:
    text = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "n": 3.0}'
    (m,) = load_manifests(text, path="x.json")
    assert m.obj["n"] == 3
    assert type(m.obj["n"]) is int
    assert (m.line, m.index) == (1, 0)
    listed = '{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "A"}]}'
    assert [m.obj["kind"] for m in load_manifests(listed, path="l.json")] == ["A"]
    with pytest.raises(ManifestError, match=r"^x.json:2: invalid JSON"):
        load_manifests('{"a":\n ]', path="x.json")
    with pytest.raises(ManifestError, match=r"x\.json:1: ConfigMap: document has no apiVersion"):
        load_manifests('{"kind": "ConfigMap"}', path="x.json")
    with pytest.raises(ManifestError, match="document is a list"):
        load_manifests("[]", path="x.json")


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            "apiVersion: v1\nkind: A\nkind: B\n",
            r'^t.yaml:3: A: duplicate key "kind" \(first defined at line 2\)$',
        ),
        (
            "apiVersion: v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: ns\n"
            "  labels:\n    app: a\n    app: b\n",
            r'^t.yaml:8: Deployment ns/web: duplicate key "app" \(first defined at line 7\)$',
        ),
        ("- a\n- b\n", r"^t.yaml:1: document is a list, not a mapping"),
        ("hello\n", r"^t.yaml:1: document is a scalar \('hello'\), not a mapping"),
        ("apiVersion: v1\nmetadata: {name: x}\n", r"^t.yaml:1: document has no kind$"),
        (
            "kind: ConfigMap\nmetadata: {name: x}\n",
            r"^t.yaml:1: ConfigMap x: document has no apiVersion$",
        ),
        ("a: 1\n", r"^t.yaml:1: document has no apiVersion and no kind$"),
        ("apiVersion: 1\nkind: A\n", r"apiVersion and kind must be strings"),
        ("apiVersion: v1\nkind: A\nb: c\n  d: e\n", r"^t.yaml:4: invalid YAML: .*mapping values"),
        ("apiVersion: v1\nkind: [a\n", r"^t.yaml:3: invalid YAML: .*flow sequence"),
        ("apiVersion: v1\nkind: A\nb: *nope\n", r"^t.yaml:3: invalid YAML: .*undefined alias"),
        ("apiVersion: v1\nkind: A\nb: &x [*x]\n", r"t.yaml:3: A: recursive alias"),
        ("apiVersion: v1\nkind: A\n<<: 5\n", r"map merge requires map"),
    ],
)
def test_rejected(text: str, pattern: str) -> None:
    with pytest.raises(ManifestError, match=pattern) as exc:
        load_manifests(text, path="t.yaml")
    assert isinstance(exc.value, BadRequest)
    assert exc.value.path == "t.yaml"


def test_error_attributes() -> None:
    with pytest.raises(ManifestError) as exc:
        load_manifests("apiVersion: v1\nkind: A\nmetadata: {name: n}\nx: 1\nx: 2\n", path="p.yaml")
    err = exc.value
    assert (err.path, err.line, err.object) == ("p.yaml", 5, "A n")
    assert err.detail == 'duplicate key "x" (first defined at line 4)'
    assert err.to_status()["reason"] == "BadRequest"


def test_invalid_utf8() -> None:
    with pytest.raises(ManifestError, match="invalid YAML"):
        load_manifests(b"apiVersion: v1\nkind: \xff\xfe\x00A\n", path="b.yaml")


def test_alias_bomb_is_rejected() -> None:
    lines = ["apiVersion: v1", "kind: ConfigMap", 'a: &a ["lol","lol","lol","lol","lol"]']
    prev = "a"
    for n in "bcdefghi":
        lines.append(f"{n}: &{n} [{','.join([f'*{prev}'] * 9)}]")
        prev = n
    with pytest.raises(ManifestError, match="too many alias expansions"):
        load_manifests("\n".join(lines) + "\n", path="bomb.yaml")


def test_alias_limit_counts_the_whole_file() -> None:
    doc = "apiVersion: v1\nkind: A\nb: &x {k: v}\nc: [" + ",".join(["*x"] * 60) + "]\n"
    load_manifests(doc, path="ok.yaml")
    with pytest.raises(ManifestError, match="more than 100 in this file"):
        load_manifests(doc + "---\n" + doc, path="two.yaml")
    load_manifests(doc + "---\n" + doc, path="two.yaml", max_aliases=200)


def test_aliases_and_merge_keys() -> None:
    text = (
        "apiVersion: v1\nkind: A\n"
        "base: &base {a: 1, b: 2}\n"
        "one: *base\n"
        "two: *base\n"
        "merged:\n  <<: *base\n  b: 3\n"
        "multi:\n  <<: [{x: 1}, {x: 2, z: 2}]\n"
    )
    obj = load_manifests(text, path="m.yaml")[0].obj
    assert obj["one"] == obj["two"] == {"a": 1, "b": 2}
    obj["one"]["a"] = 9
    assert obj["two"]["a"] == 1  # each alias use is its own copy, as after JSON
    assert obj["merged"] == {"a": 1, "b": 3}
    assert obj["multi"] == {"x": 1, "z": 2}


def test_max_bytes_checked_before_parsing() -> None:
    with pytest.raises(
        ManifestError, match=r"^big.yaml: file is 11 bytes, more than the limit of 10"
    ):
        load_manifests("{{{{{{{{{{{", path="big.yaml", max_bytes=10)
    with pytest.raises(ManifestError, match="more than the limit of 3 bytes"):
        load_manifests("ééé", path="u.yaml", max_bytes=3)


def test_deep_nesting_is_rejected_without_crashing() -> None:
    with pytest.raises(ManifestError, match="nested too deeply"):
        load_manifests("a: " + "[" * 100_000 + "]" * 100_000, path="deep.yaml")
    with pytest.raises(ManifestError, match="nested too deeply"):
        load_manifests("- " * 100_000 + "x", path="deep.yaml")
    with pytest.raises(ManifestError, match="nested too deeply"):
        load_manifests("a: " + "[" * 2000 + "]" * 2000, path="deep.yaml")


# ---- output ----


def test_dump_like_kubectl() -> None:
    obj = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "a", "labels": {"a10": "x", "a9": "y", "B": "z"}},
        "data": {"date": "2024-01-01", "yes": "yes", "num": "1", "time": "12:30", "empty": ""},
        "list": [{"b": 1, "a": 2}, "1", 0.5, True, None],
        "text": "line1\nline2\n",
    }
    assert dump_yaml(obj) == (
        "apiVersion: v1\n"
        "data:\n"
        '  date: "2024-01-01"\n'
        '  empty: ""\n'
        '  num: "1"\n'
        '  time: "12:30"\n'
        '  "yes": "yes"\n'
        "kind: ConfigMap\n"
        "list:\n"
        "- a: 2\n"
        "  b: 1\n"
        '- "1"\n'
        "- 0.5\n"
        "- true\n"
        "- null\n"
        "metadata:\n"
        "  labels:\n"
        "    B: z\n"
        '    a9: "y"\n'
        "    a10: x\n"
        "  name: a\n"
        "text: |\n"
        "  line1\n"
        "  line2\n"
    )


def test_dump_multiple_documents_and_long_lines() -> None:
    a = {"apiVersion": "v1", "kind": "A", "note": "x " * 100}
    text = dump_yaml([a, a])
    assert text.count("---\n") == 1
    assert "\n  x" not in text  # no folding of long strings
    assert [m.obj for m in load_manifests(text, path="o.yaml")] == [a, a]


def test_dump_floats_as_json_sees_them() -> None:
    assert dump_yaml({"a": 3.0, "b": 1e21, "c": 0.25}) == "a: 3\nb: 1e+21\nc: 0.25\n"
    with pytest.raises(ValueError, match="NaN or Inf"):
        dump_yaml({"a": float("inf")})


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("yes", True),
        ("on", True),
        ("1", True),
        ("0x1F", True),
        ("1_000", True),
        ("", True),
        ("~", True),
        ("<<", True),
        ("2024-01-01", True),
        ("12:30", True),
        ("web", False),
        ("nginx:1.25", False),
        ("100m", False),
    ],
)
def test_needs_quotes(text: str, quoted: bool) -> None:
    assert needs_quotes(text) is quoted
    if not quoted:
        assert resolve_plain_scalar(text) == text


_JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    st.text(max_size=12),
    st.sampled_from(["yes", "no", "on", "y", "~", "0x1F", "012", "1e3", "12:30", "2024-01-01"]),
)
_JSON = st.recursive(
    _JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _JSON, max_size=5))
def test_dump_round_trips_through_load(extra: dict[str, Any]) -> None:
    obj = {**extra, "apiVersion": "v1", "kind": "Thing"}
    (m,) = load_manifests(dump_yaml(obj), path="r.yaml")
    assert m.obj == obj


# ---- found by tests/fuzz/test_fuzz_yaml.py ----


def test_json_manifests_nested_too_deeply_are_refused_without_recursion() -> None:
    # orjson reads 1,024 levels; the integral-float pass then recursed past Python's limit.
    deep = '{"apiVersion": "v1", "kind": "X", "a": ' + "[" * 990 + "]" * 990 + "}"
    with pytest.raises(ManifestError, match=r"^m\.json:1: document is nested too deeply"):
        load_manifests(deep, path="m.json")


@pytest.mark.parametrize(
    "text",
    [
        # Read before, but deeper than orjson writes (254 levels): nothing could store it.
        "apiVersion: v1\nkind: X\na: " + "[" * 300 + "]" * 300 + "\n",
        # As deep only once the alias expands.
        "apiVersion: v1\nkind: X\na: &a "
        + "[" * 150
        + "]" * 150
        + "\nb: "
        + "[" * 150
        + "*a"
        + "]" * 150
        + "\n",
    ],
)
def test_documents_deeper_than_the_store_takes_are_refused(text: str) -> None:
    with pytest.raises(ManifestError, match=r"nested too deeply \(more than 200 levels\)"):
        load_manifests(text, path="m.yaml")


def test_nesting_up_to_the_limit_is_read() -> None:
    text = "apiVersion: v1\nkind: X\na: " + "[" * 199 + "]" * 199 + "\n"
    (m,) = load_manifests(text, path="m.yaml")
    assert len(orjson.dumps(m.obj)) > 398
