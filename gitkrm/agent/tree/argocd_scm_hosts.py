"""The Git hosts an ApplicationSet's `pullRequest` and `scmProvider` generators ask.

When the ApplicationSet is read (`tokens`), each generator's provider is checked
(`argocd_scm.provider_of`) and its `tokenRef` Secret (in the ApplicationSet's namespace)
is read into a private file (mode 0600, named by a keyed digest): the token is never in
the child's configuration, a status, a note or the log, and the client reads the file
at each use. A change to the Secret reads the ApplicationSet again.

When its child makes the Applications (`HostAnswers`), the generators look their
answers up; one not fetched yet raises `Needed`, the child fetches it (`fetch`: Argo
CD's `ListPullRequests` / `ListRepos` over `argocd_scm_rest`)
and makes them again, so a generator a matrix renders with another's parameters asks
for what it names. An answer is kept for the generator's `requeueAfterSeconds` (30
minutes; 0: until the ApplicationSet changes) and fetched again after (`refresh`); a
host's failure is the ApplicationSet's error, naming the generator and the HTTP status.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gitkrm.errors import NotFound
from gitkrm.krm import ObjectRef
from gitkrm.source.credentials import SecretRef
from gitkrm.source.restapi import ApiError, RestApi, RestClient

from .argocd_appset_gen import Params
from .argocd_scm import (
    DEFAULT_REQUEUE,
    PULL_REQUEST,
    Fail,
    HostRepository,
    PullRequest,
    ScmFilter,
    matches_without_paths,
    params_of,
    provider_of,
    pull_request_filter,
    requeue_seconds,
    scm_filters,
)
from .model import Context

log = logging.getLogger("gitkrm.agent")


class Needed(Exception):
    """A generator's answer not fetched yet."""

    def __init__(self, *, kind: str, spec: Mapping[str, Any], at: str, key: str) -> None:
        super().__init__(at)
        self.kind, self.spec, self.at, self.key = kind, spec, at, key


def _key(kind: str, spec: Mapping[str, Any]) -> str:
    """What an answer depends on: the generator less its template and values."""
    asked = {k: v for k, v in spec.items() if k not in ("template", "values")}
    return json.dumps([kind, asked], sort_keys=True, default=str)


def _token_name(ref: Any, at: str, fail: Fail) -> tuple[str, str] | None:
    if ref is None:
        return None
    if not isinstance(ref, Mapping) or not ref.get("secretName") or not ref.get("key"):
        raise fail(f"{at}.tokenRef", "secretName and key are required")
    name, key = str(ref["secretName"]), str(ref["key"])
    if "{{" in name or "{{" in key:
        raise fail(f"{at}.tokenRef", "not supported: a templated Secret name or key")
    return name, key


async def tokens(
    found: Sequence[tuple[str, Mapping[str, Any], str]], *, namespace: str, ctx: Context, fail: Fail
) -> tuple[dict[str, str], list[ObjectRef], int | None]:
    """For the host generators `found` (kind, spec, field): their tokens (`secret/key` ->
    private file), the Secrets read, and the shortest requeue (None: none requeues)."""
    from .argocd_repo import secret_text
    from .flux_repo import private_file

    out: dict[str, str] = {}
    reads: list[ObjectRef] = []
    requeues: list[int] = []
    for kind, spec, at in found:
        if not isinstance(spec, Mapping):
            raise fail(at, "must be an object")
        name, fields = provider_of(kind, spec, at, fail)
        try:
            if requeue := requeue_seconds(spec):
                requeues.append(requeue)
        except (TypeError, ValueError):
            raise fail(f"{at}.requeueAfterSeconds", "must be a number of seconds") from None
        ref = _token_name(fields.get("tokenRef"), f"{at}.{name}", fail)
        if ref is None:
            continue
        secret_ref = ObjectRef(group="", kind="Secret", name=ref[0], namespace=namespace)
        reads.append(secret_ref)
        secret = await ctx.get(secret_ref)
        if secret is None:
            raise fail(f"{at}.{name}.tokenRef", f"Secret {namespace}/{ref[0]} not found")
        value = secret_text(secret, ref[1]).strip()
        if not value:
            raise fail(
                f"{at}.{name}.tokenRef", f"key {ref[1]!r} in Secret {namespace}/{ref[0]} not found"
            )
        out["/".join(ref)] = str(private_file(value.encode(), ".token"))
    return out, reads, min(requeues) if requeues else None


@dataclasses.dataclass(slots=True)
class _Answer:
    kind: str
    spec: Mapping[str, Any]
    at: str
    items: tuple[Any, ...]
    at_time: float


