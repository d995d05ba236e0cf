"""`run --once` with nothing to do: each agent here is a new process (nothing in memory),
on the same state dir, syncing a real Git remote into the real SQLite store."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gitkrm.agent import lastsync
from gitkrm.agent.agent import Agent, AgentOptions, exit_code
from gitkrm.agent.config import SourceConfig
from gitkrm.agent.state import last_sync_file, parse_cache_file, store_url
from gitkrm.agent.status import Outcome
from gitkrm.krm import Obj, ObjectRef
from gitkrm.source import VerifySpec
from gitkrm.store import open_store
from gitkrm.sync import live
from gitkrm.sync.engine import SyncEngine
from gitkrm.sync.parse import ParseContext
from gitkrm.sync.pool import parse_many
from gitkrm.sync.results import Counts
from tests.sync.sync_helpers import Remote, configmap


def _cms(prefix: str, count: int) -> str:
    return "---\n".join(configmap(f"{prefix}-{i}", ns="default") for i in range(count))


class Calls:
    """What the agents of a test parse and sync (the full path), counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parsed: list[str] = []
        self.syncs = 0

        async def parse(items: Sequence[tuple[str, bytes]], ctx: ParseContext, **kw: Any) -> Any:
            self.parsed.extend(p for p, _ in items)
            return await parse_many(items, ctx, **kw)

        real = SyncEngine.sync

        async def sync(engine: SyncEngine, *args: Any, **kw: Any) -> Any:
            self.syncs += 1
            return await real(engine, *args, **kw)

        monkeypatch.setattr("gitkrm.sync.render_files.parse_many", parse)
        monkeypatch.setattr(SyncEngine, "sync", sync)

    def reset(self) -> None:
        self.parsed.clear()
        self.syncs = 0


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    return Calls(monkeypatch)


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    r = Remote(tmp_path / "repo")
    r.write("a.yaml", _cms("a", 3))
    r.write("b.yaml", _cms("b", 2))
    r.commit("first")
    return r


def _source(remote: Remote, name: str = "apps", **kw: Any) -> SourceConfig:
    return SourceConfig(name=name, url=remote.url, **kw)


async def run_once(
    state: Path, *sources: SourceConfig, skip_unchanged: bool = True, report: bool = False
) -> list[Outcome]:
    """One `run --once` (a new agent: nothing in memory but the state dir)."""
    agent = Agent(
        AgentOptions(
            state_dir=state,
            agent_name="unit",
            sources=sources,
            watch_changes=False,
            report=report,
            skip_unchanged=skip_unchanged,
        )
    )
    try:
        await agent.open()
        return await agent.sync_once()
    finally:
        await agent.close()


class StateStore:
    """The state dir's store, opened for a moment (as `kubectl edit` would write to it)."""

    def __init__(self, state: Path) -> None:
        self.url = store_url(state)

    async def revision(self) -> str:
        store = await open_store(self.url, read_only=True)
        try:
            return await live.current_revision(store)
        finally:
            await store.close()

    async def get(self, name: str) -> Obj:
        store = await open_store(self.url, read_only=True)
        try:
            return await store.get(_cm(name))
        finally:
            await store.close()

    async def edit(self, name: str, data: dict[str, str]) -> None:
        store = await open_store(self.url)
        try:
            obj = await store.get(_cm(name))
            obj["data"] = data
            await store.update(obj)
        finally:
            await store.close()


def _cm(name: str) -> ObjectRef:
    return ObjectRef(group="", kind="ConfigMap", name=name, namespace="default", version="v1")


async def test_nothing_changed_nothing_done(tmp_path: Path, remote: Remote, calls: Calls) -> None:
    state = tmp_path / "state"
    first = await run_once(state, _source(remote))
    assert exit_code(first) == 0
    assert (first[0].counts or Counts())["created"] == 5
    assert not first[0].nothing_changed
    record = lastsync.load(last_sync_file(state, "apps"))
    assert record is not None
    assert record.revision == first[0].revision
    assert record.objects == 5
    store = StateStore(state)
    before = await store.revision()
    assert record.resource_version == before
    calls.reset()

    second = await run_once(state, _source(remote))
    assert exit_code(second) == 0
    assert second[0].nothing_changed
    assert second[0].revision == first[0].revision
    assert (second[0].counts or Counts())["unchanged"] == 5
    assert calls.syncs == 0  # nothing rendered, planned or applied
    assert calls.parsed == []
    assert await store.revision() == before  # nothing written, not even the status


