"""One remote repository's reports for one agent: a writer and a pusher in the background.

`update` only records the new state and wakes the writer: syncing never waits for Git.
The writer writes what the throttle allows (notes per commit, the status file per agent)
into the cache repository; the pusher publishes after each write, retrying with backoff
when the remote refuses or can't be reached. `flush` writes everything now and tries to
push until its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gitkrm.errors import GitkrmError

from .branch import Backoff, Publisher, PushState
from .formats import (
    STATUS_KIND,
    SourceReport,
    note_entry,
    parse,
    render,
    status_document,
    status_entry,
)
from .notes import NoteBook
from .repo import ReportRepo, Write
from .statusfile import StatusFile
from .throttle import Throttle
from .validation import validate_status

log = logging.getLogger("gitkrm.report")

_STATUS_KEY = "status"


@dataclass(slots=True)
class ChannelStats:
    """Counters a test or benchmark can watch: Git writes, deferrals, pushes."""

    note_writes: int = 0
    status_writes: int = 0
    deferred: int = 0
    pushes: int = 0
    push_failures: int = 0


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def _sleep_or(event: asyncio.Event, seconds: float | None) -> None:
    """Wait for `event`, at most `seconds` (None: no limit)."""
    if seconds is not None and seconds <= 0:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()


class Channel:
    """See the module docstring. Create in a running event loop; `close` last."""

    def __init__(
        self,
        repo: ReportRepo,
        *,
        agent: str,
        throttle_s: float,
        backoff: Backoff,
        on_push_state: Callable[[PushState], None] | None = None,
    ) -> None:
        self.repo = repo
        self.agent = agent
        self.lock = asyncio.Lock()
        self.notes = NoteBook(repo, agent=agent)
        self.status = StatusFile(repo, agent=agent)
        self.publisher = Publisher(repo, notes=self.notes, status=self.status, lock=self.lock)
        self.throttle = Throttle(throttle_s)
        self.backoff = backoff
        self.on_push_state = on_push_state
        self.reports: dict[str, SourceReport] = {}
        self.sources: set[str] = set()
        """The sources reported here, synced in this term or not (suspended, not yet)."""
        self._kept: dict[str, dict[str, Any]] | None = None
        self.stats = ChannelStats()
        self.push_state = PushState(url=repo.url)
        self._due_notes: dict[str, dict[str, SourceReport]] = {}
        self._status_dirty = False
        self._written = 0  # writes so far, to tell whether a push took all of them
        self._wake = asyncio.Event()
        self._push_wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._drained = asyncio.Event()
        self._drained.set()
        self._publishing = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._prefetch: asyncio.Task[None] | None = None

    # -- what callers see ---------------------------------------------------------------

    def update(self, report: SourceReport) -> None:
        """Take a source's new report; it reaches Git as soon as the throttle allows."""
        self.reports[report.source.name] = report
        self._due_notes.setdefault(report.revision, {})[report.source.name] = report
        self._status_dirty = True
        self._kick()

    def add(self, source_name: str) -> None:
        """Report a source here. Until it reports in this term (a suspended source, one
        not synced yet since the agent started), the status file keeps its entry as the
        file had it: its last word, with its own times."""
        self.sources.add(source_name)

    def remove(self, source_name: str) -> None:
        """Stop reporting a source: its entry leaves the status file (its notes stay)."""
        self.sources.discard(source_name)
        if self._kept is not None:
            self._kept.pop(source_name, None)
        if self.reports.pop(source_name, None) is not None:
            self._status_dirty = True
            self._kick()

    def prepare(self) -> None:
        """A sync of a source reported here started: meanwhile, bring our copies of the
        remote's refs up to date and our refs onto them (once per channel), so that what
        the sync reports builds on the remote's and is pushed without a fetch first."""
        if self._prefetch is None and not self.publisher.fetched:
            self._prefetch = asyncio.create_task(
                self._prefetching(), name=f"gitkrm-report-fetch-{self.agent}"
            )

    async def _prefetching(self) -> None:
        try:
            async with self._publishing:
                if not self.publisher.fetched:
                    await self.publisher.prepare()
        except (GitkrmError, OSError) as e:
            # The pusher fetches again before its push, and says what is wrong then.
            log.debug("reports of %s not fetched ahead: %s", self.repo.url, _message(e))

    async def _prefetched(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Wait for the fetch ahead (writes build on what it brings), at most `timeout`
        seconds: then it is cancelled (the push fetches again)."""
        task = self._prefetch
        if task is None or task.done():
            return
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def settled(self) -> None:
        """Wait until everything the throttle allows now has been written."""
        while not self._idle.is_set():
            await self._idle.wait()

    async def drained(self) -> None:
        """Wait until every update is written, throttled ones included."""
        while not self._drained.is_set():
            await self._drained.wait()

    async def flush(self, *, timeout: float) -> bool:  # noqa: ASYNC109 (a budget, reported)
        """Write everything now (throttle or not), then push until `timeout` seconds pass.
        True when the remote has it all."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self._prefetched(timeout)
        if not self._tasks:
            return True  # nothing was ever reported here
        try:
            if await self._write(force=True):
                self._written += 1
        except (GitkrmError, OSError) as e:
            log.error("reports for %s not written: %s", self.repo.url, _message(e))
            return False
        failures = 0
        while True:
            remaining = deadline - loop.time()
            try:
                async with self._publishing:
                    async with asyncio.timeout(max(remaining, 0.001)):
                        await self._publish_once()
                return True
            except (GitkrmError, OSError, TimeoutError) as e:
                failures += 1
                remaining = deadline - loop.time()
                if remaining <= 0:
                    log.warning("reports not pushed to %s: %s", self.repo.url, _message(e))
                    return False
                await asyncio.sleep(min(remaining, self.backoff.delay(failures)))

    async def close(self) -> None:
        # Cancelled again until they end: a cancellation swallowed on the way (Python
        # 3.11's wait_for could) must not leave close() waiting for ever.
        await self._prefetched(0)
        pending = set(self._tasks)
        while pending:
            for t in pending:
                t.cancel()
            _, pending = await asyncio.wait(pending, timeout=1.0)
        self._tasks.clear()
        self.repo.close()

    # -- writer -------------------------------------------------------------------------

    def _kick(self) -> None:
        self._idle.clear()
        self._drained.clear()
        self._wake.set()
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._writer(), name=f"gitkrm-report-write-{self.agent}"),
                asyncio.create_task(self._pusher(), name=f"gitkrm-report-push-{self.agent}"),
            ]

    def _next_due(self) -> float | None:
        """Clock time of the next write the throttle will allow, None if nothing waits."""
        times = [self.throttle.ready_at(("note", c)) for c in self._due_notes]
        if self._status_dirty:
            times.append(self.throttle.ready_at(_STATUS_KEY))
        return min(times) if times else None

    async def _writer(self) -> None:
        await self._prefetched()
        while True:
            self._wake.clear()
            try:
                if await self._write(force=False):
                    self._written += 1
                    if not self.push_state.pending:
                        self._set_state(replace(self.push_state, pending=True))
                    self._push_wake.set()
            except (GitkrmError, OSError) as e:
                log.warning(
                    "reports for %s not written: %s; retrying in %gs",
                    self.repo.url,
                    _message(e),
                    self.throttle.interval,
                )
                self._idle.set()
                await _sleep_or(self._wake, max(self.throttle.interval, 1.0))
                continue
            except Exception:
                log.exception("reports for %s not written", self.repo.url)
                self._idle.set()
                await asyncio.sleep(max(self.throttle.interval, 1.0))
                continue
            due = self._next_due()
            now = time.monotonic()
            if due is not None and due <= now:
                continue
            if due is not None:
                self.stats.deferred += 1
            if not self._wake.is_set():
                self._idle.set()
                if due is None:
                    self._drained.set()
            await _sleep_or(self._wake, None if due is None else due - now)

    async def _write(self, *, force: bool) -> bool:
        """Write the notes and the status file the throttle allows (all with `force`), in
        one batch: one `git fast-import` for the lot."""
        async with self.lock:
            now = time.monotonic()
            commits = [c for c in self._due_notes if force or self.throttle.ready(("note", c), now)]
            taken = {c: self._due_notes.pop(c) for c in commits}
            status_due = self._status_dirty and (force or self.throttle.ready(_STATUS_KEY, now))
            if status_due:
                self._status_dirty = False
            try:
                writes: list[Write] = []
                notes: list[tuple[str, dict[str, Any]]] = []
                for commit, reports in taken.items():
                    entries = await asyncio.to_thread(self._note_entries, reports)
                    planned = await self.notes.prepare(commit, entries)
                    if planned is not None:
                        writes.append(planned[0])
                        notes.append((commit, planned[1]))
                status_tip: str | None = None
                if status_due:
                    if self._kept is None and self._needs_kept():
                        self._kept = await self._read_kept()
                    data, message = await asyncio.to_thread(self._status_data, dict(self.reports))
                    planned_status = await self.status.prepare(data, message=message)
                    if planned_status is not None:
                        writes.append(planned_status[0])
                        status_tip = planned_status[1]
                if writes:
                    parents = {self.notes.ref: await self.repo.rev(self.notes.ref)}
                    parents[self.status.ref] = status_tip
                    done = await self.repo.commit(writes, parents=parents)
                    for (commit, doc), result in zip(notes, done, strict=False):
                        self.notes.written(commit, result, doc)
            except BaseException:
                for commit, reports in taken.items():
                    waiting = self._due_notes.setdefault(commit, {})
                    for name, r in reports.items():
                        waiting.setdefault(name, r)  # unless a newer one came meanwhile
                if status_due:
                    self._status_dirty = True
                raise
            for commit in commits:
                self.throttle.mark(("note", commit), now)
            if status_due:
                self.throttle.mark(_STATUS_KEY, now)
            self.stats.note_writes += len(notes)
            if len(writes) > len(notes):
                self.stats.status_writes += 1
        return bool(writes)

    def _needs_kept(self) -> bool:
        """Whether a source reported here has not reported in this term: its entry comes
        from the status file as it was (read only then)."""
        return any(name not in self.reports for name in self.sources)

    def _note_entries(self, reports: Mapping[str, SourceReport]) -> dict[str, Any]:
        redact = self.repo.redact_text
        return {name: note_entry(r, redact=redact) for name, r in reports.items()}

    async def _read_kept(self) -> dict[str, dict[str, Any]]:
        """The entries of our status file as it was before this term, of the sources that
        have not reported in it (valid ones only)."""
        data = await self.status.read()
        if data is None:
            return {}
        try:
            doc = await asyncio.to_thread(parse, data, kind=STATUS_KIND, what=self.status.path)
        except GitkrmError:
            return {}
        kept: dict[str, dict[str, Any]] = {}
        for name, entry in (doc.get("sources") or {}).items():
            if not isinstance(entry, dict) or name in self.reports:
                continue
            try:
                validate_status(status_document(self.agent, {name: entry}, updated=_utcnow()))
            except GitkrmError:
                continue
            kept[str(name)] = entry
        return kept

    def _status_data(self, reports: Mapping[str, SourceReport]) -> tuple[bytes, str]:
        redact = self.repo.redact_text
        kept = {n: e for n, e in (self._kept or {}).items() if n in self.sources}
        entries: dict[str, Any] = {n: e for n, e in kept.items() if n not in reports}
        entries.update({name: status_entry(r, redact=redact) for name, r in reports.items()})
        data = render(status_document(self.agent, entries, updated=_utcnow()))
        lines = [
            f"{name}: {r.revision[:12]} {r.result.value}, health {r.aggregate.value}"
            for name, r in sorted(reports.items())
        ]
        lines += [
            f"{name}: {e.get('revision', '')[:12]} {e.get('result')}, health {e.get('health')}"
            " (not synced since the agent started)"
            for name, e in sorted(entries.items())
            if name not in reports
        ]
        message = f"gitkrm status of {self.agent}\n\n" + "\n".join(lines or ["no sources"])
        return data, message

    # -- pusher -------------------------------------------------------------------------

    async def _publish_once(self) -> None:
        written = self._written
        started = _utcnow()
        try:
            await self.publisher.publish()
        except (GitkrmError, OSError) as e:
            self.stats.push_failures += 1
            failures = self.push_state.failures + 1
            delay = self.backoff.delay(failures)
            self._set_state(
                replace(
                    self.push_state,
                    pending=True,
                    last_attempt=started,
                    last_error=_message(e),
                    failures=failures,
                    next_attempt=started + dt.timedelta(seconds=delay),
                )
            )
            raise
        self.stats.pushes += 1
        self._set_state(
            PushState(
                url=self.repo.url,
                pending=self._written != written,
                last_attempt=started,
                last_success=_utcnow(),
            )
        )

    def _set_state(self, state: PushState) -> None:
        previous = self.push_state
        self.push_state = state
        if state.last_error and state.last_error != previous.last_error:
            log.warning(
                "reports not pushed to %s: %s (attempt %d; retrying with backoff)",
                self.repo.url,
                state.last_error,
                state.failures,
            )
        elif state.last_error is None and previous.last_error is not None:
            log.info("reports pushed to %s again", self.repo.url)
        if self.on_push_state is not None:
            try:
                self.on_push_state(state)
            except Exception:
                log.exception("push state listener failed")

    async def _pusher(self) -> None:
        while True:
            await self._push_wake.wait()
            self._push_wake.clear()
            try:
                async with self._publishing:
                    await self._publish_once()
            except (GitkrmError, OSError):
                delay = self.push_state.next_attempt
                wait = (delay - _utcnow()).total_seconds() if delay is not None else 1.0
                await asyncio.sleep(max(wait, 0.0))
                self._push_wake.set()
            except Exception:
                log.exception("reports for %s not pushed", self.repo.url)
                await asyncio.sleep(self.backoff.maximum)
                self._push_wake.set()
            else:
                if self.push_state.pending:
                    self._push_wake.set()


def _message(e: BaseException) -> str:
    if isinstance(e, GitkrmError):
        return e.message
    return f"{type(e).__name__}: {e}"
