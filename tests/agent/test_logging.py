"""The per-sync log line (text and JSON), redaction, and the terminal progress bar."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import orjson
import pytest

from gitkrm.agent import logging as agentlog
from gitkrm.sync.results import Counts, Timings

FIELDS = agentlog.sync_fields(
    source="apps",
    revision="0123456789abcdef" * 2 + "01234567",
    result="Succeeded",
    counts=Counts(created=3, configured=1, unchanged=7),
    timings_ms=Timings(git=12.34, render=5.0, diff=1.0, apply=20.5),
    trigger="interval",
)


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """A stream for `configure`; the loggers are put back as they were afterwards."""
    saved = []
    for name in ("gitkrm", "apscheduler"):
        lg = logging.getLogger(name)
        saved.append((lg, lg.handlers[:], lg.level, lg.propagate))
    yield io.StringIO()
    for lg, handlers, level, propagate in saved:
        lg.handlers[:] = handlers
        lg.setLevel(level)
        lg.propagate = propagate


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_text_line_has_revision_result_counts_and_timings(stream: io.StringIO) -> None:
    agentlog.configure(agentlog.LogFormat.TEXT, stream=stream)
    agentlog.log_sync(FIELDS)
    (line,) = _lines(stream)
    assert " INFO  sync source=apps revision=0123456789abcdef" in line
    for part in (
        "result=Succeeded",
        "created=3",
        "configured=1",
        "pruned=0",
        "unchanged=7",
        "failed=0",
        "refused=0",
        "git_ms=12.3",
        "render_ms=5.0",
        "diff_ms=1.0",
        "apply_ms=20.5",
        "trigger=interval",
    ):
        assert part in line.split(), part


def test_json_line_and_one_line_per_error(stream: io.StringIO) -> None:
    agentlog.configure(agentlog.LogFormat.JSON, stream=stream)
    failed = {**FIELDS, "result": "Failed"}
    agentlog.log_sync(failed, errors=("a.yaml:3: ConfigMap x: bad", "b.yaml: broken"))
    first, *errors = (orjson.loads(x) for x in _lines(stream))
    assert first["msg"] == "sync"
    assert first["level"] == "warning"
    assert first["created"] == 3
    assert first["apply_ms"] == 20.5
    assert [e["error"] for e in errors] == ["a.yaml:3: ConfigMap x: bad", "b.yaml: broken"]
    assert all(e["source"] == "apps" and e["level"] == "error" for e in errors)


def test_credentials_in_urls_never_reach_the_log(stream: io.StringIO) -> None:
    agentlog.configure(agentlog.LogFormat.TEXT, stream=stream)
    log = logging.getLogger("gitkrm.agent")
    log.error("fetch https://bob:s3cret@example.com/r.git failed")
    log.warning("x", extra={"fields": {"url": "ssh://git:tok@host/r", "n": 1}})
    out = stream.getvalue()
    assert "s3cret" not in out
    assert "tok" not in out
    assert "https://example.com/r.git" in out
    assert "url=ssh://host/r" in out


def test_redact() -> None:
    assert agentlog.redact("https://u:p@h/x and http://t@h2") == "https://h/x and http://h2"
    assert agentlog.redact("git@github.com:o/r.git") == "git@github.com:o/r.git"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_in_text_mode(stream: io.StringIO) -> None:
    agentlog.configure(agentlog.LogFormat.TEXT, stream=stream)
    assert agentlog.progress_stream is None  # not a terminal
    tty = _Tty()
    agentlog.configure(agentlog.LogFormat.TEXT, stream=tty)
    assert agentlog.progress_stream is tty
    agentlog.configure(agentlog.LogFormat.JSON, stream=tty)
    assert agentlog.progress_stream is None
