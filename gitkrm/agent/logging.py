"""The agent's log: one line per sync (revision, result, counts, timings), text or JSON.

Every record passes a filter that strips user-info from URLs, as a last guard behind the
source layer's own redaction: nothing secret is ever written, whatever a message holds.
The progress line of long syncs (`progress.py`) is drawn only in text mode on a terminal.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import sys
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, TextIO

import orjson

from gitkrm.krm import masking
from gitkrm.sync.results import Counts, Timings

LOGGER_NAME = "gitkrm"
log = logging.getLogger(LOGGER_NAME)

_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@")

progress_stream: TextIO | None = None
"""Where progress lines go: the log's terminal in text mode, else nowhere (see configure)."""


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


def redact(text: str) -> str:
    """`https://user:token@host/x` -> `https://host/x`, and values that came from Secrets
    masked (`krm.masking`)."""
    return masking.mask(_USERINFO.sub(r"\1", text))


class _Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        fields = getattr(record, "fields", None)
        if fields:
            record.fields = {k: redact(v) if isinstance(v, str) else v for k, v in fields.items()}
        return True


def _time(record: logging.LogRecord) -> str:
    t = dt.datetime.fromtimestamp(record.created, dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _text_value(v: Any) -> str:
    s = str(v)
    return f'"{s}"' if (not s or any(c in s for c in ' "=')) else s


class TextFormatter(logging.Formatter):
    """`2025-01-01T10:00:00.000Z INFO  sync source=default revision=... created=3 ...`"""

    def format(self, record: logging.LogRecord) -> str:
        fields: Mapping[str, Any] = getattr(record, "fields", None) or {}
        parts = [_time(record), f"{record.levelname:<5}", record.getMessage()]
        parts.extend(f"{k}={_text_value(v)}" for k, v in fields.items())
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, msg and the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": _time(record), "level": record.levelname.lower()}
        out["msg"] = record.getMessage()
        out.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


def configure(fmt: LogFormat, *, stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """Send gitkrm's records (and apscheduler's warnings) to `stream` in `fmt`."""
    global progress_stream
    out = stream or sys.stderr
    progress_stream = out if fmt is LogFormat.TEXT and out.isatty() else None
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if fmt is LogFormat.JSON else TextFormatter())
    handler.addFilter(_Redact())
    for name, lvl in ((LOGGER_NAME, level), ("apscheduler", logging.WARNING)):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(lvl)
        logger.propagate = False


def sync_fields(
    *,
    source: str,
    revision: str | None,
    result: str,
    counts: Counts | None,
    timings_ms: Timings,
    trigger: str,
) -> dict[str, Any]:
    """The fields of the per-sync line, in a fixed order (zero counts when nothing synced)."""
    fields: dict[str, Any] = {"source": source, "revision": revision or "-", "result": result}
    fields.update((counts or Counts()).shown())
    fields.update({f"{k}_ms": round(v, 1) for k, v in timings_ms.items()})
    fields["trigger"] = trigger
    return fields


def log_sync(fields: Mapping[str, Any], *, errors: tuple[str, ...] = (), level: int = 0) -> None:
    """The line of one sync, then one line per error (each names its file and object)."""
    failed = fields.get("result") != "Succeeded"
    lvl = level or (logging.WARNING if failed else logging.INFO)
    log.log(lvl, "sync", extra={"fields": dict(fields)})
    for e in errors:
        log.error("sync error", extra={"fields": {"source": fields.get("source"), "error": e}})
