"""`run --once` and `diff` say when nothing changed since the last sync (a Git remote, the
state dir's store, reports into Git as a user gets them)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gitkrm.agent.state import store_url
from gitkrm.cli.main import main
from gitkrm.krm import ObjectRef
from gitkrm.store import open_store
from tests.sync.sync_helpers import Remote, configmap


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _edit(state: Path) -> None:
    async def go() -> None:
        store = await open_store(store_url(state))
        try:
            ref = ObjectRef(group="", kind="ConfigMap", name="cfg", namespace="default")
            obj = await store.get(ref)
            obj["data"] = {"a": "edited"}
            await store.update(obj)
        finally:
            await store.close()

    asyncio.run(go())


def test_run_once_then_diff_with_nothing_changed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    remote = Remote(tmp_path / "repo")
    remote.write("cm.yaml", configmap("cfg", ns="default"))
    remote.commit()
    flags = ["--repo", remote.url, "--source-name", "apps", "--state", str(tmp_path / "st")]
    code, out, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    assert out.startswith("apps: synced revision ")

    code, out, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    assert out.startswith("apps: in sync, nothing changed since the last sync of revision ")
    assert "1 unchanged" in out
    assert "nothing_changed=" in err  # the log line says it too

    code, out, err = cli(capsys, "diff", *flags)
    assert (code, out) == (0, "")
    assert err.startswith("apps: in sync, nothing changed since the last sync of revision ")

    _edit(tmp_path / "st")
    code, out, err = cli(capsys, "diff", *flags)
    assert code == 1
    assert "-  a: edited" in out
    code, out, err = cli(capsys, "run", "--once", *flags)
    assert code == 0, err
    assert "1 configured" in out
    code, out, _ = cli(capsys, "diff", *flags)
    assert (code, out) == (0, "")
