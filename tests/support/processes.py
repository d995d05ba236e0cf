"""Ending a child process a test started: killed if still running, waited for, pipes closed."""

from __future__ import annotations

import contextlib
import subprocess
from typing import Any


def end(proc: subprocess.Popen[Any], *, timeout: float = 10.0) -> None:
    """Terminate it (killed after `timeout`) and reap it: no zombie outlives the test."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def close_pipes(proc: subprocess.Popen[Any]) -> None:
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def stop(proc: subprocess.Popen[Any], *, timeout: float = 10.0) -> None:
    """`end` it, then close its pipes (no open file outlives the test either)."""
    end(proc, timeout=timeout)
    close_pipes(proc)
