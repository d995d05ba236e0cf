"""Argo CD's `argoproj.io/v1alpha1` Application (and AppProject) as TypedDict views: the
fields gitkrm reads, spelled as Argo CD spells them. Views only: nothing is checked here
(`argocd` checks what it reads, naming the field)."""

from __future__ import annotations

from typing import Any, Final, TypedDict

from gitkrm.krm import GroupKind
from gitkrm.krm.types import ObjectMeta
from gitkrm.sync.appproject_spec import IN_CLUSTER_NAME as IN_CLUSTER_NAME
from gitkrm.sync.appproject_spec import IN_CLUSTER_SERVER as IN_CLUSTER_SERVER

GROUP: Final = "argoproj.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
APPLICATION: Final = GroupKind(group=GROUP, kind="Application")
APP_PROJECT: Final = GroupKind(group=GROUP, kind="AppProject")
APPLICATION_SET: Final = GroupKind(group=GROUP, kind="ApplicationSet")

FINALIZER: Final = "resources-finalizer.argocd.argoproj.io"
FINALIZERS: Final = (FINALIZER, FINALIZER + "/background", FINALIZER + "/foreground")
"""Argo CD's cascade finalizers: on an Application, deleting it deletes its objects."""


SECRET_TYPE_LABEL: Final = "argocd.argoproj.io/secret-type"
KNOWN_HOSTS_CONFIGMAP: Final = "argocd-ssh-known-hosts-cm"


class Directory(TypedDict, total=False):
    recurse: bool
    include: str
    exclude: str
    jsonnet: dict[str, Any]


class Kustomize(TypedDict, total=False):
    namePrefix: str
    nameSuffix: str
    images: list[str]
    patches: list[dict[str, Any]]
    namespace: str
    commonLabels: dict[str, str]
    commonAnnotations: dict[str, str]
    components: list[str]
    labelWithoutSelector: bool


class Source(TypedDict, total=False):
    repoURL: str
    targetRevision: str
    path: str
    chart: str
    directory: Directory
    kustomize: Kustomize
    helm: dict[str, Any]
    plugin: dict[str, Any]
    ref: str
    name: str


class Destination(TypedDict, total=False):
    server: str
    name: str
    namespace: str


class Automated(TypedDict, total=False):
    prune: bool
    selfHeal: bool
    allowEmpty: bool
    enabled: bool


class ManagedNamespaceMetadata(TypedDict, total=False):
    labels: dict[str, str]
    annotations: dict[str, str]


class SyncPolicy(TypedDict, total=False):
    automated: Automated
    syncOptions: list[str]
    managedNamespaceMetadata: ManagedNamespaceMetadata
    retry: dict[str, Any]


class IgnoreDifference(TypedDict, total=False):
    group: str
    kind: str
    name: str
    namespace: str
    jsonPointers: list[str]
    jqPathExpressions: list[str]
    managedFieldsManagers: list[str]


class ApplicationSpec(TypedDict, total=False):
    project: str
    source: Source
    sources: list[Source]
    destination: Destination
    syncPolicy: SyncPolicy
    ignoreDifferences: list[IgnoreDifference]
    info: list[dict[str, str]]
    revisionHistoryLimit: int


class Application(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: ApplicationSpec
    status: dict[str, Any]