async def test_a_new_process_does_not_parse_what_an_earlier_one_parsed(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    await run_once(state, _source(remote))
    assert sorted(calls.parsed) == ["a.yaml", "b.yaml"]
    assert parse_cache_file(state, "apps").is_file()
    await StateStore(state).edit("a-0", {"a": "edited"})  # the store moved: a full sync
    calls.reset()
    again = await run_once(state, _source(remote))
    assert exit_code(again) == 0
    assert calls.syncs == 1
    assert calls.parsed == []  # every blob came from the state dir


async def test_an_edit_of_the_store_is_drift_corrected_by_a_full_sync(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    await run_once(state, _source(remote))
    store = StateStore(state)
    await store.edit("b-1", {"a": "kubectl edit"})
    calls.reset()
    fixed = await run_once(state, _source(remote))
    assert exit_code(fixed) == 0
    assert not fixed[0].nothing_changed
    assert calls.syncs == 1
    assert (fixed[0].counts or Counts())["configured"] == 1
    assert (await store.get("b-1"))["data"] == {"a": "1"}
    calls.reset()
    quiet = await run_once(state, _source(remote))  # recorded again after the fix
    assert quiet[0].nothing_changed
    assert calls.syncs == 0


async def test_a_new_commit_is_synced_parsing_only_the_changed_file(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    first = await run_once(state, _source(remote))
    remote.write("b.yaml", _cms("b", 3))
    revision = remote.commit("one more")
    calls.reset()
    synced = await run_once(state, _source(remote))
    assert not synced[0].nothing_changed
    assert synced[0].revision == revision != first[0].revision
    assert (synced[0].counts or Counts())["created"] == 1
    assert calls.parsed == ["b.yaml"]
    record = lastsync.load(last_sync_file(state, "apps"))
    assert record is not None
    assert record.revision == revision
    assert record.objects == 6


async def test_damaged_cache_files_cost_a_full_sync_not_a_failure(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    await run_once(state, _source(remote))
    parse_cache_file(state, "apps").write_bytes(b"\0garbage")
    last_sync_file(state, "apps").write_bytes(b"{not json")
    calls.reset()
    again = await run_once(state, _source(remote))
    assert exit_code(again) == 0
    assert not again[0].nothing_changed
    assert sorted(calls.parsed) == ["a.yaml", "b.yaml"]
    calls.reset()
    assert (await run_once(state, _source(remote)))[0].nothing_changed  # both rebuilt


async def test_other_settings_or_no_skipping_mean_a_full_sync(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    await run_once(state, _source(remote))
    calls.reset()
    assert not (await run_once(state, _source(remote), skip_unchanged=False))[0].nothing_changed
    assert calls.syncs == 1
    calls.reset()
    assert (await run_once(state, _source(remote)))[0].nothing_changed
    other = _source(remote, default_namespace="elsewhere")
    assert not (await run_once(state, other))[0].nothing_changed
    assert calls.syncs == 1


async def test_a_store_made_anew_is_not_the_recorded_one(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    await run_once(state, _source(remote))
    record = lastsync.load(last_sync_file(state, "apps"))
    assert record is not None
    for f in state.glob("store.db*"):
        f.unlink()
    await run_once(state, _source(remote))  # a new store, synced from scratch
    forged = dataclasses.replace(record, resource_version=await StateStore(state).revision())
    lastsync.save(last_sync_file(state, "apps"), forged)  # same revision number, other store
    calls.reset()
    assert not (await run_once(state, _source(remote)))[0].nothing_changed
    assert calls.syncs == 1


async def test_sources_converge_to_nothing_to_do(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    other = Remote(tmp_path / "other")
    other.write("c.yaml", _cms("c", 2))
    other.commit()
    sources = (_source(remote), _source(other, name="more"))
    await run_once(state, *sources)  # "more" synced after "apps": only "more" recorded
    await run_once(state, *sources)
    calls.reset()
    outcomes = await run_once(state, *sources)
    assert [o.nothing_changed for o in outcomes] == [True, True]
    assert calls.syncs == 0


async def test_reports_into_git_do_not_keep_it_busy(
    tmp_path: Path, remote: Remote, calls: Calls
) -> None:
    state = tmp_path / "state"
    await run_once(state, _source(remote), report=True)
    calls.reset()
    again = await run_once(state, _source(remote), report=True)
    assert again[0].nothing_changed
    assert calls.syncs == 0


def test_signature_verification_is_never_skipped(remote: Remote) -> None:
    plain = _source(remote)
    assert lastsync.fingerprint(plain, agent_name="a", apply_mode="client-side") is not None
    verified = _source(remote, verify=VerifySpec(keyring=Path("/keys")))
    assert lastsync.fingerprint(verified, agent_name="a", apply_mode="client-side") is None
    assert lastsync.fingerprint(
        plain, agent_name="a", apply_mode="client-side"
    ) != lastsync.fingerprint(plain, agent_name="a", apply_mode="server-side")


def test_an_overlay_is_part_of_the_fingerprint(remote: Remote) -> None:
    """A Flux Kustomization over another repository edited (its namePrefix) leaves that
    repository's revision as it was: the child must sync again all the same."""
    from gitkrm.sync.overlay_spec import Overlay

    def fp(config: SourceConfig) -> str | None:
        return lastsync.fingerprint(config, agent_name="a", apply_mode="client-side")

    plain = _source(remote)
    a, b = (_source(remote, overlay=Overlay(name_prefix=p)) for p in ("a-", "b-"))
    assert len({fp(plain), fp(a), fp(b)}) == 3
    assert fp(a) == fp(_source(remote, overlay=Overlay(name_prefix="a-")))
