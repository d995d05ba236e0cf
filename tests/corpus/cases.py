"""The corpus cases: which path of which vendored repository is synced, the edit made to it,
and what is known to fail today (a strict xfail in tests/e2e/test_corpus.py, so a fix flips
it red until the entry is removed).

Every repository is copied whole into a Git repository and synced at `path`, as a Flux
Kustomization or an Argo CD Application with that path would sync it. The edit is one exact
text replacement in one file, chosen to change objects the way a user's commit would (an
image, a replica count, a generator's input), never an immutable field.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

CORPUS: Final = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """Replace `old` (found exactly once) by `new` in `file` (relative to the repository)."""

    file: str
    old: str
    new: str

    def apply(self, root: Path) -> None:
        path = root / self.file
        text = path.read_text()
        found = text.count(self.old)
        if found != 1:
            raise AssertionError(f"{self.file}: {self.old!r} found {found} times, not once")
        path.write_text(text.replace(self.old, self.new))


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One synced path of a corpus repository.

    `invalid`: the path cannot be synced as it stands (it needs objects from elsewhere, like
    cert-manager's CRDs), so `validate` and `run` must both refuse it, naming the same
    problems. `xfail`: why the case fails today, naming the part of an issue that fixes it
    (a strict xfail in the test; the benchmark leaves it out).
    """

    id: str
    repo: str
    path: str
    edit: Edit | None = None
    invalid: bool = False
    xfail: str | None = None

    @property
    def source(self) -> Path:
        return CORPUS / self.repo

    def copy_to(self, work: Path) -> None:
        """The repository's files (licence and attribution included) into `work`."""
        shutil.copytree(self.source, work, dirs_exist_ok=True)


CASES: Final = (
    Case(
        id="podinfo-kustomize",
        repo="podinfo",
        path="kustomize",
        edit=Edit(
            file="kustomize/deployment.yaml",
            old="podinfo:6.14.1",
            new="podinfo:6.14.2",
        ),
    ),
    Case(
        id="podinfo-overlay-dev",
        repo="podinfo",
        path="deploy/overlays/dev",
        edit=Edit(
            file="deploy/bases/backend/deployment.yaml",
            old="podinfo:6.14.1",
            new="podinfo:6.14.2",
        ),
    ),
    Case(
        id="podinfo-webapp",
        repo="podinfo",
        path="deploy/webapp",
        edit=Edit(
            file="deploy/webapp/frontend/hpa.yaml", old="minReplicas: 1", new="minReplicas: 2"
        ),
    ),
    Case(id="podinfo-secure", repo="podinfo", path="deploy/secure", invalid=True),
    Case(
        id="examples-guestbook",
        repo="kubernetes-examples",
        path="web/guestbook",
        edit=Edit(
            file="web/guestbook/frontend-deployment.yaml", old="replicas: 3", new="replicas: 2"
        ),
    ),
    Case(
        id="examples-guestbook-go",
        repo="kubernetes-examples",
        path="web/guestbook-go",
        edit=Edit(
            file="web/guestbook-go/guestbook-controller.yaml", old="replicas: 3", new="replicas: 2"
        ),
    ),
    Case(
        id="examples-cassandra",
        repo="kubernetes-examples",
        path="databases/cassandra",
        edit=Edit(
            file="databases/cassandra/cassandra-statefulset.yaml",
            old="value: 512M",
            new="value: 768M",
        ),
    ),
    Case(
        id="examples-tf-serving",
        repo="kubernetes-examples",
        path="AI/model-serving-tensorflow",
        edit=Edit(
            file="AI/model-serving-tensorflow/ingress.yaml",
            old="pathType: Prefix",
            new="pathType: ImplementationSpecific",
        ),
    ),
    Case(
        id="argocd-guestbook",
        repo="argo-cd",
        path="test/e2e/testdata/guestbook",
        edit=Edit(
            file="test/e2e/testdata/guestbook/guestbook-ui-deployment.yaml",
            old="replicas: 0",
            new="replicas: 1",
        ),
    ),
    Case(
        id="argocd-plain-namespace",
        repo="argo-cd",
        path="test/e2e/testdata/guestbook-with-plain-namespace-manifest",
        edit=Edit(
            file="test/e2e/testdata/guestbook-with-plain-namespace-manifest/guestbook-ui-deployment.yaml",
            old="argocd-e2e-container:0.2",
            new="argocd-e2e-container:0.3",
        ),
    ),
    Case(
        id="argocd-crd-creation",
        repo="argo-cd",
        path="test/e2e/testdata/crd-creation",
        edit=Edit(
            file="test/e2e/testdata/crd-creation/crd-instances.yaml",
            old="cpu: 2000m",
            new="cpu: 1000m",
        ),
    ),
    Case(
        id="argocd-configmap-generator",
        repo="argo-cd",
        path="test/e2e/testdata/kustomize-cm-gen",
        edit=Edit(
            file="test/e2e/testdata/kustomize-cm-gen/kustomization.yaml",
            old="generatorOptions:\n",
            new='generatorOptions:\n  labels:\n    corpus.gitkrm.io/edited: "true"\n',
        ),
    ),
    Case(
        id="argocd-two-pods",
        repo="argo-cd",
        path="test/e2e/testdata/two-nice-pods",
        edit=Edit(
            file="test/e2e/testdata/two-nice-pods/pod-1.yaml",
            old="  name: pod-1\n",
            new='  name: pod-1\n  labels:\n    corpus.gitkrm.io/edited: "true"\n',
        ),
    ),
    Case(
        id="argocd-multi-namespace",
        repo="argo-cd",
        path="test/e2e/testdata/multi-namespace",
        edit=Edit(
            file="test/e2e/testdata/multi-namespace/deployment.yaml",
            old="replicas: 0",
            new="replicas: 1",
        ),
    ),
    Case(
        id="lookalike-guestbook",
        repo="example-apps-lookalike",
        path="guestbook",
        edit=Edit(
            file="guestbook/guestbook-ui-deployment.yaml", old="replicas: 1", new="replicas: 2"
        ),
    ),
    Case(
        id="lookalike-kustomize-guestbook",
        repo="example-apps-lookalike",
        path="kustomize-guestbook",
        edit=Edit(file="kustomize-guestbook/kustomization.yaml", old='"1.1"', new='"1.2"'),
    ),
    Case(
        id="flux-layout-staging",
        repo="flux-layout",
        path="clusters/staging",
        edit=Edit(
            file="apps/staging/kustomization.yaml",
            old="LOG_LEVEL=debug",
            new="LOG_LEVEL=trace",
        ),
    ),
    Case(
        id="metrics-server-release",
        repo="metrics-server",
        path="manifests/overlays/release",
        edit=Edit(
            file="manifests/components/release/kustomization.yaml",
            old="newTag: v0.9.0",
            new="newTag: v0.9.1",
        ),
    ),
    Case(
        id="microservices-demo",
        repo="microservices-demo",
        path="kustomize",
        edit=Edit(
            file="kustomize/base/loadgenerator.yaml",
            old='value: "10"',
            new='value: "20"',
        ),
    ),
)
