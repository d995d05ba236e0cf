"""What Argo CD's `pullRequest` and `scmProvider` generators make of a Git host's answers.

The answers (`PullRequest`, `HostRepository`: only the fields Argo CD reads) come from a
host's API (`argocd_scm_rest`, fetched by `argocd_scm_hosts`); this
module is Argo CD's own logic over them, pure: the providers a generator may name, the
filters (`applicationset/services/pull_request/utils.go` and `scm_provider/utils.go`: a
filter's conditions all hold, any filter lets an item through; an SCM filter is a
repository filter or, once it names a branch or paths, a branch filter), and the
parameters (`generators/pull_request.go`, `scm_provider.go`) with gosimple/slug's
`branch_slug` (50 characters at most, cut after a word).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .argocd_appset_gen import Params, sanitize

PULL_REQUEST: Final = "pullRequest"
SCM_PROVIDER: Final = "scmProvider"
SUPPORTED: Final = ("github", "gitea")
"""The providers gitkrm reads (the `pullRequest`/`scmProvider` fields naming them)."""
PROVIDERS: Final = {
    PULL_REQUEST: {"github": "GitHub", "gitea": "Gitea", "gitlab": "GitLab",
                   "bitbucketServer": "Bitbucket Server", "bitbucket": "Bitbucket Cloud",
                   "azuredevops": "Azure DevOps"},
    SCM_PROVIDER: {"github": "GitHub", "gitea": "Gitea", "gitlab": "GitLab",
                   "bitbucketServer": "Bitbucket Server", "bitbucket": "Bitbucket Cloud",
                   "azureDevOps": "Azure DevOps", "awsCodeCommit": "AWS CodeCommit"},
}  # fmt: skip
DEFAULT_REQUEUE: Final = 30 * 60
"""Seconds between two readings of the host (Argo CD's `DefaultPullRequestRequeueAfter`
and `DefaultSCMProviderRequeueAfter`)."""
SLUG_MAX: Final = 50
_SLUG_SUB: Final = {"&": "and", "@": "at", '"': "", "'": "", "\u2019": "",
                    "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-"}  # fmt: skip
_NOT_SLUG: Final = re.compile(r"[^a-zA-Z0-9\-_]")
_DASHES: Final = re.compile(r"-+")

Fail = Callable[[str, str], Exception]


@dataclass(frozen=True, slots=True)
class PullRequest:
    """An open pull request, as Argo CD's `pullrequest.PullRequest`."""

    number: int
    title: str
    branch: str
    target_branch: str
    head_sha: str
    labels: tuple[str, ...] = ()
    author: str = ""


@dataclass(frozen=True, slots=True)
class HostRepository:
    """A repository at one branch, as Argo CD's `scm_provider.Repository`."""

    organization: str
    repository: str
    url: str
    branch: str
    sha: str = ""
    labels: tuple[str, ...] = ()
    repository_id: int | str | None = None


def provider_of(
    kind: str, spec: Mapping[str, Any], at: str, fail: Fail
) -> tuple[str, Mapping[str, Any]]:
    """The provider a generator names and its fields; refused when gitkrm does not read
    that provider."""
    names = [k for k in PROVIDERS[kind] if spec.get(k) is not None]
    if len(names) != 1:
        listed = ", ".join(PROVIDERS[kind])
        raise fail(at, f"exactly one provider ({listed}) is required, got {names or 'none'}")
    name = names[0]
    if name not in SUPPORTED:
        raise fail(
            f"{at}.{name}",
            f"not supported: gitkrm's {kind} generator reads GitHub and Gitea, "
            f"not {PROVIDERS[kind][name]}",
        )
    fields = spec[name]
    if not isinstance(fields, Mapping):
        raise fail(f"{at}.{name}", "must be an object")
    if fields.get("appSecretName"):
        raise fail(
            f"{at}.{name}.appSecretName", "not supported: GitHub App credentials (use tokenRef)"
        )
    return name, fields


def requeue_seconds(spec: Mapping[str, Any]) -> int:
    """`requeueAfterSeconds` (30 minutes without; 0: no requeue)."""
    value = spec.get("requeueAfterSeconds")
    return DEFAULT_REQUEUE if value is None else max(0, int(value))


def slug(text: str, max_length: int = SLUG_MAX) -> str:
    """gosimple/slug's `Make` as Argo CD sets it (`MaxLength` 50, `_` as `-`): English
    substitutions (`&` and, `@` at, quotes dropped, dashes as `-`), non-ASCII letters to
    their ASCII base (Unicode decomposition, where gosimple/unidecode transliterates),
    lower case, anything but `[a-zA-Z0-9-_]` as `-`, runs of `-` as one, `-`/`_` trimmed,
    and past `max_length` cut at the last `-` (or at `max_length` in one word)."""
    s = text.strip().replace("_", "-")
    s = "".join(_SLUG_SUB.get(c, c) for c in s)
    s = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode("ascii").lower()
    s = _DASHES.sub("-", _NOT_SLUG.sub("-", s)).strip("-_")
    if max_length <= 0 or len(s) <= max_length:
        return s
    cut = s.rfind("-", 0, max_length + 1)
    return s[:cut] if cut >= 0 else s[:max_length]


