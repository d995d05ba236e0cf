"""The AppProject an Application names (`spec.project`), enforced as Argo CD's
application-controller enforces it (`argo.GetAppProject`, `argo.ValidatePermissions`).

The project is read from the target: in the Application's namespace, else (an
Application outside it) in `argocd`, Argo CD's control-plane namespace, where
`sourceNamespaces` must name the Application's namespace. `default` absent from the
target is Argo CD's default project (everything permitted); any other absent project
refuses the Application. A refusal carries Argo CD's condition type and message; the
tree then runs no child for it (`ChildSpec.refused`). What the project permits of the
objects themselves (kinds, namespaces) becomes the child's `ProjectPolicy`, checked at
each sync (`gitkrm.sync.appproject`); the sync windows that apply to the Application
(`applies`, Argo CD's `Matches`) become the child's `sync_windows`, looked at when each
pass starts (`gitkrm.sync.syncwindows`). The fields of a project gitkrm does not enforce
are reported on the Application, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gitkrm.errors import BadRequest
from gitkrm.krm import ObjectRef
from gitkrm.sync.appproject import destination_permitted, glob_match
from gitkrm.sync.appproject_spec import (
    IN_CLUSTER_NAME,
    IN_CLUSTER_SERVER,
    DestinationRule,
    KindRule,
    ProjectPolicy,
)
from gitkrm.sync.syncwindows import SyncWindow, WindowError
from gitkrm.sync.syncwindows import check as check_windows

from ..duration import parse_duration
from .argocd_spec import APP_PROJECT, VERSION, ApplicationSpec
from .fields import Fail
from .model import Context, Refused, Unhonoured

CONTROL_PLANE_NAMESPACE: Final = "argocd"
DEFAULT_PROJECT: Final = "default"
INVALID_SPEC: Final = "InvalidSpecError"
UNKNOWN_ERROR: Final = "UnknownError"
_NOTHING_TO_ENFORCE: Final = frozenset({"description", "roles"})  # Argo CD's API RBAC
_ENFORCED: Final = frozenset(
    {"sourceRepos", "destinations", "sourceNamespaces", "clusterResourceWhitelist",
     "clusterResourceBlacklist", "namespaceResourceWhitelist", "namespaceResourceBlacklist",
     "permitOnlyProjectScopedClusters", "syncWindows"}
)  # fmt: skip
_UNHONOURED: Final = {
    "signatureKeys": "commits are not verified against the project's signature keys",
    "sourceIntegrity": "commits are not verified against the project's source integrity",
    "orphanedResources": "orphaned resources are not monitored",
    "destinationServiceAccounts": "objects are applied with gitkrm's own credentials, not "
    "an impersonated service account",
}


@dataclass(frozen=True, slots=True)
class ProjectCheck:
    """What an Application's project says: the rules for its objects (None: none), why it
    is refused, what is not enforced, and which AppProject objects were read."""

    policy: ProjectPolicy | None
    refused: tuple[Refused, ...] = ()
    unhonoured: tuple[Unhonoured, ...] = ()
    reads: tuple[ObjectRef, ...] = ()
    windows: tuple[SyncWindow, ...] = ()
    """The project's sync windows that apply to the Application."""


def _ref(name: str, namespace: str) -> ObjectRef:
    return ObjectRef(group=APP_PROJECT.group, kind=APP_PROJECT.kind, name=name,
                     namespace=namespace, version=VERSION)  # fmt: skip


def _list(spec: Mapping[str, Any], key: str, fail: Fail, at: str) -> list[Any] | None:
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise fail("spec.project", f"{at}: spec.{key} must be a list")
    return value


def _kinds(spec: Mapping[str, Any], key: str, fail: Fail, at: str) -> tuple[KindRule, ...] | None:
    items = _list(spec, key, fail, at)
    if items is None:
        return None
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise fail("spec.project", f"{at}: spec.{key}[{i}] must be an object (group, kind)")
        out.append(KindRule(group=str(item.get("group") or ""), kind=str(item.get("kind") or ""),
                            name=str(item.get("name") or "")))  # fmt: skip
    return tuple(out)


