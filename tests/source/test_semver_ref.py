"""A source tracking a semver range over the remote's tags (Flux's `spec.ref.semver`, Argo
CD's `targetRevision` range): the highest tag the range allows, resolved again at every
poll, on real bare repositories."""

from __future__ import annotations

import pytest

from gitkrm.errors import BadRequest, NotFound
from gitkrm.source import GitRef, RefKind
from tests.source.source_gitrepo import RemoteRepo, SourceFactory


def release(remote: RemoteRepo, tag: str, *, annotated: bool = True) -> str:
    """A commit saying `tag` in version.yaml, pushed and tagged."""
    sha = remote.publish(tag, {"version.yaml": f"kind: Version\nname: {tag}\n"})
    remote.tag(tag, annotated=annotated)
    return sha


def semver(range_: str) -> GitRef:
    return GitRef(RefKind.SEMVER, range_)


async def test_the_highest_matching_tag_and_one_pushed_later(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    release(remote, "v0.9.0")
    release(remote, "v1.0.0")
    one_one = release(remote, "1.1.0", annotated=False)  # no `v`, a lightweight tag
    release(remote, "v2.0.0")
    release(remote, "not-a-version")
    src = make_source(remote.url, ref=semver(">=1.0.0 <2.0.0"))
    snap = await src.snapshot()
    assert (snap.revision, snap.ref) == (one_one, "1.1.0")
    assert snap.read("version.yaml") == b"kind: Version\nname: 1.1.0\n"

    # A tag outside the range changes nothing; one inside it is taken at the next poll.
    release(remote, "v2.1.0")
    assert await src.poll() == one_one
    assert await src.snapshot() is snap
    one_two = release(remote, "v1.2.0")
    assert await src.poll() == one_two
    snap = await src.snapshot()
    assert (snap.revision, snap.ref) == (one_two, "v1.2.0")
    assert snap.read("version.yaml") == b"kind: Version\nname: v1.2.0\n"


async def test_pre_releases_only_where_the_range_names_one(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    stable = release(remote, "v1.0.0")
    rc = release(remote, "v1.1.0-rc.1")
    src = make_source(remote.url, ref=semver("1.x"), cache="a")
    assert (await src.snapshot()).revision == stable
    src = make_source(remote.url, ref=semver(">=1.0.0-0"), cache="b")
    snap = await src.snapshot()
    assert (snap.revision, snap.ref) == (rc, "v1.1.0-rc.1")
    # Masterminds checks each comparator: `<2.0.0` names no pre-release, so none matches.
    src = make_source(remote.url, ref=semver(">=1.0.0-0 <2.0.0"), cache="c")
    assert (await src.snapshot()).revision == stable


@pytest.mark.parametrize(
    ("range_", "tag"), [("~1.2", "v1.2.5"), ("^1.2.3", "v1.9.0"), ("1.2.x", "v1.2.5")]
)
async def test_tilde_caret_and_wildcards(
    remote: RemoteRepo, make_source: SourceFactory, range_: str, tag: str
) -> None:
    for t in ("v1.2.0", "v1.2.5", "v1.9.0", "v2.0.0"):
        release(remote, t)
    snap = await make_source(remote.url, ref=semver(range_)).snapshot()
    assert snap.ref == tag


async def test_no_matching_tag_is_an_error_naming_the_range(
    remote: RemoteRepo, make_source: SourceFactory
) -> None:
    release(remote, "v1.0.0")
    src = make_source(remote.url, ref=semver("~3.1"))
    with pytest.raises(NotFound, match=r"no match found for semver: ~3\.1 \(no tag of "):
        await src.snapshot()
    three = release(remote, "v3.1.4")
    assert (await src.snapshot()).revision == three


def test_a_range_that_does_not_parse_is_refused_at_once() -> None:
    with pytest.raises(BadRequest, match="'banana' is not a version"):
        semver(">= banana")
    assert GitRef.from_flags(semver="^1.2") == semver("^1.2")
    with pytest.raises(BadRequest, match="at most one of"):
        GitRef.from_flags(tag="v1", semver="^1.2")
