"""An OCI artifact of a real registry (Debian's docker-registry on loopback) as a source:
pushed as `flux push artifact` does, resolved by tag, semver range or digest, its digests
verified, its layer unpacked once per digest, and a layer that would write outside its
directory refused with the entry named."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitkrm.errors import GitkrmError, Invalid, NotFound, Unauthorized
from gitkrm.source.oci import Credentials
from tests.support.oci_push import Pusher, tarball
from tests.support.registry import Registry, oci_registry, start_registry, stop_registry

from gitkrm.source.oci_source import OciArtifact, OciSource  # isort: skip

__all__ = ["oci_registry"]  # fixture

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: '{v}'\n"


def files(v: str) -> dict[str, str]:
    return {
        "deploy/kustomization.yaml": "resources: [cm.yaml]\n",
        "deploy/cm.yaml": CM.format(name="app", v=v),
        "README.md": "not a manifest\n",
    }


def source(registry: Registry, tmp_path: Path, name: str, **kw: object) -> OciSource:
    artifact = OciArtifact(url=f"{registry.url}/{name}", insecure=True, **kw)  # type: ignore[arg-type]
    return OciSource(name="oci", artifact=artifact, cache_dir=tmp_path / "oci", path="deploy")


async def test_a_tag_is_pulled_once_and_unpacked_once_per_digest(
    oci_registry: Registry, tmp_path: Path
) -> None:
    push = Pusher(oci_registry.host)
    digest = push.artifact("fleet/tagged", "v1.0.0", tarball(files("1")))
    src = source(oci_registry, tmp_path, "fleet/tagged", tag="v1.0.0")
    assert await src.poll() == f"v1.0.0@{digest}"
    snap = await src.snapshot()
    assert snap.revision == f"v1.0.0@{digest}"
    assert sorted(snap.files) == ["cm.yaml", "kustomization.yaml"]
    assert b"v: '1'" in snap.read("cm.yaml")
    assert await src.snapshot() is snap
    assert src.pulls == 1
    again = source(oci_registry, tmp_path, "fleet/tagged", tag="v1.0.0")
    assert (await again.snapshot()).revision == snap.revision
    assert again.pulls == 0  # the unpacked directory of that layer digest is reused
    moved = push.artifact("fleet/tagged", "v1.0.0", tarball(files("2")))
    snap2 = await src.snapshot()
    assert snap2.revision == f"v1.0.0@{moved}"
    assert b"v: '2'" in snap2.read("cm.yaml")
    assert src.pulls == 2


async def test_an_unpacked_artifact_unused_for_a_day_goes_when_the_tag_moves(
    oci_registry: Registry, tmp_path: Path
) -> None:
    push = Pusher(oci_registry.host)
    push.artifact("fleet/moving", "latest", tarball(files("1")))
    src = source(oci_registry, tmp_path, "fleet/moving", tag="latest")
    await src.snapshot()
    cache = tmp_path / "oci"
    [first] = list(cache.iterdir())
    old = first.stat().st_mtime - 2 * 24 * 3600
    os.utime(first, (old, old))
    await src.snapshot()  # the same digest: a use touches it again
    assert first.stat().st_mtime > old
    os.utime(first, (old, old))  # then no use for two days
    push.artifact("fleet/moving", "latest", tarball(files("2")))
    snap = await src.snapshot()
    assert b"v: '2'" in snap.read("cm.yaml")
    [second] = list(cache.iterdir())  # the first went with the pull of the second
    assert second != first


async def test_a_semver_range_takes_a_later_pushed_tag(
    oci_registry: Registry, tmp_path: Path
) -> None:
    push = Pusher(oci_registry.host)
    push.artifact("fleet/ranged", "v1.0.0", tarball(files("1.0")))
    push.artifact("fleet/ranged", "latest", tarball(files("latest")))
    src = source(oci_registry, tmp_path, "fleet/ranged", semver=">=1.0.0 <2.0.0")
    first = await src.snapshot()
    assert first.revision.startswith("v1.0.0@sha256:")
    assert first.ref == "v1.0.0"
    push.artifact("fleet/ranged", "v2.0.0", tarball(files("2.0")))
    assert (await src.snapshot()) is first  # outside the range: never taken
    d11 = push.artifact("fleet/ranged", "v1.1.0", tarball(files("1.1")))
    later = await src.snapshot()
    assert later.revision == f"v1.1.0@{d11}"
    assert b"v: '1.1'" in later.read("cm.yaml")
    none = source(oci_registry, tmp_path, "fleet/ranged", semver=">=3.0.0")
    with pytest.raises(NotFound, match=r"no match found for semver: >=3\.0\.0"):
        await none.snapshot()


async def test_a_digest_pin_holds_when_the_tag_moves_and_an_unknown_one_is_refused(
    oci_registry: Registry, tmp_path: Path
) -> None:
    push = Pusher(oci_registry.host)
    pinned = push.artifact("fleet/pinned", "v1", tarball(files("1")))
    push.artifact("fleet/pinned", "v1", tarball(files("2")))
    src = source(oci_registry, tmp_path, "fleet/pinned", tag="v1", digest=pinned)
    snap = await src.snapshot()
    assert snap.revision == pinned
    assert b"v: '1'" in snap.read("cm.yaml")
    unknown = "sha256:" + "0" * 64
    with pytest.raises(NotFound, match="not found"):
        await source(oci_registry, tmp_path, "fleet/pinned", digest=unknown).snapshot()


async def test_a_blob_whose_bytes_do_not_match_its_digest_is_refused(
    tmp_path: Path,
) -> None:
    proc, registry = start_registry(tmp_path / "reg")
    try:
        layer = tarball(files("1"))
        Pusher(registry.host).artifact("fleet/tampered", "v1", layer)
        from tests.support.oci_push import digest_of

        hexd = digest_of(layer).removeprefix("sha256:")
        stored = next((tmp_path / "reg" / "data").rglob(f"blobs/sha256/{hexd[:2]}/{hexd}/data"))
        stored.write_bytes(tarball(files("evil")))  # the registry's storage altered
        src = source(registry, tmp_path, "fleet/tampered", tag="v1")
        with pytest.raises(Invalid, match=r"the blob's digest is sha256:.*refused"):
            await src.snapshot()
        assert not list((tmp_path / "oci").glob("sha256-*"))
    finally:
        stop_registry(proc)


def _member(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    ("member", "says"),
    [
        (_member("../escape.yaml", tarfile.REGTYPE), "'../escape.yaml': leaves the artifact"),
        (_member("/etc/passwd", tarfile.REGTYPE), "'/etc/passwd': leaves the artifact"),
        (_member("deploy/up", tarfile.SYMTYPE, "../../.."), "a symlink to '../../..' leaves"),
        (_member("deploy/abs", tarfile.SYMTYPE, "/etc"), "a symlink to '/etc' leaves"),
        (_member("deploy/dev", tarfile.CHRTYPE), "a device file or FIFO is not allowed"),
        (_member("deploy/hard", tarfile.LNKTYPE, "/etc/shadow"), "a hard link to '/etc/shadow'"),
    ],
)
async def test_an_entry_leaving_the_artifact_is_refused_naming_it(
    oci_registry: Registry, tmp_path: Path, member: tarfile.TarInfo, says: str
) -> None:
    def add(tar: tarfile.TarFile) -> None:
        data = b"x" if member.isreg() else b""
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data) if data else None)

    name = f"fleet/evil-{abs(hash(member.name)) % 10_000}"
    Pusher(oci_registry.host).artifact(name, "v1", tarball(files("1"), edit=add))
    src = source(oci_registry, tmp_path, name, tag="v1")
    with pytest.raises(Invalid) as e:
        await src.snapshot()
    assert says in str(e.value)
    assert f"{oci_registry.url}/{name}@sha256:" in str(e.value)
    assert not (tmp_path / "escape.yaml").exists()
    assert [p.name for p in (tmp_path / "oci").iterdir()] == []  # nothing half-unpacked


async def test_a_symlink_inside_the_artifact_is_kept(
    oci_registry: Registry, tmp_path: Path
) -> None:
    def add(tar: tarfile.TarFile) -> None:
        tar.addfile(_member("deploy/same.yaml", tarfile.SYMTYPE, "cm.yaml"))

    Pusher(oci_registry.host).artifact("fleet/linked", "v1", tarball(files("1"), edit=add))
    snap = await source(oci_registry, tmp_path, "fleet/linked", tag="v1").snapshot()
    assert "cm.yaml" in snap.files


async def test_the_layer_selector_picks_by_media_type(
    oci_registry: Registry, tmp_path: Path
) -> None:
    Pusher(oci_registry.host).artifact("fleet/typed", "v1", tarball(files("1")))
    src = source(oci_registry, tmp_path, "fleet/typed", tag="v1", media_type="application/x-other")
    with pytest.raises(GitkrmError, match="no layer with media type 'application/x-other'"):
        await src.snapshot()
    flux = "application/vnd.cncf.flux.content.v1.tar+gzip"
    ok = source(oci_registry, tmp_path, "fleet/typed", tag="v1", media_type=flux)
    assert "cm.yaml" in (await ok.snapshot()).files


@pytest.fixture(scope="module")
def private_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    proc, registry = start_registry(tmp_path_factory.mktemp("private"), users={"flux": "s3cret-pw"})
    try:
        yield registry
    finally:
        stop_registry(proc)


async def test_basic_credentials_open_an_htpasswd_registry(
    private_registry: Registry, tmp_path: Path
) -> None:
    push = Pusher(private_registry.host, username="flux", password="s3cret-pw")
    digest = push.artifact("fleet/private", "v1", tarball(files("1")))
    anonymous = source(private_registry, tmp_path, "fleet/private", tag="v1")
    with pytest.raises(Unauthorized, match="access denied anonymously") as e:
        await anonymous.snapshot()
    wrong = source(
        private_registry,
        tmp_path,
        "fleet/private",
        tag="v1",
        credentials=Credentials("flux", "wrong-pw"),
    )
    with pytest.raises(Unauthorized, match="with the Secret's credentials") as e:
        await wrong.snapshot()
    assert "wrong-pw" not in str(e.value)
    good = source(
        private_registry,
        tmp_path,
        "fleet/private",
        tag="v1",
        credentials=Credentials("flux", "s3cret-pw"),
    )
    assert (await good.snapshot()).revision == f"v1@{digest}"
    assert "s3cret" not in repr(good.artifact)


async def test_a_layer_larger_than_one_read_arrives_whole(
    oci_registry: Registry, tmp_path: Path
) -> None:
    big: dict[str, bytes | str] = {**files("1"), "deploy/blob.bin": os.urandom(3 * 1024 * 1024)}
    digest = Pusher(oci_registry.host).artifact("fleet/big", "v1", tarball(big))
    snap = await source(oci_registry, tmp_path, "fleet/big", tag="v1").snapshot()
    assert snap.revision == f"v1@{digest}"
    assert (tmp_path / "oci").is_dir()
    unpacked = next((tmp_path / "oci").glob("sha256-*"))
    assert (unpacked / "deploy" / "blob.bin").read_bytes() == big["deploy/blob.bin"]


async def test_a_registry_asking_for_a_bearer_token_is_answered_by_its_token_service(
    tmp_path: Path,
) -> None:
    from tests.support.registry_token import token_registry

    with token_registry(tmp_path / "tok", username="flux", password="tok-pw") as (reg, service):
        name = "fleet/behind-token"
        push = Pusher(reg.host, bearer=service.token(f"repository:{name}:pull,push"))
        digest = push.artifact(name, "v1", tarball(files("1")))
        anonymous = source(reg, tmp_path, name, tag="v1")
        with pytest.raises(Unauthorized, match="access denied anonymously"):
            await anonymous.snapshot()
        good = source(reg, tmp_path, name, tag="v1", credentials=Credentials("flux", "tok-pw"))
        assert (await good.snapshot()).revision == f"v1@{digest}"
        assert service.issued[-1] == f"repository:{name}:pull"  # the scope the registry named
        ranged = source(
            reg, tmp_path, name, semver=">=1.0.0", credentials=Credentials("flux", "tok-pw")
        )
        assert (await ranged.snapshot()).revision == f"v1@{digest}"  # tags/list: a token too


async def test_the_oci_repositorys_ignore_lines_leave_files_of_the_artifact_out(
    oci_registry: Registry, tmp_path: Path
) -> None:
    push = Pusher(oci_registry.host)
    content = files("1") | {"deploy/extra.yaml": CM.format(name="extra", v="x")}
    push.artifact("fleet/ignored", "v1", tarball(content))
    artifact = OciArtifact(url=f"{oci_registry.url}/fleet/ignored", insecure=True, tag="v1")
    src = OciSource(name="oci", artifact=artifact, cache_dir=tmp_path / "oci", path="deploy",
                    ignore=("/deploy/extra.yaml",))  # fmt: skip
    assert sorted((await src.snapshot()).files) == ["cm.yaml", "kustomization.yaml"]
    await src.close()
