"""Source trees through the command line: a root GitSource path declaring CHILDREN child
sources (GitSources with `url: .`, each over its own directory of OBJECTS ConfigMaps, the
last one depending on the first), beside the same objects as one flat source, measured in
the same run (whole `gitkrm` processes, medians of RUNS, a new state dir per first sync).

- tree.first_sync: `run --once` of the tree into an empty state (a clone per child source);
- tree.resync_unchanged: `run --once` again, nothing changed;
- tree.resync_leaf_edit: `run --once` after a commit that edits one leaf's ConfigMap;
each beside the flat source's figure and their ratio.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.gitrepo import git, publish

RUNS = 3
CHILDREN = 4
OBJECTS = 25
GITKRM = str(Path(sys.executable).with_name("gitkrm"))


def _cm(name: str, value: str) -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n"
        f'data:\n  v: "{value}"\n'
    )


def _write(work: Path, *, tree: bool, value: str = "1") -> None:
    for c in range(CHILDREN):
        directory = work / (f"child-{c}" if tree else "flat")
        directory.mkdir(parents=True, exist_ok=True)
        docs = [_cm(f"c{c}-{i}", value if (c, i) == (CHILDREN - 1, 0) else "1")
                for i in range(OBJECTS)]  # fmt: skip
        (directory / f"objects-{c}.yaml").write_text("---\n".join(docs))
    if not tree:
        return
    root = work / "root"
    root.mkdir(exist_ok=True)
    docs = ["apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tree\n"]
    for c in range(CHILDREN):
        depends = "  dependsOn: [{name: child-0}]\n" if c == CHILDREN - 1 else ""
        docs.append(
            "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\n"
            f"metadata:\n  name: child-{c}\n  namespace: tree\n"
            f"spec:\n  url: .\n  path: child-{c}\n  interval: 1h\n{depends}"
        )
    (root / "tree.yaml").write_text("---\n".join(docs))


def _gitkrm(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([GITKRM, *args], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"gitkrm {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return seconds


def _median(fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(RUNS))


def _layout(base: Path, *, tree: bool) -> tuple[Path, Path, list[str]]:
    root = base / ("tree" if tree else "flat")
    work = root / "work"
    _write(work, tree=tree)
    bare = publish(work, root, "tree" if tree else "flat")
    flags = ["--repo", str(bare), "--path", "root" if tree else "flat", "--agent-name", "bench"]
    return work, bare, flags


def _measure(base: Path, *, tree: bool) -> dict[str, float]:
    work, bare, flags = _layout(base, tree=tree)
    states = iter(range(1000))

    def first() -> float:
        return _gitkrm("run", "--once", *flags, "--state", str(base / f"s{next(states)}"))

    out = {"first_sync": _median(first)}
    state = str(base / f"s{next(states)}")
    _gitkrm("run", "--once", *flags, "--state", state)
    out["resync_unchanged"] = _median(lambda: _gitkrm("run", "--once", *flags, "--state", state))
    edits = iter(range(2, 1000))

    def edit() -> float:
        _write(work, tree=tree, value=str(next(edits)))
        git("commit", "-q", "-am", "edit", cwd=work)
        git("push", "-q", str(bare), "HEAD:refs/heads/main", cwd=work)
        return _gitkrm("run", "--once", *flags, "--state", state)

    out["resync_leaf_edit"] = _median(edit)
    return out


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-tree-") as tmp:
        base = Path(tmp)
        flat = _measure(base / "f", tree=False)
        tree = _measure(base / "t", tree=True)
    for name, seconds in tree.items():
        print(
            f"tree.{name:<28} {seconds:>8.3f} s  (median of {RUNS}; {CHILDREN} children of "
            f"{OBJECTS} objects; one flat source {flat[name]:.3f} s, "
            f"{seconds / flat[name]:.1f}x)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
