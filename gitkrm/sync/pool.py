"""Parsing on every core: a process pool for big cold renders.

Parsing W10k takes about a second on one core (libyaml plus the Go scalar rules and
admission), so a cold render spreads files over worker processes. Workers are forked
(on Linux): they start in milliseconds with the parser and schemas already loaded, and
use no lock another thread of the agent could hold (CPython re-initialises the import
and logging locks at fork); a `forkserver` would re-import the caller's `__main__` in
every worker. Results travel back as compact JSON bytes, cheaper to pickle than dicts.
Small renders (a changed file or two) parse inline: starting work in another process
costs more than it saves.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Final

from gitkrm.sync.parse import ParseContext, ParsedFile, builtin_registry, parse_chunk

# Below this many bytes to parse, inline parsing wins (measured: ~0.1 s of work).
PARALLEL_MIN_BYTES = 256 * 1024  # a tunable (benchmarks and tests set it)
CHUNKS_PER_WORKER: Final = 4

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def worker_count() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


_PR_SET_PDEATHSIG: Final = 1


def _die_with(parent: int) -> None:
    """Ask Linux to kill this worker when the agent dies. An idle worker waits on a pipe
    whose write end its sibling workers also hold, so it would never see EOF: after a
    `kill -9` of the agent alone (an OOM kill) the workers would linger for ever. (Linux
    sends the signal when the *thread* that forked them ends; the pool is started from the
    event loop's thread, which lives as long as the agent.)"""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() != parent:  # the agent died before the request took effect
        os._exit(1)


def _release_sockets() -> None:
    """A forked worker inherits every descriptor of the agent. The pool talks over pipes
    only, so the agent's sockets (the API's listening socket, client connections) are let
    go: pointed at /dev/null, so the numbers stay valid for objects that still hold them.
    The pipes of git cat-file are let go by its own fork hook (gitkrm.source.catfile)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # pragma: no cover - no procfs
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in fds:
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.fstat(fd).st_mode):
                    os.dup2(null, fd)
    finally:
        os.close(null)


def prepare_child(parent: int) -> None:
    """A forked child (a pool worker, a jsonnet evaluation) dies with the agent, holds none
    of its sockets and ignores Ctrl-C (the agent ends it)."""
    _die_with(parent)
    _release_sockets()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _init_worker(parent: int) -> None:
    """A worker is a prepared child with the schema registry warm."""
    prepare_child(parent)
    builtin_registry()


def get_pool() -> ProcessPoolExecutor | None:
    """The process-wide pool (None on a single core)."""
    global _pool
    if worker_count() < 2:
        return None
    with _lock:
        if _pool is None:
            builtin_registry()  # loaded once here, inherited by every worker
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            ctx = multiprocessing.get_context(method)
            _pool = ProcessPoolExecutor(
                max_workers=worker_count(),
                mp_context=ctx,
                initializer=_init_worker,
                initargs=(os.getpid(),),
            )
        return _pool


def warm_up() -> None:
    """Start the workers now (in the background), so the first big render doesn't wait."""
    pool = get_pool()
    if pool is not None:
        for _ in range(worker_count()):
            pool.submit(builtin_registry)


def _discard(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=True, cancel_futures=True)  # its threads end now, not in a finalizer


def shutdown() -> None:
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _chunks(items: Sequence[tuple[str, bytes]], parts: int) -> Iterator[list[tuple[str, bytes]]]:
    """Contiguous chunks of about equal bytes (order kept, so results line up)."""
    total = sum(len(d) for _, d in items) or 1
    target = total / parts
    chunk: list[tuple[str, bytes]] = []
    size = 0
    for item in items:
        chunk.append(item)
        size += len(item[1])
        if size >= target:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Decoded manifests are acyclic: collections while building thousands only cost."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_in_worker(ctx: ParseContext, items: Sequence[tuple[str, bytes]]) -> list[ParsedFile]:
    with gc_paused():
        return parse_chunk(ctx, items)


ChunkDone = Callable[[Sequence[tuple[str, bytes]], Sequence[ParsedFile]], None]


async def parse_many(
    items: Sequence[tuple[str, bytes]],
    ctx: ParseContext,
    *,
    on_chunk: ChunkDone | None = None,
) -> list[ParsedFile]:
    """Parse files against the built-in kinds, in worker processes when it pays off.

    `on_chunk(items, results)` is called (on the event loop) as each chunk is parsed, so
    the caller can use results while workers still parse the rest.
    """
    size = sum(len(d) for _, d in items)
    pool = get_pool() if size >= PARALLEL_MIN_BYTES else None
    if pool is None:
        with gc_paused():
            return parse_chunk(ctx, items)
    loop = asyncio.get_running_loop()
    parts = worker_count() * CHUNKS_PER_WORKER
    chunks = list(_chunks(items, parts))
    try:
        futures = [loop.run_in_executor(pool, _parse_in_worker, ctx, c) for c in chunks]
        if on_chunk is not None:
            pending = {f: c for f, c in zip(futures, chunks, strict=True)}
            while pending:
                done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for f in done:
                    on_chunk(pending.pop(f), f.result())
        results = await asyncio.gather(*futures)
    except BrokenProcessPool:
        # A worker died (killed, out of memory): start afresh next time, parse here now.
        _discard(pool)
        with gc_paused():
            return parse_chunk(ctx, items)
    out: list[ParsedFile] = []
    for chunk_result in results:
        out.extend(chunk_result)
    return out
