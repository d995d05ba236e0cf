"""Requests and watches per source on the cluster target: the agent as users run it.

A `gitkrm serve` process plays the cluster (its own controllers run in-process and make no
HTTP requests); a long-lived `gitkrm run --kubeconfig` agent syncs SOURCES sources (each a
path of one Git repository with ConfigMaps, Deployments and Services in a namespace of its
own) every INTERVAL. Requests are counted at the server (`apiserver_request_total`, LIST and
WATCH by resource, then divided by sources), in all (the first syncs, WINDOW seconds for
them to settle and WINDOW more) and in the steady state (the last WINDOW seconds). A watch
is counted by the server when it ends, so the ones still open come from its
`gitkrm_open_watches` gauge (an earlier version read only the counter, and printed 0).

With `--baseline-rev REV` the same run is made first with the agent of an earlier commit
(a git worktree of it, on PYTHONPATH), and both are printed side by side with their ratio:
`python -m benchmarks.bench_watch --baseline-rev 1ac8428` measures the watch cache against
the per-consumer watch loops it replaced.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Final

SOURCES: Final = 3
OBJECTS: Final = 20  # of each kind, per source
INTERVAL: Final = "2s"
WINDOW: Final = 12.0
ROOT: Final = Path(__file__).resolve().parent.parent
_COUNT = re.compile(
    r"^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$",
    re.M,
)
_LABEL = re.compile(r'(\w+)="([^"]*)"')
_OPEN = re.compile(r"^gitkrm_open_watches ([0-9.e+]+)$", re.M)


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, stdin=subprocess.DEVNULL
    )


def _repo(root: Path) -> Path:
    work = root / "repo"
    work.mkdir()
    _git("init", "-q", "--initial-branch=main", cwd=work)
    for s in range(SOURCES):
        ns = f"team-{s}"
        docs = [f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"]
        for i in range(OBJECTS):
            docs.append(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: {ns}}}\n"
                f"data: {{i: '{i}'}}\n"
            )
            docs.append(
                "apiVersion: apps/v1\nkind: Deployment\n"
                f"metadata: {{name: app-{i}, namespace: {ns}}}\n"
                f"spec: {{replicas: 1, selector: {{matchLabels: {{app: app-{i}}}}}, template: "
                f"{{metadata: {{labels: {{app: app-{i}}}}}, spec: {{containers: "
                "[{name: web, image: nginx}]}}}\n"
            )
            docs.append(
                f"apiVersion: v1\nkind: Service\nmetadata: {{name: app-{i}, namespace: {ns}}}\n"
                f"spec: {{selector: {{app: app-{i}}}, ports: [{{port: 80}}]}}\n"
            )
        path = work / f"src-{s}" / "all.yaml"
        path.parent.mkdir()
        path.write_text("---\n".join(docs))
    _git("add", "-A", cwd=work)
    _git("-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "w", cwd=work)
    return work


def _config(root: Path, repo: Path) -> Path:
    docs = [
        "apiVersion: gitkrm.io/v1alpha1\nkind: GitSource\n"
        f"metadata: {{name: src-{s}}}\n"
        f"spec: {{url: '{repo}', ref: {{branch: main}}, path: src-{s}, interval: {INTERVAL}}}\n"
        for s in range(SOURCES)
    ]
    path = root / "sources.yaml"
    path.write_text("---\n".join(docs))
    return path


@contextlib.contextmanager
def _process(
    argv: list[str], *, env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for(what: str, check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.1)
    raise SystemExit(f"bench_watch: timed out waiting for {what}")


def _server_url(kubeconfig: Path) -> str:
    text = kubeconfig.read_text()
    found = re.search(r"server: (\S+)", text)
    assert found is not None
    return found.group(1)


def _counts(url: str) -> dict[tuple[str, str], float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[tuple[str, str], float] = {}
    for labels, value in _COUNT.findall(text):
        lab = dict(_LABEL.findall(labels))
        key = (lab.get("verb", ""), lab.get("resource", ""))
        out[key] = out.get(key, 0.0) + float(value)
    # A watch is counted in apiserver_request_total when it ends: the ones still open are
    # the server's gauge (before this, the agent's long-lived watches showed as 0).
    found = _OPEN.search(text)
    if found is not None:
        out[("OPEN_WATCHES", "")] = float(found.group(1))
    return out


Counts = dict[tuple[str, str], float]


def _run_once(tree: Path, root: Path) -> tuple[Counts, Counts]:
    """One serve + agent run with the gitkrm of `tree`: the server's request counts in
    all, and in the steady state (a window after the first syncs settled)."""
    repo = _repo(root)
    config = _config(root, repo)
    env = {**os.environ, "PYTHONPATH": str(tree), "GIT_TERMINAL_PROMPT": "0"}
    probe = [sys.executable, "-c", "import gitkrm; print(gitkrm.__file__)"]
    where = subprocess.run(probe, env=env, capture_output=True, text=True, check=True, cwd=root)
    if not where.stdout.startswith(str(tree)):
        raise SystemExit(f"bench_watch: the agent would import {where.stdout.strip()}, not {tree}")
    server_state, agent_state = root / "server", root / "agent"
    py = [sys.executable, "-m", "gitkrm.cli.main"]
    serve_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kubeconfig = server_state / "kubeconfig"
    with _process(
        [*py, "serve", "--state", str(server_state), "--listen", "127.0.0.1:0"],
        env=serve_env,
        log=root / "serve.log",
    ):
        _wait_for("the server", kubeconfig.exists)
        url = _server_url(kubeconfig)
        with _process(
            [
                *py,
                "run",
                "--config",
                str(config),
                "--kubeconfig",
                str(kubeconfig),
                "--state",
                str(agent_state),
                "--agent-name",
                "bench",
            ],
            env=env,
            log=root / "agent.log",
        ):

            def synced() -> bool:
                counts = _counts(url)
                made = sum(
                    n
                    for (verb, res), n in counts.items()
                    if verb == "POST" and res in ("configmaps", "deployments", "services")
                )
                return made >= SOURCES * 3 * OBJECTS

            _wait_for("the first syncs", synced, timeout=120)
            time.sleep(WINDOW)  # the first syncs settle: health follow-up
            settled = _counts(url)
            time.sleep(WINDOW)  # the steady state: re-syncs every INTERVAL, drift checks
            end = _counts(url)
            steady = {k: v - settled.get(k, 0.0) for k, v in end.items()}
            steady[("OPEN_WATCHES", "")] = end.get(("OPEN_WATCHES", ""), 0.0)
            return end, steady


def _summary(counts: Counts) -> dict[str, float]:
    lists = sum(n for (verb, _), n in counts.items() if verb == "LIST")
    watches = sum(n for (verb, _), n in counts.items() if verb == "WATCH")
    watches += counts.get(("OPEN_WATCHES", ""), 0.0)
    gets = sum(n for (verb, _), n in counts.items() if verb == "GET")
    return {
        "lists_per_source": lists / SOURCES,
        "watches_per_source": watches / SOURCES,
        "gets_per_source": gets / SOURCES,
    }


def _line(name: str, value: str, note: str) -> None:
    print(f"watch.{name:<24} {value:>12}   {note}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench_watch")
    parser.add_argument("--baseline-rev", help="an earlier commit to measure side by side")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitkrm-bench-watch-") as tmp:
        base = Path(os.environ.get("BENCH_WATCH_DIR") or tmp)
        results: dict[str, tuple[dict[str, float], dict[str, float]]] = {}
        if args.baseline_rev:
            tree = base / "baseline"
            _git("worktree", "add", "-q", "--detach", str(tree), args.baseline_rev, cwd=ROOT)
            try:
                (base / "b").mkdir()
                total, steady = _run_once(tree, base / "b")
                results["baseline"] = (_summary(total), _summary(steady))
            finally:
                _git("worktree", "remove", "--force", str(tree), cwd=ROOT)
        (base / "n").mkdir()
        total, steady = _run_once(ROOT, base / "n")
        results["now"] = (_summary(total), _summary(steady))
    objects = f"{SOURCES} sources x {3 * OBJECTS + 1} objects"
    windows = (
        f"{objects}, first syncs and {2 * WINDOW:.0f} s after",
        f"{objects}, steady state: {WINDOW:.0f} s of re-syncs every {INTERVAL}",
    )
    for which, (label, window) in enumerate(zip(("all", "steady"), windows, strict=True)):
        for key in ("lists_per_source", "watches_per_source", "gets_per_source"):
            name = f"{label}.{key}"
            now = results["now"][which][key]
            if "baseline" in results:
                before = results["baseline"][which][key]
                ratio = f"{before / now:.2f}x fewer" if now else "-"
                _line(
                    name,
                    f"{before:.1f} -> {now:.1f}",
                    f"{ratio} ({window}; before: {args.baseline_rev})",
                )
            else:
                _line(name, f"{now:.1f}", window)


if __name__ == "__main__":
    main()
