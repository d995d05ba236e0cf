"""API server figures (issue 7, "Performance"), with `gitkrm serve` in a process of its
own on loopback, driven by wrk (a compiled load generator) and by asyncio watchers.

- server.get_deployment: GETs of one Deployment from 32 concurrent connections
  (target >= 3,000/s).
- server.patch_deployment: merge patches of 100 Deployments from 16 concurrent
  connections, each a committed write with admission (target >= 1,000/s).
- server.watch_p99: 100 open watches, 200 writes/s; time from sending a write to its
  event reaching every watcher, p99 (target <= 50 ms).

Medians of RUNS runs. Needs `wrk` (Debian package wrk).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import orjson

from gitkrm.server.serve import new_event_loop

RUNS = 3
SECONDS = 5
DEPLOYMENTS = 100
WATCHERS = 100
WRITES_PER_SECOND = 200
WRITE_SECONDS = 10
NS = "bench"


def _line(name: str, value: str, target: str) -> None:
    print(f"{name:<36} {value:>18}  ({target})", flush=True)


def _deployment(i: int) -> dict[str, object]:
    name = f"app-{i}"
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name, "tier": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": f"nginx:1.{i % 30}",
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "MODE", "value": "prod"}],
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ]
                },
            },
        },
    }


class Server:
    """`gitkrm serve` on a free loopback port, in a state dir of its own."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="bench-server-"))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gitkrm.cli.main",
                "serve",
                "--state",
                str(self.dir),
                "--listen",
                "127.0.0.1:0",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
        if m is None:
            self.stop()
            raise RuntimeError(f"gitkrm serve did not start: {line}")
        self.url = m.group(1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _seed(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as c:
        c.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).raise_for_status()
        for i in range(DEPLOYMENTS):
            c.post(
                f"/apis/apps/v1/namespaces/{NS}/deployments", json=_deployment(i)
            ).raise_for_status()
        body = {"metadata": {"name": "lat"}, "data": {"seq": "0"}}
        c.post(f"/api/v1/namespaces/{NS}/configmaps", json=body).raise_for_status()


_PATCH_LUA = """
counter = 0
request = function()
  counter = counter + 1
  local path = "/apis/apps/v1/namespaces/%s/deployments/app-" .. (counter %% %d)
  local body = '{"metadata":{"annotations":{"bench":"' .. counter .. '"}}}'
  return wrk.format("PATCH", path, {["Content-Type"] = "application/merge-patch+json"}, body)
end
response = function(status, headers, body)
  if status ~= 200 then print("status " .. status) end
end
"""


def _wrk(url: str, *, connections: int, script: str | None = None, path: str = "/") -> float:
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{SECONDS}s", url + path]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        if script:
            f.write(script)
            cmd[1:1] = ["-s", f.name]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    if "Non-2xx" in out or "status " in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    return float(m.group(1))


async def _watcher(
    port: int, path: str, arrivals: dict[int, list[float]], ready: asyncio.Event, count: list[int]
) -> None:
    """One watch on a raw connection; records when each `"seq":"N"` arrives."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
    await writer.drain()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass  # the status line and headers
    count[0] += 1
    if count[0] == WATCHERS:
        ready.set()
    marker = b'"seq":"'
    skip = len(marker)
    buf = b""
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            now = time.monotonic()
            buf += data
            i = buf.find(marker)
            while i >= 0:
                j = buf.find(b'"', i + skip)
                if j < 0:
                    break
                arrivals.setdefault(int(buf[i + skip : j]), []).append(now)
                i = buf.find(marker, j)
            buf = buf[i:] if i >= 0 else buf[-skip:]
    finally:
        writer.close()


class _Writer:
    """Merge patches on one keep-alive connection (no client library in the way)."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def patch(self, path: str, body: bytes) -> None:
        head = (
            f"PATCH {path} HTTP/1.1\r\nHost: bench\r\n"
            "Content-Type: application/merge-patch+json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status = await self.reader.readline()
        if not status.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"write failed: {status!r}")
        length = 0
        while (line := await self.reader.readline()) != b"\r\n":
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await self.reader.readexactly(length)


async def _watch_latency(url: str) -> float:
    port = int(url.rsplit(":", 1)[1])
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        listed = await c.get(f"/api/v1/namespaces/{NS}/configmaps")
        rv = listed.json()["metadata"]["resourceVersion"]
    path = f"/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={rv}"
    arrivals: dict[int, list[float]] = {}
    sent: dict[int, float] = {}
    ready = asyncio.Event()
    count = [0]
    tasks = [
        asyncio.ensure_future(_watcher(port, path, arrivals, ready, count)) for _ in range(WATCHERS)
    ]
    await asyncio.wait_for(ready.wait(), 30)
    await asyncio.sleep(0.5)
    writer = _Writer(port)
    await writer.open()
    start = time.monotonic()
    total = WRITES_PER_SECOND * WRITE_SECONDS
    base = int(time.time() * 1000) * 10_000
    target = f"/api/v1/namespaces/{NS}/configmaps/lat"
    for k in range(total):
        due = start + k / WRITES_PER_SECOND
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        seq = base + k
        sent[seq] = time.monotonic()
        await writer.patch(target, orjson.dumps({"data": {"seq": str(seq)}}))
    writer.writer.close()
    expected = total * WATCHERS
    for _ in range(200):  # at most 10 s for the last events
        if sum(len(v) for v in arrivals.values()) >= expected:
            break
        await asyncio.sleep(0.05)
    for t in tasks:
        t.cancel()
    latencies = sorted(a - sent[s] for s, times in arrivals.items() if s in sent for a in times)
    if len(latencies) < expected:
        raise RuntimeError(f"{expected - len(latencies)} events never arrived")
    return latencies[int(len(latencies) * 0.99) - 1] * 1000


def _run(coro_fn: Callable[[], Coroutine[Any, Any, float]]) -> float:
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coro_fn())


def main() -> None:
    if shutil.which("wrk") is None:
        print("bench_server: wrk is not installed (apt-get install wrk)", file=sys.stderr)
        sys.exit(2)
    server = Server()
    try:
        _seed(server.url)
        gets = statistics.median(
            _wrk(
                server.url, connections=32, path=f"/apis/apps/v1/namespaces/{NS}/deployments/app-1"
            )
            for _ in range(RUNS)
        )
        _line("server.get_deployment", f"{gets:,.0f} req/s", "target >= 3,000")
        patches = statistics.median(
            _wrk(server.url, connections=16, script=_PATCH_LUA % (NS, DEPLOYMENTS))
            for _ in range(RUNS)
        )
        _line("server.patch_deployment", f"{patches:,.0f} req/s", "target >= 1,000")
        p99 = statistics.median(_run(lambda: _watch_latency(server.url)) for _ in range(RUNS))
        _line(
            "server.watch_p99",
            f"{p99:,.1f} ms",
            f"target <= 50 ms; {WATCHERS} watchers, {WRITES_PER_SECOND} writes/s",
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
