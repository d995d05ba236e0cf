"""A repository in the shape of Flux's example since Flux 2.7 (written here, not copied):
`clusters/staging/` with placeholder bootstrap files (no flux-system namespace, no
GitRepository), an ArtifactGenerator splitting the repository into the ExternalArtifacts
`infrastructure` and `apps`, and Kustomizations over them (`infra-controllers`,
`infra-configs` dependsOn it with a patch, `apps` dependsOn `infra-configs`); `apps/base`
with `apps/staging` and `apps/production` overlays; no Helm charts."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.manifests import kustomization
from tests.support.builders import deployment, namespace
from tests.support.manifests import yaml_text
from tests.sync.sync_helpers import Remote

PLACEHOLDER = "# Written by flux bootstrap.\n"
FLUX_SYSTEM_KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [gotk-components.yaml, gotk-sync.yaml]
"""

GENERATOR = """\
apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: flux-system, namespace: flux-system}
spec:
  sources:
  - {alias: monorepo, kind: GitRepository, name: flux-system}
  artifacts:
  - name: infrastructure
    originRevision: "@monorepo"
    copy:
    - {from: "@monorepo/infrastructure/**", to: "@artifact/", exclude: ["*.md"]}
  - name: apps
    originRevision: "@monorepo"
    copy:
    - {from: "@monorepo/apps/base/**", to: "@artifact/base/"}
    - {from: "@monorepo/apps/staging/**", to: "@artifact/staging/"}
"""

Source = tuple[str, str]


def infrastructure(
    source: Source = ("ExternalArtifact", "infrastructure"),
    *,
    root: str = ".",
    controllers_from: Source | None = None,
) -> str:
    """Kustomizations `infra-controllers` and `infra-configs` (dependsOn it, with a patch)
    over `root`/controllers and `root`/configs of `source` (controllers: of
    `controllers_from`, when given)."""
    issuer = {
        "target": {"kind": "ConfigMap", "name": "issuer"},
        "patch": "- op: replace\n  path: /data/server\n"
        "  value: https://acme-staging.example.org/directory\n",
    }
    controllers = kustomization(
        "infra-controllers", f"{root}/controllers", source=controllers_from or source,
        timeout="2m",
    )  # fmt: skip
    configs = kustomization(
        "infra-configs", f"{root}/configs", source=source, timeout="2m", wait=None,
        depends_on=("infra-controllers",), patches=[issuer],
    )  # fmt: skip
    return controllers + "---\n" + configs


def apps(source: Source = ("ExternalArtifact", "apps"), *, root: str = ".") -> str:
    """The Kustomization `apps` (dependsOn infra-configs) over `root`/staging of `source`."""
    return kustomization(
        "apps", f"{root}/staging", source=source, timeout="2m", depends_on=("infra-configs",)
    )


CONTROLLER = yaml_text(
    namespace("gateway-system"),
    deployment("gateway", "gateway-system", container="gateway", image="example.org/gateway:1.0"),
)

ISSUER = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: issuer, namespace: gateway-system}
data: {server: https://acme.example.org/directory}
"""

BASE_KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: podinfo
resources: [namespace.yaml, deployment.yaml]
"""

BASE_NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: podinfo}\n"

BASE_DEPLOYMENT = yaml_text(
    deployment("podinfo", None, container="podinfod", image="example.org/podinfo:6.0.0")
)


def overlay(env: str) -> str:
    return f"""\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base/podinfo]
patches:
- path: podinfo-values.yaml
  target: {{kind: Deployment}}
commonLabels: {{env: {env}}}
"""


def values(replicas: int) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: podinfo}}
spec:
  replicas: {replicas}
"""


def monorepo(root: Path, *, name: str = "monorepo") -> Remote:
    """The repository, pushed to its bare remote."""
    repo = Remote(root / name)
    files = {
        "clusters/staging/flux-system/gotk-components.yaml": PLACEHOLDER,
        "clusters/staging/flux-system/gotk-sync.yaml": PLACEHOLDER,
        "clusters/staging/flux-system/kustomization.yaml": FLUX_SYSTEM_KUSTOMIZATION,
        "clusters/staging/artifacts.yaml": GENERATOR,
        "clusters/staging/infrastructure.yaml": infrastructure(),
        "clusters/staging/apps.yaml": apps(),
        "infrastructure/controllers/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources: [gateway.yaml]\n"
        ),
        "infrastructure/controllers/gateway.yaml": CONTROLLER,
        "infrastructure/controllers/README.md": "The gateway controller.\n",
        "infrastructure/configs/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources: [issuer.yaml]\n"
        ),
        "infrastructure/configs/issuer.yaml": ISSUER,
        "apps/base/podinfo/kustomization.yaml": BASE_KUSTOMIZATION,
        "apps/base/podinfo/namespace.yaml": BASE_NAMESPACE,
        "apps/base/podinfo/deployment.yaml": BASE_DEPLOYMENT,
        "apps/staging/kustomization.yaml": overlay("staging"),
        "apps/staging/podinfo-values.yaml": values(2),
        "apps/production/kustomization.yaml": overlay("production"),
        "apps/production/podinfo-values.yaml": values(3),
    }
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("monorepo")
    return repo
