"""`gitkrm get`: kinds as kubectl names them, kube's table columns, yaml/json/name output."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from gitkrm.cli.main import main
from tests.cli.cli_store import populate


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("get") / "state"
    populate(path, sources=[])
    return path


def get(state: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["get", *args, "--state", str(state)])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_of_one_namespace(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "deploy", "-n", "guestbook")
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row.split()[0] == "guestbook"
    assert row.split()[1] == "0/3"


def test_all_namespaces_adds_a_namespace_column(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = get(state, capsys, "configmaps", "-A")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "DATA", "AGE"]
    assert any(ln.split()[:3] == ["guestbook", "guestbook-config", "3"] for ln in lines[1:])


def test_custom_resources_use_the_crd_printer_columns(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = get(state, capsys, "queues.example.com", "-n", "worker")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "MAX-LENGTH", "RETENTION", "AGE"]
    rows = {ln.split()[0]: ln.split()[1:3] for ln in lines[1:]}
    assert rows == {"emails": ["500", "24h"], "orders": ["10000", "72h"]}


@pytest.mark.parametrize("kind", ["ns", "namespace", "Namespace", "namespaces", "namespaces.v1"])
def test_kind_spellings(state: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    code, out, _ = get(state, capsys, kind, "-o", "name")
    assert code == 0
    assert "namespace/guestbook" in out.splitlines()


def test_one_object_as_yaml_json_and_name(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "cm", "guestbook-config", "-n", "guestbook", "-o", "yaml")
    assert code == 0
    obj = yaml.safe_load(out)
    assert obj["kind"] == "ConfigMap"
    assert obj["data"]["RELEASE_DATE"] == "2024-01-01"
    code, out, _ = get(state, capsys, "deployments.apps", "-n", "guestbook", "-o", "json")
    assert code == 0
    listed = orjson.loads(out)
    assert listed["kind"] == "List"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["guestbook"]
    code, out, _ = get(state, capsys, "deploy", "guestbook", "-n", "guestbook", "-o", "name")
    assert out == "deployment.apps/guestbook\n"


def test_not_found_and_unknown_kind(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = get(state, capsys, "cm", "nope", "-n", "guestbook")
    assert code == 1
    assert err == 'Error from server (NotFound): configmaps "nope" not found\n'
    code, _, err = get(state, capsys, "widgets")
    assert code == 2
    assert err == 'gitkrm: error: the server doesn\'t have a resource type "widgets"\n'
    code, out, err = get(state, capsys, "secrets", "-n", "guestbook")
    assert code == 0
    assert out == ""
    assert err == "No resources found in guestbook namespace.\n"


def test_gitsources_are_a_kind_too(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "gitsources", "-A")
    assert code == 0
    assert out == ""  # served (the CRD is installed), none yet


def test_no_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = get(tmp_path, capsys, "pods")
    assert code == 2
    assert "no store in" in err
