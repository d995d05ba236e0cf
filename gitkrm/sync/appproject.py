"""An Argo CD AppProject's rules for the objects an interpreted Application syncs, as
Argo CD's application-controller enforces them. Pure.

Argo CD checks every object of a sync before anything is applied (gitops-engine's
permission validator): a kind the project does not permit, or a namespaced object in a
namespace that is not one of the project's destinations, fails the *whole* sync ("one or
more synchronization tasks are not valid"), nothing written. gitkrm does the same: each
such object is a problem of the revision (`check`), and a revision with problems is
refused before any write. An object of the inventory the project no longer permits is out
of Argo CD's sight (its live state is filtered out): gone from Git, it is left in place,
not pruned (`ref_problem`, used by the plan).

- Cluster-scoped kinds: permitted when `clusterResourceWhitelist` names them (an empty or
  absent list permits none) and `clusterResourceBlacklist` does not; an item's optional
  `name` narrows it to matching names.
- Namespaced kinds: permitted unless `namespaceResourceWhitelist` is given and does not
  name them (absent: every kind; `[]`: none), and `namespaceResourceBlacklist` does not.
  Group, kind and name are Go `filepath.Match` patterns.
- Destinations (`destinations[]`: `server` or `name`, and `namespace`): gobwas globs, `*`
  anything, a leading `!` denies (Argo CD's negation rules).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from gitkrm.krm import ObjectRef
from gitkrm.sync.appproject_spec import (
    IN_CLUSTER_NAME,
    IN_CLUSTER_SERVER,
    DestinationRule,
    KindRule,
    ProjectPolicy,
)
from gitkrm.sync.appsource import glob_regex
from gitkrm.sync.desired import Desired
from gitkrm.sync.problems import Problem, describe_ref

__all__ = ["DestinationRule", "KindRule", "ProjectPolicy", "check", "destination_permitted",
           "glob_match", "go_match", "kind_permitted", "object_problem", "ref_problem"]  # fmt: skip


@lru_cache(maxsize=256)
def _go_regex(pattern: str) -> re.Pattern[str] | None:
    """Go's `filepath.Match` pattern as a regular expression; None when malformed (Go's
    ErrBadPattern: nothing matches)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern):
                return None
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] == "^" else i + 1)
            if end < 0:
                return None
            body = pattern[i + 1 : end]
            neg = body.startswith("^")
            body = body[1:] if neg else body
            if not body:
                return None
            out.append("[" + ("^" if neg else "") + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.S)
    except re.error:
        return None


def go_match(pattern: str, value: str) -> bool:
    """Go's `filepath.Match(pattern, value)` (an error is no match)."""
    compiled = _go_regex(pattern)
    return compiled is not None and compiled.match(value) is not None


def denies(pattern: str) -> bool:
    return pattern.startswith("!")


def glob_match(pattern: str, value: str, *, negation: bool = True, separator: str = "") -> bool:
    """Argo CD's `globMatch`: `*` matches anything; with `negation`, `!p` matches what `p`
    does not."""
    if negation and denies(pattern):
        return glob_regex(pattern[1:], separator=separator).match(value) is None
    if pattern == "*":
        return True
    return glob_regex(pattern, separator=separator).match(value) is not None


def _in_list(rules: Sequence[KindRule], group: str, kind: str, name: str | None) -> bool:
    for r in rules:
        if not go_match(r.kind, kind) or not go_match(r.group, group):
            continue
        if name is None or not r.name or go_match(r.name, name):
            return True
    return False


def kind_permitted(policy: ProjectPolicy, *, group: str, kind: str, name: str,
                   namespaced: bool) -> bool:  # fmt: skip
    """Argo CD's `IsGroupKindNamePermitted`."""
    if namespaced:
        white = policy.namespace_whitelist
        listed = white is None or (bool(white) and _in_list(white, group, kind, None))
        return listed and not _in_list(policy.namespace_blacklist, group, kind, None)
    return _in_list(policy.cluster_whitelist, group, kind, name) and not _in_list(
        policy.cluster_blacklist, group, kind, name
    )


def destination_permitted(
    policy: ProjectPolicy,
    namespace: str,
    *,
    server: str = IN_CLUSTER_SERVER,
    name: str = IN_CLUSTER_NAME,
) -> bool:
    """Argo CD's `IsDestinationPermitted` for a cluster known by `server` and `name` (by
    default gitkrm's own target, Argo CD's in-cluster cluster)."""
    matched = False
    for item in policy.destinations:
        name_ok = bool(name) and glob_match(item.name, name)
        server_ok = bool(server) and glob_match(item.server, server)
        ns_ok = glob_match(item.namespace, namespace)
        if (server_ok or name_ok) and ns_ok:
            matched = True
        elif (
            (not name_ok and denies(item.name))
            or (not server_ok and denies(item.server) and ns_ok)
            or (not ns_ok and denies(item.namespace) and server_ok)
        ):
            return False  # a `!` pattern denies this destination
    return matched and not policy.only_project_clusters


def object_problem(policy: ProjectPolicy, d: Desired) -> str | None:
    """Why Argo CD's permission validator refuses the object (its message), or None."""
    return ref_problem(policy, d.ref)


def ref_problem(policy: ProjectPolicy, ref: ObjectRef) -> str | None:
    """`object_problem` of an object known by its reference (one of the inventory)."""
    namespaced = ref.namespace is not None
    if not kind_permitted(
        policy, group=ref.group, kind=ref.kind, name=ref.name, namespaced=namespaced
    ):
        return f"resource {ref.group}:{ref.kind} is not permitted in project {policy.project}"
    if ref.namespace is not None and not destination_permitted(policy, ref.namespace):
        return f"namespace {ref.namespace} is not permitted in project '{policy.project}'"
    return None


def check(desired: Sequence[Desired], policy: ProjectPolicy) -> list[Problem]:
    """The objects `policy` does not permit, as problems of the revision."""
    out: list[Problem] = []
    for d in desired:
        message = object_problem(policy, d)
        if message is not None:
            out.append(Problem(d.path, d.line or None, describe_ref(d.ref), message))
    return out
