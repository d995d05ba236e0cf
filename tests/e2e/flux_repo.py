"""A repository in the shape of Flux's example repository (written here, not copied):
`clusters/dev/` with the bootstrap GitRepository and Kustomization `flux-system`, and
Kustomizations `infrastructure` and `apps` (dependsOn infrastructure, targetNamespace,
namePrefix, patches, images, postBuild substitution) over `infrastructure/` and
`apps/dev/`; optionally one more over a second bare repository."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from gitkrm.agent.tree.flux_crds import crds
from gitkrm.krm import Obj
from tests.e2e.manifests import git_repository, kustomization
from tests.source.source_https import GitHttpsServer, require_tools
from tests.support.builders import deployment
from tests.support.manifests import yaml_text
from tests.sync.sync_helpers import Remote


def gotk_components() -> str:
    """The flux-system namespace and Flux's CRDs, as a bootstrapped repository carries
    them (flux_crds' look-alikes; no controllers)."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}}
    return yaml.safe_dump_all([ns, *crds()], sort_keys=False)


def gotk_sync(url: str) -> str:
    """The bootstrap GitRepository and Kustomization `flux-system` over clusters/dev."""
    ks = kustomization("flux-system", "./clusters/dev", interval="10m0s", wait=None, timeout=None)
    return git_repository("flux-system", url, interval="1m0s") + "---\n" + ks


INFRASTRUCTURE = kustomization(
    "infrastructure",
    "./infrastructure",
    timeout="2m",
    retryInterval="1m",
    serviceAccountName="deployer",
)

APPS = kustomization(
    "apps", "./apps/dev", interval="10m", wait=None, timeout=None,
    depends_on=("infrastructure",), targetNamespace="podinfo", namePrefix="dev-",
    images=[{"name": "ghcr.io/example/podinfo", "newTag": "6.7.1"}],
    patches=[{
        "target": {"kind": "Deployment", "name": "podinfo"},
        "patch": "- op: replace\n  path: /spec/replicas\n  value: 2\n",
    }],
    postBuild={"substitute": {"cluster_env": "dev"}},
)  # fmt: skip

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: podinfo}\n"
INFRA_CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-info, namespace: flux-system}
data: {provider: gitkrm}
"""


def _podinfo() -> list[Obj]:
    """The podinfo Deployment (its environment from podinfo-settings) and Service."""
    app = deployment("podinfo", None, container="podinfod", image="ghcr.io/example/podinfo:6.0.0")
    settings = [{"configMapRef": {"name": "podinfo-settings"}}]
    app["spec"]["template"]["spec"]["containers"][0]["envFrom"] = settings
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "podinfo"},
        "spec": {"selector": {"app": "podinfo"}, "ports": [{"port": 9898}]},
    }
    return [app, service]


APP = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: podinfo-settings}\n"
    'data: {environment: "${cluster_env}", greeting: hello}\n---\n'
) + yaml_text(*_podinfo())


def extras(
    url: str, *, secret: str | None = None, ref: dict[str, str] | None = None, **spec: Any
) -> str:
    """A GitRepository of its own (credentials in the Secret `secret`, `ref` other than
    main) and a Kustomization over it (keyword arguments: more of its spec)."""
    source = git_repository(
        "extras", url, interval="5m", ref=ref or {"branch": "main"},
        secretRef={"name": secret} if secret else None,
    )  # fmt: skip
    ks = kustomization(
        "extras", "./deploy", source=("GitRepository", "extras"), interval="10m",
        wait=None, timeout=None, **spec,
    )  # fmt: skip
    return source + "---\n" + ks


EXTRA = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: extra-settings, namespace: flux-system}
data: {from: second-repository}
"""


def fleet(
    root: Path,
    *,
    components: bool = True,
    second: Remote | None = None,
    files: dict[str, str] | None = None,
) -> Remote:
    """The fleet repository (pushed to its bare remote); `second`: a Kustomization over it
    (unless `files` say otherwise: more files, by path)."""
    repo = Remote(root / "fleet")
    if components:
        repo.write("clusters/dev/flux-system/gotk-components.yaml", gotk_components())
    else:  # Flux installed apart (its CRDs are gitkrm's stand-ins); the namespace in Git
        repo.write(
            "clusters/dev/flux-system/namespace.yaml", NAMESPACE.replace("podinfo", "flux-system")
        )
    repo.write("clusters/dev/flux-system/gotk-sync.yaml", gotk_sync(f"file://{repo.bare}"))
    repo.write("clusters/dev/infrastructure.yaml", INFRASTRUCTURE)
    repo.write("clusters/dev/apps.yaml", APPS)
    if second is not None:
        repo.write("clusters/dev/extras.yaml", extras(second.url))
    repo.write("infrastructure/namespace.yaml", NAMESPACE)
    repo.write("infrastructure/cluster-info.yaml", INFRA_CONFIG)
    repo.write("apps/dev/podinfo.yaml", APP)
    for path, text in (files or {}).items():
        repo.write(path, text)
    repo.commit("fleet")
    return repo


@contextlib.contextmanager
def https_remote(
    root: Path, *, secret: str, username: str, password: str
) -> Iterator[tuple[GitHttpsServer, str]]:
    """An HTTPS server (basic auth, its own CA) of the repositories under `root`, and the
    Flux `secretRef` Secret `secret` (flux-system) a GitRepository reaches it with (JSON)."""
    require_tools()
    certs = root / "certs"
    certs.mkdir()
    with GitHttpsServer(root, username=username, password=password, certs=certs) as srv:
        body = {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret, "namespace": "flux-system"},
            "stringData": {"username": username, "password": password,
                           "ca.crt": srv.cert.read_text()},
        }  # fmt: skip
        yield srv, json.dumps(body)


def second_repository(root: Path) -> Remote:
    repo = Remote(root / "extras")
    repo.write("deploy/settings.yaml", EXTRA)
    repo.commit("extras")
    return repo
