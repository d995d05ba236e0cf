"""One timed `gitkrm run --once --wait` as a whole process (start-up included): what the
source-tree benchmarks (Flux, Argo CD, Helm releases) measure each sync with."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Final

GITKRM: Final = str(Path(sys.executable).with_name("gitkrm"))


def timed_run(url: str, state: Path, *extra: str) -> float:
    """Seconds of `gitkrm run --repo URL --once --wait` into `state`; exits on a failure."""
    start = time.perf_counter()
    done = subprocess.run(
        [GITKRM, "run", "--repo", url, "--once", "--wait", "--timeout", "120s",
         "--state", str(state), *extra],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"gitkrm run {' '.join(extra)}: exit {done.returncode}\n{done.stderr}")
    return seconds