def policy_of(project: Mapping[str, Any], fail: Fail, *, at: str) -> ProjectPolicy:
    """An AppProject's rules for objects and destinations."""
    md = project.get("metadata") or {}
    spec = project.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise fail("spec.project", f"{at}: spec must be an object")
    dests = []
    for i, d in enumerate(_list(spec, "destinations", fail, at) or []):
        if not isinstance(d, Mapping):
            raise fail("spec.project", f"{at}: spec.destinations[{i}] must be an object")
        dests.append(DestinationRule(server=str(d.get("server") or ""),
                                     name=str(d.get("name") or ""),
                                     namespace=str(d.get("namespace") or "")))  # fmt: skip
    return ProjectPolicy(
        project=str(md.get("name") or ""),
        destinations=tuple(dests),
        cluster_whitelist=_kinds(spec, "clusterResourceWhitelist", fail, at) or (),
        cluster_blacklist=_kinds(spec, "clusterResourceBlacklist", fail, at) or (),
        namespace_whitelist=_kinds(spec, "namespaceResourceWhitelist", fail, at),
        namespace_blacklist=_kinds(spec, "namespaceResourceBlacklist", fail, at) or (),
        only_project_clusters=bool(spec.get("permitOnlyProjectScopedClusters")),
    )


def _normalise_git_url(url: str) -> str:
    """Argo CD's `git.NormalizeGitURL`: lower case, `.git` dropped, `user@host:path` and
    `ssh://` alike (the user kept)."""
    repo = url.strip().lower()
    if re.match(r"^(ssh://)?([^/:]*?)@[^@]+$", repo) and not repo.startswith("ssh://"):
        repo = "ssh://" + repo.replace(":", "/", 1)
    repo = repo.removesuffix(".git")
    return repo.removeprefix("ssh://")


def source_permitted(patterns: Sequence[str], url: str) -> bool:
    """Argo CD's `IsSourcePermitted`: a `sourceRepos` glob (`/` a separator) matches, and
    no `!` pattern denies it."""
    wanted = _normalise_git_url(url)
    matched = False
    for raw in patterns:
        pattern = (
            "!" + _normalise_git_url(raw[1:]) if raw.startswith("!") else _normalise_git_url(raw)
        )
        if glob_match(pattern, wanted, separator="/"):
            matched = True
        elif pattern.startswith("!"):
            return False
    return matched


def namespace_permitted(patterns: Sequence[str], namespace: str) -> bool:
    """Argo CD's `MatchStringInList(sourceNamespaces, ns, REGEXP)`: `/re/` a regular
    expression (searched, as Go's MatchString), else a glob."""
    for p in patterns:
        if len(p) > 1 and p.startswith("/") and p.endswith("/"):
            try:
                if re.search(p[1:-1], namespace):
                    return True
            except re.error:
                continue
        elif glob_match(p, namespace, negation=False):
            return True
    return False


def _globs(window: Mapping[str, Any], key: str) -> list[str]:
    return [str(p) for p in window.get(key) or []]


def applies(window: Mapping[str, Any], *, app: str, dest: Mapping[str, Any]) -> bool:
    """Argo CD's `SyncWindows.Matches` for one window: its `applications`, `clusters`
    (server or name) and `namespaces` globs, any of them (or, with `andOperator`, each
    that is given)."""
    server, name = str(dest.get("server") or ""), str(dest.get("name") or "")
    namespace = str(dest.get("namespace") or "")
    given: list[bool] = []
    if apps := _globs(window, "applications"):
        given.append(any(glob_match(p, app, negation=False) for p in apps))
    if clusters := _globs(window, "clusters"):
        given.append(
            any(
                (bool(name) and glob_match(p, name, negation=False))
                or (bool(server) and glob_match(p, server, negation=False))
                for p in clusters
            )
        )
    if namespaces := _globs(window, "namespaces"):
        given.append(any(glob_match(p, namespace, negation=False) for p in namespaces))
    return bool(given) and (all(given) if window.get("andOperator") else any(given))


