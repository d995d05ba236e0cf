"""The W10k workload (5,000 Deployments, 5,000 Services), as YAML text and as parsed objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

NAMESPACES = 20
APPS = 5000

APP_TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app-{i}, namespace: team-{ns}, labels: {{app: app-{i}, tier: web}}}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: app-{i}}}}}
  template:
    metadata: {{labels: {{app: app-{i}}}}}
    spec:
      containers:
      - name: web
        image: nginx:1.{img}
        ports: [{{containerPort: 80}}]
        env: [{{name: MODE, value: prod}}, {{name: IDX, value: "{i}"}}]
        resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: app-{i}, namespace: team-{ns}}}
spec: {{selector: {{app: app-{i}}}, ports: [{{port: 80, targetPort: 80}}]}}
"""


def namespaces_yaml(count: int = NAMESPACES) -> str:
    return "---\n".join(
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: team-{n}}}\n" for n in range(count)
    )


def app_yaml(i: int) -> str:
    return APP_TEMPLATE.format(i=i, ns=i % NAMESPACES, img=i % 30)


def deployment(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"app-{i}",
            "namespace": f"team-{i % NAMESPACES}",
            "labels": {"app": f"app-{i}", "tier": "web"},
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": f"app-{i}"}},
            "template": {
                "metadata": {"labels": {"app": f"app-{i}"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": f"nginx:1.{i % 30}",
                            "ports": [{"containerPort": 80}],
                            "env": [
                                {"name": "MODE", "value": "prod"},
                                {"name": "IDX", "value": str(i)},
                            ],
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ]
                },
            },
        },
    }


def service(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"app-{i}", "namespace": f"team-{i % NAMESPACES}"},
        "spec": {"selector": {"app": f"app-{i}"}, "ports": [{"port": 80, "targetPort": 80}]},
    }


def namespace(n: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{n}"}}


def objects(apps: int = APPS) -> list[dict[str, Any]]:
    """Deployments and Services of W10k, interleaved as in the files (no namespaces)."""
    out: list[dict[str, Any]] = []
    for i in range(apps):
        out.append(deployment(i))
        out.append(service(i))
    return out


def write_tree(root: Path, apps: int = APPS) -> None:
    """Write the W10k repository layout under `root` (no git)."""
    (root / "apps").mkdir(parents=True, exist_ok=True)
    (root / "namespaces.yaml").write_text(namespaces_yaml())
    for i in range(apps):
        (root / "apps" / f"app-{i}.yaml").write_text(app_yaml(i))
