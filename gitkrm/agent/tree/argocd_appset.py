"""Argo CD's `ApplicationSet` as a declaring object (`--interpret argocd`).

Its child source reads the repository of its `git` generators (none: the parent's) and
syncs the Applications the generators and template make (`argocd_appset_gen`), one
manifest each, as the ApplicationSet controller creates them: in the ApplicationSet's
namespace, with Argo CD's resources finalizer unless `syncPolicy.preserveResourcesOnDeletion`.
Those Applications are interpreted in turn (the child interprets what its parent does),
so each becomes a child source of its own; an Application no longer generated is pruned
(and, by its finalizer, its objects). The child's revision is a digest of the generated
manifests: a commit that changes no Application changes nothing. The status is the
controller's: `ErrorOccurred`, `ParametersGenerated`, `ResourcesUpToDate` conditions and
`resources` (the Applications made). A git generator on another repository than the one
the parent syncs reads it with Argo CD's repository Secrets, as an Application's source.
`pullRequest` and `scmProvider` generators ask their Git host (`argocd_scm_hosts`): the
child then polls at their `requeueAfterSeconds` when that is shorter than its interval.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson
import yaml

from gitkrm.errors import BadRequest
from gitkrm.krm import Obj, ObjectRef
from gitkrm.krm.conditions import conditions_of
from gitkrm.source import Snapshot, Source
from gitkrm.sync.options import IgnoreDifference

from ..conditions import Conditions
from .argocd_appset_gen import GENERATORS, HOSTED, SUPPORTED, Cluster, applications
from .argocd_spec import (
    APPLICATION,
    APPLICATION_SET,
    IN_CLUSTER_NAME,
    IN_CLUSTER_SERVER,
    SECRET_TYPE_LABEL,
    VERSION,
)
from .fields import Fail, FieldErrors, unhonoured_fields
from .flux_generated import MadeSource
from .flux_repo import Repository
from .model import ChildSpec, ChildState, Context, Peer, Phase, SourceStatus, Unhonoured

if TYPE_CHECKING:
    from .argocd_scm_hosts import HostAnswers

_KNOWN: Final = frozenset(
    {
        "generators",
        "template",
        "templatePatch",
        "goTemplate",
        "goTemplateOptions",
        "syncPolicy",
        "preservedFields",
        "ignoreApplicationDifferences",
        "strategy",
    }
)
_UNHONOURED: Final = {
    "applyNestedSelectors": "selectors of nested generators always apply",
}


@dataclass(frozen=True, slots=True)
class GeneratedApplications:
    """What an ApplicationSet's child makes: the ApplicationSet and its spec (as JSON)."""

    namespace: str
    name: str
    spec_json: str
    clusters_json: str = "[]"
    """The clusters a `clusters` generator knows (`argocd_appset_gen.Cluster` fields)."""
    tokens_json: str = "{}"
    """The host generators' tokens: `secret/key` -> the private file holding it (never
    the token itself)."""

    hosted: bool = False
    """A generator asks a Git host (`pullRequest`, `scmProvider`)."""


class ApplicationSetSource(MadeSource):
    """A `Source`: the Applications of `spec`, one manifest each."""

    def __init__(self, *, name: str, repository: Source, spec: GeneratedApplications) -> None:
        super().__init__(name=name, repository=repository)
        self.spec = spec
        self.hosts: HostAnswers | None = None
        if spec.hosted:
            from .argocd_scm_hosts import HostAnswers

            self.hosts = HostAnswers(tokens=orjson.loads(spec.tokens_json), fail=self._fail)

    def _fail(self, field: str, message: str) -> Exception:
        return BadRequest(
            f"ApplicationSet {self.spec.namespace}/{self.spec.name}: {field}: {message}"
        )

    async def prepare(self) -> None:
        if self.hosts is not None:
            await self.hosts.refresh()

    def origin(self, repo: Snapshot) -> str:
        if self.hosts is None:
            return repo.revision
        return f"{repo.revision} {self.hosts.digest()}"

    async def made(self, repo: Snapshot) -> dict[str, bytes]:
        """`make`, fetching each host answer a generator asks for (at most 1,000)."""
        if self.hosts is None:
            return self.make(repo)
        from .argocd_scm_hosts import Needed

        for _ in range(1000):
            self.hosts.begin()
            try:
                files = self.make(repo)
            except Needed as need:
                await self.hosts.fetch(need)
                continue
            self.hosts.end()
            return files
        raise self._fail("spec.generators", "more than 1,000 questions to Git hosts")

    def make(self, repo: Snapshot) -> dict[str, bytes]:
        s = self.spec
        clusters = tuple(Cluster(**c) for c in orjson.loads(s.clusters_json))
        made = applications(
            orjson.loads(s.spec_json), name=s.name, namespace=s.namespace, snapshot=repo,
            fail=self._fail, clusters=clusters, hosts=self.hosts,
        )  # fmt: skip
        return {
            f"{app['metadata']['name']}.yaml": yaml.safe_dump(app, sort_keys=False).encode()
            for app in made
        }


