"""`helm template` for the gitkrm chart, without helm: values merged and checked against
values.schema.json, templates rendered by tests/helm/gotemplate.py, documents split and
ordered as Helm installs them, each under a `# Source:` line.

`.venv/bin/python -m tests.helm.chart` rewrites helm/gitkrm/rendered/*.yaml (review the diff
before committing it); tests/helm/test_chart.py checks they are current.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .gotemplate import Renderer, TemplateError

CHART = Path(__file__).resolve().parents[2] / "helm" / "gitkrm"

# helm.sh/helm/v3/pkg/releaseutil/kind_sorter.go: the order Helm installs kinds in.
INSTALL_ORDER = (
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
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
    "Ingress",
    "APIService",
)
_SPLIT = re.compile(r"(?:^|\s*\n)---\s*")


@dataclass(frozen=True, slots=True)
class Rendering:
    """One reviewed rendering kept next to the chart: its file, release and values files."""

    file: str
    release: str
    namespace: str
    values_files: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        flags = "".join(f" -f {f}" for f in self.values_files)
        return f"helm template {self.release} helm/gitkrm -n {self.namespace}{flags}"


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


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing: maps merge key by key, anything else replaces, null deletes."""
    out = dict(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) or {}
    assert isinstance(data, dict), f"{path}: not a mapping"
    return data


def schema(chart: Path = CHART) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((chart / "values.schema.json").read_text())
    return data


def values(*extra: dict[str, Any], chart: Path = CHART) -> dict[str, Any]:
    """The chart's values.yaml with `extra` merged over it, checked against the schema."""
    out = load_yaml(chart / "values.yaml")
    for e in extra:
        out = merge(out, e)
    jsonschema.Draft7Validator(schema(chart)).validate(out)
    return out


def chart_meta(chart: Path = CHART) -> dict[str, Any]:
    meta = load_yaml(chart / "Chart.yaml")
    return {k[:1].upper() + k[1:]: v for k, v in meta.items()}


def template_files(chart: Path = CHART) -> list[Path]:
    return sorted(p for p in (chart / "templates").iterdir() if p.is_file())


def renderer(chart: Path = CHART) -> Renderer:
    r = Renderer()
    for p in template_files(chart):
        r.add(f"{chart.name}/templates/{p.name}", p.read_text())
    return r


def render(
    vals: dict[str, Any], *, release: str, namespace: str, chart: Path = CHART
) -> list[Manifest]:
    """Every object the chart makes for `vals`, in Helm's install order."""
    r = renderer(chart)
    base = f"{chart.name}/templates"
    top = {
        "Values": vals,
        "Release": {
            "Name": release,
            "Namespace": namespace,
            "Service": "Helm",
            "IsInstall": True,
            "IsUpgrade": False,
            "Revision": 1,
        },
        "Chart": chart_meta(chart),
        "Capabilities": {},
    }
    out: list[Manifest] = []
    for p in template_files(chart):
        if p.name.startswith("_") or p.name == "NOTES.txt":
            continue
        name = f"{base}/{p.name}"
        text = r.render(name, {**top, "Template": {"Name": name, "BasePath": base}})
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


def notes(vals: dict[str, Any], *, release: str, namespace: str, chart: Path = CHART) -> str:
    r = renderer(chart)
    base = f"{chart.name}/templates"
    name = f"{base}/NOTES.txt"
    top = {
        "Values": vals,
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
        "Chart": chart_meta(chart),
        "Template": {"Name": name, "BasePath": base},
    }
    return r.render(name, top)


def stream(manifests: list[Manifest]) -> str:
    return "".join(f"---\n# Source: {m.source}\n{m.text}\n" for m in manifests)


def render_file(rendering: Rendering, chart: Path = CHART) -> str:
    extra = [load_yaml(chart / f) for f in rendering.values_files]
    vals = values(*extra, chart=chart)
    manifests = render(vals, release=rendering.release, namespace=rendering.namespace, chart=chart)
    head = (
        f"# {rendering.command}\n"
        "# Rendered by tests/helm/chart.py (no helm binary here) and reviewed; regenerate with\n"
        "# `.venv/bin/python -m tests.helm.chart`. tests/helm/test_chart.py checks it is current.\n"
    )
    return head + stream(manifests)


def main() -> None:
    out = CHART / "rendered"
    out.mkdir(exist_ok=True)
    for rendering in RENDERINGS:
        try:
            text = render_file(rendering)
        except TemplateError as e:
            raise SystemExit(f"{rendering.file}: {e}") from None
        (out / rendering.file).write_text(text)
        print(f"wrote {out / rendering.file}")


if __name__ == "__main__":
    main()
