"""Objects sent as `application/vnd.kubernetes.protobuf` (kubectl 1.32 and later sends its
`create` and `run` objects that way), decoded to the JSON form the store keeps.

The body is `k8s\\x00` + a runtime.Unknown (type meta, raw bytes); the raw bytes are the
object's message, read with the field tables of `proto_types`. Go writes every
non-pointer field, zero values included, so zero values are dropped as JSON's omitempty
would, except for fields marked `keep` (pointers and required fields). A field the tables
do not know is skipped when it holds a zero value and refused otherwise, so nothing a
client set is ever lost silently.
"""

from __future__ import annotations

import base64
import math
import struct
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from gitkrm.errors import BadRequest, UnsupportedMediaType
from gitkrm.krm import Obj
from gitkrm.server.pbwire import I64, LEN, VARINT, fields, signed64
from gitkrm.server.proto_types import KINDS, MESSAGES, F

MAGIC: Final = b"k8s\x00"
CONTENT_TYPE: Final = "application/vnd.kubernetes.protobuf"


def _text(value: bytes, where: str) -> str:
    """A protobuf string; invalid UTF-8 is refused (it has no JSON form to store)."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise BadRequest(f"protobuf: {where} is not valid UTF-8") from None


def _time(buf: bytes, *, micro: bool, where: str) -> str | None:
    """A metav1.Time: Go writes the zero time as an empty message, read back as zero
    (JSON null, not 1970-01-01, as a pod template's creationTimestamp)."""
    if not buf:
        return None
    seconds = nanos = 0
    for num, _, value in fields(buf):
        if num == 1 and isinstance(value, int):
            seconds = signed64(value)
        elif num == 2 and isinstance(value, int):
            nanos = signed64(value)
    try:
        t = datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        raise BadRequest(f"protobuf: {where} is out of range ({seconds} s)") from None
    if micro:
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(buf: bytes) -> str:
    ns = 0
    for num, _, value in fields(buf):
        if num == 1 and isinstance(value, int):
            ns = signed64(value)
    s, rest = divmod(ns, 1_000_000_000)
    return f"{s}s" if not rest else f"{ns / 1e9:g}s"


def _int_or_string(buf: bytes, where: str) -> int | str:
    typ, ival, sval = 0, 0, ""
    for num, _, value in fields(buf):
        if num == 1 and isinstance(value, int):
            typ = value
        elif num == 2 and isinstance(value, int):
            ival = signed64(value)
        elif num == 3 and isinstance(value, bytes):
            sval = _text(value, where)
    return sval if typ == 1 else ival


def _single_string(buf: bytes, where: str) -> str:
    for num, _, value in fields(buf):
        if num == 1 and isinstance(value, bytes):
            return _text(value, where)
    return ""


def _raw_json(buf: bytes) -> Any:
    for num, _, value in fields(buf):
        if num == 1 and isinstance(value, bytes):
            try:
                return orjson.loads(value) if value else None
            except orjson.JSONDecodeError as e:
                raise BadRequest(f"protobuf: embedded JSON is not valid: {e}") from None
    return None


# Field kinds by the wire type that carries them (the rest are length-delimited).
_VARINT_KINDS: Final = frozenset({"int", "bool"})
_I64_KINDS: Final = frozenset({"double"})


def _scalar(f: F, wire: int, value: int | bytes, where: str) -> Any:
    k = f.kind
    here = f"{where}.{f.name}"
    if k in _VARINT_KINDS:
        if wire != VARINT:
            raise BadRequest(f"protobuf: {here} has wire type {wire}, expected varint")
    elif k in _I64_KINDS:
        if wire != I64:
            raise BadRequest(f"protobuf: {here} has wire type {wire}, expected fixed64")
    elif wire != LEN or not isinstance(value, bytes):
        raise BadRequest(f"protobuf: {here} has wire type {wire}, expected bytes")
    if k == "str":
        assert isinstance(value, bytes)
        return _text(value, here)
    if k == "bytes":
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode()
    if k == "int":
        assert isinstance(value, int)
        return signed64(value)
    if k == "bool":
        return bool(value)
    if k == "double":
        assert isinstance(value, int)
        d = struct.unpack("<d", value.to_bytes(8, "little"))[0]
        if not math.isfinite(d):
            raise BadRequest(f"protobuf: {here} is {d}, which JSON cannot hold")
        return d
    assert isinstance(value, bytes)
    if k in ("msg", "inline"):
        return decode_message(f.msg, value)
    if k == "time":
        return _time(value, micro=False, where=here)
    if k == "microtime":
        return _time(value, micro=True, where=here)
    if k == "duration":
        return _duration(value)
    if k == "quantity":
        return _single_string(value, here)
    if k == "ios":
        return _int_or_string(value, here)
    if k == "raw":
        return _raw_json(value)
    raise BadRequest(f"protobuf: unsupported field kind {k!r}")


def _map_entry(f: F, value: bytes, where: str) -> tuple[str, Any]:
    key = ""
    val: Any = None
    inner = F("value", f.map, f.msg)
    for num, wire, v in fields(value):
        if num == 1 and isinstance(v, bytes):
            key = _text(v, f"{where}.{f.name} key")
        elif num == 2:
            val = _scalar(inner, wire, v, f"{where}.{f.name}")
    if val is None:
        val = {"str": "", "bytes": "", "quantity": "0", "msg": {}}.get(f.map, "")
    return key, val


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False, None) or value == {} or value == []