def _git_generators(value: Any, at: str, fail: Fail) -> list[tuple[Mapping[str, Any], str]]:
    """Every `git` generator (nested in a matrix too), checking the kinds as it goes; a
    `clusters`, `pullRequest` or `scmProvider` one is listed as itself (no repository)."""
    if not isinstance(value, Mapping):
        raise fail(at, "must be an object")
    out: list[tuple[Mapping[str, Any], str]] = []
    for kind, spec in value.items():
        if kind in ("selector", "values"):
            continue
        if kind not in GENERATORS:
            raise fail(f"{at}.{kind}", f"not supported: gitkrm generates {SUPPORTED}")
        if kind in ("git", "clusters", *HOSTED):
            out.append((spec or {}, f"{at}.{kind}"))
        elif kind in ("matrix", "merge"):
            for i, g in enumerate((spec or {}).get("generators") or []):
                out.extend(_git_generators(g, f"{at}.{kind}.generators[{i}]", fail))
    return out


async def read(obj: Obj, ctx: Context) -> ChildSpec:
    """The child source an ApplicationSet declares."""
    parent = ctx.parent
    fail = FieldErrors(obj, parent)
    md = obj.get("metadata") or {}
    name, namespace = str(md.get("name") or ""), str(md.get("namespace") or "argocd")
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise fail("spec", "must be an object")
    unhonoured = unhonoured_fields(spec, at="spec", known=_KNOWN, reasons=_UNHONOURED)
    policy = spec.get("syncPolicy") or {}
    unhonoured += unhonoured_fields(
        policy, at="spec.syncPolicy", known=("preserveResourcesOnDeletion", "applicationsSync"),
    )  # fmt: skip
    updates, deletes = _applications_sync(policy, fail)
    from .argocd_appset_rolling import steps_of
    from .argocd_appset_rolling import unhonoured as strategy_unhonoured

    steps_of(spec, fail)  # a malformed strategy is an error on the ApplicationSet now
    unhonoured += strategy_unhonoured(spec)
    generators = spec.get("generators")
    if not isinstance(generators, list) or not generators:
        raise fail("spec.generators", "at least one generator is required")
    found = [
        g
        for i, x in enumerate(generators)
        for g in _git_generators(x, f"spec.generators[{i}]", fail)
    ]
    gits = [(g, at) for g, at in found if at.endswith(".git")]
    clusters: list[Cluster] = []
    reads: list[ObjectRef] = []
    if any(at.endswith(".clusters") for _, at in found):
        clusters, reads = await cluster_secrets(namespace=namespace, ctx=ctx)
    hosted = [(at.rpartition(".")[2], g, at) for g, at in found if at.endswith(HOSTED)]
    tokens: dict[str, str] = {}
    requeue: int | None = None
    if hosted:
        from .argocd_scm_hosts import tokens as host_tokens

        tokens, secrets, requeue = await host_tokens(
            hosted, namespace=namespace, ctx=ctx, fail=fail
        )
        reads.extend(secrets)
    repo = Repository(url=parent.url, ref=parent.ref, auth=parent.auth,
                      ca_file=parent.ca_file, is_parent=True)  # fmt: skip
    if gits:
        from .argocd_repo import repository

        wanted = {(str(g.get("repoURL") or ""), str(g.get("revision") or "")) for g, _ in gits}
        if len(wanted) > 1:
            raise fail(
                gits[1][1], "git generators of one ApplicationSet read one repository and revision"
            )
        git, at = gits[0]
        if not git.get("repoURL"):
            raise fail(f"{at}.repoURL", "required")
        repo = await repository(
            str(git["repoURL"]), str(git.get("revision") or ""), namespace=namespace, ctx=ctx,
            fail=fail, at=at,
        )  # fmt: skip
        unhonoured.extend(
            Unhonoured(u.field.replace(".targetRevision", ".revision"), u.reason)
            for u in repo.unhonoured
        )
    declared_by = ObjectRef(
        group=APPLICATION_SET.group, kind=APPLICATION_SET.kind, name=name, namespace=namespace,
        version=VERSION,
    )  # fmt: skip
    config = dataclasses.replace(
        repo.child_config(declared_by=declared_by, path="", parent=parent),
        interval=parent.interval if requeue is None else min(parent.interval, requeue),
        timeout=parent.timeout,
        health_timeout=parent.health_timeout,
        prune=deletes,
        ignore_differences=_kept_fields(spec, namespace=namespace, fail=fail)
        + (() if updates else _ALL_FIELDS),
        allow_empty=True,  # no Application generated: none kept, as the controller does
        generator=GeneratedApplications(
            namespace=namespace,
            name=name,
            spec_json=orjson.dumps(spec).decode(),
            clusters_json=orjson.dumps([dataclasses.asdict(c) for c in clusters]).decode(),
            tokens_json=orjson.dumps(tokens, option=orjson.OPT_SORT_KEYS).decode(),
            hosted=bool(hosted),
        ),
    )
    return ChildSpec(
        declared_by=declared_by, config=config, unhonoured=tuple(unhonoured), reads=tuple(reads)
    )


