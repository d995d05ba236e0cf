"""`helm template` for the gitkrm chart, by Helm itself (the `helm-python-sdk` wheel: Helm
v4's Go SDK, no helm binary): values coalesced and checked against values.schema.json by
Helm, templates rendered by Helm, documents split and ordered as Helm installs them, each
under a `# Source:` line.

`.venv/bin/python -m tests.helm.chart` rewrites helm/gitkrm/rendered/*.yaml (review the diff
before committing it); tests/helm/test_chart.py checks they are current.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python
import yaml

CHART = Path(__file__).resolve().parents[2] / "helm" / "gitkrm"
KUBE_VERSION = "v1.33.0"  # the embedded target's

# helm.sh/helm/v4/pkg/release/v1/util/kind_sorter.go: the order Helm installs kinds in.
INSTALL_ORDER = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
_SPLIT = re.compile(r"(?:^|\s*\n)---\s*")


@dataclass(frozen=True, slots=True)
class Rendering:
    """One documented value combination, kept rendered next to the chart: its file, release
    and values files."""

    file: str
    release: str
    namespace: str
    values_files: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        flags = "".join(f" -f {f}" for f in self.values_files)
        return f"helm template {self.release} helm/gitkrm -n {self.namespace}{flags}"

    def overrides(self) -> dict[str, Any]:
        return merge_all(*(load_yaml(CHART / f) for f in self.values_files))


RENDERINGS = (
    Rendering("default.yaml", "gitkrm", "gitkrm-system"),
    Rendering("cluster-ha.yaml", "gitkrm", "gitkrm-system", ("ci/cluster-ha-values.yaml",)),
    Rendering("namespaced.yaml", "team-a", "platform", ("ci/namespaced-values.yaml",)),
    Rendering("embedded.yaml", "edge", "edge", ("ci/embedded-values.yaml",)),
)


@dataclass(frozen=True, slots=True)
class Manifest:
    source: str
    text: str
    obj: dict[str, Any]


def merge_all(*layers: dict[str, Any]) -> dict[str, Any]:
    """Several `-f` files into one override (Helm merges them map by map, later wins)."""
    out: dict[str, Any] = {}
    for layer in layers:
        out = _merge(out, layer)
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) or {}
    assert isinstance(data, dict), f"{path}: not a mapping"
    return data


@functools.cache
def chart(path: Path = CHART) -> helm_python.Chart:
    return helm_python.Chart.load(path)


def values(*extra: dict[str, Any], path: Path = CHART) -> dict[str, Any]:
    """What the templates see as `.Values`: the chart's defaults coalesced with `extra` by
    Helm, checked by Helm against values.schema.json (HelmValuesError if they fail)."""
    c = chart(path)
    merged = c.merge_values(merge_all(*extra))
    c.validate_schema(merged)
    return merged


def rendered_templates(
    overrides: dict[str, Any], *, release: str, namespace: str, path: Path = CHART
) -> dict[str, str]:
    """Helm's render of every template (NOTES.txt included), by template path."""
    return chart(path).render(overrides, name=release, namespace=namespace)


def render_strict(
    overrides: dict[str, Any], *, release: str, namespace: str, path: Path = CHART
) -> dict[str, str]:
    """Helm's render with `missingkey=error` (a template reading a values path that does
    not exist fails) at Kubernetes 1.33. The binding's `Chart.render` has no keyword for
    these; its native call takes them as render options."""
    from helm_python import _native

    options = {
        "name": release,
        "namespace": namespace,
        "strict": True,
        "kube_version": KUBE_VERSION,
    }
    out: dict[str, str] = json.loads(
        _native.call_string(
            "helm_render", chart(path)._raw(), json.dumps(overrides), json.dumps(options)
        )
    )
    return out


def render(
    overrides: dict[str, Any], *, release: str, namespace: str, path: Path = CHART
) -> list[Manifest]:
    """Every object the chart makes for `overrides`, in Helm's install order."""
    out: list[Manifest] = []
    templates = rendered_templates(overrides, release=release, namespace=namespace, path=path)
    for name, text in sorted(templates.items()):
        if name.endswith("NOTES.txt"):
            continue
        for doc in _SPLIT.split(text):
            if not doc.strip():
                continue
            obj = yaml.safe_load(doc)
            if obj is None:
                continue  # only comments
            out.append(Manifest(source=name, text=doc.strip("\n"), obj=obj))
    order = {k: i for i, k in enumerate(INSTALL_ORDER)}

    def key(m: Manifest) -> tuple[int, str, str]:
        kind = str(m.obj.get("kind"))
        return (order.get(kind, len(order)), "" if kind in order else kind, m.source)

    return sorted(out, key=key)


def notes(overrides: dict[str, Any], *, release: str, namespace: str) -> str:
    templates = rendered_templates(overrides, release=release, namespace=namespace)
    return templates[f"{CHART.name}/templates/NOTES.txt"]


def stream(manifests: list[Manifest]) -> str:
    return "".join(f"---\n# Source: {m.source}\n{m.text}\n" for m in manifests)


def render_file(rendering: Rendering) -> str:
    manifests = render(
        rendering.overrides(), release=rendering.release, namespace=rendering.namespace
    )
    head = (
        f"# {rendering.command}\n"
        "# Rendered by Helm (helm-python-sdk, tests/helm/chart.py) and reviewed; regenerate with\n"
        "# `.venv/bin/python -m tests.helm.chart`. tests/helm/test_chart.py checks it is current.\n"
    )
    return head + stream(manifests)


def main() -> None:
    out = CHART / "rendered"
    out.mkdir(exist_ok=True)
    for rendering in RENDERINGS:
        try:
            text = render_file(rendering)
        except helm_python.HelmError as e:
            raise SystemExit(f"{rendering.file}: {e}") from None
        (out / rendering.file).write_text(text)
        print(f"wrote {out / rendering.file}")


if __name__ == "__main__":
    main()
