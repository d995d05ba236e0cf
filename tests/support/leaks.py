"""The leak guard: a test ends every child process, thread and asyncio task it started.

A leaked `git cat-file`, server thread or watch task outlives its test and fails a later
one, or keeps a pipe open (the idle seconds of `run --once` were such a leak). The suite's
autouse fixture (tests/conftest.py) takes a `Baseline` before each test and `check`s it
after every fixture was torn down, waiting a moment for what is already ending.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

GRACE_S = 5.0  # a killed child or a stopping thread is given this long to be gone
# Threads a library keeps for the life of the process by design, not the test's to end:
# kr8s runs its synchronous API through one AnyIO portal thread.
LIBRARY_THREADS = frozenset({"Kr8sSyncRunnerThread", "AnyIO worker thread"})


def child_pids() -> set[int]:
    """This process's children (zombies included: a child never waited for is a leak)."""
    pids: set[int] = set()
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids.update(int(p) for p in children.read_text().split())
        except (OSError, ValueError):
            continue  # the thread ended while we looked
    return pids


def describe_pid(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return f"pid {pid} (gone)"
    what = cmdline.decode(errors="replace")[:120] or "?"
    return f"pid {pid} {what!r}" + (" (a zombie: never waited for)" if state == "Z" else "")


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive() and t.name not in LIBRARY_THREADS}


def _tasks() -> set[asyncio.Task[object]]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return set()
    return {t for t in asyncio.all_tasks(loop) if not t.done()}


@dataclass(frozen=True, slots=True)
class Baseline:
    children: frozenset[int]
    threads: frozenset[threading.Thread]

    @classmethod
    def take(cls) -> Baseline:
        return cls(children=frozenset(child_pids()), threads=frozenset(_threads()))

    def leaks(self) -> list[str]:
        """What was started since and is still there after the grace period."""
        deadline = time.monotonic() + GRACE_S
        while True:
            children = child_pids() - self.children
            threads = _threads() - self.threads
            if not children and not threads:
                return []
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        found = [f"child process {describe_pid(p)}" for p in sorted(children)]
        found += [f"thread {t.name!r} (daemon={t.daemon})" for t in threads]
        return found


async def task_leaks(before: set[asyncio.Task[object]]) -> list[str]:
    """Tasks started since `before` and not done within the grace period."""
    current = asyncio.current_task()
    deadline = time.monotonic() + GRACE_S
    while True:
        left = {t for t in _tasks() - before if t is not current}
        if not left or time.monotonic() > deadline:
            return [f"asyncio task {t.get_name()!r}: {t.get_coro()!r}" for t in left]
        await asyncio.sleep(0.02)


def running_tasks() -> set[asyncio.Task[object]]:
    return _tasks()


GC_EACH_TEST = os.environ.get("GITKRM_TEST_GC") == "1"
"""A collection after every test, so that an unclosed socket or transport is blamed on the
test that left it (otherwise the garbage collector finds it during a later, innocent test).
Off by default: it costs ~20 ms a test. `GITKRM_TEST_GC=1 make test` hunts a leak."""


def unclosed_found_by_gc() -> list[str]:
    if not GC_EACH_TEST:
        return []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    return [f"{w.category.__name__}: {w.message}" for w in caught]
