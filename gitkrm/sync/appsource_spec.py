"""How an interpreted Argo CD Application's path renders and syncs: plain values, light to
import (the agent's configuration holds them; `gitkrm.sync.appsource` applies them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from gitkrm.sync.appproject_spec import ProjectPolicy

NAMESPACE_PATH: Final = "(syncOptions: CreateNamespace=true)"
"""Where problems and the status say the created Namespace comes from."""
_KEEP: Final = ("gitkrm.io/prune", "disabled")  # gitkrm.sync.keys.PRUNE, DISABLED


class SourceType(StrEnum):
    """The source type an Application names (`spec.source.directory` / `.kustomize`), or
    AUTO: detected from the path, as Argo CD does."""

    AUTO = "Auto"
    DIRECTORY = "Directory"
    KUSTOMIZE = "Kustomize"


@dataclass(frozen=True, slots=True)
class JsonnetVar:
    """An external variable or a top-level argument: a string, or jsonnet code."""

    name: str
    value: str
    code: bool = False


@dataclass(frozen=True, slots=True)
class JsonnetSpec:
    """`spec.source.directory.jsonnet`: `libs` are repository paths, searched after the
    importing file's directory (gitkrm.sync.jsonnet)."""

    ext_vars: tuple[JsonnetVar, ...] = ()
    tlas: tuple[JsonnetVar, ...] = ()
    libs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DirectorySpec:
    """`spec.source.directory`."""

    recurse: bool = False
    include: str = ""
    exclude: str = ""
    jsonnet: JsonnetSpec = JsonnetSpec()


@dataclass(frozen=True, slots=True)
class ManagedNamespace:
    """`CreateNamespace=true`: the destination namespace, with `managedNamespaceMetadata`."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()

    def manifest(self) -> bytes:
        """The Namespace as a manifest (JSON is YAML), never pruned (`gitkrm.io/prune:
        disabled`, also when the Application is deleted): Argo CD never deletes a namespace
        it created."""
        ann = dict(self.annotations)
        ann[_KEEP[0]] = _KEEP[1]
        meta: dict[str, object] = {"name": self.name, "annotations": ann}
        if self.labels:
            meta["labels"] = dict(self.labels)
        return json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": meta}).encode()


@dataclass(frozen=True, slots=True)
class BuildEnv:
    """Argo CD's build environment (`gitkrm.sync.buildenv` substitutes it): what an
    Application's build environment holds but the revision, known at render."""

    app_name: str
    namespace: str
    project: str
    repo_url: str
    source_path: str
    target_revision: str
    annotations: bool = False
    """`kustomize.commonAnnotationsEnvsubst`: the common annotations are substituted too."""

    def variables(self, revision: str) -> dict[str, str]:
        """The variables for `revision` (a commit sha, or a chart's version)."""
        return {
            "ARGOCD_APP_NAME": self.app_name,
            "ARGOCD_APP_NAMESPACE": self.namespace,
            "ARGOCD_APP_PROJECT_NAME": self.project,
            "ARGOCD_APP_REVISION": revision,
            "ARGOCD_APP_REVISION_SHORT": revision[:7],
            "ARGOCD_APP_REVISION_SHORT_8": revision[:8],
            "ARGOCD_APP_SOURCE_REPO_URL": self.repo_url,
            "ARGOCD_APP_SOURCE_PATH": self.source_path,
            "ARGOCD_APP_SOURCE_TARGET_REVISION": self.target_revision,
        }


@dataclass(frozen=True, slots=True)
class AppSource:
    """How an interpreted Application's path renders and syncs (see the module docstring)."""

    source_type: SourceType = SourceType.AUTO
    directory: DirectorySpec = DirectorySpec()
    server_side: bool = False  # syncOptions ServerSideApply=true
    prune: bool = True  # False: syncOptions Prune=false, every object left when gone
    force: bool = False  # syncOptions Force=true (with Replace=true: re-created)
    validate: bool = True  # False: syncOptions Validate=false, unknown fields dropped (`parse`)
    create_namespace: ManagedNamespace | None = None
    project: ProjectPolicy | None = None
    """The AppProject's rules for the objects (None: none checked, e.g. `default`)."""
    build_env: BuildEnv | None = None
