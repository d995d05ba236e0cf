"""A smoke subset with every kubectl from 1.27 to 1.33: discovery, client-side apply
(validated by the server through /openapi/v3; 1.27-1.29 also read /openapi/v2 as
protobuf), tables, explain, diff, create and delete."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import Kubectl, kubectl_path
from tests.support.builders import deployment
from tests.support.manifests import yaml_text

VERSIONS = ["1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"]


def manifest(ns: str, *, replicas: int) -> str:
    return yaml_text(deployment("smoke", ns, replicas=replicas))


@pytest.mark.parametrize("version", VERSIONS)
def test_smoke(
    version: str, kubectl: Kubectl, ns: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    k = Kubectl(
        binary=kubectl_path(version),
        kubeconfig=kubectl.kubeconfig,
        home=tmp_path_factory.mktemp(f"home-{version}"),
    )
    versions = json.loads(k("version", "-o", "json"))
    assert versions["clientVersion"]["gitVersion"].startswith(f"v{version}.")
    assert versions["serverVersion"]["minor"] == "33"
    created = manifest(ns, replicas=1)
    assert k("apply", "-f", "-", input=created) == "deployment.apps/smoke created\n"
    assert k("apply", "-f", "-", input=created) == "deployment.apps/smoke unchanged\n"
    assert k.run("diff", "-f", "-", input=created, check=False).returncode == 0
    changed = manifest(ns, replicas=2)
    assert k.run("diff", "-f", "-", input=changed, check=False).returncode == 1
    assert k("apply", "-f", "-", input=changed) == "deployment.apps/smoke configured\n"
    rows = k("get", "deploy", "-n", ns).splitlines()
    assert rows[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[1].split()[:2] == ["smoke", "0/2"]
    assert "FIELD: replicas <integer>" in k("explain", "deployment.spec.replicas")
    k("create", "configmap", "cm", "-n", ns, "--from-literal=a=b")
    assert json.loads(k("get", "cm", "cm", "-n", ns, "-o", "json"))["data"] == {"a": "b"}
    unknown = manifest(ns, replicas=2).replace("  replicas:", "  bogus: 1\n  replicas:")
    refused = k.run("apply", "-f", "-", input=unknown, check=False)
    assert refused.returncode == 1
    assert 'unknown field "spec.bogus"' in refused.stderr
    assert k("delete", "deploy", "smoke", "-n", ns) == 'deployment.apps "smoke" deleted\n'
