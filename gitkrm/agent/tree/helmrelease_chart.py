"""Where a Flux HelmRelease's chart comes from, read from the objects it names.

- `spec.chart.spec.sourceRef` to a `HelmRepository` (HTTP, or `type: oci`): the chart
  `spec.chart.spec.chart` of that repository, `version` a semver range (default `*`),
  picked at every poll (`gitkrm.charts.source`).
- `spec.chart.spec.sourceRef` to a `GitRepository`: the chart is a directory of that
  repository (`spec.chart.spec.chart`, e.g. `./charts/podinfo`); the repository is read as
  the Flux interpreter reads it (`flux_repo`: the parent's own repository takes the
  parent's credentials).
- `spec.chartRef` to an `OCIRepository`: the chart at its `url` (`oci://host/path/chart`),
  `ref.semver`, `ref.tag` or `ref.digest` (a digest is not honoured: the tag wins).

Credentials of a HelmRepository/OCIRepository come from its `secretRef` (`username`,
`password`) and CA from `certSecretRef` (`ca.crt`), read from the target; they are kept in
memory and masked (`krm.masking`), never written anywhere.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gitkrm.charts.spec import ChartRef, RepositoryAuth
from gitkrm.krm import GroupKind, Obj, ObjectRef, masking
from gitkrm.source import Auth, GitRef

from ..config import SourceConfig
from .fields import Fail, unhonoured_fields
from .flux_repo import duration
from .model import Unhonoured

Get = Callable[[ObjectRef], Awaitable[Obj | None]]

SOURCE_GROUP: Final = "source.toolkit.fluxcd.io"
HELM_REPOSITORY: Final = GroupKind(group=SOURCE_GROUP, kind="HelmRepository")
OCI_REPOSITORY: Final = GroupKind(group=SOURCE_GROUP, kind="OCIRepository")
GIT_REPOSITORY: Final = GroupKind(group=SOURCE_GROUP, kind="GitRepository")

HELM_CHART_LAYER: Final = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
"""The layer a chart pushed by `helm push` has: what gitkrm pulls, and what Flux's
documentation has an OCIRepository of a chart select (`layerSelector.mediaType`)."""

_REPO_HONOURED: Final = frozenset(
    {"url", "type", "interval", "timeout", "secretRef", "certSecretRef", "suspend", "ref"}
)
_REPO_REASONS: Final = {
    "passCredentials": "credentials go to the repository's own host only",
    "insecure": "a loopback registry is spoken to over plain HTTP, any other over HTTPS",
    "provider": "only the generic provider (a Secret's credentials) is supported",
    "accessFrom": "cross-namespace access rules are not enforced",
    "verify": "signatures of OCI artifacts are not verified",
    "layerSelector": f"the chart is pulled as a Helm chart artifact (its {HELM_CHART_LAYER} layer)",
    "proxySecretRef": "proxies are not supported",
    "serviceAccountName": "gitkrm uses its own identity",
}


@dataclass(frozen=True, slots=True)
class ChartOrigin:
    """What a HelmRelease's child source fetches: a chart of a chart repository (`chart`
    set, `url` the repository) or a chart directory of a Git repository (`path`)."""

    source: ObjectRef  # the HelmRepository, OCIRepository or GitRepository
    url: str
    chart: ChartRef | None = None
    ref: GitRef | None = None
    path: str = ""
    auth: Auth | None = None
    ca_file: Path | None = None
    repositories: tuple[RepositoryAuth, ...] = ()
    interval: float | None = None
    suspend: bool = False
    unhonoured: tuple[Unhonoured, ...] = ()


async def chart_origin(
    spec: Mapping[str, Any],
    *,
    namespace: str,
    parent: SourceConfig,
    get: Get,
    fail: Fail,
) -> ChartOrigin:
    """The chart `spec` (a HelmRelease's) names; `fail(field, message)` builds errors."""
    chart_ref = spec.get("chartRef")
    template: Mapping[str, Any] = (spec.get("chart") or {}).get("spec") or {}
    if bool(chart_ref) == bool(template):
        raise fail("spec.chart", "give exactly one of spec.chart.spec and spec.chartRef")
    if chart_ref:
        kind = str(chart_ref.get("kind") or "")
        if kind == "ExternalArtifact":
            raise fail(
                "spec.chartRef.kind",
                "'ExternalArtifact': a chart an ArtifactGenerator composes is not supported by "
                "gitkrm; only OCIRepository is",
            )
        if kind != OCI_REPOSITORY.kind:
            raise fail("spec.chartRef.kind", f"{kind!r}: only OCIRepository is supported")
        ref = _ref(OCI_REPOSITORY, chart_ref, namespace, "spec.chartRef", fail)
        repo = await _get(ref, get, "spec.chartRef", fail)
        return await _oci_repository(ref, repo, get=get, fail=fail)
    source = template.get("sourceRef") or {}
    kind = str(source.get("kind") or "")
    chart = str(template.get("chart") or "")
    if not chart:
        raise fail("spec.chart.spec.chart", "required")
    version = str(template.get("version") or "*")
    unhonoured = tuple(
        Unhonoured(f"spec.chart.spec.{k}", reason)
        for k, reason in (
            ("valuesFiles", "give values in spec.values or spec.valuesFrom"),
            ("verify", "chart signatures are not verified"),
            ("ignoreMissingValuesFiles", "value files of the chart are not read"),
        )
        if template.get(k)
    )
    if template.get("reconcileStrategy") not in (None, "ChartVersion"):
        unhonoured += (
            Unhonoured(
                "spec.chart.spec.reconcileStrategy",
                "a chart is rendered again when its files change, whatever its version",
            ),
        )
    interval = duration(template.get("interval"), "spec.chart.spec.interval", fail)
    if kind == HELM_REPOSITORY.kind:
        ref = _ref(HELM_REPOSITORY, source, namespace, "spec.chart.spec.sourceRef", fail)
        repo = await _get(ref, get, "spec.chart.spec.sourceRef", fail)
        origin = await _helm_repository(ref, repo, chart, version, get=get, fail=fail)
    elif kind == GIT_REPOSITORY.kind:
        ref = _ref(GIT_REPOSITORY, source, namespace, "spec.chart.spec.sourceRef", fail)
        origin = await _git_repository(ref, chart, parent=parent, get=get, fail=fail)
    else:
        raise fail(
            "spec.chart.spec.sourceRef.kind",
            f"{kind!r}: give a HelmRepository or a GitRepository (a Bucket is not supported)",
        )
    return dataclasses.replace(
        origin,
        interval=interval or origin.interval,
        unhonoured=(*origin.unhonoured, *unhonoured),
    )


def _ref(gk: GroupKind, named: Mapping[str, Any], namespace: str, at: str, fail: Fail) -> ObjectRef:
    name = str(named.get("name") or "")
    if not name:
        raise fail(f"{at}.name", "required")
    return ObjectRef(
        group=gk.group, kind=gk.kind, name=name, namespace=str(named.get("namespace") or namespace)
    )


async def _get(ref: ObjectRef, get: Get, at: str, fail: Fail) -> Obj:
    obj = await get(ref)
    if obj is None:
        raise fail(at, f"{ref.kind} {ref.namespace}/{ref.name} not found")
    return obj


def _unhonoured(ref: ObjectRef, spec: Mapping[str, Any]) -> tuple[Unhonoured, ...]:
    where = f"{ref.kind} {ref.namespace}/{ref.name}"
    return tuple(
        unhonoured_fields(spec, at=f"{where} spec", known=_REPO_HONOURED, reasons=_REPO_REASONS)
    )


def _decoded(secret: Obj, key: str) -> str | None:
    data = secret.get("data") or {}
    if key in data:
        try:
            return base64.b64decode(str(data[key]), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
    string = secret.get("stringData") or {}
    return str(string[key]) if key in string else None


async def _auth(
    ref: ObjectRef, spec: Mapping[str, Any], url: str, *, get: Get, fail: Fail
) -> tuple[RepositoryAuth, ...]:
    """The repository's credentials and CA from its Secrets (masked from now on)."""
    where = f"{ref.kind} {ref.namespace}/{ref.name}"
    username = password = ca = None
    for field, keys in (("secretRef", ("username", "password")), ("certSecretRef", ("ca.crt",))):
        named = spec.get(field)
        if not named:
            continue
        name = str(named.get("name") or "")
        secret = await get(ObjectRef(group="", kind="Secret", name=name, namespace=ref.namespace))
        if secret is None:
            raise fail("spec", f"{where}: spec.{field}: Secret {ref.namespace}/{name} not found")
        found = {k: _decoded(secret, k) for k in keys}
        if field == "secretRef":
            username, password = found["username"], found["password"]
            if password:
                masking.remember([password])
        else:
            ca = found["ca.crt"]
    if username is None and password is None and ca is None:
        return ()
    return (RepositoryAuth(url=url, username=username, password=password, ca_data=ca),)


async def _repository_origin(
    ref: ObjectRef, spec: Mapping[str, Any], chart: ChartRef, unhonoured: tuple[Unhonoured, ...],
    *, get: Get, fail: Fail,
) -> ChartOrigin:  # fmt: skip
    where = f"{ref.kind} {ref.namespace}/{ref.name}"
    return ChartOrigin(
        source=ref,
        url=chart.repository,
        chart=chart,
        repositories=await _auth(ref, spec, chart.repository, get=get, fail=fail),
        interval=duration(spec.get("interval"), f"{where} spec.interval", fail),
        suspend=bool(spec.get("suspend")),
        unhonoured=(*_unhonoured(ref, spec), *unhonoured),
    )


async def _helm_repository(
    ref: ObjectRef, repo: Obj, chart: str, version: str, *, get: Get, fail: Fail
) -> ChartOrigin:
    spec = repo.get("spec") or {}
    url = str(spec.get("url") or "")
    oci = spec.get("type") == "oci"
    if oci != url.startswith("oci://") or not url.startswith(("http://", "https://", "oci://")):
        raise fail(
            "spec.chart.spec.sourceRef",
            f"{ref.kind} {ref.namespace}/{ref.name}: spec.url {url!r} must be http(s):// "
            "(or oci:// with type: oci)",
        )
    chart_ref = ChartRef(repository=url, name=chart, version=version)
    return await _repository_origin(ref, spec, chart_ref, (), get=get, fail=fail)


async def _oci_repository(ref: ObjectRef, repo: Obj, *, get: Get, fail: Fail) -> ChartOrigin:
    spec = repo.get("spec") or {}
    url = str(spec.get("url") or "").rstrip("/")
    where = f"{ref.kind} {ref.namespace}/{ref.name}"
    if not url.startswith("oci://") or url.count("/") < 3:
        raise fail("spec.chartRef", f"{where}: spec.url {url!r} must be oci://host/path/chart")
    repository, _, name = url.rpartition("/")
    oci_ref = spec.get("ref") or {}
    version = str(oci_ref.get("semver") or oci_ref.get("tag") or "*")
    unhonoured = tuple(
        Unhonoured(f"{where} spec.ref.{k}", "the chart is picked by tag or semver")
        for k in ("digest", "semverFilter")
        if oci_ref.get(k)
    )
    chart_ref = ChartRef(repository=repository, name=name, version=version)
    selector = spec.get("layerSelector")
    if isinstance(selector, Mapping) and selector.get("mediaType") == HELM_CHART_LAYER:
        # The Helm chart's own layer (`copy` or `extract`): what gitkrm pulls anyway.
        spec = {k: v for k, v in spec.items() if k != "layerSelector"}
    return await _repository_origin(ref, spec, chart_ref, unhonoured, get=get, fail=fail)


async def _git_repository(
    ref: ObjectRef, chart: str, *, parent: SourceConfig, get: Get, fail: Fail
) -> ChartOrigin:
    from .flux_repo import read_repository

    repo = await read_repository(ref, parent=parent, get=get, fail=fail)
    path = "/".join(p for p in chart.split("/") if p not in ("", "."))
    if ".." in path.split("/"):
        raise fail("spec.chart.spec.chart", f"{chart!r} must stay inside the repository")
    return ChartOrigin(
        source=ref,
        url=repo.url,
        ref=repo.ref,
        path=path,
        auth=repo.auth,
        ca_file=repo.ca_file,
        interval=repo.interval,
        suspend=repo.suspend,
        unhonoured=repo.unhonoured,
    )