_POLICIES: Final = {  # applicationsSync: (updates, deletes)
    "sync": (True, True),
    "create-update": (True, False),
    "create-delete": (False, True),
    "create-only": (False, False),
}
_ALL_FIELDS: Final = (
    IgnoreDifference(
        group=APPLICATION.group,
        kind=APPLICATION.kind,
        json_pointers=("/metadata/annotations", "/metadata/labels", "/metadata/finalizers",
                       "/spec"),
    ),
)  # fmt: skip


def _applications_sync(policy: Mapping[str, Any], fail: Fail) -> tuple[bool, bool]:
    """`syncPolicy.applicationsSync`: whether generated Applications are updated, and
    deleted when no longer generated (`sync`, the default: both)."""
    value = policy.get("applicationsSync") or "sync"
    if value not in _POLICIES:
        raise fail("spec.syncPolicy.applicationsSync", f"{value!r}: one of {', '.join(_POLICIES)}")
    return _POLICIES[value]


def _kept_fields(
    spec: Mapping[str, Any], *, namespace: str, fail: Fail
) -> tuple[IgnoreDifference, ...]:
    """What the ApplicationSet controller leaves as it is on a generated Application once
    made (a user's edit survives the next generation): `ignoreApplicationDifferences`'
    JSON pointers (for one Application when `name` is set), and the annotations and labels
    `preservedFields` names."""
    out: list[IgnoreDifference] = []
    group, kind = APPLICATION.group, APPLICATION.kind
    ignores = spec.get("ignoreApplicationDifferences") or []
    if not isinstance(ignores, list):
        raise fail("spec.ignoreApplicationDifferences", "must be a list")
    for i, item in enumerate(ignores):
        at = f"spec.ignoreApplicationDifferences[{i}]"
        if not isinstance(item, Mapping):
            raise fail(at, "must be an object")
        if item.get("jqPathExpressions"):
            raise fail(f"{at}.jqPathExpressions", "not supported: use jsonPointers")
        pointers = item.get("jsonPointers") or []
        if not isinstance(pointers, list) or not all(
            isinstance(p, str) and p.startswith("/") for p in pointers
        ):
            raise fail(f"{at}.jsonPointers", "must be a list of JSON pointers (each starts with /)")
        if pointers:
            name = item.get("name") or None
            out.append(IgnoreDifference(group=group, kind=kind, json_pointers=tuple(pointers),
                                        name=name, namespace=namespace))  # fmt: skip
    preserved = spec.get("preservedFields") or {}
    if not isinstance(preserved, Mapping):
        raise fail("spec.preservedFields", "must be an object")
    pointers = []
    for field in ("annotations", "labels"):
        keys = preserved.get(field) or []
        if not isinstance(keys, list):
            raise fail(f"spec.preservedFields.{field}", "must be a list of keys")
        pointers += [f"/metadata/{field}/{_token(str(k))}" for k in keys]
    if pointers:
        out.append(IgnoreDifference(group=group, kind=kind, json_pointers=tuple(pointers),
                                    namespace=namespace))  # fmt: skip
    return tuple(out)


