"""`gitkrm diff`: exit 0 in sync, 1 differences (Secrets redacted), 2 for a bad revision."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitkrm.cli.main import main

SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default}
stringData: {password: hunter2-not-shown}
"""


def diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diff", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_differences_against_an_empty_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "s.yaml").write_text(SECRET)
    state = tmp_path / "state"
    code, out, _ = diff(capsys, "--repo", str(tmp_path / "m"), "--state", str(state))
    assert code == 1
    assert "+++ merged/v1.Secret.default.creds" in out
    assert "hunter2" not in out
    assert not state.exists()  # nothing written, not even a store


def test_an_invalid_revision_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bad.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    code, out, err = diff(capsys, "--repo", str(tmp_path / "m"), "--state", str(tmp_path / "s"))
    assert code == 2
    assert out == ""
    assert err.startswith("bad.yaml:1: ConfigMap")


def test_an_unreachable_source_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = diff(
        capsys, "--repo", "https://127.0.0.1:1/none.git", "--state", str(tmp_path / "s")
    )
    assert code == 2
    assert err.startswith("gitkrm: error: source default: ")
