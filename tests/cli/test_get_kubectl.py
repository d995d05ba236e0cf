"""`gitkrm get` side by side with `kubectl get` (1.32): a `gitkrm serve` process with its
bundled controllers serves a state dir, kubectl creates the objects through it (the
controllers add ReplicaSets, pods and status), and both commands read the same store.

Their stdout and stderr must be equal byte for byte. AGE is computed by each at its own
time, so a pair that straddles a second is taken again (until a timeout: a real difference
fails)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitkrm.cli.main import main
from gitkrm.krm import Obj
from tests.server.conftest import Kubectl, gitkrm_serve, kubectl_path, wait_for
from tests.support.builders import configmap, crd, custom_resource, deployment, namespace
from tests.support.manifests import yaml_text


def _widget_crd() -> str:
    """The Widget CRD with printer columns, so `get` shows custom columns and `-o wide`."""
    obj = crd(
        spec={
            "size": {"type": "integer"},
            "color": {"type": "string"},
            "weight": {"type": "number"},
        },
        categories=["all"],
        status_subresource=False,
    )
    obj["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
        {"name": "Weight", "type": "number", "jsonPath": ".spec.weight"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return yaml.safe_dump(obj, sort_keys=False)


CRD = _widget_crd()


def _api() -> Obj:
    """Deployment shop/api: two containers, one image from a registry."""
    obj = deployment("api", "shop", image="registry.k8s.io/api:v2", container="api")
    obj["spec"]["template"]["spec"]["containers"].append({"name": "log", "image": "busybox"})
    return obj


def _kind(
    api_version: str,
    kind: str,
    name: str,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
    **fields: Any,
) -> Obj:
    """An object of a kind tests.support.builders has no builder for; `fields` beside metadata."""
    obj: Obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}
    obj["metadata"]["namespace"] = namespace
    if labels:
        obj["metadata"]["labels"] = labels
    return obj


OBJECTS = yaml_text(
    namespace("shop", labels={"team": "web"}),
    namespace("batch"),
    deployment(
        "web", "shop", replicas=2, image="nginx:1.27", container="web", labels={"tier": "front"}
    ),
    _api(),
    _kind(
        "v1",
        "Service",
        "web",
        "shop",
        labels={"app": "web"},
        spec={"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    ),
    configmap("web", "shop", greeting="hello"),
    _kind(
        "apps/v1",
        "StatefulSet",
        "db",
        "batch",
        spec={
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]},
            },
        },
    ),
    _kind(
        "batch/v1",
        "CronJob",
        "report",
        "batch",
        spec={
            "schedule": "0 3 * * *",
            "suspend": True,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "report", "image": "busybox"}],
                        }
                    }
                }
            },
        },
    ),
    _kind(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "web",
        "shop",
        spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 5,
        },
    ),
    custom_resource(
        "Widget", "blue", "shop", labels={"app": "web"}, size=3, color="blue", weight=2.0
    ),
    custom_resource("Widget", "plain", "batch", size=1, weight=0.25),
)

PODS = 4  # web 2, api 1, db 1


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Kubectl]]:
    """A `gitkrm serve` process on a free port of 127.0.0.1 with the objects above, once
    the controllers are done with them (workloads ready, every pod running)."""
    binary = kubectl_path()
    state = tmp_path_factory.mktemp("get-kubectl") / "state"
    with gitkrm_serve(state, state.parent / "serve.log"):
        kubectl = Kubectl(binary, state / "kubeconfig", tmp_path_factory.mktemp("home"))
        kubectl("apply", "-f", "-", input=CRD)
        kubectl("wait", "--for=condition=established", "crd/widgets.example.com")
        kubectl("apply", "-f", "-", input=OBJECTS)
        kubectl("api-resources")  # kubectl's discovery cache now knows widgets
        wait_for(lambda: settled(kubectl), timeout=60, interval=0.2)
        yield state, kubectl


def settled(kubectl: Kubectl) -> bool:
    items = json.loads(kubectl("get", "deploy,sts,rs,pods", "-A", "-o", "json"))["items"]
    pods = [i for i in items if i["kind"] == "Pod"]
    workloads = [i for i in items if i["kind"] != "Pod"]
    return (
        len(pods) == PODS
        and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        and all(
            (w.get("status") or {}).get("observedGeneration") == w["metadata"]["generation"]
            and (w.get("status") or {}).get("readyReplicas", 0) == w["spec"]["replicas"]
            for w in workloads
        )
    )


def side_by_side(
    served: tuple[Path, Kubectl], capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """Both commands' (stdout, stderr), asserted equal; gitkrm's exit code and output."""
    state, kubectl = served
    last: list[tuple[tuple[str, str], tuple[str, str], int, int]] = []

    def equal() -> bool:
        theirs = kubectl.run("get", *args, check=False)
        code = main(["get", *args, "--state", str(state)])
        out, err = capsys.readouterr()
        last.append(((theirs.stdout, theirs.stderr), (out, err), theirs.returncode, code))
        return last[-1][0] == last[-1][1]

    with contextlib.suppress(AssertionError):  # timed out: the last pair tells
        wait_for(equal, timeout=10, interval=0.05)
    (kube_out, kube_err), (out, err), kube_code, code = last[-1]
    assert out == kube_out
    assert err == kube_err
    assert (code == 0) == (kube_code == 0)
    return code, out, err


@pytest.mark.parametrize(
    "args",
    [
        ["deploy,svc", "-n", "shop"],
        ["all", "-A"],
        ["all", "-n", "batch"],
        ["all", "-A", "-l", "app=web"],
        ["deploy,svc,cm", "-A", "--field-selector", "metadata.name=web"],
        ["pods", "-A", "--field-selector", "status.phase=Running", "-l", "app in (web,db)"],
        ["all", "-A", "-o", "wide"],
        ["deploy,pods,widgets", "-n", "shop", "--show-labels"],
        ["all", "-n", "shop", "-o", "wide", "--show-labels"],
        ["namespaces,nodes", "--show-labels"],
        ["all,cm", "-A", "-o", "name"],
        ["widgets", "-A", "-o", "wide"],
        ["deploy/web", "svc/web", "deploy/api", "-n", "shop"],
        ["deploy,svc", "web", "-n", "shop"],
        ["deploy", "web", "-n", "shop", "-o", "wide"],
        ["deploy,svc", "-n", "shop", "-o", "json"],
        ["all", "-n", "batch", "-o", "yaml"],
        ["deploy/web", "-n", "shop", "-o", "yaml"],
        ["widgets", "blue", "-n", "shop", "-o", "json"],
    ],
    ids=lambda a: " ".join(a),
)
def test_tables_names_yaml_and_json_equal_kubectl(
    served: tuple[Path, Kubectl], capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, _ = side_by_side(served, capsys, *args)
    assert code == 0
    assert out  # every one of these prints something
    if args[-1] in ("json", "yaml"):
        assert "managedFields" not in out  # kubectl get leaves them out too


def test_several_kinds_are_several_tables(
    served: tuple[Path, Kubectl], capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = side_by_side(served, capsys, "deploy,svc", "-n", "shop")
    deployments, services = out.split("\n\n")
    assert deployments.splitlines()[0].split() == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
    ]
    assert [ln.split()[0] for ln in deployments.splitlines()[1:]] == [
        "deployment.apps/api",
        "deployment.apps/web",
    ]
    assert services.splitlines()[1].startswith("service/web ")


@pytest.mark.parametrize(
    "args",
    [
        ["svc", "-n", "batch"],
        ["svc,secrets", "-n", "batch"],  # (a ConfigMap: every namespace has kube-root-ca.crt)
        ["all", "-A", "-l", "nope=1"],
        ["persistentvolumes"],
        ["svc", "-n", "batch", "-o", "name"],
        ["svc", "-n", "batch", "-o", "yaml"],
    ],
    ids=lambda a: " ".join(a),
)
def test_nothing_found_as_kubectl_says_it(
    served: tuple[Path, Kubectl], capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = side_by_side(served, capsys, *args)
    assert code == 0
    if "-o" not in args:
        assert out == ""
        assert err.startswith("No resources found")


def test_a_missing_name_among_others(
    served: tuple[Path, Kubectl], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = side_by_side(served, capsys, "deploy/web", "svc/nope", "-n", "shop")
    assert code == 1
    assert out.splitlines()[1].startswith("web ")  # one kind found: no kind prefix
    assert err == 'Error from server (NotFound): services "nope" not found\n'
