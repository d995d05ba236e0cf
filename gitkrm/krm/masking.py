"""Values that came from Secrets, masked in everything gitkrm shows or writes.

A Secret's own fields are redacted by shape (`sync.redact`, `report.scrub`), but a value
read from a Secret can land anywhere: substituted into a ConfigMap (`substituteFrom`), or
decrypted from a SOPS file into any object. Whoever reads such a value registers it here
(`remember`) before it reaches an object; every way out (log records, notes and status
files, diff output, GitSource status, events, error lines) passes its text through
`mask`, which replaces each remembered value by `***`.

Values shorter than `MIN_LENGTH` are not remembered: masking every `on` or `12` would
garble every message (docs/concepts.md says so). The set is process-wide and bounded
(`MAX_VALUES`; the oldest are forgotten first, which a restart would do anyway).
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable
from typing import Final

MASK: Final = "***"
MIN_LENGTH: Final = 4
MAX_VALUES: Final = 100_000

_lock = threading.Lock()
_values: dict[str, None] = {}  # insertion-ordered set
_pattern: re.Pattern[str] | None = None


def _forms(value: str) -> Iterable[str]:
    """The value and the forms it takes in output: base64 (a Secret's data), JSON-escaped
    and one line (a value with newlines)."""
    yield value
    yield base64.b64encode(value.encode()).decode()
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    if escaped != value:
        yield escaped
    for line in value.splitlines():
        yield line.strip()


def remember(values: Iterable[str]) -> None:
    """Mask these values (and their usual encodings) from now on."""
    global _pattern
    added = False
    with _lock:
        for value in values:
            for form in _forms(value):
                if len(form) >= MIN_LENGTH and form not in _values:
                    _values[form] = None
                    added = True
        while len(_values) > MAX_VALUES:
            del _values[next(iter(_values))]
        if added:
            _pattern = None


def _compiled() -> re.Pattern[str] | None:
    global _pattern
    with _lock:
        if _pattern is None and _values:
            alternatives = sorted(_values, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(v) for v in alternatives))
        return _pattern


def mask(text: str) -> str:
    """`text` with every remembered value replaced by `***`."""
    if not _values:
        return text
    pattern = _compiled()
    return text if pattern is None else pattern.sub(MASK, text)


def active() -> bool:
    """Whether any value is remembered (callers may skip work when not)."""
    return bool(_values)


def forget_all() -> None:
    """Forget every value (tests)."""
    global _pattern
    with _lock:
        _values.clear()
        _pattern = None
