"""What a Git source is: remote URL, tracked ref, sub-path, credentials, verification."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from gitkrm.errors import BadRequest

from .credentials import Auth
from .gitcli import DEFAULT_TIMEOUT
from .ignore import DEFAULT_IGNORES
from .redact import split_userinfo
from .semver import Constraint
from .tree import DEFAULT_MAX_FILE_SIZE
from .verify import VerifySpec

_MAX_RANGE = 256
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


HEAD = "HEAD"
"""`--ref HEAD`: the remote's default branch, whatever it is named (Argo CD's `HEAD`)."""


class RefKind(StrEnum):
    BRANCH = "branch"
    TAG = "tag"
    COMMIT = "commit"
    REF = "ref"  # any ref of the remote by its full name (refs/pull/12/head)
    SEMVER = "semver"  # the highest tag a semver range allows, resolved at every poll


@dataclass(frozen=True, slots=True)
class GitRef:
    """What a source tracks: a branch, a tag, one commit (a full sha), a full ref name, or
    a semver range over the remote's tags (`name` is the range, e.g. `>=1.0.0 <2.0.0`)."""

    kind: RefKind
    name: str

    def __post_init__(self) -> None:
        if self.kind is RefKind.SEMVER:
            if not self.name.strip() or len(self.name) > _MAX_RANGE:
                raise BadRequest(f"invalid semver range {self.name!r}")
            Constraint.parse(self.name)  # a clear error now, not at the first fetch
            return
        if not self.name or self.name.startswith("-") or any(c in self.name for c in " ~^:?*[\\"):
            raise BadRequest(f"invalid {self.kind} name {self.name!r}")
        if self.kind is RefKind.COMMIT and not _SHA.match(self.name):
            raise BadRequest(f"commit {self.name!r} must be a full lowercase hex sha")
        if (
            self.kind is RefKind.REF
            and self.name != HEAD
            and (not self.name.startswith("refs/") or ".." in self.name)
        ):
            raise BadRequest(f"ref {self.name!r} must be a full ref name (refs/...) or HEAD")

    def __str__(self) -> str:
        return f"{self.kind} {self.name!r}"

    @property
    def spec_field(self) -> str:
        """Its field of a GitSource's `spec.ref`: Flux's GitRepository names (`name` for a
        full ref name)."""
        return "name" if self.kind is RefKind.REF else str(self.kind)

    @classmethod
    def from_flags(
        cls,
        *,
        branch: str | None = None,
        tag: str | None = None,
        commit: str | None = None,
        ref: str | None = None,
        semver: str | None = None,
    ) -> GitRef:
        """The ref of `--branch B | --tag T | --commit SHA | --ref REF | --semver RANGE`
        (branch `main` when none)."""
        given = [
            (k, v)
            for k, v in (
                (RefKind.BRANCH, branch),
                (RefKind.TAG, tag),
                (RefKind.COMMIT, commit),
                (RefKind.REF, ref),
                (RefKind.SEMVER, semver),
            )
            if v
        ]
        if len(given) > 1:
            raise BadRequest("give at most one of branch, tag, commit, ref and semver")
        kind, name = given[0] if given else (RefKind.BRANCH, "main")
        return cls(kind, name)

    @property
    def remote_ref(self) -> str:
        """The remote's ref (for a semver range: the pattern of the tags it picks among)."""
        if self.kind is RefKind.SEMVER:
            return "refs/tags/*"
        prefix = {
            RefKind.BRANCH: "refs/heads/",
            RefKind.TAG: "refs/tags/",
            RefKind.COMMIT: "",
            RefKind.REF: "",
        }
        return prefix[self.kind] + self.name


@dataclass(frozen=True, slots=True)
class GitSourceSpec:
    """One Git source. `url` may carry user-info; it is stripped and used as credentials."""

    name: str
    url: str = field(repr=False)
    ref: GitRef = GitRef(RefKind.BRANCH, "main")
    path: str = ""
    auth: Auth | None = None
    ca_file: Path | None = None
    verify: VerifySpec | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    timeout: float = DEFAULT_TIMEOUT
    depth: int | None = 1
    ignore_defaults: tuple[str, ...] = DEFAULT_IGNORES
    ignore: tuple[str, ...] = ()
    """The source's own ignore patterns (`spec.ignore`), after the repository's root file."""
    repo_tree: bool = False
    """Snapshots carry the whole repository's tree even without a kustomization under the
    path (an overlay's components may lie anywhere in it)."""

    @property
    def safe_url(self) -> str:
        """The URL without user-info: what messages and the cache may show."""
        return split_userinfo(self.url).url
