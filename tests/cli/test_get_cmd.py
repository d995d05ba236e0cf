"""`gitkrm get`: kinds as kubectl names them (several, categories, KIND/NAME), kube's table
columns (-o wide, --show-labels), selectors, yaml/json/name output, kubectl's errors."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from gitkrm.cli.get_cmd import Target, parse_targets
from gitkrm.cli.get_print import go_json, tabwrite
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


def test_several_kinds_print_a_table_each(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "deploy,cm", "-n", "guestbook")
    assert code == 0
    deployments, configmaps = out.split("\n\n")
    assert [ln.split()[0] for ln in deployments.splitlines()] == [
        "NAME",
        "deployment.apps/guestbook",
    ]
    assert [ln.split()[:2] for ln in configmaps.splitlines()] == [
        ["NAME", "DATA"],
        ["configmap/guestbook-config", "3"],
    ]


def test_all_is_the_category(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`all` asks for many kinds (so names carry their kind even when one kind has objects);
    config maps are not in it."""
    code, out, _ = get(state, capsys, "all", "-A")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [ln.split()[:2] for ln in lines[1:]] == [["guestbook", "deployment.apps/guestbook"]]


def test_a_crd_category(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = get(state, capsys, "gitkrm", "-A")
    assert (code, out, err) == (0, "", "No resources found\n")


def test_selectors(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "deploy,cm", "-A", "-l", "app.kubernetes.io/name")
    assert code == 0
    assert [ln.split()[1] for ln in out.splitlines()[1:]] == ["deployment.apps/guestbook"]
    code, out, err = get(state, capsys, "deploy", "-A", "-l", "team=web")
    assert (code, out, err) == (0, "", "No resources found\n")
    code, out, _ = get(
        state, capsys, "cm,queues", "-A", "--field-selector", "metadata.name!=guestbook-config"
    )
    assert code == 0
    names = [ln.split()[1] for ln in out.splitlines() if ln and not ln.startswith("NAMESPACE")]
    assert names == ["queue.example.com/emails", "queue.example.com/orders"]
    code, out, err = get(
        state, capsys, "ns", "--field-selector", "metadata.name=worker", "-o", "name"
    )
    assert (code, out, err) == (0, "namespace/worker\n", "")


def test_bad_selectors_are_one_line(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = get(state, capsys, "deploy", "-l", "a b")
    assert (code, out) == (2, "")
    assert err == (
        'gitkrm: error: deployments.apps: label selector "a b": unable to parse requirement: '
        "found 'b', expected: in, notin, =, ==, !=, gt, lt\n"
    )
    code, _, err = get(state, capsys, "deploy", "--field-selector", "spec.replicas=3")
    assert code == 2
    assert err == (
        'gitkrm: error: deployments.apps: field selector "spec.replicas=3": '
        "field label not supported: spec.replicas\n"
    )


def test_wide_and_labels(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "deploy", "-n", "guestbook", "-o", "wide", "--show-labels")
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
        "LABELS",
    ]
    assert row.split()[5:] == [
        "web",
        "registry.k8s.io/guestbook:v3",
        "app.kubernetes.io/name=guestbook",
        "app.kubernetes.io/name=guestbook,app.kubernetes.io/part-of=guestbook",
    ]
    code, out, _ = get(state, capsys, "ns", "--show-labels")
    rows = {ln.split()[0]: ln.split()[-1] for ln in out.splitlines()[1:]}
    assert rows["worker"] == "team=batch"
    assert rows["default"] == "<none>"


def test_names_and_kind_slash_name(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "deploy,cm,queues", "-A", "-o", "name")
    assert out.splitlines() == [
        "deployment.apps/guestbook",
        "configmap/guestbook-config",
        "queue.example.com/emails",
        "queue.example.com/orders",
    ]
    code, out, _ = get(state, capsys, "queue/orders", "q/emails", "-n", "worker", "-o", "name")
    assert (code, out) == (0, "queue.example.com/orders\nqueue.example.com/emails\n")
    code, out, _ = get(state, capsys, "deploy/guestbook", "cm/guestbook-config", "-n", "guestbook")
    assert code == 0
    assert [ln.split()[0] for ln in out.splitlines() if ln] == [
        "NAME",
        "deployment.apps/guestbook",
        "NAME",
        "configmap/guestbook-config",
    ]


def test_several_kinds_as_one_list(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = get(state, capsys, "deploy,cm", "-n", "guestbook", "-o", "json")
    assert code == 0
    doc = orjson.loads(out)
    assert doc["kind"] == "List"
    assert [(i["kind"], i["metadata"]["name"]) for i in doc["items"]] == [
        ("Deployment", "guestbook"),
        ("ConfigMap", "guestbook-config"),
    ]
    assert out.startswith('{\n    "apiVersion": "v1",\n    "items": [\n        {\n')
    assert all("managedFields" not in i["metadata"] for i in doc["items"])
    code, out, _ = get(state, capsys, "deploy/guestbook", "-n", "guestbook", "-o", "yaml")
    assert yaml.safe_load(out)["kind"] == "Deployment"
    assert out.startswith("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["deploy,widgets"], 'the server doesn\'t have a resource type "widgets"'),
        (["deploy", "deploy/guestbook"], "there is no need to specify a resource type"),
        (["deploy,cm/x"], "arguments in resource/name form must have a single resource and name"),
        (["deploy/"], "arguments in resource/name form must have a single resource and name"),
        (["deploy", "x", "-l", "a=b"], "name cannot be provided when a selector is specified"),
        (["deploy", "x", "-A"], "a resource cannot be retrieved by name across all namespaces"),
        (
            ["deploy", "-o", "yaml", "--show-labels"],
            "--show-labels option cannot be used with yaml",
        ),
        ([","], "required resource not specified"),
    ],
)
def test_usage_errors(
    state: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = get(state, capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"gitkrm: error: {message}")
    assert err.count("\n") == 1


def test_missing_names_among_found_ones(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = get(state, capsys, "deploy,cm", "guestbook", "nope", "-n", "guestbook")
    assert code == 1
    assert out.splitlines()[1].split()[0] == "guestbook"  # one kind found: no prefix
    assert err.splitlines() == [
        'Error from server (NotFound): deployments.apps "nope" not found',
        'Error from server (NotFound): configmaps "guestbook" not found',
        'Error from server (NotFound): configmaps "nope" not found',
    ]


def test_parse_targets() -> None:
    assert parse_targets(["deploy,svc,deploy", "a", "b"]) == (
        Target(("deploy", "svc"), ("a", "b")),
    )
    assert parse_targets(["deploy/a", "svc/b"]) == (
        Target(("deploy",), ("a",)),
        Target(("svc",), ("b",)),
    )


def test_tabwrite_is_gos_tabwriter() -> None:
    """Cells padded by 3 to the widest of their column, 6 at least; the last cell as is."""
    assert (
        tabwrite([["A", "BB", "C"], ["x", "yyyyyy", ""]]) == "A     BB       C\nx     yyyyyy   \n"
    )


def test_json_as_go_writes_it() -> None:
    assert go_json({"b": [], "a": {"x": "<&>\u2028"}}) == (
        '{\n    "a": {\n        "x": "\\u003c\\u0026\\u003e\\u2028"\n    },\n    "b": []\n}\n'
    )