def decode_message(name: str, buf: bytes) -> dict[str, Any]:
    """One message as a JSON object."""
    table = MESSAGES.get(name)
    if table is None:
        raise UnsupportedMediaType(f"protobuf: gitkrm cannot decode {name} messages")
    out: dict[str, Any] = {}
    for num, wire, value in fields(buf):
        f = table.get(num)
        if f is None:
            if value in (0, b""):
                continue
            raise UnsupportedMediaType(
                f"protobuf: field {num} of {name} is not known to gitkrm; send this object "
                "as JSON (kubectl --output json | kubectl apply -f -) instead"
            )
        if f.map:
            if wire != LEN or not isinstance(value, bytes):
                raise BadRequest(f"protobuf: {name}.{f.name} has wire type {wire}, expected bytes")
            k, v = _map_entry(f, value, name)
            out.setdefault(f.name, {})[k] = v
            continue
        v = _scalar(f, wire, value, name)
        if f.kind == "inline":
            out.update(v)
        elif f.rep:
            out.setdefault(f.name, []).append(v)
        elif f.keep or not _is_zero(v):
            out[f.name] = v
    return out


def _unknown(body: bytes) -> tuple[str, str, bytes]:
    """The runtime.Unknown after the magic number: apiVersion, kind and raw message."""
    if not body.startswith(MAGIC):
        raise BadRequest("protobuf: the body does not start with the Kubernetes magic number")
    api_version = kind = ""
    raw = b""
    for num, _, value in fields(body[len(MAGIC) :]):
        if num == 1 and isinstance(value, bytes):
            for n, _, v in fields(value):
                if n == 1 and isinstance(v, bytes):
                    api_version = _text(v, "apiVersion")
                elif n == 2 and isinstance(v, bytes):
                    kind = _text(v, "kind")
        elif num == 2 and isinstance(value, bytes):
            raw = value
        elif num == 3 and value:
            raise UnsupportedMediaType("protobuf: encoded (compressed) bodies are not supported")
    return api_version, kind, raw


def decode_object(body: bytes) -> Obj:
    """A protobuf-encoded Kubernetes object (with its apiVersion and kind)."""
    api_version, kind, raw = _unknown(body)
    message = KINDS.get((api_version, kind))
    if message is None:
        raise UnsupportedMediaType(
            f"protobuf: gitkrm cannot decode {kind} ({api_version}) objects; send it as JSON"
        )
    obj: Obj = {"apiVersion": api_version, "kind": kind}
    obj.update(decode_message(message, raw))
    return obj


def decode_delete_options(body: bytes) -> dict[str, Any]:
    """A protobuf DeleteOptions body (client-go's typed clients send one with every delete,
    in the group-version of the resource: `kubectl drain` does)."""
    _, kind, raw = _unknown(body)
    if kind != "DeleteOptions":
        raise BadRequest(f"protobuf: expected a DeleteOptions body, got {kind or 'no kind'}")
    return decode_message("DeleteOptions", raw)
