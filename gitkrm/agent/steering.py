"""What asks a source's worker for a sync besides the ticks, and what an edit of a GitSource
changes: local changes of a watched repository or directory, and the GitSource objects
(spec edits, the `gitkrm.io/requestedAt` annotation). Part of an agent's term."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from gitkrm.errors import Expired, GitkrmError
from gitkrm.krm import Obj
from gitkrm.store import EventType
from gitkrm.store.protocol import meta

from . import crd
from .config import from_object, is_remote_url
from .crd import REQUESTED_AT
from .runner import SourceRunner
from .scheduler import Trigger

if TYPE_CHECKING:
    from .agent import Agent

log = logging.getLogger("gitkrm.agent")


async def apply_spec(agent: Agent, runner: SourceRunner, obj: Obj) -> None:
    """Use an edited GitSource's spec (before the sync it asked for); an unusable spec
    stalls the source until it is fixed."""
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
        agent.scheduler.reschedule(runner.name, interval=config.interval)
    if runner.source is not source:
        agent.replaced[runner.name].set()
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


async def watch_changes(agent: Agent, name: str) -> None:
    """Ask for a sync whenever a local repository or directory changes."""
    while not agent.stopping:
        runner = agent.runners[name]
        source = runner.source
        changes = getattr(source, "changes", None)
        if changes is not None:
            try:
                async for _ in changes():
                    agent.workers[name].request(Trigger.CHANGE)
            except (OSError, RuntimeError, GitkrmError) as e:
                log.warning("source %s: not watching for changes: %s", name, e)
        replaced = agent.replaced[name]
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


async def watch_gitsources(agent: Agent, rv: str) -> None:
    """React to edits of the GitSource objects: spec changes and sync requests."""
    store = agent.require_store()
    while not agent.stopping:
        try:
            async for event in store.watch(crd.GITSOURCE_GVK, crd.NAMESPACE, rv):
                if event.type in (EventType.ADDED, EventType.MODIFIED):
                    rv = meta(event.obj).get("resourceVersion", rv)
                    on_gitsource(agent, event.obj)
            # The store ended the watch (a slow watcher is dropped): watch again.
        except Expired:
            pass
        except GitkrmError as e:
            if agent.stopping:
                return
            log.error("watch of GitSources ended: %s; watching again", e.message)
        await asyncio.sleep(1.0)  # never a busy loop, whatever ends the watch
        try:
            listed = await store.list(crd.GITSOURCE_GVK, crd.NAMESPACE)
        except GitkrmError:
            continue
        rv = listed["metadata"]["resourceVersion"]
        for obj in listed.get("items", []):
            on_gitsource(agent, obj)


def on_gitsource(agent: Agent, obj: Obj) -> None:
    """A GitSource as watched: a new generation or a new request asks for a sync."""
    m = meta(obj)
    name = m.get("name", "")
    runner = agent.runners.get(name)
    worker = agent.workers.get(name)
    if runner is None or worker is None:
        return
    generation = int(m.get("generation") or 0)
    if generation and generation != runner.generation:
        agent.pending_spec[name] = copy.deepcopy(obj)
        worker.request(Trigger.SPEC)
    asked = (m.get("annotations") or {}).get(REQUESTED_AT)
    if asked and asked != runner.requested_at:
        runner.requested_at = asked
        worker.request(Trigger.REQUEST)
