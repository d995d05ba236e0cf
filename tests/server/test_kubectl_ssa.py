"""The real kubectl's server-side apply against a gitkrm API server: apply --server-side,
conflicts and --force-conflicts, the client-side to server-side migration, managedFields
in `get --show-managed-fields`, diff --server-side; a smoke test with kubectl 1.27."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from tests.server.conftest import Kubectl, kubectl_path
from tests.support.builders import deployment
from tests.support.manifests import yaml_text


def manifest(ns: str, *, replicas: int = 2, annotations: Mapping[str, str] | None = None) -> str:
    web = deployment(
        "web", ns, replicas=replicas, annotations=annotations, container="web", image="nginx:1.25"
    )
    return yaml_text(web)


def get(k: Kubectl, ns: str, *extra: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(k("get", "deploy", "web", "-n", ns, "-o", "json", *extra))
    return out


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


def test_apply_server_side_twice_and_a_conflict(kubectl: Kubectl, ns: str) -> None:
    ssa = ("apply", "--server-side", "-f", "-")
    assert kubectl(*ssa, input=manifest(ns)) == "deployment.apps/web serverside-applied\n"
    first = get(kubectl, ns, "--show-managed-fields")
    assert kubectl(*ssa, input=manifest(ns)) == "deployment.apps/web serverside-applied\n"
    again = get(kubectl, ns, "--show-managed-fields")
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert set(managers(again)) == {("kubectl", "Apply")}

    other = ("apply", "--server-side", "--field-manager", "other", "-f", "-")
    refused = kubectl.run(*other, input=manifest(ns, replicas=5), check=False)
    assert refused.returncode == 1
    assert 'conflict with "kubectl"' in refused.stderr
    assert ".spec.replicas" in refused.stderr
    assert get(kubectl, ns)["spec"]["replicas"] == 2

    forced = kubectl(*other, "--force-conflicts", input=manifest(ns, replicas=5))
    assert forced == "deployment.apps/web serverside-applied\n"
    after = get(kubectl, ns, "--show-managed-fields")
    assert after["spec"]["replicas"] == 5
    owned = managers(after)
    assert "f:replicas" in owned[("other", "Apply")]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in owned[("kubectl", "Apply")]["fieldsV1"]["f:spec"]


def test_get_shows_managed_fields_only_when_asked(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "--server-side", "-f", "-", input=manifest(ns))
    plain = yaml.safe_load(kubectl("get", "deploy", "web", "-n", ns, "-o", "yaml"))
    assert "managedFields" not in plain["metadata"]
    shown = yaml.safe_load(
        kubectl("get", "deploy", "web", "-n", ns, "-o", "yaml", "--show-managed-fields")
    )
    [entry] = shown["metadata"]["managedFields"]
    assert entry["fieldsType"] == "FieldsV1"
    assert (
        entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}'][
            "f:image"
        ]
        == {}
    )


def test_diff_server_side(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "--server-side", "-f", "-", input=manifest(ns))
    same = kubectl.run("diff", "--server-side", "-f", "-", input=manifest(ns), check=False)
    assert same.returncode == 0, same.stderr
    changed = kubectl.run(
        "diff", "--server-side", "-f", "-", input=manifest(ns, replicas=3), check=False
    )
    assert changed.returncode == 1, changed.stderr
    assert "-  replicas: 2" in changed.stdout
    assert "+  replicas: 3" in changed.stdout
    assert get(kubectl, ns)["spec"]["replicas"] == 2  # a dry run


def test_client_side_apply_then_server_side_migrates(kubectl: Kubectl, ns: str) -> None:
    with_note = manifest(ns, annotations={"team": "a", "note": "old"})
    assert kubectl("apply", "-f", "-", input=with_note) == "deployment.apps/web created\n"
    csa = managers(get(kubectl, ns, "--show-managed-fields"))
    assert ("kubectl-client-side-apply", "Update") in csa

    ssa = ("apply", "--server-side", "-f", "-")
    assert kubectl(*ssa, input=with_note) == "deployment.apps/web serverside-applied\n"
    migrated = managers(get(kubectl, ns, "--show-managed-fields"))
    assert ("kubectl-client-side-apply", "Update") not in migrated
    assert "f:note" in migrated[("kubectl", "Apply")]["fieldsV1"]["f:metadata"]["f:annotations"]

    # A field dropped from the manifest is removed by the next server-side apply.
    without_note = manifest(ns, annotations={"team": "a"})
    assert kubectl(*ssa, input=without_note) == "deployment.apps/web serverside-applied\n"
    annotations = get(kubectl, ns)["metadata"]["annotations"]
    assert annotations["team"] == "a"
    assert "note" not in annotations


def test_apply_server_side_to_the_status_subresource(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "--server-side", "-f", "-", input=manifest(ns))
    status = manifest(ns) + "status: {observedGeneration: 1, replicas: 3}\n"
    out = kubectl(
        "apply",
        "--server-side",
        "--subresource=status",
        "--field-manager=ctl",
        "-f",
        "-",
        input=status,
    )
    assert out == "deployment.apps/web serverside-applied\n"
    after = get(kubectl, ns, "--show-managed-fields")
    assert after["status"]["replicas"] == 3
    assert after["spec"]["replicas"] == 2
    [entry] = [e for e in after["metadata"]["managedFields"] if e["manager"] == "ctl"]
    assert (entry["operation"], entry["subresource"]) == ("Apply", "status")
    assert set(entry["fieldsV1"]) == {"f:status"}


def test_kubectl_1_27_server_side_apply(
    kubectl: Kubectl, ns: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    k = Kubectl(
        binary=kubectl_path("1.27"),
        kubeconfig=kubectl.kubeconfig,
        home=tmp_path_factory.mktemp("home-1.27"),
    )
    ssa = ("apply", "--server-side", "-f", "-")
    assert k(*ssa, input=manifest(ns)) == "deployment.apps/web serverside-applied\n"
    refused = k.run(*ssa, "--field-manager", "x", input=manifest(ns, replicas=4), check=False)
    assert refused.returncode == 1
    assert "conflict" in refused.stderr
