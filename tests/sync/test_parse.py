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


HELM_HOOKS = b"""\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: migrate-
  annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: "-2"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: example.test/m:1}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: weighted
  annotations: {helm.sh/hook-weight: "2"}
---
apiVersion: v1
kind: Pod
metadata:
  name: helm-test
  annotations: {helm.sh/hook: test}
spec:
  containers: [{name: t, image: example.test/t:1}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: argo-wins
  annotations:
    helm.sh/hook: post-install,post-upgrade,pre-upgrade
    helm.sh/hook-delete-policy: hook-succeeded
    argocd.argoproj.io/hook: Sync
"""


def _annotations(po: object) -> dict[str, str]:
    doc = orjson.loads(po.doc)  # type: ignore[attr-defined]
    return {k: v for k, v in doc["metadata"]["annotations"].items() if "argoproj" in k}


def test_an_argo_cd_source_reads_helms_hook_annotations_as_argo_cd_does() -> None:
    argo = parse_file(
        "m.yaml", HELM_HOOKS, ctx=ParseContext(source="src", default_namespace="apps",
                                               argo_cd=True),
        registry=builtin_registry(),
    )  # fmt: skip
    assert [(po.name, po.problems) for po in argo.objects] == [
        ("", ()),
        ("weighted", ()),
        ("argo-wins", ()),
    ]  # fmt: skip  (the `test` hook is never applied)
    job, weighted, argo_wins = argo.objects
    assert _annotations(job) == {
        "argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/sync-wave": "-2"
    }  # fmt: skip
    assert _annotations(weighted) == {"argocd.argoproj.io/sync-wave": "2"}
    assert _annotations(argo_wins) == {"argocd.argoproj.io/hook": "Sync"}
    # Elsewhere (a Flux or gitkrm source) Helm's annotations are only annotations.
    plain = parse_file("m.yaml", HELM_HOOKS, ctx=CTX, registry=builtin_registry())
    assert len(plain.objects) == 4
    assert "generateName is not supported" in plain.objects[0].problems[0]
    assert _annotations(plain.objects[1]) == {}
