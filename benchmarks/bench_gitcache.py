"""One Git cache per repository URL: a source tree of CHILDREN child GitSources over one
repository (benchmarks/bench_tree.py's layout, `url: .` children), the Flux-layout
repository (tests/e2e/flux_repo.py: three Kustomizations on the synced repository, one on a
second) and the Argo CD app of apps (tests/e2e/argocd_apps.py: six Applications, five on
the synced repository), synced with `run --once` as whole `gitkrm` processes. Besides the
seconds (medians of RUNS), it counts the git processes each run starts (`git fetch`,
`git ls-remote`, all), through a `git` on PATH that logs its arguments and runs the real
one.

`--baseline DIR` names a checkout of gitkrm before the change: each figure is then
measured for it and for this checkout in the same run, alternately, and printed side by
side (`python -m benchmarks.bench_gitcache --baseline /tmp/before`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks import bench_tree

RUNS = 3
GITKRM = str(Path(sys.executable).with_name("gitkrm"))
HERE = Path(__file__).resolve().parent.parent


def _shim(directory: Path) -> Path:
    """A `git` that appends its subcommand to $BENCH_GIT_LOG and runs the real git."""
    real = shutil.which("git")
    assert real is not None
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "git"
    shim.write_text(
        '#!/bin/sh\nfor a in "$@"; do case "$a" in -*) ;; *) echo "$a" >> "$BENCH_GIT_LOG";'
        f' break;; esac; done\nexec {real} "$@"\n'
    )
    shim.chmod(0o755)
    return directory


def _run(code: Path, shim: Path, log: Path, *args: str) -> tuple[float, Counter[str]]:
    log.write_text("")
    env = {**os.environ, "PYTHONPATH": str(code), "BENCH_GIT_LOG": str(log),
           "PATH": f"{shim}:{os.environ['PATH']}"}  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run([GITKRM, "run", "--once", *args], capture_output=True, text=True,
                          check=False, env=env, stdin=subprocess.DEVNULL)  # fmt: skip
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"gitkrm run {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return seconds, Counter(log.read_text().split())


def _measure(
    codes: dict[str, Path], base: Path, name: str, flags: list[str]
) -> dict[str, dict[str, tuple[float, Counter[str]]]]:
    shim, log = _shim(base / "shim"), base / "git.log"
    out: dict[str, dict[str, tuple[float, Counter[str]]]] = {}
    runs: dict[tuple[str, str], list[tuple[float, Counter[str]]]] = {}
    for i in range(RUNS):
        for label, code in codes.items():  # alternately: the same machine load for both
            state = base / f"{name}-{label}-{i}"
            runs.setdefault((label, "first_sync"), []).append(
                _run(code, shim, log, *flags, "--state", str(state))
            )
            runs.setdefault((label, "resync"), []).append(
                _run(code, shim, log, *flags, "--state", str(state))
            )
    for (label, figure), got in runs.items():
        seconds = statistics.median(s for s, _ in got)
        out.setdefault(label, {})[figure] = (seconds, got[-1][1])
    return out


def _print(name: str, results: dict[str, dict[str, tuple[float, Counter[str]]]]) -> None:
    for figure in ("first_sync", "resync"):
        parts = []
        for label, got in results.items():
            seconds, calls = got[figure]
            parts.append(
                f"{label} {seconds:.3f} s, {calls['fetch']} fetch, {calls['ls-remote']} "
                f"ls-remote, {sum(calls.values())} git"
            )
        ratio = ""
        if len(results) == 2:
            before, after = (r[figure][0] for r in results.values())
            ratio = f"; {after / before:.2f}x"
        print(f"gitcache.{name}.{figure:<11} " + " | ".join(parts) + ratio, flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--baseline", type=Path, help="a checkout of gitkrm before the change")
    p.add_argument("--children", type=int, default=20)
    args = p.parse_args(argv)
    codes = {"before": args.baseline.resolve()} if args.baseline else {}
    codes["after"] = HERE
    bench_tree.CHILDREN = args.children
    from tests.e2e.argocd_apps import write_app_of_apps, write_other
    from tests.e2e.flux_repo import fleet, second_repository
    from tests.source.source_gitrepo import RemoteRepo

    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-gitcache-") as tmp:
        base = Path(tmp)
        flags = bench_tree._layout(base / "tree", tree=True)[2]
        tree = _measure(codes, base / "tree-runs", "tree", flags)
        repo = fleet(base / "flux", second=second_repository(base / "flux"))
        flux_flags = ["--repo", repo.url, "--path", "clusters/dev", "--interpret", "flux"]
        flux = _measure(codes, base / "flux-runs", "flux", flux_flags)
        other, apps = RemoteRepo(base / "argo" / "other"), RemoteRepo(base / "argo" / "repo")
        write_other(other)
        other.commit("other")
        other.push()
        write_app_of_apps(apps, other=other)
        apps.commit("app of apps")
        apps.push()
        argo_flags = ["--repo", apps.url, "--path", "bootstrap", "--interpret", "argocd"]
        argo = _measure(codes, base / "argo-runs", "argocd", argo_flags)
    _print(f"tree{args.children}", tree)
    _print("flux", flux)
    _print("argocd", argo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