class HostAnswers:
    """The hosts' answers one ApplicationSet's generators read (see the module)."""

    def __init__(self, *, tokens: Mapping[str, str], fail: Fail) -> None:
        self._tokens = dict(tokens)
        self._fail = fail
        self._answers: dict[str, _Answer] = {}
        self._used: set[str] = set()

    # -- what the generators read (pure) -----------------------------------------------

    def params(self, kind: str, spec: Mapping[str, Any], at: str, *, go: bool) -> list[Params]:
        key = _key(kind, spec)
        found = self._answers.get(key)
        if found is None:
            raise Needed(kind=kind, spec=spec, at=at, key=key)
        self._used.add(key)
        return params_of(kind, found.items, go=go)

    def digest(self) -> str:
        """A digest of the answers (their order included), for the child's revision."""
        text = json.dumps(
            sorted((k, [dataclasses.asdict(i) for i in a.items]) for k, a in self._answers.items()),
            default=str,
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def begin(self) -> None:
        """A making starts: what it does not read is dropped at its `end`."""
        self._used.clear()

    def end(self) -> None:
        self._answers = {k: a for k, a in self._answers.items() if k in self._used}

    # -- the hosts (I/O) ---------------------------------------------------------------

    async def refresh(self) -> None:
        """Fetch again the answers older than their generator's requeue."""
        now = time.monotonic()
        for key, a in list(self._answers.items()):
            try:
                requeue = requeue_seconds(a.spec)
            except (TypeError, ValueError):  # rendered by a matrix into no number
                requeue = DEFAULT_REQUEUE
            if requeue and now - a.at_time >= requeue:
                await self.fetch(Needed(kind=a.kind, spec=a.spec, at=a.at, key=key))

    async def fetch(self, need: Needed) -> None:
        items = await self._ask(need.kind, need.spec, need.at)
        self._answers[need.key] = _Answer(
            kind=need.kind, spec=need.spec, at=need.at, items=tuple(items), at_time=time.monotonic()
        )

    def _token(self, fields: Mapping[str, Any], at: str) -> SecretRef | None:
        ref = _token_name(fields.get("tokenRef"), at, self._fail)
        if ref is None:
            return None
        path = self._tokens.get("/".join(ref))
        if path is None:  # a generator the ApplicationSet's reading did not see
            raise self._fail(f"{at}.tokenRef", f"Secret {ref[0]} was not read")
        return SecretRef(file=Path(path))

    async def _ask(self, kind: str, spec: Mapping[str, Any], at: str) -> Sequence[Any]:
        name, fields = provider_of(kind, spec, at, self._fail)
        where = f"{at}.{name}"
        api = _api(name, fields, self._token(fields, where), where, self._fail)
        try:
            async with RestClient(api) as client:
                if kind == PULL_REQUEST:
                    return await _pull_requests(client, name, spec, fields, where, self._fail)
                return await _repositories(client, name, spec, fields, where, self._fail)
        except (ApiError, NotFound) as e:  # the host's answer, or the token's file gone
            raise self._fail(where, e.message) from None
        except ValueError as e:
            raise self._fail(where, str(e)) from None


def _api(
    name: str, fields: Mapping[str, Any], token: SecretRef | None, at: str, fail: Fail
) -> RestApi:
    from .argocd_scm_rest import GITEA, GITHUB

    if name == "gitea" and not fields.get("api"):
        raise fail(f"{at}.api", "required (the Gitea server's URL)")
    flavor = GITHUB if name == "github" else GITEA
    return flavor.rest_api(
        str(fields.get("api") or ""), token, insecure=bool(fields.get("insecure"))
    )


async def _pull_requests(
    client: RestClient, name: str, spec: Mapping[str, Any], fields: Mapping[str, Any], at: str,
    fail: Fail,
) -> list[PullRequest]:  # fmt: skip
    """Argo CD's `ListPullRequests`: the provider's list, filtered."""
    keep = pull_request_filter(spec, at.rpartition(".")[0], fail)
    owner, repo = str(fields.get("owner") or ""), str(fields.get("repo") or "")
    for field in ("owner", "repo"):
        if not fields.get(field):
            raise fail(f"{at}.{field}", "required")
    labels = tuple(str(x) for x in fields.get("labels") or ())
    from .argocd_scm_rest import GITEA, GITHUB, pull_requests

    flavor = GITHUB if name == "github" else GITEA
    pulls = await pull_requests(client, flavor, owner=owner, repo=repo, labels=labels)
    if pulls is None:
        message = f"repository {owner}/{repo} not found"
        if spec.get("continueOnRepoNotFoundError"):
            log.warning("%s: %s: no pull requests (continueOnRepoNotFoundError)", at, message)
            return []
        raise fail(at, f"error listing pull requests: {message}")
    return [p for p in pulls if keep(p)]


async def _repositories(
    client: RestClient, name: str, spec: Mapping[str, Any], fields: Mapping[str, Any], at: str,
    fail: Fail,
) -> list[HostRepository]:  # fmt: skip
    """Argo CD's `ListRepos`: repositories through the repository filters, at their
    branches, through the branch filters."""
    filters = scm_filters(spec, at.rpartition(".")[0], fail)
    owner_field = "organization" if name == "github" else "owner"
    owner = str(fields.get(owner_field) or "")
    if not owner:
        raise fail(f"{at}.{owner_field}", "required")
    common = {"all_branches": bool(fields.get("allBranches")),
              "exclude_archived": bool(fields.get("excludeArchivedRepos"))}  # fmt: skip
    from .argocd_scm_rest import GITEA, GITHUB, Repositories

    flavor = GITHUB if name == "github" else GITEA
    provider = Repositories(client, flavor, owner=owner, **common)
    repos = await provider.list_repos(str(spec.get("cloneProtocol") or ""))

    async def passes(repo: HostRepository, applies: str) -> bool:
        chosen = [f for f in filters if f.applies == applies]
        if not chosen:
            return True
        for f in chosen:
            if not matches_without_paths(repo, f):
                continue
            if await paths_hold(repo, f):
                return True
        return False

    async def paths_hold(repo: HostRepository, f: ScmFilter) -> bool:
        """`pathsExist` all there and `pathsDoNotExist` none, asked one at a time."""
        for path in f.paths_exist:
            if not await provider.repo_has_path(repo, path):
                return False
        for path in f.paths_do_not_exist:
            if await provider.repo_has_path(repo, path):
                return False
        return True

    out: list[HostRepository] = []
    for repo in repos:
        if not await passes(repo, "repository"):
            continue
        for branch in await provider.get_branches(repo):
            if await passes(branch, "branch"):
                out.append(branch)
    return out
