"""What `gitkrm diff` and `gitkrm plan` share: the target opened read-only, and each source
fetched into a temporary Git cache, with an engine that plans it without writing.

Nothing is written to the target or to Git: the embedded store is opened read-only (an
agent may be running on it), or an empty in-memory one when nothing was synced; parsed
files come from the agent's parse cache, read-only."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitkrm.agent.state import STORE_FILE, store_url
from gitkrm.errors import GitkrmError

if TYPE_CHECKING:  # imported by the commands, not by the parser
    from gitkrm.agent.config import ApplyMode, SourceConfig
    from gitkrm.agent.lastsync import LastSync
    from gitkrm.source import Source
    from gitkrm.source.snapshot import Snapshot
    from gitkrm.store import Store
    from gitkrm.sync.engine import SyncEngine

EXIT_ERROR = 2


async def open_target(state: Path, url: str | None) -> Store:
    """The cluster, or the agent's store read-only (an empty one when nothing was synced)."""
    from gitkrm.store.url import open_store

    if url is not None:
        return await open_store(url)
    if (state / STORE_FILE).exists():
        return await open_store(store_url(state), read_only=True)
    return await open_store("sqlite:///:memory:")


@dataclass(frozen=True, slots=True)
class Opened:
    """One source ready to plan: its settings, its revision and an engine on the target."""

    config: SourceConfig
    engine: SyncEngine
    source: Source
    snapshot: Snapshot
    tmp: Path  # a temporary directory for this run (other Git caches, e.g. a base ref)
    state: Path
    agent: str
    apply_mode: ApplyMode
    settled: bool = False  # the store is as a settled sync of these settings left it


Visit = Callable[[Opened], Awaitable[int]]
Unchanged = Callable[["SourceConfig", "LastSync"], int]


def say_unchanged(config: SourceConfig, same: LastSync) -> int:
    print(
        f"{config.name}: in sync, nothing changed since the last sync of revision "
        f"{same.revision[:12]}",
        file=sys.stderr,
    )
    return 0


def each_source(
    args: argparse.Namespace,
    *,
    visit: Visit,
    unchanged: Unchanged | None = say_unchanged,
    url: str | None = None,
    configs: list[SourceConfig] | None = None,
    around: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> list[int]:
    """`visit` each source of the flags once it is fetched (the exit code of each, in
    order). A source the record of the last sync says is unchanged goes to `unchanged`
    instead (None: every source is visited); a source that can't be fetched is an error on
    stderr (code 2). `url` and `configs`: the target and sources, when the command has
    read them from the flags already. `around`: a context the visits run in, left once
    they are all done (in the same event loop: `plan --simulate`'s one twin)."""
    from .source_flags import agent_name, apply_mode, sources, target_url

    return asyncio.run(
        _each(
            args.state,
            target_url(args) if url is None and configs is None else url,
            sources(args) if configs is None else configs,
            agent=agent_name(args),
            apply_mode=apply_mode(args),
            visit=visit,
            unchanged=unchanged,
            around=around,
        )
    )


async def _each(
    state: Path,
    url: str | None,
    configs: list[SourceConfig],
    *,
    agent: str,
    apply_mode: ApplyMode,
    visit: Visit,
    unchanged: Unchanged | None,
    around: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> list[int]:
    store = await open_target(state, url)
    codes: list[int] = []
    try:
        with tempfile.TemporaryDirectory(prefix="gitkrm-plan-") as tmp:
            async with around() if around is not None else contextlib.nullcontext():
                for config in configs:
                    codes.append(
                        await _one(
                            store, config, agent, apply_mode, Path(tmp), state, visit, unchanged
                        )
                    )
    finally:
        await store.close()
    return codes


async def open_child(
    opened: Opened, config: SourceConfig, visit: Visit, *, errors: list[str] | None = None
) -> int:
    """`visit` one more source on the target of `opened` (a child source a revision
    declares: `plan_tree`), fetched into the same temporary directory; why it could not
    be read goes to `errors` too."""
    store = opened.engine.store
    tmp, state = opened.tmp, opened.state
    return await _one(
        store, config, opened.agent, opened.apply_mode, tmp, state, visit, None, errors=errors
    )


async def _one(
    store: Store,
    config: SourceConfig,
    agent: str,
    apply_mode: ApplyMode,
    tmp: Path,
    state: Path,
    visit: Visit,
    unchanged: Unchanged | None,
    *,
    errors: list[str] | None = None,
) -> int:
    from gitkrm.agent import lastsync  # heavy imports, only when planning
    from gitkrm.agent.config import sync_options
    from gitkrm.agent.sources import open_source
    from gitkrm.agent.state import last_sync_file, parse_cache_file
    from gitkrm.sync.engine import SyncEngine
    from gitkrm.sync.parsecache import ParseCache

    options = sync_options(config, agent_name=agent, apply_mode=apply_mode)
    source = open_source(config, git_cache=tmp / config.name)
    cache = ParseCache(parse_cache_file(state, config.name), read_only=True)
    engine = SyncEngine(store=store, options=options, parse_cache=cache)
    path = last_sync_file(state, config.name)
    try:
        try:
            if unchanged is not None:
                fingerprint = lastsync.fingerprint(config, agent_name=agent, apply_mode=apply_mode)
                same = await lastsync.unchanged(
                    path, store=store, source=source, fingerprint=fingerprint
                )
                if same is not None:
                    return unchanged(config, same)
            snapshot = await source.snapshot()
            settings = lastsync.fingerprint(
                config, agent_name=agent, apply_mode=apply_mode, any_ref=True
            )
            settled = await lastsync.settled(path, store=store, settings=settings)
        except GitkrmError as e:
            print(f"gitkrm: error: source {config.name}: {e.message}", file=sys.stderr)
            if errors is not None:
                errors.append(e.message)
            return EXIT_ERROR
        opened = Opened(
            config, engine, source, snapshot, tmp, state, agent, apply_mode, settled=settled
        )
        return await visit(opened)
    finally:
        await engine.close()
        await source.close()
