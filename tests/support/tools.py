"""External tools a test needs (kubectl, gpg, kpt, sshd, openssl, ...).

`require_tool` skips the test when the tool is missing on a developer's machine, but fails
it when `CI=true`: on CI a missing tool is a broken image, and a suite whose tests quietly
skip there proves nothing. `tests/conftest.py` also turns any other missing-tool skip into a
failure under CI (see `is_missing_tool_skip`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Final, NoReturn

import pytest
from _pytest.outcomes import Skipped

_CI_VALUES: Final = frozenset({"true", "1", "yes"})
# Reasons of skips that mean "a tool is not installed", for the CI guard.
MISSING_TOOL: Final = re.compile(r"\bis not installed\b|\bnot found on PATH\b|\bno such tool\b")


def running_on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in _CI_VALUES


class ToolMissing(Skipped):
    """The skip `require_tool` raises (outside CI): a missing tool, not a test decision."""


def missing_tool(reason: str) -> NoReturn:
    """Skip (locally) or fail (under CI=true) because of `reason`, a missing tool."""
    if running_on_ci():
        pytest.fail(f"{reason} (CI=true: a missing tool fails the test instead of skipping)")
    raise ToolMissing(reason, allow_module_level=True)


def require_tool(
    name: str, *, candidates: Iterable[str | Path] = (), search_path: bool = True, what: str = ""
) -> Path:
    """The path of tool `name`: the first existing of `candidates`, else `name` on PATH
    (unless `search_path` is False: then only the candidates count).

    Skips the calling test when the tool is missing, or fails it under CI=true.
    """
    for c in candidates:
        p = Path(c)
        if p.is_file() and os.access(p, os.X_OK):
            return p
    found = shutil.which(name) if search_path else None
    if found is not None:
        return Path(found)
    where = ", ".join(str(c) for c in candidates)
    if not search_path:
        looked = f" (looked at {where})"
    else:
        looked = f" (looked at {where} and on PATH)" if where else " (not found on PATH)"
    missing_tool(f"{what or name} is not installed{looked}")
