"""Suite-wide settings: Hypothesis profiles, markers by directory, and the CI tool guard.

- Hypothesis profiles: "ci" (the default: a short run, no deadline, for the normal suite)
  and "fuzz" (long runs of tests/fuzz, `make fuzz`: FUZZ_EXAMPLES examples per target,
  20,000 unless set); `HYPOTHESIS_PROFILE` picks one.
- Tests under tests/e2e are marked `e2e`, tests under tests/fuzz `fuzz` (`-m "not e2e"`).
- Under `CI=true` a test skipped because a tool is not installed fails instead: on CI a
  missing tool is a broken image, and quietly skipped tests prove nothing.
- The leak guard: a test that leaves a child process, a thread or an asyncio task of its
  own behind fails (`tests.support.leaks`); warnings are errors (pyproject). An unclosed
  socket is blamed on the test that left it with `GITKRM_TEST_GC=1` (a collection after
  every test; 4x slower, so not the default).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Final

import pytest
from _pytest.outcomes import Skipped
from hypothesis import HealthCheck, settings

from gitkrm.sync import pool
from tests.support.leaks import Baseline, running_tasks, task_leaks, unclosed_found_by_gc
from tests.support.tools import MISSING_TOOL, ToolMissing, running_on_ci

pytest_plugins = ("tests.support.fixtures",)

settings.register_profile("ci", max_examples=100, deadline=None, print_blob=True)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "20000")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE: Final = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)

_TESTS: Final = Path(__file__).parent
_BY_DIRECTORY: Final = {_TESTS / "e2e": "e2e", _TESTS / "fuzz": "fuzz"}
# A long fuzz run outlasts the suite's per-test timeout (pyproject: timeout = 120).
_FUZZ_TIMEOUT: Final = 3600


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(item.path)
        for directory, marker in _BY_DIRECTORY.items():
            if path.is_relative_to(directory):
                item.add_marker(marker)
                if marker == "fuzz" and PROFILE == "fuzz":
                    item.add_marker(pytest.mark.timeout(_FUZZ_TIMEOUT))


def _skip_reason(call: pytest.CallInfo[None], report: pytest.TestReport) -> str:
    if call.excinfo is not None and isinstance(call.excinfo.value, Skipped):
        return str(call.excinfo.value.msg or "")
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or "")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not report.skipped or hasattr(report, "wasxfail") or not running_on_ci():
        return report
    reason = _skip_reason(call, report)
    tool_missing = call.excinfo is not None and isinstance(call.excinfo.value, ToolMissing)
    if tool_missing or MISSING_TOOL.search(reason):
        report.outcome = "failed"
        report.longrepr = (
            f"skipped for a missing tool while CI=true: {reason}\n"
            "(install the tool in the CI image; locally such tests skip)"
        )
    return report


@pytest.fixture(autouse=True)
def _forget_masked_values() -> Generator[None, None, None]:
    """Values a test registered as secret (`krm.masking`, process-wide) don't mask the
    output of the tests after it."""
    yield
    from gitkrm.krm import masking

    masking.forget_all()


@pytest.fixture(autouse=True)
def _no_leaked_processes_or_threads() -> Iterator[None]:
    """Set up first, torn down last: after every fixture of the test has cleaned up."""
    baseline = Baseline.take()
    yield
    pool.shutdown()  # the parse pool lives as long as its process: a test's pool ends with it
    leaks = baseline.leaks() + unclosed_found_by_gc()
    if leaks:
        pytest.fail("the test left behind:\n  " + "\n  ".join(leaks), pytrace=False)


@pytest.fixture(autouse=True)
async def _no_leaked_tasks() -> AsyncIterator[None]:
    before = running_tasks()
    yield
    leaks = await task_leaks(before)
    if leaks:
        pytest.fail("the test left behind:\n  " + "\n  ".join(leaks), pytrace=False)
