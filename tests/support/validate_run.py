"""Does `gitkrm validate` predict `gitkrm run`? (issue #16 §2.) Both run as processes on the
same tree; they must give the same verdict, and then the same objects (when valid: as many
objects as the sync applied) or the same problems (when invalid: the same files, lines and
objects named).

`validate` reads a work tree on disk and names files as given on its command line; `run`
syncs a Git remote at `--path` and names files relative to that path. Problems are compared
by their place (`file[:line]`, relative to the synced path) and object (`Kind [ns/]name`),
not by their wording.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

# `file[:line]: Kind [namespace/]name: message`, or `file[:line]: message` without an object.
_PROBLEM: Final = re.compile(
    r"^(?P<file>[^:\s]+)(?::(?P<line>\d+))?: (?:(?P<object>[A-Z][A-Za-z0-9]* [^\s:]+): )?"
)
_COUNT: Final = re.compile(r"^(\d+) object\(s\) in \d+ file\(s\): ")

Gitkrm = Callable[..., "subprocess.CompletedProcess[str]"]


class Disagreement(AssertionError):
    """`validate` and `run` disagree about a tree."""


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
    m = _PROBLEM.match(text)
    if m is None:
        return None
    file = m["file"]
    if relative_to and file.startswith(relative_to.rstrip("/") + "/"):
        file = file[len(relative_to.rstrip("/")) + 1 :]
    return Problem(file, int(m["line"]) if m["line"] else None, m["object"])


@dataclass(frozen=True, slots=True)
class Verdict:
    """One command's answer: valid or not, how many objects, which problems; `output` is
    what it printed (for failure messages)."""

    ok: bool
    objects: int | None
    problems: frozenset[Problem]
    output: str


def validate(gitkrm: Gitkrm, tree: Path, *, path: str = ".") -> Verdict:
    """`gitkrm validate PATH` run in `tree` (PATH relative to it, as a user types it)."""
    res = gitkrm("validate", path, cwd=tree)
    if res.returncode not in (0, 1):
        raise AssertionError(f"validate exited {res.returncode}:\n{res.stdout}{res.stderr}")
    counted = _COUNT.match(res.stdout.strip().splitlines()[-1] if res.stdout.strip() else "")
    found = (problem(line, relative_to=path) for line in res.stderr.splitlines())
    return Verdict(
        ok=res.returncode == 0,
        objects=int(counted[1]) if counted else None,
        problems=frozenset(p for p in found if p is not None),
        output=res.stdout + res.stderr,
    )


def _records(stderr: str) -> list[dict[str, object]]:
    """The JSON log records of a `run --log-format json` (one object a line)."""
    return [orjson.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def ran(result: subprocess.CompletedProcess[str], *, applied: int) -> Verdict:
    """The verdict of the sync of a `run --once --log-format json` (with or without
    `--wait`: the sync's result, not the health waited for) that ended as `result`, after
    which the source's inventory holds `applied` objects."""
    if result.returncode not in (0, 1):
        raise AssertionError(f"run exited {result.returncode}:\n{result.stdout}{result.stderr}")
    records = _records(result.stderr)
    synced = [r.get("result") for r in records if r.get("msg") == "sync"]
    if not synced:
        raise AssertionError(f"run logged no sync:\n{result.stdout}{result.stderr}")
    errors = (str(r.get("error", "")) for r in records if r.get("msg") == "sync error")
    found = (problem(e) for e in errors)
    return Verdict(
        ok=all(s == "Succeeded" for s in synced),
        objects=applied,
        problems=frozenset(p for p in found if p is not None),
        output=result.stdout + result.stderr,
    )


def _listing(problems: Iterable[Problem]) -> str:
    return "".join(f"\n    {p}" for p in sorted(problems, key=str)) or " none"


def assert_agree(validated: Verdict, synced: Verdict) -> None:
    """Raise `Disagreement` unless both have the same verdict and objects or problems."""
    both = f"\n--- validate:\n{validated.output}\n--- run:\n{synced.output}"
    if validated.ok != synced.ok:
        said = {True: "valid", False: "invalid"}
        raise Disagreement(f"validate says {said[validated.ok]}, run says {said[synced.ok]}{both}")
    if validated.ok and validated.objects != synced.objects:
        raise Disagreement(
            f"validate counts {validated.objects} object(s), run applied {synced.objects}{both}"
        )
    if validated.problems != synced.problems:
        raise Disagreement(
            "the problems differ: only validate:"
            + _listing(validated.problems - synced.problems)
            + "\n  only run:"
            + _listing(synced.problems - validated.problems)
            + both
        )
