"""Flux's objects as gitkrm reads them: TypedDict views of `Kustomization`
(kustomize.toolkit.fluxcd.io v1 and v1beta2) and `GitRepository` (source.toolkit.fluxcd.io
v1, v1beta2), and the names both share. Views only: nothing here reads or checks."""

from __future__ import annotations

from typing import Final, Literal, TypedDict

from gitkrm.krm import GroupKind
from gitkrm.krm.types import ObjectMeta

KUSTOMIZE_GROUP: Final = "kustomize.toolkit.fluxcd.io"
SOURCE_GROUP: Final = "source.toolkit.fluxcd.io"
KUSTOMIZATION: Final = GroupKind(group=KUSTOMIZE_GROUP, kind="Kustomization")
GIT_REPOSITORY: Final = GroupKind(group=SOURCE_GROUP, kind="GitRepository")
OCI_REPOSITORY: Final = GroupKind(group=SOURCE_GROUP, kind="OCIRepository")
KUSTOMIZATION_VERSIONS: Final = ("v1", "v1beta2")
GIT_REPOSITORY_VERSIONS: Final = ("v1", "v1beta2")
FINALIZER: Final = "finalizers.fluxcd.io"
GENERATOR_GROUP: Final = "source.extensions.fluxcd.io"
ARTIFACT_GENERATOR: Final = GroupKind(group=GENERATOR_GROUP, kind="ArtifactGenerator")
EXTERNAL_ARTIFACT: Final = GroupKind(group=SOURCE_GROUP, kind="ExternalArtifact")


class NamespacedName(TypedDict, total=False):
    name: str
    namespace: str


class SourceRef(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    namespace: str


class SubstituteFrom(TypedDict, total=False):
    kind: Literal["ConfigMap", "Secret"]
    name: str
    optional: bool


class PostBuild(TypedDict, total=False):
    substitute: dict[str, str]
    substituteFrom: list[SubstituteFrom]


class Decryption(TypedDict, total=False):
    provider: str
    secretRef: NamespacedName


class Selector(TypedDict, total=False):
    group: str
    version: str
    kind: str
    name: str
    namespace: str
    labelSelector: str
    annotationSelector: str


class Patch(TypedDict, total=False):
    patch: str
    target: Selector


class Json6902Patch(TypedDict, total=False):
    patch: list[dict[str, object]]
    target: Selector


class Image(TypedDict, total=False):
    name: str
    newName: str
    newTag: str
    digest: str


class CommonMetadata(TypedDict, total=False):
    labels: dict[str, str]
    annotations: dict[str, str]


class HealthCheck(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    namespace: str


class KustomizationSpec(TypedDict, total=False):
    path: str
    sourceRef: SourceRef
    interval: str
    retryInterval: str
    timeout: str
    prune: bool
    suspend: bool
    wait: bool
    force: bool
    targetNamespace: str
    namePrefix: str
    nameSuffix: str
    dependsOn: list[NamespacedName]
    postBuild: PostBuild
    decryption: Decryption
    patches: list[Patch]
    patchesStrategicMerge: list[object]  # v1beta2
    patchesJson6902: list[Json6902Patch]  # v1beta2
    images: list[Image]
    components: list[str]
    commonMetadata: CommonMetadata
    healthChecks: list[HealthCheck]
    healthCheckExprs: list[dict[str, str]]
    serviceAccountName: str
    kubeConfig: dict[str, object]
    deletionPolicy: str


class GitRef(TypedDict, total=False):
    branch: str
    tag: str
    semver: str
    name: str
    commit: str


class GitRepositorySpec(TypedDict, total=False):
    url: str
    ref: GitRef
    interval: str
    timeout: str
    secretRef: NamespacedName
    suspend: bool
    ignore: str
    include: list[object]
    recurseSubmodules: bool
    verify: dict[str, object]
    proxySecretRef: NamespacedName
    provider: str
    sparseCheckout: list[str]


class Kustomization(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: KustomizationSpec


class GitRepository(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: GitRepositorySpec
