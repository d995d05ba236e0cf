"""`gitkrm diff`: what a sync would change, as a unified YAML diff (exit 0 in sync, 1
differences, 2 error). Nothing is written: the target is read (an agent may be running on
it: the embedded store read-only, or a cluster), and Git sources are fetched into a
temporary cache."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitkrm.agent.state import STORE_FILE, store_url
from gitkrm.errors import GitkrmError

from .source_flags import add_source_flags, agent_name, apply_mode, sources, target_url

if TYPE_CHECKING:  # imported by the command, not by the parser
    from gitkrm.agent.config import ApplyMode, SourceConfig
    from gitkrm.store import Store


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "diff",
        help="show what a sync would change (exit 0 in sync, 1 differences, 2 error)",
        description="Render the sources and print a unified YAML diff per object that a sync "
        "would change (Secrets redacted). Nothing is written.",
    )
    add_source_flags(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    url = target_url(args)
    configs = sources(args)
    name = agent_name(args)
    mode = apply_mode(args)
    result: int = asyncio.run(_diff(args.state, url, configs, agent=name, apply_mode=mode))
    return result


async def _open(state: Path, url: str | None) -> Store:
    """The cluster, or the agent's store read-only (an empty one when nothing was synced)."""
    from gitkrm.store.url import open_store

    if url is not None:
        return await open_store(url)
    if (state / STORE_FILE).exists():
        return await open_store(store_url(state), read_only=True)
    return await open_store("sqlite:///:memory:")


async def _diff(
    state: Path,
    url: str | None,
    configs: list[SourceConfig],
    *,
    agent: str,
    apply_mode: ApplyMode,
) -> int:
    store = await _open(state, url)
    code = 0
    try:
        with tempfile.TemporaryDirectory(prefix="gitkrm-diff-") as tmp:
            for config in configs:
                code = max(
                    code, await _diff_one(store, config, agent, apply_mode, Path(tmp), state)
                )
    finally:
        await store.close()
    return code


async def _diff_one(
    store: Store, config: SourceConfig, agent: str, apply_mode: ApplyMode, tmp: Path, state: Path
) -> int:
    from gitkrm.agent import lastsync  # heavy imports, only when diffing
    from gitkrm.agent.config import sync_options
    from gitkrm.agent.sources import open_source
    from gitkrm.agent.state import last_sync_file, parse_cache_file
    from gitkrm.sync.engine import SyncEngine
    from gitkrm.sync.parsecache import ParseCache

    options = sync_options(config, agent_name=agent, apply_mode=apply_mode)
    source = open_source(config, git_cache=tmp / config.name)
    cache = ParseCache(parse_cache_file(state, config.name), read_only=True)
    engine = SyncEngine(store=store, options=options, parse_cache=cache)
    try:
        try:
            fingerprint = lastsync.fingerprint(config, agent_name=agent, apply_mode=apply_mode)
            path = last_sync_file(state, config.name)
            same = await lastsync.unchanged(
                path, store=store, source=source, fingerprint=fingerprint
            )
            if same is not None:
                print(
                    f"{config.name}: in sync, nothing changed since the last sync of revision "
                    f"{same.revision[:12]}",
                    file=sys.stderr,
                )
                return 0
            snapshot = await source.snapshot()
        except GitkrmError as e:
            print(f"gitkrm: error: source {config.name}: {e.message}", file=sys.stderr)
            return 2
        plan = await engine.plan(snapshot)
        if plan.errors:
            from gitkrm.krm import masking

            for problem in plan.errors:
                print(masking.mask(problem), file=sys.stderr)
            return 2
        text = engine.diff_text(plan)
        if text:
            print(text, end="" if text.endswith("\n") else "\n")
        return 0 if plan.in_sync else 1
    finally:
        await engine.close()
        await source.close()
