"""The corpus cases: which path of which corpus repository is synced, the edit made to it,
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
        """The repository's files into `work`."""
        shutil.copytree(self.source, work, dirs_exist_ok=True)


CASES: Final = (
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
        id="lookalike-needs-cert-manager",
        repo="example-apps-lookalike",
        path="needs-cert-manager",
        invalid=True,
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
        id="podinfo-lookalike-kustomize",
        repo="podinfo-lookalike",
        path="kustomize",
        edit=Edit(file="kustomize/deployment.yaml", old="server:2.3.0", new="server:2.3.1"),
    ),
    Case(
        id="podinfo-lookalike-dev",
        repo="podinfo-lookalike",
        path="deploy/overlays/dev",
        edit=Edit(
            file="deploy/overlays/dev/kustomization.yaml", old="2.4.0-rc.1", new="2.4.0-rc.2"
        ),
    ),
    Case(
        id="podinfo-lookalike-production",
        repo="podinfo-lookalike",
        path="deploy/overlays/production",
        edit=Edit(
            file="deploy/overlays/production/settings.env",
            old="CARD_LOG_LEVEL=warn",
            new="CARD_LOG_LEVEL=error",
        ),
    ),
    Case(
        id="podinfo-lookalike-chart",
        repo="podinfo-lookalike",
        path="charts/pagecard",
        edit=Edit(file="charts/pagecard/values.yaml", old="maxReplicas: 4", new="maxReplicas: 6"),
    ),
    Case(
        id="examples-lookalike-guestbook",
        repo="kubernetes-examples-lookalike",
        path="web/guestbook",
        edit=Edit(
            file="web/guestbook/frontend-deployment.yaml", old="replicas: 3", new="replicas: 2"
        ),
    ),
    Case(
        id="examples-lookalike-statefulset",
        repo="kubernetes-examples-lookalike",
        path="databases/keystore",
        edit=Edit(
            file="databases/keystore/keystore-statefulset.yaml",
            old="value: 256M",
            new="value: 384M",
        ),
    ),
    Case(
        id="examples-lookalike-batch",
        repo="kubernetes-examples-lookalike",
        path="batch/reports",
        edit=Edit(
            file="batch/reports/nightly-cronjob.yaml", old='"17 3 * * *"', new='"17 4 * * *"'
        ),
    ),
    Case(
        id="examples-lookalike-access",
        repo="kubernetes-examples-lookalike",
        path="access/restricted-api",
        edit=Edit(
            file="access/restricted-api/rbac.yaml",
            old='verbs: ["get", "watch"]',
            new='verbs: ["get", "list", "watch"]',
        ),
    ),
    Case(
        id="metrics-server-lookalike-base",
        repo="metrics-server-lookalike",
        path="manifests/base",
        edit=Edit(
            file="manifests/base/deployment.yaml",
            old="--scrape-every=20s",
            new="--scrape-every=30s",
        ),
    ),
    Case(
        id="metrics-server-lookalike-release",
        repo="metrics-server-lookalike",
        path="manifests/overlays/release",
        edit=Edit(
            file="manifests/components/release/kustomization.yaml",
            old="newTag: v0.3.2",
            new="newTag: v0.3.3",
        ),
    ),
    Case(
        id="metrics-server-lookalike-ha",
        repo="metrics-server-lookalike",
        path="manifests/overlays/release-ha",
        edit=Edit(
            file="manifests/components/high-availability/pdb.yaml",
            old="minAvailable: 1",
            new="minAvailable: 2",
        ),
    ),
    Case(
        id="microservices-demo-lookalike-release",
        repo="microservices-demo-lookalike",
        path="release",
        edit=Edit(file="release/kubernetes-manifests.yaml", old='value: "8"', new='value: "16"'),
    ),
    Case(
        id="microservices-demo-lookalike-kustomize",
        repo="microservices-demo-lookalike",
        path="kustomize",
        edit=Edit(
            file="kustomize/base/storefront.yaml", old='value: "classic"', new='value: "holiday"'
        ),
    ),
)
