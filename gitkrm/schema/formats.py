"""The `format`s the API server checks in custom resources, where they differ from JSON
Schema's (e.g. `duration` is a Go duration like `1h30m`, not ISO 8601)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

_GO_DURATION = re.compile(r"[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+|[-+]?0")


def _duration(value: str) -> bool:
    return bool(_GO_DURATION.fullmatch(value))


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _any(value: str) -> bool:
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "duration": _duration,
    "byte": _byte,
    "int32": _any,
    "int64": _any,
    "float": _any,
    "double": _any,
    "password": _any,
}
