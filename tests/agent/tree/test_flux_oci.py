"""A Kustomization over a Flux OCIRepository read into a child that syncs the artifact:
the reference in source-controller's precedence, the dockerconfigjson credentials of the
registry's host, unsupported fields reported, bad fields refused naming them."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from gitkrm.agent.config import SourceConfig
from gitkrm.agent.tree.flux import INTERPRETER
from gitkrm.errors import ManifestError
from gitkrm.source import GitRef, RefKind
from gitkrm.source.oci import Credentials

from .flux_objects import Objects, flux_object, kustomization, secret

URL = "https://github.com/example/fleet"
OCI = "oci://ghcr.io/kyverno/manifests/kyverno"
DIGEST = "sha256:" + "ab" * 32


def parent() -> SourceConfig:
    return SourceConfig(name="default", url=URL, path="clusters/dev")


def oci_repository(name: str = "kyverno", **spec: Any) -> dict[str, Any]:
    return flux_object(
        "source.toolkit.fluxcd.io/v1beta2", "OCIRepository", name=name, namespace="flux-system",
        generation=1, defaults={"url": OCI, "interval": "6h", "ref": {"tag": "v1.14.4"}},
        spec=spec,
    )  # fmt: skip


def over_oci(**spec: Any) -> dict[str, Any]:
    return kustomization(path="./", sourceRef={"kind": "OCIRepository", "name": "kyverno"}, **spec)


async def read(*objs: dict[str, Any], ks: dict[str, Any] | None = None) -> Any:
    return await INTERPRETER.child(ks or over_oci(), Objects(parent(), *objs))


async def test_a_tag_of_an_oci_repository_is_the_childs_artifact() -> None:
    spec = await read(oci_repository())
    c = spec.config
    assert c.oci is not None
    assert (c.url, c.ref, c.path) == (OCI, GitRef(RefKind.TAG, "v1.14.4"), "")
    assert (c.oci.url, c.oci.tag, c.oci.semver, c.oci.digest) == (OCI, "v1.14.4", None, None)
    assert c.oci.media_type is None
    assert not c.oci.insecure
    assert c.oci.credentials is None
    assert c.interval == 600  # the smaller of the OCIRepository's 6h and the Kustomization's
    assert not spec.same_as_parent
    assert spec.unhonoured == ()


async def test_digest_wins_over_semver_wins_over_tag_and_none_is_latest() -> None:
    pinned = await read(oci_repository(ref={"digest": DIGEST, "semver": "1.x", "tag": "v1"}))
    assert pinned.config.oci.digest == DIGEST
    ranged = await read(oci_repository(ref={"semver": ">=1.14.0", "semverFilter": "^v"}))
    assert ranged.config.oci.semver == ">=1.14.0"
    assert ranged.config.oci.semver_filter == "^v"
    assert ranged.config.ref == GitRef(RefKind.SEMVER, ">=1.14.0")
    latest = await read(oci_repository(ref=None))
    assert latest.config.oci.tag == "latest"


async def test_layer_selector_insecure_and_timeout_are_read() -> None:
    spec = await read(
        oci_repository(
            insecure=True, timeout="30s",
            layerSelector={"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip",
                           "operation": "copy"},
        )
    )  # fmt: skip
    oci = spec.config.oci
    assert oci.media_type == "application/vnd.cncf.flux.content.v1.tar+gzip"
    assert oci.insecure
    assert oci.timeout == 30


def dockerconfig(entries: dict[str, dict[str, str]]) -> str:
    return json.dumps({"auths": entries})


@pytest.mark.parametrize(
    "entry",
    [
        {"ghcr.io": {"username": "flux", "password": "pw-1"}},
        {"https://ghcr.io/v1/": {"auth": base64.b64encode(b"flux:pw-1").decode()}},
    ],
)
async def test_credentials_are_the_dockerconfigjson_entry_of_the_registry_host(
    entry: dict[str, dict[str, str]],
) -> None:
    pull = secret("pull", **{".dockerconfigjson": dockerconfig(entry)})
    spec = await read(oci_repository(secretRef={"name": "pull"}), pull)
    assert spec.config.oci.credentials == Credentials("flux", "pw-1")
    assert "pw-1" not in repr(spec.config)


async def test_fields_gitkrm_does_not_honour_are_reported() -> None:
    spec = await read(
        oci_repository(
            verify={"provider": "cosign"}, provider="aws", proxySecretRef={"name": "p"},
            serviceAccountName="sa", ignore="*.md",
        )
    )  # fmt: skip
    where = "OCIRepository flux-system/kyverno"
    fields = {u.field for u in spec.unhonoured}
    assert fields == {
        f"{where} spec.{k}" for k in ("verify", "provider", "proxySecretRef", "serviceAccountName")
    }
    assert spec.config.ignore == "*.md"  # honoured: the child's source leaves them out


@pytest.mark.parametrize(
    ("objs", "says"),
    [
        ((), "OCIRepository flux-system/kyverno not found"),
        ((oci_repository(url="https://ghcr.io/x"),), "spec.url: 'https://ghcr.io/x' is not"),
        ((oci_repository(ref={"digest": "sha256:abc"}),), "spec.ref.digest: digest 'sha256:abc'"),
        ((oci_repository(ref={"semver": ">= banana"}),), "spec.ref.semver:"),
        ((oci_repository(ref={"semver": "1.x", "semverFilter": "("}),), "spec.ref.semverFilter:"),
        ((oci_repository(layerSelector={"operation": "merge"}),), "spec.layerSelector.operation"),
        ((oci_repository(secretRef={"name": "absent"}),), "Secret flux-system/absent not found"),
        ((oci_repository(secretRef={"name": "s"}), secret("s", username="u")),
         "the Secret has no .dockerconfigjson"),
        ((oci_repository(secretRef={"name": "s"}),
          secret("s", **{".dockerconfigjson": dockerconfig({"docker.io": {"auth": "eDp5"}})})),
         ".dockerconfigjson has no entry for the registry ghcr.io"),
    ],
)  # fmt: skip
async def test_errors_name_the_kustomization_and_the_oci_repository_field(
    objs: tuple[dict[str, Any], ...], says: str
) -> None:
    with pytest.raises(ManifestError) as e:
        await read(*objs)
    assert e.value.object == "Kustomization flux-system/apps"
    assert e.value.detail.startswith("spec.sourceRef:"), e.value.detail
    assert says in e.value.detail
