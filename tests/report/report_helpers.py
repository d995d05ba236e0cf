"""Helpers of the report tests: results, verdicts, and reading back (and validating) what
the reporter wrote into a repository."""

from __future__ import annotations

import asyncio
import datetime as dt
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from gitkrm.health import Health, HealthResult
from gitkrm.krm import ObjectRef
from gitkrm.report import PushState, Reporter, validate_note, validate_status
from gitkrm.sync.results import Action, ObjectResult, SyncResult, make_result
from tests.source.source_gitrepo import ENV, RemoteRepo


def deployment(name: str, namespace: str = "default") -> ObjectRef:
    return ObjectRef(group="apps", kind="Deployment", name=name, namespace=namespace)


def service(name: str, namespace: str = "default") -> ObjectRef:
    return ObjectRef(group="", kind="Service", name=name, namespace=namespace)


CURRENT = HealthResult(Health.CURRENT, "Resource is current")
PROGRESSING = HealthResult(Health.IN_PROGRESS, "Available: 0/3", "LessAvailable")
DEADLINE = HealthResult(Health.FAILED, "Progress deadline exceeded", "ProgressDeadlineExceeded")


def result(
    revision: str,
    refs: Iterable[ObjectRef],
    *,
    action: Action = Action.CREATED,
    errors: Iterable[str] = (),
) -> SyncResult:
    return make_result(
        revision=revision, objects=[ObjectResult(r, action) for r in refs], errors=errors
    )


async def synced(
    rep: Reporter,
    revision: str,
    health: Mapping[ObjectRef, HealthResult],
    *,
    source: str = "default",
    action: Action = Action.CREATED,
) -> None:
    """A sync of the objects `health` names (each `action`) recorded; its writes done."""
    await rep.record_sync(
        source_name=source, result=result(revision, health, action=action), health=health
    )
    await rep.settled()


def git_out(git_dir: Path, *args: str, check: bool = True) -> str:
    res = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], env=ENV, capture_output=True, text=True, check=False
    )
    if check and res.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {res.stderr}")
    return res.stdout


def _shown_yaml(git_dir: Path, *args: str) -> dict[str, Any] | None:
    """The YAML a git command shows (`show`, `notes show`); None when it shows nothing."""
    res = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], env=ENV, capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        return None
    doc: dict[str, Any] = yaml.safe_load(res.stdout)
    return doc


def read_note(git_dir: Path, agent: str, commit: str) -> dict[str, Any] | None:
    """The note of `commit` by `agent` in a repository, validated; None if there is none."""
    doc = _shown_yaml(git_dir, "notes", f"--ref=gitkrm/{agent}", "show", commit)
    if doc is not None:
        validate_note(doc)
    return doc


def read_status(
    git_dir: Path, agent: str, ref: str = "refs/heads/gitkrm/status"
) -> dict[str, Any] | None:
    """The status file of `agent` on a status ref, validated; None if there is none."""
    doc = _shown_yaml(git_dir, "show", f"{ref}:status/{agent}.yaml")
    if doc is not None:
        validate_status(doc)
    return doc


def stored_entry(
    updated: str, *, time: str = "2024-05-01T10:00:00Z", **extra: Any
) -> dict[str, Any]:
    """A note entry as a NoteBook stores it: a succeeded sync of nothing, `extra` on top."""
    return {
        "revision": "0" * 40,
        "time": time,
        "updated": updated,
        "result": "Succeeded",
        "health": "Current",
        "counts": {"created": 0, "configured": 0, "pruned": 0, "unchanged": 0, "failed": 0},
        "errors": [],
        "objects": [],
        **extra,
    }


def objects_of(entry: dict[str, Any]) -> dict[str, str]:
    """`Kind ns/name` -> health of a note or status entry."""
    return {
        f"{o['kind']} {o.get('namespace', '')}/{o['name']}": o["health"] for o in entry["objects"]
    }


class PushLog:
    """Records push states from a Reporter's listener; `until` waits for one that matches."""

    def __init__(self) -> None:
        self.states: list[tuple[str, PushState]] = []
        self._changed = asyncio.Event()

    def __call__(self, source: str, state: PushState) -> None:
        self.states.append((source, state))
        self._changed.set()

    async def until(self, pred: Callable[[PushState], bool], *, within: float = 10.0) -> PushState:
        async with asyncio.timeout(within):
            while True:
                if self.states and pred(self.states[-1][1]):
                    return self.states[-1][1]
                self._changed.clear()
                await self._changed.wait()


T = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)


async def make_history(make_source: Any, make_reporter: Any, remote: RemoteRepo) -> list[str]:
    """Commits first, second, third on main; `edge-1` synced the first and the third
    (source default) and `edge-2` the third (source apps)."""
    first = remote.head()
    remote.write("b.yaml", "b: 1\n")
    second = remote.commit("second")
    third = remote.publish("third", {"c.yaml": "c: 1\n"})
    src = await make_source(remote.url)
    one = make_reporter("edge-1")
    one.register("default", src)
    web = deployment("web")
    await one.record_sync(
        source_name="default", result=result(first, [web]), health={web: CURRENT}, now=T
    )
    await one.record_sync(
        source_name="default",
        result=result(third, [web], errors=["boom"]),
        health={web: DEADLINE},
        now=T + dt.timedelta(minutes=5),
    )
    assert await one.flush(timeout=10)
    src2 = await make_source(remote.url, name="apps", state="state-2")
    two = make_reporter("edge-2")
    two.register("apps", src2)
    await two.record_sync(
        source_name="apps", result=result(third, [web]), health={web: CURRENT}, now=T
    )
    assert await two.flush(timeout=10)
    return [first, second, third]
