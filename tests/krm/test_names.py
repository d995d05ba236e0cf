"""Name and ObjectMeta validation with apimachinery's messages."""

from __future__ import annotations

from typing import Any

import pytest

from gitkrm.errors import Cause, Invalid
from gitkrm.krm.names import (
    NameRule,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_path_segment_name,
    is_qualified_name,
    is_valid_label_value,
    validate_name,
    validate_name_prefix,
    validate_object_meta,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
QNAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize("name", ["a", "example.com", "a-b.c-d", "0", "a" * 253, "1.2.3"])
def test_subdomain_valid(name: str) -> None:
    assert is_dns1123_subdomain(name) == []


def test_subdomain_invalid() -> None:
    assert is_dns1123_subdomain("Web") == [SUBDOMAIN_MSG]
    assert is_dns1123_subdomain("a..b") == [SUBDOMAIN_MSG]
    assert is_dns1123_subdomain("a-") == [SUBDOMAIN_MSG]
    assert is_dns1123_subdomain("a\n") == [SUBDOMAIN_MSG]
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_dns1123_label() -> None:
    assert is_dns1123_label("team-1") == []
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("A") == [LABEL_MSG]
    assert is_dns1123_label("") == [LABEL_MSG]


def test_dns1035_label() -> None:
    assert is_dns1035_label("web-1") == []
    assert is_dns1035_label("1web") == [DNS1035_MSG]
    assert is_dns1035_label("a" * 64) == ["must be no more than 63 characters"]


def test_path_segment() -> None:
    assert is_path_segment_name("system:controller:x") == []
    assert is_path_segment_name("Upper_Case ok") == []
    assert is_path_segment_name(".") == ["may not be '.'"]
    assert is_path_segment_name("..") == ["may not be '..'"]
    assert is_path_segment_name("a/b%c") == ["may not contain '/'", "may not contain '%'"]


def test_qualified_name() -> None:
    assert is_qualified_name("app") == []
    assert is_qualified_name("example.com/My_Name.1") == []
    assert is_qualified_name("-x") == [QNAME_MSG]
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    assert is_qualified_name("/x") == ["prefix part must be non-empty"]
    assert is_qualified_name("Example.com/x") == ["prefix part " + SUBDOMAIN_MSG]
    assert is_qualified_name("x/") == ["name part must be non-empty", QNAME_MSG]
    assert is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of")
    assert is_qualified_name("a/b/c")[0].endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )


def test_label_value() -> None:
    assert is_valid_label_value("") == []
    assert is_valid_label_value("v1.2_x-Y") == []
    assert is_valid_label_value("a b") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    ]
    assert is_valid_label_value("a" * 64) == ["must be no more than 63 characters"]
    assert len(is_valid_label_value("é" * 40)) == 2  # bytes, as Go counts


def test_validate_name_and_prefix() -> None:
    assert validate_name("a.b", NameRule.DNS1123_SUBDOMAIN) == []
    assert validate_name("a.b", NameRule.DNS1123_LABEL) == ["must not contain dots"]
    assert validate_name("1a", NameRule.DNS1035_LABEL) == [DNS1035_MSG]
    assert validate_name("a:b", NameRule.PATH_SEGMENT) == []
    assert validate_name_prefix("web-", NameRule.DNS1123_SUBDOMAIN) == []
    assert validate_name_prefix("web-", NameRule.DNS1035_LABEL) == []
    assert validate_name_prefix("-", NameRule.DNS1123_LABEL) == [LABEL_MSG]
    assert validate_name_prefix("..", NameRule.PATH_SEGMENT) == []
    assert validate_name_prefix("a/", NameRule.PATH_SEGMENT) == ["may not contain '/'"]


