"""The command examples of the documentation, as a test runs them (tests/docs/test_doc_commands.py).

Fenced blocks of README.md, sample-repo/README.md and docs/*.md hold commands in three shapes:

- ```sh (or bash, shell) blocks: every line is a command (`\\` continues a line, `#` starts a
  comment);
- transcripts (```console or unlabelled blocks): the lines after a `$ ` prompt are commands,
  the others are their output;
- unlabelled blocks listing commands without a prompt: a line starting with a program
  (`gitkrm`, `kubectl`, `git`, ...) is a command, unless it is a usage synopsis
  (`gitkrm serve [--state DIR] ...`, brackets for the optional parts).

Blocks in other languages (yaml, python, json, ...) hold no commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = frozenset({"sh", "bash", "shell"})
TRANSCRIPT = frozenset({"console", ""})
PROGRAMS = re.compile(r"^(\.venv/bin/)?(gitkrm|kubectl|git|make|helm|docker|python3?)(\s|$)")
SYNOPSIS = re.compile(r"\[[-A-Z,]")  # `[--state DIR]`, `[NAME...]`, `KIND[,KIND...]`
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


def doc_files() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "sample-repo" / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]


@dataclass(frozen=True, slots=True)
class DocCommand:
    path: Path
    line: int
    text: str
    """The command as a shell runs it: continuation lines joined, comment and prompt gone,
    runs of blanks made one."""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def strip_comment(line: str) -> str:
    """`line` without its shell comment (a `#` at the start or after a blank, unquoted)."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _normal(text: str) -> str:
    return " ".join(text.split())


def _block_commands(lang: str, lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in lines:
        line = raw.strip()
        prompted = line.startswith("$ ")
        if pending is None:
            if lang in SHELL:
                line = line.removeprefix("$ ")
            elif prompted:
                line = line[2:]
            elif lang == "" and PROGRAMS.match(line) and not SYNOPSIS.search(line):
                pass
            else:
                continue  # output, or a synopsis
        line = strip_comment(line).rstrip()
        start, text = pending if pending is not None else (number, "")
        if line.endswith("\\"):
            pending = (start, text + line[:-1] + " ")
            continue
        pending = None
        text = _normal(text + line)
        if text:
            out.append((start, text))
    return out


def commands_of(path: Path) -> list[DocCommand]:
    out: list[DocCommand] = []
    fence: str | None = None
    lang = ""
    block: list[tuple[int, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence, lang, block = m.group(2), m.group(3).lower(), []
            continue
        if m and m.group(2).startswith(fence) and not m.group(3):
            if lang in SHELL or lang in TRANSCRIPT:
                out.extend(DocCommand(path, n, t) for n, t in _block_commands(lang, block))
            fence = None
            continue
        block.append((number, line))
    return out


def doc_commands() -> list[DocCommand]:
    return [c for path in doc_files() for c in commands_of(path)]