def _token(key: str) -> str:
    """`key` as one JSON pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


async def cluster_secrets(*, namespace: str, ctx: Context) -> tuple[list[Cluster], list[ObjectRef]]:
    """Argo CD's clusters: its cluster Secrets (label `argocd.argoproj.io/secret-type:
    cluster`: `name`, `server`, their labels and annotations) in `namespace`, and the local
    `in-cluster` when no Secret names it (it then carries no labels); and the Secrets read
    (a change to one reads the ApplicationSet again)."""
    from gitkrm.krm import GVK

    from .argocd_repo import secret_text

    out: list[Cluster] = []
    reads: list[ObjectRef] = []
    listed = await ctx.list(
        GVK(group="", version="v1", kind="Secret"), namespace=namespace,
        label_selector=f"{SECRET_TYPE_LABEL}=cluster",
    )  # fmt: skip
    for secret in listed:
        md = secret.get("metadata") or {}
        reads.append(
            ObjectRef(group="", kind="Secret", name=str(md.get("name")), namespace=namespace)
        )
        server = secret_text(secret, "server").rstrip("/")
        if not server:
            continue
        out.append(
            Cluster(
                name=secret_text(secret, "name") or server,
                server=server,
                labels=dict(md.get("labels") or {}),
                annotations=dict(md.get("annotations") or {}),
                secret=True,
            )
        )
    if not any(c.server == IN_CLUSTER_SERVER for c in out):
        out.insert(0, Cluster(name=IN_CLUSTER_NAME, server=IN_CLUSTER_SERVER))
    return out, reads


def application_set_status(obj: Obj, state: ChildState) -> dict[str, Any]:
    """The ApplicationSet controller's status: conditions and the Applications made."""
    old: Mapping[str, Any] = obj.get("status") or {}
    conds = Conditions(conditions_of(obj), generation=None)
    outcome = state.outcome
    error = state.error or ("; ".join(outcome.errors) if outcome and outcome.errors else "")
    out: dict[str, Any] = {}
    if error:
        reason = "ApplicationGenerationFromParamsError"
        conds.set("ErrorOccurred", "True", reason, error)
        conds.set("ParametersGenerated", "False", "ErrorOccurred", error)
        conds.set("ResourcesUpToDate", "False", reason, error)
        if old.get("resources"):
            out["resources"] = old["resources"]
    elif state.phase is Phase.SYNCED and outcome is not None:
        done = "Successfully generated parameters for all Applications"
        conds.set(
            "ErrorOccurred",
            "False",
            "ApplicationSetUpToDate",
            "All applications have been generated successfully",
        )
        conds.set("ParametersGenerated", "True", "ParametersGenerated", done)
        conds.set(
            "ResourcesUpToDate",
            "True",
            "ApplicationSetUpToDate",
            "All applications have been generated successfully",
        )
        out["resources"] = [
            {
                "group": r.group,
                "version": VERSION,
                "kind": r.kind,
                "name": r.name,
                "namespace": r.namespace,
            }
            for r in state.inventory
            if (r.group, r.kind) == (APPLICATION.group, APPLICATION.kind)
        ]
    else:
        if old.get("resources"):
            out["resources"] = old["resources"]
    out["conditions"] = [
        {k: v for k, v in c.items() if k != "observedGeneration"} for c in conds.items
    ]
    return out


class ApplicationSetInterpreter:
    """The ApplicationSet controller (the tree's registry uses `INTERPRETER`)."""

    peer: Peer | None = Peer.ARGOCD
    kinds = frozenset({APPLICATION_SET})

    async def child(self, obj: Obj, ctx: Context) -> ChildSpec:
        return await read(obj, ctx)

    def status(self, obj: Obj, state: ChildState) -> Obj:
        return application_set_status(obj, state)

    def source_statuses(self, obj: Obj, state: ChildState) -> Sequence[SourceStatus]:
        return ()

    def crds(self) -> Sequence[Obj]:
        return ()  # argocd_crds has the ApplicationSet's, with the Application's


INTERPRETER: Final = ApplicationSetInterpreter()
