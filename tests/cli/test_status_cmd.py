"""`gitkrm status`: each source's sync state from its GitSource."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from gitkrm.agent import status as st
from gitkrm.cli.main import main
from gitkrm.sync.results import Counts
from tests.cli.cli_store import populate

REV = "0123456789abcdef0123456789abcdef01234567"


def _source(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gitkrm.io/v1alpha1",
        "kind": "GitSource",
        "metadata": {"name": name, "namespace": "gitkrm-system"},
        "spec": {"url": f"https://git.example.com/{name}.git", "ref": {"branch": "main"}},
        **({"status": status} if status else {}),
    }


def status(state: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["status", "--state", str(state), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_sources_with_their_last_sync(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = st.finished(
        {},
        st.Outcome(
            revision=REV,
            succeeded=True,
            reason=st.Reason.SUCCEEDED,
            counts=Counts(created=4, unchanged=2),
        ),
        generation=1,
        now="2025-01-01T00:00:00Z",
    )
    bad = st.finished(
        good,
        st.Outcome(
            revision="f" * 40,
            succeeded=False,
            reason=st.Reason.INVALID_REVISION,
            errors=("a.yaml:3: ConfigMap default/x: bad",),
            stalled=True,
        ),
        generation=1,
        now="2025-01-01T00:01:00Z",
    )
    state = tmp_path / "state"
    populate(state, sources=[_source("apps", **good), _source("infra", **bad), _source("new")])
    code, out, err = status(state, capsys)
    assert code == 0, err
    header, apps, infra, new = out.splitlines()
    assert header.split()[:13] == [
        "NAME",
        "PARENT",
        "REVISION",
        "READY",
        "HEALTH",
        "SUSPENDED",
        "RESULT",
        "CREATED",
        "CONFIGURED",
        "PRUNED",
        "UNCHANGED",
        "FAILED",
        "REFUSED",
    ]
    assert apps.split()[:13] == [
        "apps",
        "-",
        REV[:12],
        "True",
        "-",
        "false",
        "Succeeded",
        "4",
        "0",
        "0",
        "2",
        "0",
        "0",
    ]
    assert infra.split()[:7] == ["infra", "-", REV[:12], "False", "-", "false", "Failed"]
    assert infra.endswith("revision ffffffffffff: a.yaml:3: ConfigMap default/x: bad")
    assert new.split()[:7] == ["new", "-", "-", "Unknown", "-", "false", "-"]

    code, out, _ = status(state, capsys, "-o", "json")
    sources = {s["name"]: s for s in orjson.loads(out)["sources"]}
    assert sources["infra"]["lastError"] == "a.yaml:3: ConfigMap default/x: bad"
    assert sources["infra"]["revision"] == REV
    assert sources["infra"]["lastAttemptedRevision"] == "f" * 40
    assert sources["apps"]["ref"] == "branch main"
    assert sources["apps"]["counts"]["created"] == 4
    code, out, _ = status(state, capsys, "-o", "yaml")
    assert yaml.safe_load(out)["sources"][0]["name"] == "apps"


def test_no_sources_yet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state"
    populate(state)
    code, out, _ = status(state, capsys)
    assert code == 0
    assert out == f"No sources in {state}.\n"


def test_no_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = status(tmp_path, capsys)
    assert code == 2
    assert err.startswith(f"gitkrm: error: no store in {tmp_path}")