def _regexp(value: Any, at: str, fail: Fail) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(str(value))
    except re.error as e:
        raise fail(at, f"error compiling regexp {value!r}: {e}") from None


def _filters(spec: Mapping[str, Any], at: str, fail: Fail) -> list[tuple[Mapping[str, Any], str]]:
    filters = spec.get("filters") or []
    if not isinstance(filters, list) or not all(isinstance(f, Mapping) for f in filters):
        raise fail(f"{at}.filters", "must be a list of objects")
    return [(f, f"{at}.filters[{i}]") for i, f in enumerate(filters)]


def pull_request_filter(
    spec: Mapping[str, Any], at: str, fail: Fail
) -> Callable[[PullRequest], bool]:
    """Argo CD's `ListPullRequests` filters: `branchMatch`, `targetBranchMatch`,
    `titleMatch` (regular expressions, searched), all of one filter, any filter."""
    compiled = [
        [(attr, _regexp(f.get(key), f"{where}.{key}", fail))
         for key, attr in (("branchMatch", "branch"), ("targetBranchMatch", "target_branch"),
                           ("titleMatch", "title"))]
        for f, where in _filters(spec, at, fail)
    ]  # fmt: skip

    def keep(pull: PullRequest) -> bool:
        return not compiled or any(
            all(r is None or r.search(getattr(pull, attr)) for attr, r in one) for one in compiled
        )

    return keep


@dataclass(frozen=True, slots=True)
class ScmFilter:
    """One compiled `scmProvider` filter, and what it applies to (Argo CD's `FilterType`):
    `branch` (it names a branch or paths: each branch is matched), `repository` (only a
    repository or a label: each repository is), or "" (nothing: it applies to none)."""

    repository: re.Pattern[str] | None
    label: re.Pattern[str] | None
    branch_match: re.Pattern[str] | None
    paths_exist: tuple[str, ...]
    paths_do_not_exist: tuple[str, ...]
    applies: str


def scm_filters(spec: Mapping[str, Any], at: str, fail: Fail) -> list[ScmFilter]:
    out = []
    for f, where in _filters(spec, at, fail):
        paths = {}
        for key in ("pathsExist", "pathsDoNotExist"):
            value = f.get(key) or []
            if not isinstance(value, list):
                raise fail(f"{where}.{key}", "must be a list of paths")
            paths[key] = tuple(str(p).rstrip("/") for p in value)
        out.append(
            ScmFilter(
                repository=_regexp(f.get("repositoryMatch"), f"{where}.repositoryMatch", fail),
                label=_regexp(f.get("labelMatch"), f"{where}.labelMatch", fail),
                branch_match=_regexp(f.get("branchMatch"), f"{where}.branchMatch", fail),
                paths_exist=paths["pathsExist"],
                paths_do_not_exist=paths["pathsDoNotExist"],
                applies=_applies(f),
            )
        )  # fmt: skip
    return out


def _applies(f: Mapping[str, Any]) -> str:
    if any(f.get(k) is not None for k in ("pathsExist", "pathsDoNotExist", "branchMatch")):
        return "branch"
    return (
        "repository" if any(f.get(k) is not None for k in ("repositoryMatch", "labelMatch")) else ""
    )


def matches_without_paths(repo: HostRepository, f: ScmFilter) -> bool:
    """The filter's conditions but for paths (which ask the host)."""
    if f.repository is not None and not f.repository.search(repo.repository):
        return False
    if f.branch_match is not None and not f.branch_match.search(repo.branch):
        return False
    return f.label is None or any(f.label.search(label) for label in repo.labels)


def pull_request_params(pull: PullRequest, *, go: bool) -> Params:
    """Argo CD's parameters of a pull request (`labels` with Go templates only)."""
    sha = pull.head_sha
    params: Params = {
        "number": str(pull.number),
        "title": pull.title,
        "branch": pull.branch,
        "branch_slug": slug(pull.branch),
        "target_branch": pull.target_branch,
        "target_branch_slug": slug(pull.target_branch),
        "head_sha": sha,
        "head_short_sha": sha[:8],
        "head_short_sha_7": sha[:7],
        "author": pull.author,
    }
    if go:
        params["labels"] = list(pull.labels)
    return params


def repository_params(repo: HostRepository) -> Params:
    """Argo CD's parameters of a repository's branch (`repository_id` is no string: a
    fasttemplate leaves `{{repository_id}}` as written, as Argo CD does)."""
    return {
        "organization": repo.organization,
        "repository": repo.repository,
        "repository_id": repo.repository_id,
        "url": repo.url,
        "branch": repo.branch,
        "sha": repo.sha,
        "short_sha": repo.sha[:8],
        "short_sha_7": repo.sha[:7],
        "labels": ",".join(repo.labels),
        "branchNormalized": sanitize(repo.branch),
    }


def params_of(kind: str, answers: Sequence[Any], *, go: bool) -> list[Params]:
    if kind == PULL_REQUEST:
        return [pull_request_params(p, go=go) for p in answers]
    return [repository_params(r) for r in answers]
