"""The cluster target side by side with kubectl and kpt (issue 9, "Performance").

One run over the W10k objects (benchmarks/workload.py). Each tool gets a fresh `gitkrm
serve`-equivalent API server in a process of its own (TLS and a bearer token, as a cluster;
the API alone: no bundled controllers, so every tool pays the same server). Requests are
counted at the server (`apiserver_request_total` of its /metrics).

- cluster.gitkrm_cold: SyncEngine over KubeStore (kube://), empty server to W10k applied
  (>= 1,000 objects/s, and >= 2x each other tool);
- cluster.gitkrm_resync: the same revision again, nothing changed (<= 1 s, and >= 20x a
  repeated kubectl apply);
- cluster.cli_run_once, cluster.cli_run_once_again: `gitkrm run --once --kubeconfig` as a
  whole process (start-up included) from a Git repository of the same objects, cold, then
  with nothing changed (the owned objects' digest: one list per kind);
- cluster.kubectl_apply, cluster.kubectl_apply_again, cluster.kubectl_server_side,
  cluster.kpt_live_apply: the same objects through each tool.

`--objects N` runs on a part of W10k (quick runs; the reported figures are W10k);
`--tools` picks tools. `python -m benchmarks.bench_cluster`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from benchmarks.workload import APPS, NAMESPACES, write_tree
from gitkrm.source.snapshot import FileEntry, MemoryBlobs, Snapshot, git_blob_id
from gitkrm.store.kube import ClientOptions, KubeStore, load_kubeconfig
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.options import SyncOptions

BIN: Final = Path("/usr/lib/google-cloud-sdk/bin")
KUBECTL: Final = BIN / "kubectl"
KPT: Final = shutil.which("kpt") or str(BIN / "kpt")
TOKEN: Final = "bench-cluster-token"
TOOLS: Final = ("gitkrm", "gitkrm-cli", "kubectl", "kubectl-ssa", "kpt")
_COUNTER = re.compile(rb"^apiserver_request_total\{[^}]*\} ([0-9.e+]+)$", re.M)


# -- the server, in its own process -----------------------------------------------------


def _serve(state: Path) -> None:
    """The child: the API over a SQLite file, TLS and a token; prints its URL."""
    from gitkrm.server import ServeOptions
    from gitkrm.server.serve import new_event_loop, serve
    from gitkrm.server.tls import generate_self_signed
    from gitkrm.store.sqlite import SqliteStore

    async def main() -> None:
        store = SqliteStore.open(str(state / "store.db"))
        tls = generate_self_signed(state, ["127.0.0.1", "localhost"])
        opts = ServeOptions(port=0, token=TOKEN, tls=tls, state_dir=state)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        try:
            await serve(store, opts, started=lambda b: print(b.url, flush=True), stop=stop)
        finally:
            await store.close()

    new_event_loop().run_until_complete(main())


class Server:
    """A fresh API server process in a state dir of its own."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_cluster", "--serve", str(self.dir)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("https://"):
            self.stop()
            raise SystemExit(f"the API server did not start: {line!r}")
        self.url = line
        self.kubeconfig = self.dir / "kubeconfig"
        self.ca = self.dir / "tls.crt"

    def requests(self) -> int:
        """Requests served so far (this scrape not included)."""
        r = httpx.get(
            f"{self.url}/metrics",
            headers={"authorization": f"Bearer {TOKEN}"},
            verify=str(self.ca),
            timeout=30,
        )
        r.raise_for_status()
        return int(sum(float(m) for m in _COUNTER.findall(r.content)))

    def cpu(self) -> float:
        """CPU seconds (user + system) the server process has used so far: the figure the
        client's share of the cores cannot blur."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass(frozen=True)
class Figure:
    seconds: float
    requests: int
    server_cpu: float = 0.0  # CPU seconds the server spent on it


def _measure(server: Server, run: Callable[[], None]) -> Figure:
    before = server.requests()
    cpu = server.cpu()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    cpu = server.cpu() - cpu
    return Figure(seconds, server.requests() - before - 1, cpu)  # minus the first scrape


# -- the tools ----------------------------------------------------------------------------


def _snapshot(root: Path) -> Snapshot:
    entries: dict[str, FileEntry] = {}
    blobs: dict[str, bytes] = {}
    for p in sorted(root.rglob("*.yaml")):
        data = p.read_bytes()
        blob = git_blob_id(data)
        rel = p.relative_to(root).as_posix()
        entries[rel] = FileEntry(path=rel, blob=blob, size=len(data))
        blobs[blob] = data
    return Snapshot(revision="w10k", files=entries, reader=MemoryBlobs(blobs))


def _gitkrm(server: Server, tree: Path, objects: int, options: ClientOptions) -> list[Figure]:
    """Cold sync and re-sync through the cluster target, in one engine (as the agent)."""
    snap = _snapshot(tree)
    figures: list[Figure] = []

    async def run() -> None:
        store = KubeStore(load_kubeconfig(server.kubeconfig), options)
        engine = SyncEngine(
            store=store, options=SyncOptions(source_name="bench", agent_name="bench")
        )
        try:
            for expect in ("created", "unchanged"):
                before = server.requests()
                cpu = server.cpu()
                start = time.perf_counter()
                result = await engine.sync(snap)
                seconds = time.perf_counter() - start
                cpu = server.cpu() - cpu
                figures.append(Figure(seconds, server.requests() - before - 1, cpu))
                if not result.ok or result.counts[expect] != objects:
                    raise SystemExit(f"gitkrm sync: {dict(result.counts)} {result.problems()[:3]}")
        finally:
            await engine.close()
            await store.close()

    asyncio.run(run())
    return figures


def _gitkrm_cli(server: Server, tree: Path) -> tuple[Figure, Figure]:
    """`gitkrm run --once` against the server from a Git repository of `tree`, twice."""
    repo = server.dir / "repo"
    shutil.copytree(tree, repo)
    git = ("git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@example.com")
    env = {**_env(server, server.dir / "home"), "GIT_TERMINAL_PROMPT": "0"}
    _run(*git, "init", "-q", "--initial-branch=main", env=env)
    _run(*git, "add", "-A", env=env)
    _run(*git, "commit", "-qm", "w10k", env=env)
    cmd = (
        *(sys.executable, "-m", "gitkrm.cli.main", "run", "--once"),
        *("--repo", str(repo), "--state", str(server.dir / "agent")),
        *("--kubeconfig", str(server.kubeconfig)),
    )
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    cold = _measure(server, lambda: _run(*cmd, env=env))
    again = _measure(server, lambda: _run(*cmd, env=env))
    return cold, again


def _run(*cmd: str, env: dict[str, str]) -> None:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}: exit {proc.returncode}: {proc.stderr[-500:]}")


def _env(server: Server, home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(server.kubeconfig),
    }


def _kubectl(server: Server, tree: Path, *extra: str) -> Callable[[], None]:
    """`kubectl apply` of the tree: the Namespaces first (kubectl applies files in name
    order and would meet `apps/` before `namespaces.yaml`), then the apps."""
    env = _env(server, server.dir / "home")

    def run() -> None:
        for part in (tree / "namespaces.yaml", tree / "apps"):
            _run(str(KUBECTL), "apply", "-R", "-f", str(part), "-o", "name", *extra, env=env)

    return run


def _kpt(server: Server, tree: Path) -> Figure:
    env = _env(server, server.dir / "home")
    pkg = server.dir / "pkg"
    shutil.copytree(tree, pkg)
    _run(KPT, "live", "install-resource-group", env=env)
    _run(KPT, "live", "init", str(pkg), "--name", "bench", "--namespace", "default", env=env)
    # Without controllers no Deployment becomes Current, and kpt waits for that until
    # interrupted: a tiny reconcile timeout ends it right after the apply itself.
    summary: list[str] = []

    def apply() -> None:
        cmd = (KPT, "live", "apply", str(pkg), "--reconcile-timeout=1ms")
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        lines = [x for x in proc.stdout.splitlines() if x.startswith("apply result:")]
        if not lines or " 0 failed" not in lines[0]:
            raise RuntimeError(f"kpt live apply: exit {proc.returncode}: {proc.stderr[-500:]}")
        summary.append(lines[0])

    figure = _measure(server, apply)
    print(f"cluster.kpt_live_apply: {summary[0]}", flush=True)
    return figure


# -- report -------------------------------------------------------------------------------


def _line(name: str, value: str, note: str) -> None:
    print(f"cluster.{name:<26} {value:>22}  ({note})", flush=True)


def _rate(name: str, f: Figure, objects: int, note: str) -> None:
    _line(
        name,
        f"{objects / f.seconds:,.0f} objects/s",
        f"{f.seconds:.2f} s, {f.requests / objects:.2f} requests/object, "
        f"server CPU {1e6 * f.server_cpu / max(f.requests, 1):,.0f} us/request; {note}",
    )


def _main(args: argparse.Namespace) -> None:
    apps = max(1, min(APPS, args.objects // 2)) if args.objects else APPS
    objects = 2 * apps + NAMESPACES
    tools = set(args.tools.split(",")) if args.tools else set(TOOLS)
    root = Path(tempfile.mkdtemp(prefix="bench-cluster-tree-"))
    tree = root / "w10k"
    write_tree(tree, apps=apps)
    options = ClientOptions(qps=args.qps, burst=args.burst, concurrency=args.concurrency)
    figures: dict[str, Figure] = {}
    try:
        if "gitkrm" in tools:
            server = Server()
            try:
                figures["gitkrm_cold"], figures["gitkrm_resync"] = _gitkrm(
                    server, tree, objects, options
                )
            finally:
                server.stop()
        if "gitkrm-cli" in tools:
            server = Server()
            try:
                figures["cli_run_once"], figures["cli_run_once_again"] = _gitkrm_cli(server, tree)
            finally:
                server.stop()
        if "kubectl" in tools:
            server = Server()
            try:
                figures["kubectl_apply"] = _measure(server, _kubectl(server, tree))
                figures["kubectl_apply_again"] = _measure(server, _kubectl(server, tree))
            except RuntimeError as e:
                print(f"cluster.kubectl_apply: failed: {e}", flush=True)
            finally:
                server.stop()
        if "kubectl-ssa" in tools:
            server = Server()
            try:
                figures["kubectl_server_side"] = _measure(
                    server, _kubectl(server, tree, "--server-side", "--field-manager=bench")
                )
            except RuntimeError as e:
                print(f"cluster.kubectl_server_side: unavailable: {e}", flush=True)
            finally:
                server.stop()
        if "kpt" in tools:
            server = Server()
            try:
                figures["kpt_live_apply"] = _kpt(server, tree)
            except RuntimeError as e:
                print(f"cluster.kpt_live_apply: unavailable: {e}", flush=True)
            finally:
                server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _report(figures, objects)


def _report(figures: dict[str, Figure], objects: int) -> None:
    print(f"# {objects:,} objects, one fresh API server (TLS, token) per tool", flush=True)
    cold = figures.get("gitkrm_cold")
    for name in ("gitkrm_cold", "kubectl_apply", "kubectl_server_side", "kpt_live_apply"):
        f = figures.get(name)
        if f is None:
            continue
        note = "target >= 1,000 objects/s" if name == "gitkrm_cold" else "cold"
        if cold is not None and name != "gitkrm_cold":
            note = f"gitkrm cold is {f.seconds / cold.seconds:.1f}x faster (target >= 2x)"
        _rate(name, f, objects, note)
    resync = figures.get("gitkrm_resync")
    if resync is not None:
        _line(
            "gitkrm_resync",
            f"{resync.seconds:.3f} s",
            f"{resync.requests} requests; target <= 1 s",
        )
    cli, cli_again = figures.get("cli_run_once"), figures.get("cli_run_once_again")
    if cli is not None and cli_again is not None:
        _line("cli_run_once", f"{cli.seconds:.2f} s", f"{cli.requests} requests; cold, a process")
        note = f"{cli_again.requests} requests; nothing changed, a process"
        if again_k := figures.get("kubectl_apply_again"):
            note += f"; {again_k.seconds / cli_again.seconds:.1f}x faster than kubectl apply"
        _line("cli_run_once_again", f"{cli_again.seconds:.2f} s", note)
    again = figures.get("kubectl_apply_again")
    if again is not None:
        note = "nothing changed"
        if resync is not None:
            note = (
                f"gitkrm re-sync is {again.seconds / resync.seconds:,.0f}x faster (target >= 20x)"
            )
        _line(
            "kubectl_apply_again",
            f"{again.seconds:.2f} s",
            f"{again.requests / objects:.2f} requests/object; {note}",
        )


def main() -> None:
    p = argparse.ArgumentParser(prog="bench_cluster", description=__doc__.split("\n")[0])
    p.add_argument("--objects", type=int, default=0, help="a part of W10k (default: all)")
    p.add_argument("--tools", default="", help=f"comma-separated, of {','.join(TOOLS)}")
    default = ClientOptions()
    p.add_argument("--qps", type=float, default=default.qps)
    p.add_argument("--burst", type=int, default=default.burst)
    p.add_argument("--concurrency", type=int, default=default.concurrency)
    p.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve is not None:
        _serve(args.serve)
        return
    _main(args)


if __name__ == "__main__":
    main()