def windows_of(
    pspec: Mapping[str, Any], *, app: str, dest: Mapping[str, Any], fail: Fail, at: str
) -> tuple[SyncWindow, ...]:
    """The project's sync windows that apply to the Application."""
    out = []
    for i, w in enumerate(_list(pspec, "syncWindows", fail, at) or []):
        where = f"{at}: spec.syncWindows[{i}]"
        if not isinstance(w, Mapping):
            raise fail("spec.project", f"{where} must be an object")
        if not applies(w, app=app, dest=dest):
            continue
        try:
            window = SyncWindow(
                kind=str(w.get("kind") or ""),
                schedule=str(w.get("schedule") or ""),
                seconds=parse_duration(str(w.get("duration") or ""), what="duration"),
                manual_sync=bool(w.get("manualSync")),
                time_zone=str(w.get("timeZone") or ""),
            )
            check_windows([window])
        except (WindowError, BadRequest) as e:
            raise fail("spec.project", f"{where}: {e}") from None
        out.append(window)
    return tuple(out)


def _repo_urls(spec: ApplicationSpec) -> list[str]:
    sources = spec.get("sources") or ([spec["source"]] if spec.get("source") else [])
    return [str(s.get("repoURL") or "") for s in sources if isinstance(s, Mapping)]


async def project_check(
    spec: ApplicationSpec, *, app: str, namespace: str, ctx: Context, fail: Fail
) -> ProjectCheck:
    """The project of the Application `namespace/app` (see the module docstring)."""
    written = str(spec.get("project") or "")
    name = written or DEFAULT_PROJECT
    reads = [_ref(name, namespace)]
    project = await ctx.get(reads[0])
    in_control_plane = True
    if project is None and namespace != CONTROL_PLANE_NAMESPACE:
        reads.append(_ref(name, CONTROL_PLANE_NAMESPACE))
        project = await ctx.get(reads[-1])
        in_control_plane = False
    if project is None:
        if name == DEFAULT_PROJECT:
            return ProjectCheck(policy=None, reads=tuple(reads))
        message = f"Application referencing project {written} which does not exist"
        return ProjectCheck(None, (Refused(INVALID_SPEC, message),), reads=tuple(reads))
    where = (project.get("metadata") or {}).get("namespace") or namespace
    at = f"AppProject {where}/{name}"
    policy = policy_of(project, fail, at=at)
    pspec: Mapping[str, Any] = project.get("spec") or {}
    unhonoured = []
    for key in pspec:
        if key in _UNHONOURED and pspec.get(key):
            unhonoured.append(Unhonoured(f"{at}: spec.{key}", _UNHONOURED[key]))
        elif key not in _UNHONOURED and key not in _ENFORCED | _NOTHING_TO_ENFORCE:
            unhonoured.append(Unhonoured(f"{at}: spec.{key}", "not a field gitkrm knows"))
    dest_spec: Mapping[str, Any] = spec.get("destination") or {}
    windows = windows_of(pspec, app=app, dest=dest_spec, fail=fail, at=at)
    out = ProjectCheck(policy, unhonoured=tuple(unhonoured), reads=tuple(reads), windows=windows)
    source_ns = [str(p) for p in _list(pspec, "sourceNamespaces", fail, at) or []]
    if not in_control_plane and not namespace_permitted(source_ns, namespace):
        message = (
            f"application '{app}' in namespace '{namespace}' is not permitted to use "
            f"project '{name}'"
        )
        return ProjectCheck(None, (Refused(UNKNOWN_ERROR, message),), out.unhonoured, out.reads)
    refused: list[Refused] = []
    repos = [str(p) for p in _list(pspec, "sourceRepos", fail, at) or []]
    for url in _repo_urls(spec):
        if not source_permitted(repos, url):
            message = f"application repo {url} is not permitted in project '{name}'"
            refused.append(Refused(INVALID_SPEC, message))
    dest = spec.get("destination") or {}
    dest_ns = str(dest.get("namespace") or "")
    if not destination_permitted(policy, dest_ns):
        shown = IN_CLUSTER_NAME if dest.get("name") else IN_CLUSTER_SERVER
        refused.append(
            Refused(
                INVALID_SPEC,
                f"application destination server '{shown}' and namespace '{dest_ns}' do not "
                f"match any of the allowed destinations in project '{name}'",
            )
        )
    if refused:
        return ProjectCheck(None, tuple(refused), out.unhonoured, out.reads)
    return out