def _obj(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _fields(causes: list[Cause]) -> list[tuple[str, str]]:
    return [(c.field, c.type) for c in causes]


def test_meta_valid() -> None:
    obj = _obj(
        name="web",
        namespace="team-1",
        labels={"app": "web", "example.com/tier": ""},
        annotations={"Example.com/Note": "x" * 1000},
        ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u"}],
        finalizers=["example.com/cleanup"],
    )
    assert validate_object_meta(obj, namespaced=True, name_rule=NameRule.DNS1123_SUBDOMAIN) == []


def test_meta_name_required_unless_generate_name() -> None:
    causes = validate_object_meta(
        _obj(namespace="a"), namespaced=True, name_rule=NameRule.DNS1123_SUBDOMAIN
    )
    assert causes == [
        Cause(
            type="FieldValueRequired",
            message="Required value: name or generateName is required",
            field="metadata.name",
        )
    ]
    ok = validate_object_meta(
        _obj(generateName="web-", namespace="a"),
        namespaced=True,
        name_rule=NameRule.DNS1123_SUBDOMAIN,
    )
    assert ok == []
    bad = validate_object_meta(
        _obj(generateName="Web-", namespace="a"),
        namespaced=True,
        name_rule=NameRule.DNS1123_SUBDOMAIN,
    )
    assert _fields(bad) == [("metadata.generateName", "FieldValueInvalid")]


def test_meta_bad_name_message() -> None:
    causes = validate_object_meta(
        _obj(name="Web", namespace="a"), namespaced=True, name_rule=NameRule.DNS1123_SUBDOMAIN
    )
    assert len(causes) == 1
    assert str(causes[0]) == f'metadata.name: Invalid value: "Web": {SUBDOMAIN_MSG}'
    err = Invalid.for_object(kind="ConfigMap", group="", name="Web", causes=causes)
    assert err.message.startswith('ConfigMap "Web" is invalid: metadata.name: Invalid value: "Web"')


def test_meta_namespace_rules() -> None:
    rule = NameRule.DNS1123_SUBDOMAIN
    assert _fields(validate_object_meta(_obj(name="a"), namespaced=True, name_rule=rule)) == [
        ("metadata.namespace", "FieldValueRequired")
    ]
    forbidden = validate_object_meta(
        _obj(name="a", namespace="x"), namespaced=False, name_rule=rule
    )
    assert [str(c) for c in forbidden] == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]
    bad = validate_object_meta(_obj(name="a", namespace="a.b"), namespaced=True, name_rule=rule)
    assert [str(c) for c in bad] == [
        'metadata.namespace: Invalid value: "a.b": must not contain dots'
    ]
    assert validate_object_meta(_obj(name="a"), namespaced=False, name_rule=rule) == []


def test_meta_labels_annotations() -> None:
    causes = validate_object_meta(
        _obj(
            name="a",
            labels={"-bad": "ok", "good": "bad value", "n": 1},
            annotations={"a/b/c": "x", "ok": 2},
        ),
        namespaced=False,
        name_rule=NameRule.DNS1123_SUBDOMAIN,
    )
    assert _fields(causes) == [
        ("metadata.labels[n]", "FieldValueInvalid"),
        ("metadata.labels", "FieldValueInvalid"),
        ("metadata.labels", "FieldValueInvalid"),
        ("metadata.annotations[ok]", "FieldValueInvalid"),
        ("metadata.annotations", "FieldValueInvalid"),
    ]
    assert 'Invalid value: "-bad"' in causes[1].message
    assert 'Invalid value: "bad value"' in causes[2].message


def test_meta_annotation_size() -> None:
    rule = NameRule.DNS1123_SUBDOMAIN
    at_limit = _obj(name="a", annotations={"k": "x" * (262144 - 1)})
    assert validate_object_meta(at_limit, namespaced=False, name_rule=rule) == []
    over = _obj(name="a", annotations={"k": "x" * 262144})
    causes = validate_object_meta(over, namespaced=False, name_rule=rule)
    assert [str(c) for c in causes] == [
        "metadata.annotations: Too long: must have at most 262144 bytes"
    ]
    assert causes[0].type == "FieldValueTooLong"


def test_meta_owner_references_and_finalizers() -> None:
    causes = validate_object_meta(
        _obj(
            name="a",
            ownerReferences=[
                {"apiVersion": "", "kind": "", "name": "", "uid": ""},
                {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"},
                {
                    "apiVersion": "apps/v1",
                    "kind": "RS",
                    "name": "x",
                    "uid": "2",
                    "controller": True,
                },
                {
                    "apiVersion": "apps/v1",
                    "kind": "RS",
                    "name": "y",
                    "uid": "3",
                    "controller": True,
                },
            ],
            finalizers=["orphan", "foregroundDeletion", "bad/na me"],
        ),
        namespaced=False,
        name_rule=NameRule.DNS1123_SUBDOMAIN,
    )
    msgs = [str(c) for c in causes]
    assert msgs[:4] == [
        'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
    ]
    assert "/v1, Kind=Event is disallowed from being an owner" in msgs[4]
    assert 'Found "true" in references for RS/x and RS/y' in msgs[5]
    assert msgs[6].startswith('metadata.finalizers: Invalid value: "bad/na me": name part')
    assert msgs[7].endswith("finalizer orphan and foregroundDeletion cannot be both set")
    assert len(msgs) == 8


def test_meta_types_and_generation() -> None:
    rule = NameRule.DNS1123_SUBDOMAIN
    assert _fields(validate_object_meta({"metadata": []}, namespaced=False, name_rule=rule)) == [
        ("metadata", "FieldValueInvalid")
    ]
    assert _fields(validate_object_meta({}, namespaced=False, name_rule=rule)) == [
        ("metadata.name", "FieldValueRequired")
    ]
    causes = validate_object_meta(
        _obj(name=5, namespace=3, generation=-1), namespaced=True, name_rule=rule
    )
    assert _fields(causes) == [
        ("metadata.name", "FieldValueInvalid"),
        ("metadata.namespace", "FieldValueInvalid"),
        ("metadata.generation", "FieldValueInvalid"),
    ]
