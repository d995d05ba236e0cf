"""Run every benchmark (`python -m benchmarks`) or some (`python -m benchmarks patch store`).

Each `benchmarks/bench_<area>.py` has a `main()` that prints one line per figure with its
target. Each runs in its own process so that one area's memory and caches do not skew another.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    areas = sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    wanted = argv or areas
    unknown = [a for a in wanted if a not in areas]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(areas)}")
        return 2
    failed = 0
    for area in wanted:
        print(f"== {area}", flush=True)
        rc = subprocess.call([sys.executable, "-m", f"benchmarks.bench_{area}"])
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
