"""Protobuf: objects kubectl 1.32+ sends, and the OpenAPI v2 document for 1.27-1.29."""

from __future__ import annotations

import pytest
import yaml

from gitkrm.errors import BadRequest, UnsupportedMediaType
from gitkrm.schema import Registry
from gitkrm.server.openapi_v2 import OpenAPIv2
from gitkrm.server.pbwire import LEN, Writer, fields
from gitkrm.server.protobuf import MAGIC, decode_object


def msg(*parts: tuple[str, int, object]) -> Writer:
    w = Writer()
    for kind, num, value in parts:
        if kind == "s":
            assert isinstance(value, str)
            w.raw(num, value.encode())  # Go writes empty strings too
        elif kind == "i":
            assert isinstance(value, int)
            w._tag(num, 0)
            w._varint(value)
        elif kind == "m":
            assert isinstance(value, Writer)
            w.message(num, value)
        elif kind == "b":
            assert isinstance(value, bytes)
            w.raw(num, value)
    return w


def entry(k: str, v: str | bytes) -> Writer:
    return msg(("s", 1, k), ("b" if isinstance(v, bytes) else "s", 2, v))


def envelope(api_version: str, kind: str, raw: Writer) -> bytes:
    unknown = msg(("m", 1, msg(("s", 1, api_version), ("s", 2, kind))), ("b", 2, bytes(raw.buf)))
    return MAGIC + bytes(unknown.buf)


def meta(name: str, ns: str = "") -> Writer:
    time_ = msg(("i", 1, 0))
    return msg(
        ("s", 1, name),
        ("s", 2, ""),
        ("s", 3, ns),
        ("s", 4, ""),
        ("s", 5, ""),
        ("s", 6, ""),
        ("i", 7, 0),
        ("m", 8, time_),
        ("m", 11, entry("app", "x")),
    )


def test_configmap_and_secret() -> None:
    cm = msg(
        ("m", 1, meta("c", "ns")),
        ("m", 2, entry("a", "1")),
        ("m", 2, entry("b", "")),
        ("m", 3, entry("bin", b"\x00\x01")),
    )
    assert decode_object(envelope("v1", "ConfigMap", cm)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "labels": {"app": "x"},
            "creationTimestamp": "1970-01-01T00:00:00Z",
        },
        "data": {"a": "1", "b": ""},
        "binaryData": {"bin": "AAE="},
    }
    secret = msg(("m", 1, meta("s")), ("m", 2, entry("pw", b"s3cr3t")), ("s", 3, "Opaque"))
    out = decode_object(envelope("v1", "Secret", secret))
    assert out["data"] == {"pw": "czNjcjN0"}
    assert out["type"] == "Opaque"


def test_deployment_keeps_explicit_zero_and_int_or_string() -> None:
    surge = msg(("i", 1, 1), ("i", 2, 0), ("s", 3, "25%"))  # a string IntOrString
    unavailable = msg(("i", 1, 0), ("i", 2, 1), ("s", 3, ""))
    strategy = msg(("s", 1, "RollingUpdate"), ("m", 2, msg(("m", 1, unavailable), ("m", 2, surge))))
    container = msg(("s", 1, "c"), ("s", 2, "nginx"), ("i", 16, 0), ("s", 14, ""))
    template = msg(("m", 1, meta("")), ("m", 2, msg(("m", 2, container), ("i", 11, 0))))
    spec = msg(("i", 1, 0), ("m", 3, template), ("m", 4, strategy), ("i", 5, 0))
    status = msg(("i", 1, 0), ("i", 2, 0))  # a status of zeros: dropped
    d = msg(("m", 1, meta("d")), ("m", 2, spec), ("m", 3, status))
    out = decode_object(envelope("apps/v1", "Deployment", d))
    assert out["spec"]["replicas"] == 0
    assert out["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": "25%"}
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "nginx"}]
    assert "status" not in out
    assert "minReadySeconds" not in out["spec"]


def test_negative_numbers() -> None:
    pc = msg(("m", 1, meta("p")))
    pc._tag(2, 0)
    pc._varint(-5)  # ten bytes, as Go writes a negative int32
    assert decode_object(envelope("scheduling.k8s.io/v1", "PriorityClass", pc))["value"] == -5


def test_unknown_fields_kinds_and_garbage() -> None:
    zero_unknown = msg(("m", 1, meta("c")), ("s", 99, ""))
    assert decode_object(envelope("v1", "ConfigMap", zero_unknown))["metadata"]["name"] == "c"
    set_unknown = msg(("m", 1, meta("c")), ("s", 99, "something"))
    with pytest.raises(UnsupportedMediaType, match="field 99 of ConfigMap"):
        decode_object(envelope("v1", "ConfigMap", set_unknown))
    with pytest.raises(UnsupportedMediaType, match="cannot decode Widget"):
        decode_object(envelope("example.com/v1", "Widget", msg()))
    with pytest.raises(BadRequest, match="magic"):
        decode_object(b'{"kind":"ConfigMap"}')
    with pytest.raises(BadRequest, match="truncated"):
        decode_object(MAGIC + b"\x12\x50abc")


def _fields(buf: object) -> dict[int, bytes]:
    assert isinstance(buf, bytes)
    out = {}
    for num, _, value in fields(buf):
        assert isinstance(value, bytes)
        out[num] = value
    return out


def test_openapi_v2_document() -> None:
    doc, etag = OpenAPIv2(Registry.builtin()).document()
    top = _fields(doc)
    assert top[1] == b"2.0"
    defs = {}
    for num, wire, value in fields(top[9]):
        assert num == 1
        assert wire == LEN
        named = _fields(value)
        defs[named[1]] = named[2]
    assert len(defs) > 500
    assert etag
    extensions = {}
    for num, _, value in fields(defs[b"io.k8s.api.apps.v1.Deployment"]):
        if num == 31:
            named = _fields(value)
            extensions[named[1]] = yaml.safe_load(_fields(named[2])[2])
    assert extensions[b"x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]


# ---- found by tests/fuzz/test_fuzz_http.py: each was an exception out of the decoder (500) ----


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            b"\x0a\x03\x0a\x01\xff",
            r"ObjectMeta\.name is not valid UTF-8",
        ),
        (
            b"\x0a\x02\x08\x01",
            r"ObjectMeta\.name has wire type 0, expected bytes",
        ),  # metadata.name as a varint
        (
            b"\x10\x01",
            r"ConfigMap\.data has wire type 0, expected bytes",
        ),  # data (a map) as a varint
        (b"\x12\x05\x0a\x03\xc3\x28\x00", r"ConfigMap\.data key is not valid UTF-8"),  # a data key
    ],
)
def test_malformed_fields_are_bad_requests(raw: bytes, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        decode_object(
            MAGIC
            + bytes(msg(("m", 1, msg(("s", 1, "v1"), ("s", 2, "ConfigMap"))), ("b", 2, raw)).buf)
        )


def test_timestamps_out_of_range_are_bad_requests() -> None:
    far = msg(("i", 1, 2**62))  # seconds after 1970, past any datetime
    cm = msg(("m", 1, msg(("s", 1, "c"), ("m", 8, far))))
    with pytest.raises(BadRequest, match="creationTimestamp is out of range"):
        decode_object(envelope("v1", "ConfigMap", cm))


def test_type_meta_must_be_utf8() -> None:
    bad = msg(("m", 1, msg(("b", 1, b"v\xff"), ("s", 2, "ConfigMap"))), ("b", 2, b""))
    with pytest.raises(BadRequest, match="apiVersion is not valid UTF-8"):
        decode_object(MAGIC + bytes(bad.buf))
