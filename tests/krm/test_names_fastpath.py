"""validate_object_meta's fast path never hides a cause.

Property: for any metadata, validate_object_meta finds exactly what the full check
(object_meta_causes) finds, in the same order.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.krm.names import NameRule, object_meta_causes, validate_object_meta

TEXT = st.one_of(
    st.sampled_from(["a", "app-1", "team-3", "Web", "a.b", "a..b", "-a", "x/y", "", "a" * 64]),
    st.text(alphabet="abz09-_.A/ é", max_size=12),
)
VALID = st.sampled_from(["a", "app-1", "team-3", "x.y"])
VALUES = st.one_of(
    VALID,
    TEXT,
    st.integers(min_value=-2, max_value=2),
    st.none(),
    st.booleans(),
    st.sampled_from([[], {}, ["a"]]),
)
STRING_MAPS = st.one_of(
    st.dictionaries(VALID, VALID, max_size=3),
    st.none(),
    st.dictionaries(TEXT, TEXT, max_size=3),
    st.dictionaries(TEXT, VALUES, max_size=3),
    st.sampled_from([[], "x", {"k": "v" * 300_000}, {"A/b": "c"}]),
)
# Mostly valid metadata with a few fields changed, so both paths are exercised.
OVERRIDES: dict[str, Any] = {
    "name": VALUES,
    "generateName": VALUES,
    "namespace": VALUES,
    "generation": VALUES,
    "labels": STRING_MAPS,
    "annotations": STRING_MAPS,
    "ownerReferences": st.sampled_from([None, [], [{"kind": "X"}]]),
    "finalizers": st.one_of(
        st.none(), st.lists(TEXT, max_size=2), st.just(["orphan", "foregroundDeletion"])
    ),
}
BASE = {"name": "app-1", "namespace": "team-1", "labels": {"app": "a"}}
METAS = st.lists(st.sampled_from(sorted(OVERRIDES)), max_size=2, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: OVERRIDES[k] for k in keys}).map(
        lambda changed: {**BASE, **changed}
    )
)


@settings(max_examples=300, deadline=None)
@given(
    meta=st.one_of(METAS, st.none(), st.just("x")),
    namespaced=st.booleans(),
    rule=st.sampled_from(list(NameRule)),
)
def test_fast_path_agrees_with_the_full_check(meta: Any, namespaced: bool, rule: NameRule) -> None:
    obj = {"metadata": meta}
    assert validate_object_meta(obj, namespaced=namespaced, name_rule=rule) == object_meta_causes(
        obj, namespaced=namespaced, name_rule=rule
    )


def test_common_metadata_takes_the_fast_path() -> None:
    meta = {"name": "app-1", "namespace": "team-1", "labels": {"app": "a"}, "annotations": {}}
    obj = {"metadata": meta}
    assert validate_object_meta(obj, namespaced=True, name_rule=NameRule.DNS1123_SUBDOMAIN) == []
    bad = {"metadata": {**meta, "labels": {"app": "-a"}}}
    causes = validate_object_meta(bad, namespaced=True, name_rule=NameRule.DNS1123_SUBDOMAIN)
    assert [c.field for c in causes] == ["metadata.labels"]


def test_annotation_size_limit_on_the_fast_path() -> None:
    limit = 256 * 1024
    meta: dict[str, Any] = {"name": "a", "annotations": {"k": "v" * (limit - 1)}}
    rule = NameRule.DNS1123_SUBDOMAIN
    assert validate_object_meta({"metadata": meta}, namespaced=False, name_rule=rule) == []
    meta["annotations"] = {"k": "v" * limit}
    causes = validate_object_meta({"metadata": meta}, namespaced=False, name_rule=rule)
    assert [c.type for c in causes] == ["FieldValueTooLong"]


@pytest.mark.parametrize(
    ("rule", "limit"),
    [
        (NameRule.DNS1123_SUBDOMAIN, 253),
        (NameRule.DNS1123_LABEL, 63),
        (NameRule.DNS1035_LABEL, 63),
    ],
)
def test_name_length_limits_on_the_fast_path(rule: NameRule, limit: int) -> None:
    at_limit = {"metadata": {"name": "a" * limit}}
    assert validate_object_meta(at_limit, namespaced=False, name_rule=rule) == []
    over = {"metadata": {"name": "a" * (limit + 1)}}
    causes = validate_object_meta(over, namespaced=False, name_rule=rule)
    assert [c.message for c in causes] == [
        f'Invalid value: "{"a" * (limit + 1)}": must be no more than {limit} characters'
    ]
