"""Parsed files on disk: a new renderer (a new process) parses only blobs no earlier one
parsed; anything wrong with the file is an empty cache, never a failure."""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from gitkrm.sync import parsecache
from gitkrm.sync.parse import ParseContext, ParsedFile, builtin_registry, parse_file
from gitkrm.sync.parsecache import ParseCache
from gitkrm.sync.pool import parse_many
from gitkrm.sync.render import Renderer, RenderResult
from tests.sync.sync_helpers import configmap, deployment, snapshot

CTX = ParseContext(source="src", default_namespace="apps")
SECRET = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\n"
FILES: dict[str, str | bytes] = {
    "a.yaml": configmap("a"),
    "b.yaml": deployment(),
    "c.json": '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}',
    "s.yaml": SECRET,
}


class Parses:
    """Counts the files the renderer hands to the parser."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: list[str] = []

        async def spy(items: Sequence[tuple[str, bytes]], ctx: ParseContext, **kw: Any) -> Any:
            self.files.extend(p for p, _ in items)
            return await parse_many(items, ctx, **kw)

        monkeypatch.setattr("gitkrm.sync.render_files.parse_many", spy)


async def render(
    path: Path, files: Mapping[str, str | bytes], *, read_only: bool = False
) -> RenderResult:
    renderer = Renderer(context=CTX, disk=ParseCache(path, read_only=read_only))
    result = await renderer.render(snapshot(files), namespaces={"apps"})
    assert not result.problems, result.problems
    return result


def docs(result: RenderResult) -> list[tuple[str, str]]:
    return [(d.key, d.applied) for d in result.objects]


async def test_a_new_renderer_parses_nothing_an_earlier_one_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parses = Parses(monkeypatch)
    path = tmp_path / "cache" / "parsed" / "src.bin"
    first = await render(path, FILES)
    assert first.files_parsed == 4
    assert sorted(parses.files) == sorted(FILES)
    parses.files.clear()
    second = await render(path, FILES)  # a new process: nothing in memory
    assert second.files_parsed == 0
    assert parses.files == []
    assert docs(second) == docs(first)
    changed = {**FILES, "a.yaml": configmap("a", data="a: '2'")}
    third = await render(path, changed)
    assert third.files_parsed == 1
    assert parses.files == ["a.yaml"]


async def test_the_file_is_private_it_holds_secrets(tmp_path: Path) -> None:
    path = tmp_path / "state" / "cache" / "parsed" / "src.bin"
    (tmp_path / "state").mkdir()
    await render(path, FILES)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["src.bin"]  # no temporary left


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"garbage",
        lambda data: b"",
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-10] + bytes(b ^ 0xFF for b in data[-10:]),  # bits flipped
        lambda data: parsecache.MAGIC + b"\0" * 32 + data[len(parsecache.MAGIC) + 32 :],
    ],
    ids=["garbage", "empty", "truncated", "flipped", "other-version"],
)
async def test_a_damaged_file_is_an_empty_cache_and_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    path = tmp_path / "src.bin"
    first = await render(path, FILES)
    path.write_bytes(damage(path.read_bytes()))
    parses = Parses(monkeypatch)
    again = await render(path, FILES)
    assert again.files_parsed == 4
    assert docs(again) == docs(first)
    parses.files.clear()
    assert (await render(path, FILES)).files_parsed == 0  # rebuilt


async def test_a_directory_in_the_way_is_no_failure(tmp_path: Path) -> None:
    path = tmp_path / "src.bin"
    path.mkdir()  # can't be read nor replaced
    result = await render(path, FILES)
    assert result.files_parsed == 4


async def test_other_parse_settings_do_not_use_the_file(tmp_path: Path) -> None:
    path = tmp_path / "src.bin"
    await render(path, FILES)
    other = Renderer(
        context=ParseContext(source="other", default_namespace="apps"), disk=ParseCache(path)
    )
    result = await other.render(snapshot(FILES), namespaces={"apps"})
    assert result.files_parsed == 4
    assert result.objects[0].obj["metadata"]["labels"]["gitkrm.io/source"] == "other"


async def test_read_only_uses_the_file_and_never_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "src.bin"
    assert (await render(path, FILES, read_only=True)).files_parsed == 4
    assert not path.exists()
    await render(path, FILES)
    before = path.read_bytes()
    changed = {**FILES, "a.yaml": configmap("a", data="a: '2'")}
    assert (await render(path, changed, read_only=True)).files_parsed == 1
    assert path.read_bytes() == before


async def test_entries_of_the_last_two_writing_renders_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "src.bin"
    v1 = {"a.yaml": configmap("a", data="a: '1'")}
    v2 = {"a.yaml": configmap("a", data="a: '2'")}
    v3 = {"a.yaml": configmap("a", data="a: '3'")}
    await render(path, v1)
    await render(path, v2)
    assert (await render(path, v1)).files_parsed == 0  # a revert finds its blob
    await render(path, v3)  # written with v3 (used) and v2 (the render before that wrote)
    assert (await render(path, v2)).files_parsed == 0
    assert (await render(path, v1)).files_parsed == 1  # dropped


def test_round_trip_of_every_field(tmp_path: Path) -> None:
    reg = builtin_registry()
    files = {
        "ok.yaml": parse_file("ok.yaml", configmap("a").encode(), ctx=CTX, registry=reg),
        "bad.yaml": parse_file("bad.yaml", b"a: [\n", ctx=CTX, registry=reg),
        "cr.yaml": parse_file(
            "cr.yaml",
            b"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
            ctx=CTX,
            registry=reg,
        ),
        "invalid.yaml": parse_file(
            "invalid.yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: 1}\n",
            ctx=CTX,
            registry=reg,
        ),
    }
    assert files["bad.yaml"].error is not None
    assert files["cr.yaml"].deferred
    assert files["invalid.yaml"].objects[0].problems
    cache = ParseCache(tmp_path / "c.bin")
    cache.save(CTX, files)
    loaded = ParseCache(tmp_path / "c.bin").load(CTX)
    assert loaded == files
    assert all(type(v) is ParsedFile for v in loaded.values())


def test_a_cache_over_its_bound_keeps_this_render_only_or_nothing(tmp_path: Path) -> None:
    reg = builtin_registry()
    old = {"old": parse_file("o.yaml", configmap("old").encode(), ctx=CTX, registry=reg)}
    new = {"new": parse_file("n.yaml", configmap("new").encode(), ctx=CTX, registry=reg)}
    path = tmp_path / "c.bin"
    ParseCache(path).save(CTX, old)
    one = len(path.read_bytes())
    cache = ParseCache(path, max_bytes=one)  # room for one entry, not two
    cache.load(CTX)
    cache.save(CTX, new)
    assert set(ParseCache(path).load(CTX)) == {"new"}
    ParseCache(path, max_bytes=10).save(CTX, new)
    assert not path.exists()
