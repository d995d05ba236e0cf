"""Field selectors: apimachinery's grammar and escaping, per-kind fields, matching."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitkrm.errors import BadRequest
from gitkrm.krm.fields import (
    FieldRequirement,
    FieldSelector,
    escape_value,
    parse_field_selector,
    supported_fields,
)


def _pod(**spec_status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": spec_status.get("spec", {}),
        "status": spec_status.get("status", {}),
    }


@pytest.mark.parametrize(
    ("text", "reqs", "canonical"),
    [
        ("", (), ""),
        ("metadata.name=a", (("metadata.name", "a", True),), "metadata.name=a"),
        ("metadata.name==a", (("metadata.name", "a", True),), "metadata.name=a"),
        ("status.phase!=Running", (("status.phase", "Running", False),), "status.phase!=Running"),
        (
            "spec.nodeName=,metadata.name=a",
            (("metadata.name", "a", True), ("spec.nodeName", "", True)),
            "metadata.name=a,spec.nodeName=",
        ),
        ("a=x\\,y", (("a", "x,y", True),), "a=x\\,y"),
        ("a=x\\=y\\\\z", (("a", "x=y\\z", True),), "a=x\\=y\\\\z"),
        (",,a=b,", (("a", "b", True),), "a=b"),
        ("a=b c", (("a", "b c", True),), "a=b c"),
    ],
)
def test_parse(text: str, reqs: tuple[tuple[str, str, bool], ...], canonical: str) -> None:
    sel = parse_field_selector(text)
    assert sel.requirements == tuple(
        FieldRequirement(field=f, value=v, equals=e) for f, v, e in reqs
    )
    assert str(sel) == canonical
    assert parse_field_selector(str(sel)) == sel


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("a=b=c", "unescaped character in value: '='"),
        ("a=b\\x", "invalid escape sequence: \\x"),
        ("a=b\\", "invalid escape sequence: \\"),
        ("a!=b!=c", "unescaped character in value: '='"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as exc:
        parse_field_selector(text)
    assert message in str(exc.value)


def test_escape_value() -> None:
    assert escape_value("plain") == "plain"
    assert escape_value("a,b=c\\d") == "a\\,b\\=c\\\\d"


@pytest.mark.parametrize(
    ("text", "obj", "expected"),
    [
        ("metadata.name=p", _pod(), True),
        ("metadata.name=q", _pod(), False),
        ("metadata.namespace=ns,metadata.name=p", _pod(), True),
        ("spec.nodeName=", _pod(), True),  # missing field reads as ""
        ("spec.nodeName=n1", _pod(spec={"nodeName": "n1"}), True),
        ("spec.nodeName!=n1", _pod(), True),
        ("spec.host=n1", _pod(spec={"nodeName": "n1"}), True),  # legacy alias
        ("spec.hostNetwork=false", _pod(), True),  # bool zero value
        ("spec.hostNetwork=true", _pod(spec={"hostNetwork": True}), True),
        ("status.phase=Running", _pod(status={"phase": "Running"}), True),
        ("status.podIP=10.0.0.1", _pod(status={"podIPs": [{"ip": "10.0.0.1"}]}), True),
        ("status.podIP=10.0.0.2", _pod(status={"podIP": "10.0.0.2"}), True),
        ("spec.restartPolicy!=Always", _pod(spec={"restartPolicy": "Never"}), True),
    ],
)
def test_pod_matching(text: str, obj: dict[str, Any], expected: bool) -> None:
    sel = parse_field_selector(text)
    sel.check_supported(group="", kind="Pod")
    assert sel.matches(obj) is expected


def _obj(api_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


@pytest.mark.parametrize(
    ("selector", "obj"),
    [
        ("status.successful=0", _obj("batch/v1", "Job", "j", status={})),
        ("status.successful=3", _obj("batch/v1", "Job", "j", status={"succeeded": 3})),
        ("status.replicas=0", _obj("apps/v1", "ReplicaSet", "r")),
        ("spec.unschedulable=false", _obj("v1", "Node", "n", spec={})),
        ("type=Opaque", _obj("v1", "Secret", "s", type="Opaque")),
        (
            "involvedObject.kind=Pod,source=kubelet,type=Warning",
            _obj(
                "v1",
                "Event",
                "e",
                involvedObject={"kind": "Pod", "name": "p"},
                source={"component": "kubelet"},
                type="Warning",
            ),
        ),
        (
            "involvedObject.name=p,reportingComponent=ctl,source=ctl",
            _obj(
                "events.k8s.io/v1",
                "Event",
                "e",
                regarding={"kind": "Pod", "name": "p"},
                reportingController="ctl",
            ),
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else v["kind"],
)
def test_other_kinds_values(selector: str, obj: dict[str, Any]) -> None:
    sel = parse_field_selector(selector)
    group = obj["apiVersion"].rpartition("/")[0]
    sel.check_supported(group=group, kind=obj["kind"])
    assert sel.matches(obj)


def test_custom_resource_paths() -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"color": "red", "size": 3, "on": True},
    }
    sel = parse_field_selector("spec.color=red,spec.size=3,spec.on=true")
    sel.check_supported(
        group="example.com", kind="Widget", extra=[".spec.color", ".spec.size", "spec.on"]
    )
    assert sel.matches(obj)
    assert not parse_field_selector("spec.color=blue").matches(obj)
    assert parse_field_selector("spec.missing=").matches(obj)


def test_same_selector_many_kinds() -> None:
    sel = parse_field_selector("metadata.name=a")
    assert sel.matches({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}})
    assert sel.matches({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}})
    assert not sel.matches({"kind": "X", "metadata": {"name": "b"}})
    assert FieldSelector().matches({})
    assert FieldSelector().empty


@pytest.mark.parametrize(
    ("group", "kind", "field", "ok"),
    [
        ("", "Pod", "spec.nodeName", True),
        ("", "Pod", "status.podIPs", True),
        ("", "Pod", "spec.host", True),
        ("", "Pod", "spec.containers", False),
        ("", "Node", "spec.unschedulable", True),
        ("", "Node", "metadata.namespace", False),  # the API server's Node list has no namespace
        ("", "Namespace", "status.phase", True),
        ("", "Secret", "type", True),
        ("", "Service", "spec.type", True),
        ("", "Service", "spec.ports", False),
        ("apps", "Deployment", "metadata.namespace", True),
        ("apps", "Deployment", "spec.replicas", False),
        ("apps", "ReplicaSet", "status.replicas", True),
        ("batch", "Job", "status.successful", True),
        ("certificates.k8s.io", "CertificateSigningRequest", "spec.signerName", True),
        ("events.k8s.io", "Event", "involvedObject.uid", True),
        ("", "Event", "reportingComponent", True),
    ],
)
def test_check_supported(group: str, kind: str, field: str, ok: bool) -> None:
    sel = parse_field_selector(f"{field}=x")
    if ok:
        sel.check_supported(group=group, kind=kind)
    else:
        with pytest.raises(BadRequest, match=f"^field label not supported: {field}$"):
            sel.check_supported(group=group, kind=kind)


def test_supported_fields_and_exact_match() -> None:
    assert supported_fields(group="apps", kind="Deployment") == {
        "metadata.name",
        "metadata.namespace",
    }
    assert "spec.color" in supported_fields(group="x", kind="Y", extra=[".spec.color"])
    sel = parse_field_selector("metadata.name=a,status.phase!=b")
    assert sel.requires_exact_match("metadata.name") == "a"
    assert sel.requires_exact_match("status.phase") is None
    assert sel.fields() == {"metadata.name", "status.phase"}


_FIELDS = st.text(st.sampled_from(list("abcXYZ.")), min_size=1, max_size=8)
_VALS = st.text(st.sampled_from(list("ab,=\\ !é-")), max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_FIELDS, _VALS, st.booleans()), max_size=4))
def test_round_trip(terms: list[tuple[str, str, bool]]) -> None:
    text = ",".join(f"{f}{'=' if e else '!='}{escape_value(v)}" for f, v, e in terms)
    sel = parse_field_selector(text)
    assert sorted((r.field, r.value, r.equals) for r in sel.requirements) == sorted(terms)
    assert parse_field_selector(str(sel)) == sel


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(list("ab=!,\\ .")), max_size=16))
def test_garbage_parses_or_raises_bad_request(text: str) -> None:
    try:
        sel = parse_field_selector(text)
    except BadRequest:
        return
    assert parse_field_selector(str(sel)) == sel


def test_objects_with_odd_kinds_match_as_no_kind() -> None:
    # Found by tests/fuzz/test_fuzz_selectors.py: a list apiVersion was a dict key (TypeError).
    sel = parse_field_selector("metadata.name=a")
    assert sel.matches({"apiVersion": [], "kind": {}, "metadata": {"name": "a"}})
    assert not sel.matches({"apiVersion": [], "metadata": {"name": "b"}})
