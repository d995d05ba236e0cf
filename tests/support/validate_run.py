"""`validate` predicts `run` on a refused revision too: both name the same problems.

tests/support/verdicts.py compares verdicts and, when both accept a tree, the objects. When
both refuse it, what a user reads is the problems: `validate` names files as given on its
command line, `run` relative to its `--path`, and the wording may differ, so problems are
compared by their place (`file[:line]`, relative to the synced path) and the object they
name (`Kind [ns/]name`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import orjson

# `file[:line]: Kind [namespace/]name: message`, or `file[:line]: message` without an object.
_PROBLEM: Final = re.compile(
    r"^(?P<file>[^:\s]+)(?::(?P<line>\d+))?: (?:(?P<object>[A-Z][A-Za-z0-9]* [^\s:]+): )?"
)


@dataclass(frozen=True, slots=True)
class Problem:
    """Where a problem is and which object it names (its wording left out)."""

    file: str
    line: int | None
    object: str | None

    def __str__(self) -> str:
        at = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{at}: {self.object}" if self.object else at


def problem(text: str, *, relative_to: str = "") -> Problem | None:
    """A problem line parsed (None when it is not one); `relative_to` is cut off its file."""
    if text.startswith("warning: "):
        return None
    m = _PROBLEM.match(text)
    if m is None:
        return None
    file, prefix = m["file"], relative_to.rstrip("/") + "/"
    if relative_to and file.startswith(prefix):
        file = file[len(prefix) :]
    return Problem(file, int(m["line"]) if m["line"] else None, m["object"])


def validate_problems(output: str, *, relative_to: str) -> frozenset[Problem]:
    """The problems `gitkrm validate` printed (one a line, files under `relative_to`)."""
    found = (problem(line, relative_to=relative_to) for line in output.splitlines())
    return frozenset(p for p in found if p is not None)


def run_problems(stderr: str) -> frozenset[Problem]:
    """The problems of the `sync error` records of a `run --log-format json`."""
    records = [orjson.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    errors = (str(r.get("error", "")) for r in records if r.get("msg") == "sync error")
    found = (problem(e) for e in errors)
    return frozenset(p for p in found if p is not None)


def _listing(problems: Iterable[Problem]) -> str:
    return "".join(f"\n    {p}" for p in sorted(problems, key=str)) or " none"


def assert_same_problems(validated: frozenset[Problem], synced: frozenset[Problem]) -> None:
    """Both name the same problems, at least one."""
    assert validated, "validate named no problem"
    assert validated == synced, (
        "validate and run name different problems; only validate:"
        + _listing(validated - synced)
        + "\n  only run:"
        + _listing(synced - validated)
    )
