"""Fuzzing the manifest loader: any bytes or text give Manifests or a ManifestError naming
the file, never another exception, a crash or a hang; what loads is plain JSON that the
writer writes back to the same objects."""

from __future__ import annotations

from typing import Any, Final

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

from gitkrm.errors import GitkrmError, ManifestError
from gitkrm.krm.manifest import Manifest
from gitkrm.krm.yamlio import dump_yaml, load_manifests
from tests.fuzz.fuzz_values import only_gitkrm_errors, same

PATHS: Final = st.sampled_from(["m.yaml", "dir/m.yml", "m.json", "noext"])

# Pieces of YAML that parsers and the Go scalar rules treat specially.
_TOKENS: Final = [
    *("apiVersion: v1", "kind: ConfigMap", "kind: List", "kind: DeploymentList", "items:"),
    *("metadata:", "name: a", "namespace: b", "data:", "spec:", "- ", "-", ": ", ":", "? "),
    *("[", "]", "{", "}", ", ", ",", "&a ", "*a", "&b ", "*b", "<<: ", "<<: [*a, *b]"),
    *("!!str ", "!!int ", "!!float ", "!!bool ", "!!null ", "!!binary ", "!!timestamp "),
    *("!!map ", "!!seq ", "!!set ", "!!omap ", "!!pairs ", "!!merge ", "!custom ", "! "),
    *("!<tag:yaml.org,2002:int> ", "!!python/object ", "|", ">", "|-", ">+", "|2", "'"),
    *('"', "''", '""', "#", "# c", "---", "---\n", "...", "%YAML 1.1\n", "%YAML 1.3\n"),
    *("%TAG ! tag:x.org,2000:\n", "\n", "\n  ", "\n    ", "\n- ", "\t", " ", "  "),
    *("yes", "no", "on", "off", "y", "~", "null", "true", "0x1F", "0o17", "0b101", "012"),
    *("1_000", "1e3", "1e400", "-1e400", ".inf", "-.inf", ".nan", "1.5", "-0", "+1", "08"),
    *("9223372036854775808", "18446744073709551616", "2024-01-01", "12:30", "1:20:30"),
    *("aGVsbG8=", "=", "\\", "\\u0000", "\\x", "\x00", "\x85", "\u2028", "\ufeff", "é"),
]
TOKENS: Final = st.sampled_from(_TOKENS)
YAMLISH: Final = st.lists(st.one_of(TOKENS, TOKENS, st.text(max_size=3)), max_size=60).map("".join)

VALID: Final = [
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n"
    "  metadata: {name: s}\n  stringData: {a: b}\n",
    "apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- metadata: {name: d}\n"
    "  spec: {replicas: 2}\n",
    "base: &b {x: 1, y: [1, 2]}\napiVersion: v1\nkind: X\nm:\n  <<: *b\n  y: 3\n---\n"
    "apiVersion: v1\nkind: Y\nz: *b\n",
    '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "n": 1.0}\n',
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A valid manifest with a few random edits: insertions, deletions, duplicated lines."""
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "delete", "repeat"]))
        if edit == "insert":
            text = text[:at] + draw(st.one_of(TOKENS, st.text(max_size=4))) + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        else:
            line_start = text.rfind("\n", 0, at) + 1
            line_end = text.find("\n", at)
            line = text[line_start : line_end + 1 if line_end >= 0 else len(text)]
            text = text[:line_start] + line * draw(st.integers(2, 4)) + text[line_start:]
    return text


@st.composite
def nested(draw: st.DrawFn) -> str:
    """Deep nesting in flow, block or JSON style (libyaml recurses in C, orjson writes at
    most 254 levels, Python recurses at most 1,000 deep), directly or by aliases."""
    depth = draw(st.one_of(st.integers(0, 3000), st.integers(180, 300)))
    style = draw(
        st.sampled_from(["flow-seq", "flow-map", "block-seq", "block-map", "json", "alias"])
    )
    if style == "json":
        return '{"apiVersion": "v1", "kind": "X", "a": ' + "[" * depth + "]" * depth + "}"
    if style == "alias":
        half = depth // 2
        return (
            f"apiVersion: v1\nkind: X\na: &a {'[' * half}{']' * half}\n"
            f"b: {'[' * half}*a{']' * half}\n"
        )
    if style == "flow-seq":
        return "apiVersion: v1\nkind: X\na: " + "[" * depth + "]" * depth + "\n"
    if style == "flow-map":
        return "apiVersion: v1\nkind: X\na: " + "{a: " * depth + "1" + "}" * depth + "\n"
    if style == "block-seq":
        return "- " * depth + "x\n"
    return "".join(" " * i + "k:\n" for i in range(min(depth, 400))) + " " * 400 + "v\n"


def _encode(text: str, encoding: str) -> bytes | str:
    if encoding == "str":
        return text
    return text.encode(encoding, "surrogatepass")


INPUTS: Final = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300),
    st.builds(_encode, st.one_of(YAMLISH, mutated()), st.sampled_from(["str", "utf-8"])),
    st.builds(_encode, mutated(), st.sampled_from(["utf-16", "utf-16-le", "utf-32"])),
    nested(),
)


def check_manifest(m: Manifest, path: str) -> None:
    assert isinstance(m, Manifest)
    assert m.path == path
    assert m.line >= 1
    assert m.index >= 0
    obj = m.obj
    assert isinstance(obj, dict)
    assert isinstance(obj.get("apiVersion"), str)
    assert obj["apiVersion"]
    assert isinstance(obj.get("kind"), str)
    assert obj["kind"]
    # Plain JSON: string keys, no NaN or Inf, nothing but JSON types (orjson refuses the rest).
    assert same(orjson.loads(orjson.dumps(obj)), obj)


def _is_list(obj: dict[str, Any]) -> bool:
    return str(obj["kind"]).endswith("List") and isinstance(obj.get("items"), list)


@given(INPUTS, PATHS, st.sampled_from([None, None, 0, 16, 200]))
@example('{"apiVersion": "v1", "kind": "X", "a": ' + "[" * 990 + "]" * 990 + "}", "m.json", None)
@example("apiVersion: v1\nkind: X\na: " + "[" * 300 + "]" * 300 + "\n", "m.yaml", None)
@example(b"\xef\xbb\xbfapiVersion: v1\nkind: X\n", "m.yaml", None)
@example("apiVersion: v1\nkind: X\na: !!binary '%%%'\n", "m.yaml", None)
@example("apiVersion: v1\nkind: X\n? [a, b]\n: c\n", "m.yaml", None)
def test_load_manifests_answers_or_names_the_file(
    data: bytes | str, path: str, max_bytes: int | None
) -> None:
    kwargs: dict[str, Any] = {} if max_bytes is None else {"max_bytes": max_bytes}
    got = only_gitkrm_errors(load_manifests, data, path=path, **kwargs)
    if isinstance(got, GitkrmError):
        assert isinstance(got, ManifestError), f"{type(got).__name__}: {got}"
        assert got.path == path
        assert got.line is None or got.line >= 1
        assert str(got).startswith(path)
        assert got.detail
        return
    assert isinstance(got, list)
    for m in got:
        check_manifest(m, path)
        if not _is_list(m.obj):
            (again,) = load_manifests(dump_yaml(m.obj), path="again.yaml")
            assert same(again.obj, m.obj), "dump_yaml and load_manifests disagree"
