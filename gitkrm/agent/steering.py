"""What asks a source's worker for a sync besides the ticks, and what an edit of a GitSource
changes: local changes of a watched repository or directory, and the GitSource objects
(spec edits, the `gitkrm.io/requestedAt` annotation). Part of an agent's term
(`gitkrm.agent.term`), which hands each function the runner, worker or store it steers."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

from gitkrm.errors import Expired, GitkrmError
from gitkrm.krm import Obj
from gitkrm.store import EventType, Store
from gitkrm.store.protocol import meta

from . import crd
from .config import is_remote_url
from .config_read import from_object
from .crd import REQUESTED_AT
from .runner import SourceRunner
from .scheduler import Scheduler, SourceWorker, Trigger

log = logging.getLogger("gitkrm.agent")

Stopping = Callable[[], bool]
"""Whether the term is ending (a watch loop stops)."""


async def apply_spec(
    runner: SourceRunner, obj: Obj, *, scheduler: Scheduler, replaced: asyncio.Event
) -> None:
    """Use an edited GitSource's spec (before the sync it asked for); an unusable spec
    stalls the source until it is fixed. A new interval reschedules the source's ticks; a
    new source (another URL, ref, path ...) sets `replaced` (its change watch restarts)."""
    generation = int(meta(obj).get("generation") or 0)
    try:
        config = from_object(obj, base=Path("/"))
    except GitkrmError as e:
        log.error(
            "spec not used",
            extra={"fields": {"source": runner.name, "generation": generation, "error": e.message}},
        )
        runner.spec_error = f"GitSource spec (generation {generation}): {e.message}"
        runner.generation = generation
        return
    runner.spec_error = None
    if config.url == runner.config.safe_url:
        # The stored URL has no user-info: keep the credentials the flags gave.
        config = dataclasses.replace(config, url=runner.config.url)
    interval_changed = config.interval != runner.config.interval
    source = runner.source
    await runner.reconfigure(config, generation=generation)
    if interval_changed:
        scheduler.reschedule(runner.name, interval=config.interval)
    if runner.source is not source:
        replaced.set()
    log.info(
        "spec in use",
        extra={
            "fields": {
                "source": runner.name,
                "generation": generation,
                "suspend": config.suspend,
                "interval": config.interval,
            }
        },
    )


async def watch_changes(
    runner: SourceRunner, worker: SourceWorker, *, replaced: asyncio.Event, stopping: Stopping
) -> None:
    """Ask `worker` for a sync whenever the runner's local repository or directory changes."""
    name = runner.name
    while not stopping():
        source = runner.source
        changes = getattr(source, "changes", None)
        if changes is not None:
            try:
                async for _ in changes():
                    worker.request(Trigger.CHANGE)
            except (OSError, RuntimeError, GitkrmError) as e:
                log.warning("source %s: not watching for changes: %s", name, e)
        if runner.source is not source:
            continue
        if is_remote_url(runner.config.url):
            await replaced.wait()  # nothing to watch until the spec points elsewhere
        else:
            # The watched path went away (moved, deleted): interval ticks still run, and
            # the watch starts again after an interval.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(runner.config.interval):
                    await replaced.wait()
        replaced.clear()


async def watch_gitsources(
    store: Store, rv: str, *, on_gitsource: Callable[[Obj], None], stopping: Stopping
) -> None:
    """Hand every GitSource as watched from `rv` (added or modified) to `on_gitsource`."""
    while not stopping():
        try:
            async for event in store.watch(crd.GITSOURCE_GVK, crd.NAMESPACE, rv):
                if event.type in (EventType.ADDED, EventType.MODIFIED):
                    rv = meta(event.obj).get("resourceVersion", rv)
                    on_gitsource(event.obj)
            # The store ended the watch (a slow watcher is dropped): watch again.
        except Expired:
            pass
        except GitkrmError as e:
            if stopping():
                return
            log.error("watch of GitSources ended: %s; watching again", e.message)
        await asyncio.sleep(1.0)  # never a busy loop, whatever ends the watch
        try:
            listed = await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE)
        except GitkrmError:
            continue
        rv = listed["metadata"]["resourceVersion"]
        for obj in listed.get("items", []):
            on_gitsource(obj)


def on_gitsource(runner: SourceRunner, worker: SourceWorker, obj: Obj) -> Obj | None:
    """The runner's GitSource as watched: a new generation or a new request asks `worker`
    for a sync. Returns the object whose spec that sync is to use (a new generation)."""
    m = meta(obj)
    pending = None
    generation = int(m.get("generation") or 0)
    if generation and generation != runner.generation:
        pending = copy.deepcopy(obj)
        worker.request(Trigger.SPEC)
    asked = (m.get("annotations") or {}).get(REQUESTED_AT)
    if asked and asked != runner.requested_at:
        runner.requested_at = asked
        worker.request(Trigger.REQUEST)
    return pending
