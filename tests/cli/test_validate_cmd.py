"""`gitkrm validate` as a user runs it: a real process, exit codes, stderr lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "sample-repo"


def gitkrm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitkrm.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_valid_tree_exits_0() -> None:
    res = gitkrm("validate", str(SAMPLE))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith(": valid")
    assert res.stderr == ""


def test_invalid_tree_exits_1_with_one_line_per_problem(tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: d}\n"
    )
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: [unclosed\n")
    res = gitkrm("validate", str(tmp_path))
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{tmp_path / 'broken.yaml'}:")
    assert lines[1].startswith(f"{tmp_path / 'cm.yaml'}:1: ConfigMap d/Bad_Name: ")
    assert "Traceback" not in res.stderr


def test_missing_path_is_a_usage_error() -> None:
    res = gitkrm("validate", "/nonexistent/manifests")
    assert res.returncode == 2
    assert res.stderr.strip() == "gitkrm: error: /nonexistent/manifests: no such file or directory"
