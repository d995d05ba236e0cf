"""One file to prepared, admitted objects; binary and non-UTF-8 content."""

from __future__ import annotations

import orjson

from gitkrm.sync.parse import ParseContext, builtin_registry, content_problem, parse_file

CTX = ParseContext(source="src", default_namespace="apps")


def test_content_problems_are_located() -> None:
    assert content_problem(b"a: 1\nb: 2\n") is None
    binary = content_problem(b"a: 1\nb: \x00\n")
    assert binary is not None
    assert (binary.line, binary.message) == (
        2,
        "binary file (a NUL byte): manifests must be UTF-8 text",
    )
    latin = content_problem(b"a: 1\n\nc: caf\xe9\n")
    assert latin is not None
    assert (latin.line, latin.message) == (3, "not UTF-8 text (invalid byte 0xe9)")


def test_prepared_objects_keep_their_labels_and_get_sorted_last_applied_json() -> None:
    pf = parse_file(
        "m.yaml",
        b"kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: c\n"
        b"  labels: {app.kubernetes.io/managed-by: helm}\ndata: {b: '1', a: '2'}\n",
        ctx=CTX,
        registry=builtin_registry(),
    )
    (po,) = pf.objects
    assert po.resolved
    assert po.problems == ()
    assert po.namespace == "apps"
    assert po.doc == orjson.dumps(
        {
            "apiVersion": "v1",
            "data": {"a": "2", "b": "1"},
            "kind": "ConfigMap",
            "metadata": {
                "labels": {"app.kubernetes.io/managed-by": "helm", "gitkrm.io/source": "src"},
                "name": "c",
                "namespace": "apps",
            },
        }
    )


def test_offline_context_adds_no_labels_and_requires_namespaces() -> None:
    pf = parse_file(
        "m.yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        ctx=ParseContext(),
        registry=builtin_registry(),
    )
    (po,) = pf.objects
    assert b"labels" not in po.doc
    assert len(po.problems) == 1
    assert "metadata.namespace" in po.problems[0]


def test_unknown_kinds_are_left_for_the_renderer() -> None:
    pf = parse_file(
        "w.yaml",
        b"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
        ctx=CTX,
        registry=builtin_registry(),
    )
    (po,) = pf.objects
    assert not po.resolved
    assert po.problems == ()
    assert orjson.loads(po.doc)["metadata"] == {"name": "w"}
