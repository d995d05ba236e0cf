"""Admission skips the Python check of metadata.labels when the fast-path schema passed.

Property: whenever the fast-path schema accepts an object, its metadata after defaulting
(which may copy a pod template's labels into it) has no label the full ObjectMeta check
would refuse.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.errors import Invalid
from gitkrm.krm.names import NameRule, object_meta_causes, validate_object_meta
from gitkrm.schema import Registry
from gitkrm.schema.defaults import apply_defaults
from gitkrm.schema.validation import fast_valid
from tests.schema.schema_objects import deployment

PARTS = st.sampled_from(["a", "A", "-", "_", ".", "/", "0", "é", " ", "a" * 62, "b" * 250])
TEXT = st.lists(PARTS, max_size=4).map("".join)
LABELS = st.dictionaries(TEXT, st.one_of(TEXT, st.integers(), st.none()), max_size=3)

KINDS = {
    "Deployment": ("apps", "apps/v1", "io.k8s.api.apps.v1.Deployment"),
    "Job": ("batch", "batch/v1", "io.k8s.api.batch.v1.Job"),
    "ReplicationController": ("", "v1", "io.k8s.api.core.v1.ReplicationController"),
}


def _workload(kind: str, labels: Any, template_labels: Any) -> dict[str, Any]:
    obj = deployment()
    obj["apiVersion"], obj["kind"] = KINDS[kind][1], kind
    spec = obj["spec"]
    if kind != "Deployment":
        spec.pop("selector")
    if kind == "Job":
        del spec["replicas"]
        spec["template"]["spec"]["restartPolicy"] = "Never"
    if labels is None:
        obj["metadata"].pop("labels", None)
    else:
        obj["metadata"]["labels"] = labels
    spec["template"]["metadata"]["labels"] = template_labels
    obj["metadata"]["uid"] = "0b7b2a53-3b79-4d5c-9a55-3a0c2c3ad1b2"
    return obj


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(sorted(KINDS)),
    labels=st.one_of(st.none(), LABELS),
    template_labels=LABELS,
)
def test_fast_path_labels_need_no_python_check(
    kind: str, labels: Any, template_labels: Any
) -> None:
    obj = _workload(kind, labels, template_labels)
    group, _, definition = KINDS[kind]
    if not fast_valid(definition, obj):
        return
    apply_defaults(obj, group=group, kind=kind, create=True)
    rule = NameRule.DNS1123_SUBDOMAIN
    full = object_meta_causes(obj, namespaced=True, name_rule=rule)
    assert not [c for c in full if c.field.startswith("metadata.labels")]
    checked = validate_object_meta(obj, namespaced=True, name_rule=rule, labels_checked=True)
    assert checked == full


def test_labels_a_job_gets_from_defaulting_are_checked_on_the_fast_path(
    registry: Registry,
) -> None:
    """A Job's pods are labelled job-name=<name>: past 63 characters, no valid label."""
    name = "a" * 64
    obj = _workload("Job", None, {"app": "x"})
    obj["metadata"]["name"] = name
    assert fast_valid(KINDS["Job"][2], obj)
    with pytest.raises(Invalid) as e:
        registry.admit(obj)
    assert {c.field for c in e.value.causes} == {"spec.template.metadata.labels"}
    assert any("must be no more than 63 characters" in c.message for c in e.value.causes)
    short = _workload("Job", None, {"app": "x"})
    short["metadata"]["name"] = "a" * 63
    assert registry.admit(short) == []
