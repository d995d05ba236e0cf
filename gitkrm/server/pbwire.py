"""Protocol Buffers wire format: just enough to write the OpenAPI v2 document and to read
the Kubernetes objects kubectl 1.32+ sends as `application/vnd.kubernetes.protobuf`."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

from gitkrm.errors import BadRequest

VARINT: Final = 0
I64: Final = 1
LEN: Final = 2
I32: Final = 5


class Writer:
    """Appends fields to a growing message (bytearray: no per-field copies)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def _varint(self, value: int) -> None:
        if value < 0:
            value += 1 << 64
        buf = self.buf
        while value > 0x7F:
            buf.append((value & 0x7F) | 0x80)
            value >>= 7
        buf.append(value)

    def _tag(self, field: int, wire: int) -> None:
        self._varint((field << 3) | wire)

    def raw(self, field: int, value: bytes | bytearray) -> None:
        self._tag(field, LEN)
        self._varint(len(value))
        self.buf += value

    def string(self, field: int, value: str) -> None:
        if value:
            self.raw(field, value.encode())

    def message(self, field: int, value: Writer) -> None:
        self.raw(field, value.buf)

    def varint(self, field: int, value: int) -> None:
        if value:
            self._tag(field, VARINT)
            self._varint(value)

    def boolean(self, field: int, value: bool) -> None:
        if value:
            self._tag(field, VARINT)
            self.buf.append(1)

    def double(self, field: int, value: float) -> None:
        self._tag(field, I64)
        self.buf += struct.pack("<d", value)


def _varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise BadRequest("truncated protobuf message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise BadRequest("malformed protobuf varint")


def fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field: ints for VARINT/I64/I32 (the raw
    bits), bytes for LEN."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint_at(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == VARINT:
            value, pos = _varint_at(buf, pos)
            yield field, wire, value
        elif wire == LEN:
            n, pos = _varint_at(buf, pos)
            if pos + n > end:
                raise BadRequest("truncated protobuf message")
            yield field, wire, buf[pos : pos + n]
            pos += n
        elif wire == I64:
            if pos + 8 > end:
                raise BadRequest("truncated protobuf message")
            yield field, wire, int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire == I32:
            if pos + 4 > end:
                raise BadRequest("truncated protobuf message")
            yield field, wire, int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise BadRequest(f"unsupported protobuf wire type {wire} (field {field})")


def signed64(value: int) -> int:
    """A varint's bits as Go's int64/int32 (negative numbers take ten bytes)."""
    return value - (1 << 64) if value >= 1 << 63 else value
